"""Every column of every view and named query has a one-line description, and it reaches DuckDB's catalog."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import duckdb
import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.sqlfile import parse_header as _parse_header
from rlsql.core.errors import CatalogError
from rlsql.core.sqltext import identifier
from rlsql.engine.statements import column_types, open_connection
from rlsql.outputs.shellinit import init_script
from rlsql.runs.folders import resolve_runs
from tests.compare import result_columns
from tests.conftest import RUNS

ROOT = Path(__file__).resolve().parent.parent
SELECTABLE = [f.name for f in load_catalog().files.values() if f.kind in ("view", "query")]


@pytest.fixture(scope="module")
def columns_by_run(bound_columns) -> dict[str, dict[str, list[str]]]:
    """name -> run set -> the columns DuckDB binds (each fixture run alone, then all of them together)."""
    return {
        name: {label: [c for c, _ in columns] for label, columns in sets.items()}
        for name, sets in bound_columns.items()
    }


def test_bound_columns_are_the_ones_describe_binds() -> None:
    """The shared connection (conftest.bound_columns) binds a view to the columns and types `rlsql describe`
    gives it (spot check: tiny)."""
    runs = resolve_runs([RUNS / "tiny"])
    con = open_connection(runs)
    for name in ("trials", "metric_rows", "vllm_seconds", "reward_curve", "timing_breakdown", "run_overview"):
        bound = result_columns(con.execute(f"SELECT * FROM {identifier(name)} LIMIT 0"))
        assert bound == column_types(name, runs), name


@pytest.mark.parametrize("name", SELECTABLE)
def test_no_column_lacks_a_description(name: str, columns_by_run) -> None:
    f = load_catalog().files[name]
    assert columns_by_run.get(name), f"{name} did not bind over any fixture run"
    for label, columns in columns_by_run[name].items():
        undocumented = [c for c in columns if not f.column_doc(c)]
        assert undocumented == [], f"{f.path} over {label}: no `-- column:` line for {undocumented}"
    # and no description of a column that does not exist (a renamed column leaves a stale line)
    everywhere = {c for columns in columns_by_run[name].values() for c in columns}
    stale = sorted(set(f.column_docs) - everywhere - {"*"})
    assert stale == [], f"{f.path}: documents columns it does not have: {stale}"
    for column, text in f.column_docs.items():
        assert text and "\n" not in text and len(text) <= 200, (name, column)


def test_every_view_column_has_its_comment_in_duckdb() -> None:
    con = rlsql.connect([RUNS / "calendar", RUNS / "harbor"])
    rows = con.execute("SELECT table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal").fetchall()
    by_view = {f.name: f for f in load_catalog().files.values() if f.kind in ("view", "query")}
    checked = 0
    for table, column, comment in rows:
        if table in by_view:
            assert comment, f"{table}.{column} has no comment"
            checked += 1
    assert checked > 300
    # spot checks, written out by hand
    comments = {(t, c): m for t, c, m in rows}
    assert comments[("trials", "reward")].startswith("the verifier's raw reward")
    assert comments[("metric_rows", "reward/avg_raw_reward")].startswith("a trainer metric as the CSV names it")


def test_shell_init_script_carries_the_column_comments(tmp_path: Path) -> None:
    script = tmp_path / "rlsql.sql"
    script.write_text(init_script(resolve_runs([RUNS / "tiny"])), encoding="utf-8")
    duckdb_exe = (
        Path(subprocess.check_output(["python", "-c", "import sys; print(sys.executable)"], text=True).strip()).parent
        / "duckdb"
    )
    con = duckdb.connect()
    for piece in script.read_text(encoding="utf-8").split(";"):
        if piece.strip():
            con.execute(piece).fetchall()
    comment = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'turn_stats' AND column_name = 'median'"
    ).fetchone()[0]
    assert comment == "median turns (mean of the two middle values for an even count)"
    if duckdb_exe.exists():  # the DuckDB shell reads the same script
        proc = subprocess.run(
            [
                str(duckdb_exe),
                "-init",
                str(script),
                "-csv",
                "-noheader",
                "-c",
                "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'trials' AND coalesce(comment, '') = ''",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "0"


def test_db_build_carries_the_column_comments(tmp_path: Path) -> None:
    from rlsql.outputs.dbfile import build_database

    target = tmp_path / "runs.duckdb"
    build_database(resolve_runs([RUNS / "tiny"]), target)
    con = duckdb.connect(str(target), read_only=True)
    comment = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'trials' AND column_name = 'task_name'"
    ).fetchone()[0]
    assert comment == "the task the trial ran (e.g. calendar-0042), several trials per task"


def test_header_values_may_go_on_over_several_lines() -> None:
    text = (
        "-- name: wrapped\n-- version: 2\n"
        "-- description: first part\n--   second part: with a colon\n--     third\n"
        "-- column: a: the a\n--   column, wrapped\n"
        "-- column: b/c: a name with a slash\n"
        "-- column: *: every other column\n"
        "SELECT 1 AS a\n-- a comment in the body stays\n"
    )
    f = _parse_header(text, "sql/views/wrapped.sql", "view")
    assert f.description == "first part second part: with a colon third"
    assert f.column_docs == {"a": "the a column, wrapped", "b/c": "a name with a slash", "*": "every other column"}
    assert f.column_doc("zzz") == "every other column"
    assert f.body == "SELECT 1 AS a\n-- a comment in the body stays"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("--   dangling\n-- name: x\n", "continuation"),
        ("-- name: x\n-- version: 1\n-- description: d\n-- column: a: one\n-- column: a: two\nSELECT 1\n", "twice"),
        ("-- name: x\n-- version: 1\n-- description: d\n-- column: no description\nSELECT 1\n", "column line"),
    ],
)
def test_bad_column_headers_are_catalog_errors(text, needle) -> None:
    with pytest.raises(CatalogError, match=needle):
        _parse_header(text, "sql/views/x.sql", "view")


def test_header_lines_are_wrapped() -> None:
    # issue 10: descriptions were single lines of 300-600 characters
    long_lines = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("views", "queries")
        for path in sorted((ROOT / "sql" / folder).glob("*.sql"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.match(r"^--", line) and len(line) > 120
    ]
    assert long_lines == []


def test_export_writes_the_column_descriptions_into_parquet(tmp_path: Path) -> None:
    import json

    import pyarrow.parquet as pq

    from rlsql.outputs.export import export, select_items

    runs = resolve_runs([RUNS / "tiny"])
    export(runs, select_items(["trials", "turn_stats"], False, False), tmp_path, "parquet", progress=lambda _: None)
    meta = pq.read_metadata(tmp_path / "turn_stats.parquet").metadata
    columns = json.loads(meta[b"rlsql.columns"])
    assert list(columns) == ["run", "trials", "mean", "median", "std", "min", "max"]
    assert columns["std"] == "sample standard deviation of turns (n-1)"
    trials = json.loads(pq.read_metadata(tmp_path / "trials.parquet").metadata[b"rlsql.columns"])
    assert trials["effective_treatment"].startswith("the treatment the trial really got")


def test_parquet_declares_every_column_optional_whatever_the_data(tmp_path: Path) -> None:
    # issue 16: NOT NULL flags followed the data (a run column from a loaded table came out `required`)
    import pyarrow.parquet as pq

    from rlsql.outputs.export import export, select_items

    schemas = []
    for label, folders in (("tiny", [RUNS / "tiny"]), ("two", [RUNS / "tiny", RUNS / "calendar"])):
        out = tmp_path / label
        export(
            resolve_runs(folders),
            select_items(["turn_stats", "run_overview", "trials"], False, False),
            out,
            "parquet",
            progress=lambda _: None,
        )
        for name in ("turn_stats", "run_overview", "trials"):
            schema = pq.read_schema(out / f"{name}.parquet")
            assert all(field.nullable for field in schema), (label, name, schema)
            schemas.append((name, [(f.name, str(f.type)) for f in schema]))
    assert schemas[:3] == schemas[3:]
    rows = pq.read_table(tmp_path / "tiny" / "turn_stats.parquet").to_pylist()
    assert len(rows) == 1 and rows[0]["run"] == "tiny"  # the NULL branch never yields a row
