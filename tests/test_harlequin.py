"""The init script in harlequin: its DuckDB adapter splits the script on every `;` and fetches each piece.

The first tests split the script exactly that way without harlequin; the last ones drive the real
harlequin from PyPI (headless: the adapter's connect with the init path, then its catalog).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from rlsql.outputs.shellinit import init_script, without_semicolons
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.conftest import RUNS


def awkward_run(tmp_path: Path) -> Path:
    """The tiny run in a folder whose name holds a `;`, with a config value holding one too."""
    run = tmp_path / "semi;colon run"
    shutil.copytree(RUNS / "tiny", run)
    config = run / "rl_config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "notes:\n  comment: 'first; second'\n", encoding="utf-8")
    return run


def harlequin_pieces(script: str) -> list[str]:
    """What harlequin 2.17's DuckDB adapter executes: every piece between two `;` that is not blank."""
    return [piece for piece in script.split(";") if piece.strip()]


def statement_count(script: str) -> int:
    # each statement ends with `;` at the end of a line (shellinit writes them so)
    return sum(1 for line in script.splitlines() if line.rstrip().endswith(";"))


@pytest.mark.parametrize("runs", [["tiny"], ["tiny", "calendar", "newest"], ["awkward"]])
def test_every_semicolon_ends_a_statement(runs, tmp_path: Path) -> None:
    folders = [awkward_run(tmp_path) if name == "awkward" else RUNS / name for name in runs]
    script = init_script(resolve_runs(folders))
    pieces = harlequin_pieces(script)
    assert len(pieces) == statement_count(script) == script.count(";")
    con = duckdb.connect()
    for piece in pieces:
        con.execute(piece).fetchall()  # a piece that is only a comment would fail here (no result to fetch)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"trials", "steps", "reward_curve", "compare_runs", "training_progression"} <= views
    # the rewritten literals still mean the same: the run's path and the differing config read back whole
    paths = {r[0] for r in con.execute("SELECT run_path FROM runs").fetchall()}
    assert paths == {str(f.resolve()) for f in folders}


def test_awkward_values_survive_the_rewrite(tmp_path: Path) -> None:
    run = awkward_run(tmp_path)
    con = duckdb.connect()
    for piece in harlequin_pieces(init_script(resolve_runs([run]))):
        con.execute(piece).fetchall()
    value = con.execute("SELECT value FROM config WHERE key = 'notes.comment'").fetchall()
    assert value == [("first; second",)]
    turns = con.execute("SELECT trials FROM turn_stats").fetchall()
    assert turns == [(oracle.expected("turn_stats", [RUNS / "tiny"])[0]["trials"],)]


def test_compare_runs_keeps_its_separator(tmp_path: Path) -> None:
    # differing_config joins keys with '; ' in the SQL file; in the script that literal is chr(59) || ' '
    con = duckdb.connect()
    script = init_script(resolve_runs([RUNS / "tiny", RUNS / "calendar"]))
    for piece in harlequin_pieces(script):
        con.execute(piece).fetchall()
    differing = [r[0] for r in con.execute("SELECT differing_config FROM compare_runs").fetchall()]
    assert any("; " in (d or "") for d in differing), differing


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("SELECT 'a;b' AS x", "SELECT ('a' || chr(59) || 'b') AS x"),
        ("SELECT 1 -- one; two\n", "SELECT 1 -- one, two\n"),
        ("SELECT /* x;y */ 2", "SELECT /* x,y */ 2"),
        ("COMMENT ON VIEW v IS 'a; b'", "COMMENT ON VIEW v IS 'a, b'"),
        ("SELECT 'it''s; ok'", "SELECT ('it''s' || chr(59) || ' ok')"),
        ("SELECT 1", "SELECT 1"),
    ],
)
def test_without_semicolons(sql, want) -> None:
    assert without_semicolons(sql) == want


def test_harlequin_connects_with_the_init_script(tmp_path: Path) -> None:
    # the test extra installs harlequin (the README's test command): without it this fails, never skips
    from harlequin_duckdb.adapter import DuckDbAdapter

    path = tmp_path / "rlsql.sql"
    path.write_text(init_script(resolve_runs([RUNS / "tiny", awkward_run(tmp_path)])), encoding="utf-8")
    connection = DuckDbAdapter(conn_str=(":memory:",), init_path=path).connect()
    assert "Executed" in connection.init_message
    # the catalog harlequin shows: database > schema > views, each view with its columns
    catalog = connection.get_catalog()
    schemas = [schema for db in catalog.items for schema in db.fetch_children()]
    main = next(s for s in schemas if s.label == "main")
    views = {item.label: item for item in main.fetch_children()}
    assert {"trials", "trial_rows", "steps", "reward_curve", "compare_runs", "vllm_summary"} <= set(views)
    columns = [c.label for c in views["turn_stats"].fetch_children()]
    assert sorted(columns) == ["max", "mean", "median", "min", "run", "std", "trials"]  # as queries.md lists them
    cursor = connection.execute("SELECT run, trials FROM turn_stats ORDER BY run")
    assert cursor is not None
    table = cursor.fetchall()  # harlequin's DuckDB cursor hands back an Arrow table
    n = oracle.expected("turn_stats", [RUNS / "tiny"])[0]["trials"]
    assert table.to_pylist() == [{"run": "semi;colon run", "trials": n}, {"run": "tiny", "trials": n}]


def test_descriptions_of_views_queries_and_macros_hold_no_semicolon() -> None:
    # they are attached with COMMENT ON, which takes a literal only: a ";" there would reach the script as ","
    root = Path(__file__).resolve().parent.parent / "sql"
    offending = [
        f"{path.relative_to(root)}: {line[:60]}"
        for folder in ("views", "queries", "macros")
        for path in sorted((root / folder).glob("*.sql"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("--")
        and not line.startswith("-- name:")
        and ";" in line
        and line in path.read_text(encoding="utf-8").split("\n\n")[0]  # the header block only
    ]
    assert offending == []
