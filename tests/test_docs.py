"""The docs against the code.

The generated files live in the repository: sql/manifest.json and docs/queries.md, data-contract.md and
settings.md equal what rlsql.outputs.docs writes. The hand-written pages are held to the code here too:
docs/cli.md lists every command and exactly each command's options (read from the Typer app); every
`rlsql ...` line in a shell block of the README or docs/ parses as a real command line (click's own
parser, the app's option types and parsers included); every Python block of the README and
docs/python.md runs over the fixture runs; docs/architecture.md names every module of rlsql/;
docs/caching.md names every cache setting; no page names an `RLSQL_*` variable that neither Settings
nor the test suite reads, or a deleted mechanism; a section of bench/RESULTS.md that a page cites
exists; the README stays a front page.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

import rlsql
from rlsql.cli.app import app
from rlsql.core.settings import Settings
from rlsql.outputs import docs
from tests.conftest import RUNS

ROOT = Path(__file__).resolve().parent.parent
# spelled in pieces so that this file does not match itself
OUTSIDE = re.compile(re.escape("../" + "shared") + "|" + re.escape("/work/" + "shared"))


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    """What rlsql.outputs.docs writes for each document, rendered once (queries.md binds every view: seconds)."""
    return {name: docs.render(name) for name in docs.DOCS}


@pytest.mark.parametrize(("name", "filename"), list(docs.DOCS.items()))
def test_committed_docs_are_the_generated_ones(name: str, filename: str, rendered: dict[str, str]) -> None:
    committed = (ROOT / "docs" / filename).read_text(encoding="utf-8")
    assert committed == rendered[name], f"docs/{filename} is out of date: run `python -m rlsql.outputs.docs`"


def test_queries_md_lists_every_query_view_and_column() -> None:
    text = (ROOT / "docs" / "queries.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "sql" / "queries").glob("*.sql")) + sorted((ROOT / "sql" / "views").glob("*.sql")):
        assert f"### `{path.stem}` (version " in text, path.stem
    # a few columns by hand, with the types issue 16 asked for
    assert "| `started_at` | TIMESTAMP |" in text
    assert "| `stat_lines` | BIGINT |" in text
    assert "| `distinct_steps` | BIGINT |" in text


def test_the_documented_routing_defaults_are_the_sql_ones() -> None:
    # the newest fixture run has no rl_config.yaml: every routing key takes the trainer's default
    con = rlsql.connect([RUNS / "newest"])
    mask, zero = con.execute("SELECT mask_exceptions, zero_exceptions FROM exception_routing").fetchone()
    assert tuple(mask) == docs.DEFAULT_MASK and tuple(zero) == docs.DEFAULT_ZERO


def test_the_committed_manifest_is_the_generated_one() -> None:
    committed = (ROOT / "sql" / "manifest.json").read_text(encoding="utf-8")
    assert committed == docs.manifest_text(), "sql/manifest.json is out of date: run `python -m rlsql.outputs.docs`"


def test_the_settings_table_lists_every_setting() -> None:
    from dataclasses import fields

    from rlsql.core.settings import Settings

    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    for f in fields(Settings):
        assert f"| `{f.name}` |" in text
        if f.metadata["env"]:
            assert f"`{f.metadata['env']}`" in text


def test_one_place_reads_the_environment() -> None:
    """rlsql/core/settings.py is the one module that reads os.environ (every setting is in its table)."""
    readers = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "rlsql").rglob("*.py")
        if re.search(r"os\.environ|os\.getenv", p.read_text(encoding="utf-8"))
    ]
    assert readers == ["rlsql/core/settings.py"]


def test_check_mode_says_when_the_docs_are_current(rendered, monkeypatch, capsys) -> None:
    # `python -m rlsql.outputs.docs --check` is docs.main(["--check"]); the texts are the ones rendered above
    monkeypatch.setattr(docs, "render", rendered.__getitem__)
    monkeypatch.setattr(docs, "manifest_text", lambda: (ROOT / "sql" / "manifest.json").read_text(encoding="utf-8"))
    before = {p.name: p.read_bytes() for p in (ROOT / "docs").iterdir() if p.is_file()}
    assert docs.main(["--check"]) == 0, capsys.readouterr().err
    # ...and says which file is stale, exit 1, writing nothing
    monkeypatch.setattr(docs, "render", lambda name: rendered[name] + ("x\n" if name == "queries" else ""))
    assert docs.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "out of date:" in err and "queries.md" in err and "data-contract.md" not in err
    assert {p.name: p.read_bytes() for p in (ROOT / "docs").iterdir() if p.is_file()} == before


def test_readme_links_the_contracts_and_nothing_points_outside() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/queries.md)" in readme and "(docs/data-contract.md)" in readme
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    offenders = []
    for name in tracked.splitlines():
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".md", ".py", ".sql", ".j2", ".toml", ".yaml", ""}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(OUTSIDE, text):
            offenders.append(name)
    assert offenders == []


def test_rlsql_docs_command_prints_them(capsys, monkeypatch) -> None:
    from rlsql.cli import app as cli

    monkeypatch.setattr(sys, "argv", ["rlsql", "docs", "data-contract"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "data-contract.md").read_text(encoding="utf-8")


# -- the hand-written pages against the code -----------------------------------------------------------

DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: every page a reader is sent to: the README and docs/ (bench/RESULTS.md is a log of commands run, not a guide)
PAGES = [README, *sorted(DOCS.glob("*.md"))]
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
#: the fenced blocks that hold shell command lines (a listing or an output is `text`)
_SHELL = {"sh", "bash", "shell", "console"}
#: what ends one command of a shell line (and a redirection, whose target is no argument)
_SEPARATORS = set("&|;<>")


def fenced_blocks(text: str) -> Iterator[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of each fenced code block of a markdown text; fences may be
    indented (a block inside a list item)."""
    lang: str | None = None
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        fence = _FENCE.match(line.strip())
        if fence and lang is None:
            lang, start, lines = fence["lang"], number + 1, []
        elif fence and fence["lang"] == "":
            yield lang or "", start, lines
            lang = None
        elif lang is not None:
            lines.append(line)


