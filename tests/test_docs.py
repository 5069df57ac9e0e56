"""The generated files live in the repository: sql/manifest.json and docs/queries.md, data-contract.md and
settings.md equal what rlsql.outputs.docs writes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import rlsql
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
    readers = [str(p.relative_to(ROOT)) for p in (ROOT / "rlsql").rglob("*.py")
               if re.search(r"os\.environ|os\.getenv", p.read_text(encoding="utf-8"))]
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
