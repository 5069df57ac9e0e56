"""The Parquet cache: same results with and without it, a changed CSV is never read from it, it lives
outside the run folders, and `rlsql cache build|status|clear` say what they did."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

import rlsql
from rlsql import cli
from rlsql.catalog import load_catalog
from rlsql.connection import open_connection
from rlsql.runs import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

CSV_RUNS = ["tiny", "calendar", "newest"]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(folder))
    # set (not deleted) so that monkeypatch restores it after `--cache` sets it inside the CLI
    monkeypatch.setenv("RLSQL_CACHE", "")
    return folder


def cli_run(args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def source_sql(runs: list[Path], view: str) -> str:
    con = open_connection(resolve_runs(runs), [view], load=frozenset())
    return con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]


def test_queries_give_the_same_rows_from_the_cache(cache_dir: Path, capsys, monkeypatch) -> None:
    runs = [RUNS / r for r in CSV_RUNS]
    before = {r: digest(RUNS / r) for r in CSV_RUNS}
    run_args = [arg for r in runs for arg in ("-r", str(r))]
    code, out, _ = cli_run(["cache", "build", *run_args, "-f", "json"], capsys, monkeypatch)
    assert code == 0
    built = json.loads(out)
    assert {(b["run"], b["artifact"]) for b in built} == {
        (r, k) for r in CSV_RUNS for k, p in oracle.find_artifacts(RUNS / r).items()
        if p is not None and k in ("metrics", "trials", "vllm")
    }
    assert all(b["state"] == "built" for b in built)
    assert all(Path(p).is_relative_to(cache_dir) for p in digest(cache_dir))  # nothing outside the cache folder
    assert {r: digest(RUNS / r) for r in CSV_RUNS} == before  # nothing written into a run folder
    assert "read_parquet" in source_sql(runs, "trials_src")
    for name in [q.name for q in load_catalog().queries()]:
        assert_rows_match(rlsql.query(name, runs).to_dicts(), oracle.expected(name, runs), f"{name} from the cache")


def test_a_changed_csv_is_read_again(cache_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    trials = next(run.glob("*_trial_results.csv"))
    with trials.open("a") as fh:
        fh.write("calendar-0009,calendar-0009__zzzzzzz,9.0,1,1,,1.0,12.5\n")
    assert "read_parquet" not in source_sql([run], "trials_src")  # the stale copy is not used
    got = rlsql.query("turn_stats", [run]).to_dicts()
    assert_rows_match(got, oracle.expected("turn_stats", [run]), "turn_stats after the CSV changed")
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {Path(e["csv"]).name: e["state"] for e in json.loads(out)}
    assert states[trials.name] == "stale"
    code, _, err = cli_run(["cache", "clear", "--stale"], capsys, monkeypatch)
    assert code == 0 and "removed 2 files" in err
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    assert all(e["state"] == "fresh" for e in json.loads(out))


def test_cache_flag_builds_on_first_use(cache_dir: Path, capsys, monkeypatch) -> None:
    code, out, _ = cli_run(["--cache", "query", "reward_summary", "-r", str(RUNS / "newest"), "-f", "json"],
                           capsys, monkeypatch)
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("reward_summary", [RUNS / "newest"]), "--cache")
    assert len(list(cache_dir.glob("*/*.parquet"))) == 1  # the trials file: the only CSV the query read
    code, _, _ = cli_run(["cache", "clear"], capsys, monkeypatch)
    assert code == 0 and not list(cache_dir.glob("*/*.parquet"))


def test_rows_skipped_at_build_are_still_reported(cache_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "bad"
    run.mkdir()
    (run / "20260301_000000_trial_results.csv").write_text(
        "task_name,trial_name,n_episodes,exception_type,reward\nt,t__1,2,,1.0\nt,t__2,abc,,1.0\n"
    )
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    with pytest.warns(rlsql.RlsqlWarning, match="1 unreadable row"):
        rows = rlsql.query("turn_stats", [run]).to_dicts()
    assert rows[0]["trials"] == 1
