"""Golden files (in the style of sqlglot's fixtures and harlequin's snapshots): what rlsql prints, kept in
tests/golden/ and compared byte for byte, so any change to a help text, a listing, the shell-init
script or the report shows up as a reviewable diff.

After a deliberate change: `pytest tests/test_golden.py --update-golden` (or RLSQL_UPDATE_GOLDEN=1)
rewrites the files; read `git diff tests/golden` before committing them. What differs between machines
is normalised first: the checkout's absolute path becomes <ROOT>, rlsql's and DuckDB's versions
become <version>; `rlsql list`'s fingerprints become <fingerprint>. Help is rendered at 100 columns
without colour, whatever the terminal.

Beside the goldens: every command has help text, every option and argument says what it does, and
every command appears in the README.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
import typer.main
import typer.rich_utils
from typer.testing import CliRunner

from rlsql import __version__
from rlsql.cli.app import app
from tests.conftest import ROOT, RUNS

GOLDEN = Path(__file__).resolve().parent / "golden"
HELP_WIDTH = 100


def normalise(text: str) -> str:
    """`text` without what depends on the machine: the checkout's path and the versions."""
    text = text.replace(str(ROOT), "<ROOT>")
    text = text.replace(f"rlsql {__version__}", "rlsql <version>")
    return text.replace(f"DuckDB {duckdb.__version__}", "DuckDB <version>")


def check_golden(name: str, actual: str, update: bool) -> None:
    """`actual` equals tests/golden/`name`; with the update flag, the file is rewritten to `actual` instead."""
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run pytest tests/test_golden.py --update-golden")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), f"golden/{name}", "now", lineterm="")
        shown = "\n".join(list(diff)[:80])
        pytest.fail(f"{name} differs from its golden file (after a deliberate change: --update-golden):\n{shown}")


# -- the command tree ---------------------------------------------------------------------------------


def is_group(command: Any) -> bool:
    """A command with subcommands (typer carries its own copy of click, so no isinstance on click's classes)."""
    return isinstance(getattr(command, "commands", None), dict)


def command_tree() -> dict[tuple[str, ...], Any]:
    """Every command and group by its path under `rlsql` (the root is the empty path)."""
    found: dict[tuple[str, ...], Any] = {}

    def walk(path: tuple[str, ...], command: Any) -> None:
        found[path] = command
        if is_group(command):
            for name, sub in command.commands.items():
                walk((*path, name), sub)

    walk((), typer.main.get_command(app))
    return found


COMMANDS = command_tree()
LEAVES = [path for path, command in COMMANDS.items() if not is_group(command)]


def golden_name(path: tuple[str, ...]) -> str:
    return "help/" + "-".join(("rlsql", *path)) + ".txt"


@pytest.fixture
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Help as a 100-column terminal without colour would show it, whatever this one is (CI forces colour)."""
    for name in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TERMINAL_WIDTH", "CLICOLOR_FORCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", str(HELP_WIDTH))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    # typer reads its width and colour settings once, at import: set them the same way
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", HELP_WIDTH)
    monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", False)
    monkeypatch.setattr(typer.rich_utils, "COLOR_SYSTEM", None)


def invoke(args: list[str]) -> str:
    result = CliRunner().invoke(app, args, prog_name="rlsql")
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(("rlsql", *p)))
def test_help(path: tuple[str, ...], plain_terminal: None, update_golden: bool) -> None:
    text = invoke([*path, "--help"])
    assert "\x1b[" not in text  # no colour codes
    assert max(len(line) for line in text.splitlines()) <= HELP_WIDTH
    check_golden(golden_name(path), normalise(text), update_golden)


def test_every_golden_help_file_is_a_command() -> None:
    """A removed or renamed command leaves no golden file behind."""
    expected = {golden_name(path) for path in COMMANDS}
    present = {f"help/{p.name}" for p in (GOLDEN / "help").glob("*.txt")}
    assert sorted(present - expected) == []


_FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def masked_fingerprints(listing: str) -> str:
    """`rlsql list` with each `fingerprint HEX` as `fingerprint <fingerprint>`: every SQL edit changes a
    fingerprint (tests/test_catalog.py tests them), so the golden holds only the rest of the listing.
    Each entry's heading must still hold a fingerprint."""
    masked = []
    for line in listing.splitlines(keepends=True):
        if line[:1].strip():  # an entry's heading: `name  version N  fingerprint HEX`
            head, sep, value = line.rstrip("\n").rpartition("  fingerprint ")
            assert sep and _FINGERPRINT.fullmatch(value), f"no fingerprint in an entry's heading: {line!r}"
            line = f"{head}{sep}<fingerprint>\n"
        masked.append(line)
    return "".join(masked)


