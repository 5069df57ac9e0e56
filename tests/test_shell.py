"""`rlsql shell-init`, `rlsql shell` and `rlsql db build`, checked with the real DuckDB command-line shell."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from rlsql.outputs.shellinit import duckdb_cli
from tests import oracle
from tests.compare import assert_rows_match, same_value
from tests.conftest import RUNS
from tests.test_cli import one_error_line, run_exe, run_main

TWO_RUNS = [RUNS / "calendar", RUNS / "tiny"]


@pytest.fixture(scope="module")
def duckdb_exe() -> str:
    found = duckdb_cli()
    if found is None:
        pytest.fail("the DuckDB shell is not installed: pip install '.[test]' (it brings duckdb-cli)")
    return found


def run_duckdb(exe: str, args: list[str], cwd: Path) -> list[dict]:
    """Rows of the last statement, from the DuckDB shell's JSON output; any error fails the test."""
    proc = subprocess.run([exe, "-json", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Error" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else []


def run_flags(runs: list[Path]) -> list[str]:
    return [flag for run in runs for flag in ("-r", str(run))]


@pytest.fixture(scope="module")
def init_script(rlsql_exe: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The script as `rlsql shell-init` prints it on stdout, saved by the test."""
    folder = tmp_path_factory.mktemp("init")
    proc = run_exe(rlsql_exe, ["shell-init", *run_flags(TWO_RUNS)], folder)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    script = folder / "rlsql.sql"
    script.write_text(proc.stdout, encoding="utf-8")
    return script


def test_script_in_the_duckdb_shell_matches_rlsql_query(init_script, duckdb_exe, rlsql_exe, tmp_path) -> None:
    # run from an unrelated folder: the script's paths are absolute
    shell_rows = run_duckdb(duckdb_exe, ["-init", str(init_script), "-c", "SELECT * FROM turns_by_exception"], tmp_path)
    proc = run_exe(rlsql_exe, ["query", "turns_by_exception", "-f", "json", *run_flags(TWO_RUNS)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    query_rows = json.loads(proc.stdout)
    assert [list(r) for r in shell_rows] == [list(r) for r in query_rows]
    for got, want in zip(shell_rows, query_rows, strict=True):
        assert all(same_value(got[k], want[k]) for k in want), (got, want)
    assert_rows_match(shell_rows, oracle.expected("turns_by_exception", TWO_RUNS), "duckdb shell")


def test_parameters_are_shell_variables(init_script, duckdb_exe, tmp_path) -> None:
    rows = run_duckdb(
        duckdb_exe, ["-init", str(init_script), "-c", "SET VARIABLE span = 2; FROM reward_curve"], tmp_path
    )
    assert_rows_match(rows, oracle.expected("reward_curve", TWO_RUNS, span=2), "span = 2 in the shell")
    script = init_script.read_text()
    assert "--   SET VARIABLE span = 10\n" in script  # the header says how (no ";": harlequin splits on it)
    assert str(RUNS.resolve() / "tiny") in script


def test_every_object_carries_its_description(init_script, duckdb_exe, tmp_path) -> None:
    catalog = load_catalog()
    views = run_duckdb(
        duckdb_exe,
        ["-init", str(init_script), "-c", "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal"],
        tmp_path,
    )
    # the script writes no ";" but statement ends (harlequin splits on them): a description's becomes ","
    want = {f.name: f.description.replace(";", ",") for f in catalog.order if f.kind != "macro"}
    assert {v["view_name"]: v["comment"] for v in views} == want
    names = ", ".join(f"'{f.name}'" for f in catalog.order if f.kind == "macro")
    macros = run_duckdb(
        duckdb_exe,
        [
            "-init",
            str(init_script),
            "-c",
            f"SELECT DISTINCT function_name, comment FROM duckdb_functions() WHERE function_name IN ({names})",
        ],
        tmp_path,
    )
    assert {m["function_name"]: m["comment"] for m in macros} == {
        f.name: f.description.replace(";", ",") for f in catalog.order if f.kind == "macro"
    }


def test_shell_command_starts_the_cli(rlsql_exe, duckdb_exe, tmp_path) -> None:
    proc = run_exe(rlsql_exe, ["shell", "-r", str(RUNS / "tiny"), "--", "-json", "-c", "FROM turn_stats"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_rows_match(json.loads(proc.stdout), oracle.expected("turn_stats", [RUNS / "tiny"]), "rlsql shell -c")
    assert not list(tmp_path.iterdir())  # the init script went to the temp folder, and is gone


def test_shell_without_the_cli_says_how_to_install(capsys, monkeypatch) -> None:
    monkeypatch.setattr("rlsql.outputs.shellinit.duckdb_cli", lambda: None)
    code, out, err = run_main(["shell", "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert "pip install 'rlsql[shell]'" in one_error_line(err)


def _metadata(exe: str, db: Path, cwd: Path) -> dict[str, str]:
    rows = run_duckdb(exe, ["-readonly", str(db), "-c", "SELECT key, value FROM rlsql_metadata"], cwd)
    return {r["key"]: r["value"] for r in rows}


@pytest.mark.slow
def test_db_build_opens_in_the_duckdb_shell(duckdb_exe, tmp_path, capsys, monkeypatch) -> None:
    db = tmp_path / "out" / "runs.duckdb"
    for _ in range(2):  # the second build replaces the first (in-process: the shell is the other side here)
        code, _, err = run_main(["db", "build", str(db), *run_flags(TWO_RUNS)], capsys, monkeypatch)
        assert code == 0, err
    assert [p.name for p in db.parent.iterdir()] == ["runs.duckdb"]
    rows = run_duckdb(duckdb_exe, ["-readonly", str(db), "-c", "FROM turn_stats"], tmp_path)
    assert_rows_match(rows, oracle.expected("turn_stats", TWO_RUNS), "db file in the duckdb shell")
    meta = _metadata(duckdb_exe, db, tmp_path)
    assert meta["rlsql_version"] == rlsql.__version__
    assert meta["duckdb_version"] == duckdb.__version__
    assert meta["materialized"] == "false"
    assert [r["name"] for r in json.loads(meta["runs"])] == ["calendar", "tiny"]
    sources = json.loads(meta["sources"])
    want = sorted(str(p.resolve()) for run in TWO_RUNS for p in oracle.find_artifacts(run).values() if p)
    assert sorted(s["path"] for s in sources) == want
    for source in sources:
        data = Path(source["path"]).read_bytes()
        assert (source["size"], source["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    tables = run_duckdb(
        duckdb_exe,
        ["-readonly", str(db), "-c", "SELECT table_type, count(*) AS n FROM information_schema.tables GROUP BY ALL"],
        tmp_path,
    )
    assert {t["table_type"]: t["n"] for t in tables} == {
        "VIEW": sum(1 for f in load_catalog().order if f.kind != "macro"),
        "BASE TABLE": 1,
    }


def test_db_build_names_a_csv_whose_line_endings_its_views_cannot_read(tmp_path, capsys, monkeypatch) -> None:
    """Issue 42 item 3: a live CSV whose last appended row ends in CRLF (the rest LF). rlsql's queries read it (a
    line-bounded copy), but the database's views read the file itself, and DuckDB's parser fails a file whose line
    endings are mixed (strict_mode=false would read it, and would as silently swallow the rest of a file after a
    quote that never closes): db build says so, naming the file and the line, and builds the rest."""
    import pandas as pd

    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    metrics = run / "20260105_120000_metrics_table.csv"
    lines = metrics.read_bytes().splitlines()
    metrics.write_bytes(metrics.read_bytes() + lines[-1] + b"\r\n")
    db = tmp_path / "out.duckdb"
    code, _, err = run_main(["db", "build", str(db), "-r", str(run)], capsys, monkeypatch)
    assert code == 0, err
    named = [line for line in err.splitlines() if str(metrics) in line]
    assert named == [
        f"rlsql: warning: {metrics}:{len(lines) + 1}: its lines end in LF and this one in CRLF: DuckDB cannot "
        "parse the file, so the database's views of it fail (rlsql's queries read it)"
    ], err
    # the rows rlsql reads are pandas' (the last row twice)
    want = pd.read_csv(metrics)
    rows = rlsql.query("reward_curve", [run]).to_dicts()
    assert len(want) == len(lines) and [r["step"] for r in rows] == sorted(set(want["trainer/global_step"]))
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM trials").fetchone() == (len(oracle.read_trials(run)),)
    # an unmixed file is no warning
    metrics.write_bytes(b"\n".join(lines) + b"\n")
    code, _, err = run_main(["db", "build", str(db), "-r", str(run)], capsys, monkeypatch)
    assert code == 0 and str(metrics) not in err, err


def test_db_build_materialized_needs_no_csv(duckdb_exe, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    want_trials = len(oracle.read_trials(run))
    want_stats = oracle.expected("turn_stats", [run])
    want_curve = oracle.expected("reward_curve", [run], span=2)
    db = tmp_path / "tiny.duckdb"
    code, _, err = run_main(["db", "build", str(db), "-r", str(run), "--materialize"], capsys, monkeypatch)
    assert code == 0, err
    shutil.rmtree(run)  # the tables hold the data now
    rows = run_duckdb(duckdb_exe, ["-readonly", str(db), "-c", "SELECT count(*) AS n FROM trials"], tmp_path)
    assert rows == [{"n": want_trials}]
    assert_rows_match(
        run_duckdb(duckdb_exe, ["-readonly", str(db), "-c", "FROM turn_stats"], tmp_path),
        want_stats,
        "materialized turn_stats",
    )
    # named queries stay views, so their parameters still work
    assert_rows_match(
        run_duckdb(duckdb_exe, ["-readonly", str(db), "-c", "SET VARIABLE span = 2; FROM reward_curve"], tmp_path),
        want_curve,
        "materialized reward_curve, span = 2",
    )
    assert _metadata(duckdb_exe, db, tmp_path)["materialized"] == "true"


def test_db_build_refuses_a_run_folder_and_a_folder(tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_main(
        ["db", "build", str(RUNS / "tiny" / "x.duckdb"), "-r", str(RUNS / "tiny")], capsys, monkeypatch
    )
    assert code == 2 and "run folder" in one_error_line(err)
    code, _, err = run_main(["db", "build", str(tmp_path), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 2 and "folder" in one_error_line(err)
    assert not (RUNS / "tiny" / "x.duckdb").exists()
    assert os.listdir(tmp_path) == []


def test_awkward_folder_names_stay_data(duckdb_exe, tmp_path, capsys, monkeypatch) -> None:
    """A quote, a semicolon and a line break in a run's folder name reach the script only as escaped text."""
    name = "it's\nDROP VIEW trials; --"
    run = tmp_path / name
    shutil.copytree(RUNS / "tiny", run)
    code, out, err = run_main(["shell-init", "-r", str(run)], capsys, monkeypatch)
    assert code == 0, err
    script = tmp_path / "init.sql"
    script.write_text(out, encoding="utf-8")
    rows = run_duckdb(
        duckdb_exe, ["-init", str(script), "-c", "SELECT run, count(*) AS n FROM trials GROUP BY run"], tmp_path
    )
    assert rows == [{"run": name, "n": len(oracle.read_trials(run))}]