def shell_commands(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, tokens) of each shell line in `path`'s shell blocks: comments dropped, a line ending
    in `\\` or inside an open quote joined with the next, split as a POSIX shell splits it."""
    for lang, start, lines in fenced_blocks(path.read_text(encoding="utf-8")):
        if lang not in _SHELL:
            continue
        pending, first = "", 0
        for offset, line in enumerate(lines):
            pending, first = (f"{pending}\n{line}", first) if pending else (line, start + offset)
            if pending.endswith("\\"):
                pending = pending[:-1]
                continue
            lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            try:
                tokens = list(lexer)
            except ValueError:  # an open quote: the string goes on on the next line
                continue
            yield first, tokens
            pending = ""
        assert not pending, f"{path.name}:{first}: a command line never ends"


def rlsql_invocations(tokens: list[str]) -> Iterator[list[str]]:
    """The arguments of every `rlsql` command in one shell line (`a && rlsql x | head`, `VAR=1 rlsql y`)."""
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= _SEPARATORS:
            while segment and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", segment[0]):
                segment = segment[1:]  # an environment assignment before the command
            if segment and segment[0] == "rlsql":
                yield segment[1:]
            segment = []
        else:
            segment.append(token)


def parse_command_line(args: list[str]) -> tuple[str, ...]:
    """The command path `args` names, parsed by click exactly as `rlsql` would parse it (options, their
    types and rlsql's own value parsers) without running the command; raises what click (or rlsql's
    parser) raises for a command line rlsql would refuse."""
    command: Any = typer.main.get_command(app)
    context = command.make_context("rlsql", list(args))
    path: list[str] = []
    while isinstance(getattr(command, "commands", None), dict):
        rest = [*getattr(context, "_protected_args", []), *context.args]
        name, command, rest = command.resolve_command(context, rest)
        path.append(name)
        context = command.make_context(name, rest, parent=context)
    return tuple(path)


def test_the_command_line_parser_of_these_tests_refuses_what_rlsql_refuses() -> None:
    """parse_command_line is the check below: it must fail on a line rlsql fails on, and pass the same
    line written correctly."""
    assert parse_command_line(["cache", "build", "-r", "runs/", "--force"]) == ("cache", "build")
    assert parse_command_line(["--from-logs", "query", "x", "-f", "MD", "-n", "3"]) == ("query",)
    assert list(rlsql_invocations(shlex.split("pip install . && rlsql query a | head"))) == [["query", "a"]]
    for bad in (
        ["query", "a", "b"],
        ["query", "--nope"],
        ["cache", "biuld"],
        ["query", "x", "-f", "xml"],
        ["db", "build"],
        ["query", "x", "--limit", "-1"],
        ["export", "-o", ""],
    ):
        with pytest.raises(Exception):  # noqa: B017 - click's usage errors and rlsql's UsageError alike
            parse_command_line(bad)


def command_lines() -> list[tuple[str, int, list[str]]]:
    return [
        (path.name, number, args)
        for path in PAGES
        for number, tokens in shell_commands(path)
        for args in rlsql_invocations(tokens)
    ]


def test_every_rlsql_line_in_the_readme_and_docs_parses() -> None:
    lines = command_lines()
    assert len(lines) > 40  # the README's examples alone are a dozen and a half
    refused = []
    for name, number, args in lines:
        try:
            parse_command_line(args)
        except Exception as exc:  # one list of every bad line, not the first alone
            refused.append(f"{name}:{number}: rlsql {shlex.join(args)}: {type(exc).__name__}: {exc}")
    assert refused == []


def is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), dict)


def command_tree() -> dict[tuple[str, ...], Any]:
    found: dict[tuple[str, ...], Any] = {}

    def walk(path: tuple[str, ...], command: Any) -> None:
        found[path] = command
        for name, sub in command.commands.items() if is_group(command) else ():
            walk((*path, name), sub)

    walk((), typer.main.get_command(app))
    return found


def cli_sections() -> dict[str, str]:
    """docs/cli.md's sections by heading: `### \\`rlsql query\\`` -> its text up to the next heading."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^(#{2,3} .+)$", text, flags=re.M)
    return {heading.lstrip("# ").strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def documented_options(section: str) -> tuple[set[str], set[str]]:
    """The options (`--run`, `-r`) and arguments (`NAME`) in the first column of a section's option table."""
    options: set[str] = set()
    arguments: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| option", "|---")):
            continue
        cell = line.split("|")[1]
        if "(argument)" in cell:
            arguments.update(re.findall(r"`([A-Z]+)`", cell))
        else:
            options.update(re.findall(r"`(--?[a-z][a-z-]*)`", cell))
    return options, arguments


def code_options(command: Any) -> tuple[set[str], set[str]]:
    options: set[str] = set()
    arguments: set[str] = set()
    for param in command.params:
        if param.param_type_name == "argument":
            arguments.add(param.name.upper())
        else:
            options.update([*param.opts, *param.secondary_opts])
    return options, arguments


@pytest.mark.parametrize(
    "path", [p for p, c in command_tree().items() if p and not is_group(c)], ids=lambda p: " ".join(("rlsql", *p))
)
def test_cli_md_documents_each_command_with_exactly_its_options(path: tuple[str, ...]) -> None:
    sections = cli_sections()
    heading = f"`rlsql {' '.join(path)}`"
    assert heading in sections, f"docs/cli.md has no section ### {heading}"
    documented = documented_options(sections[heading])
    expected = code_options(command_tree()[path])
    assert documented == expected, f"docs/cli.md, {heading}: documented {documented}, the code has {expected}"


def test_cli_md_documents_the_global_options_and_every_exit_code() -> None:
    sections = cli_sections()
    documented, _ = documented_options(sections["Global options"])
    expected, _ = code_options(command_tree()[()])
    assert documented == expected | {"--help", "-h"}
    from rlsql.core.errors import ExitCode

    codes = set(re.findall(r"^\| (\d+) \|", sections["Exit codes"], flags=re.M))
    assert {str(int(code)) for code in ExitCode} | {"130"} == codes
    # and no section describes a command the code does not have
    described = {h.strip("`")[len("rlsql ") :] for h in sections if h.startswith("`rlsql ")}
    assert described == {" ".join(p) for p, c in command_tree().items() if p and not is_group(c)}


def python_blocks() -> list[Any]:
    return [
        pytest.param(path.name, start, "\n".join(lines), id=f"{path.name}:{start}")
        for path in (README, DOCS / "python.md")
        for lang, start, lines in fenced_blocks(path.read_text(encoding="utf-8"))
        if lang == "python"
    ]


@pytest.mark.parametrize(("page", "line", "code"), python_blocks())
def test_every_python_example_runs(
    page: str, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block alone, in a fresh namespace, from a folder whose `runs/` holds the fixture runs under
    their own names (the paths the examples use)."""
    (tmp_path / "runs").mkdir()
    for run in ("calendar", "tiny", "newest", "harbor", "harbor_csv"):
        (tmp_path / "runs" / run).symlink_to(RUNS / run, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("RLSQL_") and n != "RLSQL_CACHE_DIR"]:
        monkeypatch.delenv(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rlsql.RlsqlWarning)  # a warning is part of some examples
        exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__docs__"})


def test_every_code_block_says_what_it_holds() -> None:
    """An untagged block would escape both checks above: every block is sh, python, sql or text."""
    untagged = [
        f"{path.name}:{start - 1}"
        for path in PAGES
        for lang, start, _ in fenced_blocks(path.read_text(encoding="utf-8"))
        if lang not in _SHELL | {"python", "sql", "text"}
    ]
    assert untagged == []


def test_python_md_covers_the_public_api() -> None:
    text = (DOCS / "python.md").read_text(encoding="utf-8")
    missing = [name for name in rlsql.__all__ if name != "__version__" and f"rlsql.{name}" not in text]
    assert missing == []
    from rlsql.engine.query import QueryResult

    members = [f.name for f in dataclasses.fields(QueryResult) if not f.name.startswith("_")]
    members += [n for n in vars(QueryResult) if not n.startswith("_") and callable(getattr(QueryResult, n))]
    assert [m for m in members if f"`{m}" not in text] == []


def module_files() -> list[str]:
    """Every module file of rlsql/, but a package's __init__.py that holds nothing but its docstring."""
    found = []
    for path in sorted((ROOT / "rlsql").rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        only_doc = all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)
        if path.name == "__init__.py" and only_doc:
            continue
        found.append(path.relative_to(ROOT).as_posix())
    return found


def test_architecture_md_names_every_module_and_package() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert [m for m in module_files() if f"`{m}`" not in text] == []
    packages = sorted({p.parent.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "rlsql").rglob("*.py")})
    assert [p for p in packages if p != "rlsql/" and f"`{p}" not in text] == []


def test_caching_md_names_every_cache_setting() -> None:
    text = (DOCS / "caching.md").read_text(encoding="utf-8")
    settings = [f for f in dataclasses.fields(Settings) if f.name.startswith("cache")]
    assert len(settings) >= 4
    for f in settings:
        assert f"`{f.name}`" in text and f"`{f.metadata['env']}`" in text, f.name
        for flag in filter(None, re.findall(r"--[a-z-]+", f.metadata["flag"])):
            assert f"`{flag}`" in text, flag


def test_variables_the_tests_read() -> None:
    """The variables a doc may name besides Settings': those the test suite itself reads (found in
    tests/, this file left out), e.g. RLSQL_REQUIRE_SPARK; checked here so the list cannot go stale."""
    assert {"RLSQL_REQUIRE_SPARK", "RLSQL_REQUIRE_BROWSER", "RLSQL_UPDATE_GOLDEN"} <= suite_variables()


def suite_variables() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").glob("*.py"):
        if path.name != Path(__file__).name:
            found.update(re.findall(r"[\"'](RLSQL_[A-Z_]+)[\"']", path.read_text(encoding="utf-8")))
    return found


def test_no_page_names_a_variable_rlsql_does_not_read() -> None:
    known = {f.metadata["env"] for f in dataclasses.fields(Settings) if f.metadata["env"]} | suite_variables()
    templates = sorted((ROOT / "rlsql" / "templates").glob("*.j2"))
    named = {
        (path.name, name)
        for path in [*PAGES, *templates]
        for name in re.findall(r"\bRLSQL_[A-Z_]*[A-Z]", path.read_text(encoding="utf-8"))
    }
    assert sorted((page, name) for page, name in named if name not in known) == []


#: what issue 24 deleted: no page may describe it as if it were there
DELETED = (
    "kept answer",
    "answered ahead",
    "quickcli",
    "cachebg",
    "rlsql/ahead",
    "answers.py",
    "sql-analysis",
    "configcache",
    "config cache",
    "detached",
    "spark-sql.json",
)


def test_no_page_describes_a_deleted_mechanism() -> None:
    templates = sorted((ROOT / "rlsql" / "templates").glob("*.j2"))
    benches = sorted((ROOT / "bench").glob("*.py"))  # a bench script must measure what is there
    found = [
        f"{path.name}: {word}"
        for path in [*PAGES, *templates, *benches]
        for word in DELETED
        if word in path.read_text(encoding="utf-8").lower()
    ]
    assert found == []


def test_the_benchmark_sections_pages_cite_exist() -> None:
    """`bench/RESULTS.md, "Cache"` in a page or a comment names a heading there; a citation of the file's
    history (`bench/RESULTS.md at 9434c57, ...`) is left alone."""
    headings = re.findall(r"^#{2,3} (.+)$", (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8"), flags=re.M)
    sources = [*PAGES, *(ROOT / "rlsql").rglob("*.py"), *(ROOT / "tests").glob("*.py"), ROOT / "pyproject.toml"]
    cited = {
        (path.name, title)
        for path in sources
        for title in re.findall(r'bench/RESULTS\.md,\s+(?:#:\s+)?"([^"]+)"', path.read_text(encoding="utf-8"))
    }
    assert cited, "no page cites a section: the pattern above has gone stale"
    assert (
        sorted(
            (page, title) for page, title in cited if not any(h == title or h.startswith(title + " ") for h in headings)
        )
        == []
    )


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 160, f"README.md is {len(lines)} lines: the reference belongs in docs/"
    assert max(len(line) for line in lines) < 200
    # it begins with the two set-up commands on a fresh machine, the ones .ci/run mirrors
    lang, start, setup = next(fenced_blocks(text))
    assert lines[: start - 2] == ["# rlsql", ""] and lang == "sh" and len(setup) == 2
    assert setup[0].endswith("&& pip install . && rlsql query turns_by_exception")
    assert setup[1].endswith("&& pip install '.[test]' && pytest -n auto --dist loadfile")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet --disable-pip-version-check '.[test]'" in ci and "-n auto --dist loadfile" in ci
    # and it sends the reader to every reference page
    assert [p.name for p in sorted(DOCS.glob("*.md")) if f"(docs/{p.name})" not in text] == []