@pytest.mark.parametrize("args", [["list"], ["list", "--views"]], ids=" ".join)
def test_listing(args: list[str], plain_terminal: None, update_golden: bool) -> None:
    text = masked_fingerprints(invoke(args))
    check_golden("-".join(("rlsql", *args)).replace("--", "") + ".txt", normalise(text), update_golden)


@pytest.mark.parametrize("width", [50, 80])
def test_listing_fits_the_terminal_and_keeps_every_word(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rlsql list` printed a table thousands of columns wide; it fits the terminal's width (COLUMNS), wrapping
    (never cutting) each description: only a single word longer than the width may run past it."""
    from rlsql.catalog.catalog import load_catalog

    monkeypatch.setenv("COLUMNS", str(width))
    text = invoke(["list", "--views"])
    for line in text.splitlines():
        assert len(line) <= width or len(line.split()) == 1, line
    words = text.split()
    for f in load_catalog().views():
        title = [f.name, "version", str(f.version), "fingerprint", f.fingerprint]
        at = next(i for i in range(len(words)) if words[i : i + 5] == title)
        assert words[at + 5 : at + 5 + len(f.description.split())] == f.description.split(), f.name


_CREATED = re.compile(r"^CREATE OR REPLACE (?P<kind>VIEW|TABLE|MACRO)\s+\"?(?P<name>[a-z_0-9]+)\"?", re.M)


def test_shell_init_script_over_the_tiny_run(update_golden: bool) -> None:
    """The script's behaviour, not a copy of sql/: which objects it creates, of which kind, in which
    order (a source's stand-in first, then the views over it, then the source for real), each with its
    catalogue fingerprint (which a comment edit keeps and a logic edit changes)."""
    from rlsql.catalog.catalog import load_catalog

    text = invoke(["shell-init", "--run", str(RUNS / "tiny")])
    assert str(RUNS / "tiny") in text  # absolute paths
    files = load_catalog().files
    lines = [f"{m['kind'].lower()} {m['name']} {files[m['name']].fingerprint}" for m in _CREATED.finditer(text)]
    assert {name for _, name, _ in (line.split() for line in lines)} == set(files)
    check_golden("shell-init-tiny.txt", "\n".join(lines) + "\n", update_golden)


def test_report_md_of_the_tiny_run(tiny_report: Path, update_golden: bool) -> None:
    text = (tiny_report / "report.md").read_text(encoding="utf-8")
    check_golden("report-tiny.md", normalise(text), update_golden)


# -- help text and the README -------------------------------------------------------------------------


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(("rlsql", *p)))
def test_every_command_and_option_has_help(path: tuple[str, ...]) -> None:
    command = COMMANDS[path]
    assert (command.help or "").strip(), f"rlsql {' '.join(path)} has no help text"
    silent = [
        param.name
        for param in command.params
        if not (getattr(param, "help", None) or "").strip() and param.name not in {"help"}
    ]
    assert silent == [], f"rlsql {' '.join(path)}: options or arguments without help"


@pytest.mark.parametrize("path", LEAVES, ids=lambda p: " ".join(("rlsql", *p)))
def test_every_command_appears_in_the_readme(path: tuple[str, ...]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # "rlsql shell" must not be found inside "rlsql shell-init"
    pattern = r"\brlsql " + r"\s+".join(map(re.escape, path)) + r"(?![\w-])"
    assert re.search(pattern, readme), f"README.md never shows `rlsql {' '.join(path)}`"
