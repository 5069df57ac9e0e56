"""The Python API, and awkward input: missing columns, header-only files, bad cells, older formats."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rlsql
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

TRIAL_QUERIES = [
    "turn_stats",
    "turn_percentiles",
    "turns_by_exception",
    "turns_by_outcome",
    "exception_distribution",
    "exception_treatment",
    "reward_summary",
    "trial_phases",
]


def test_result_gives_rows_dataframe_and_arrow() -> None:
    result = rlsql.query("turns_by_exception", [RUNS / "tiny"])
    want = oracle.expected("turns_by_exception", [RUNS / "tiny"])
    assert result.columns == list(want[0])
    frame = result.df()
    assert list(frame.columns) == result.columns
    assert frame["trials"].tolist() == [w["trials"] for w in want]
    table = result.arrow()
    assert table.column_names == result.columns
    assert table.column("exception_type").to_pylist() == [w["exception_type"] for w in want]
    assert len(result) == len(want)


@pytest.mark.parametrize(("method", "package"), [("df", "pandas"), ("arrow", "pyarrow")])
def test_frames_without_their_extra_name_the_extra(method: str, package: str, monkeypatch) -> None:
    """A plain install has neither pandas nor pyarrow: rlsql's error names the extra, not DuckDB's."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a))
    result = rlsql.query("turn_stats", [RUNS / "tiny"])
    with pytest.raises(rlsql.UsageError, match=rf"QueryResult.{method}\(\) needs {package}, .*rlsql\[frames\]"):
        getattr(result, method)()


def test_connect_gives_every_view_and_macro() -> None:
    con = rlsql.connect([RUNS / "tiny", RUNS / "newest"])
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"trials", "steps", "metric_rows", "metrics_long", "vllm_seconds", "config", "span_seconds"} <= views
    assert {"turns_by_exception", "best_checkpoint"} <= views
    trials = con.execute("SELECT run, count(*) FROM trials GROUP BY run ORDER BY run").fetchall()
    assert trials == [
        ("newest", len(oracle.read_trials(RUNS / "newest"))),
        ("tiny", len(oracle.read_trials(RUNS / "tiny"))),
    ]


def test_a_connection_sees_a_live_run_grow(tmp_path: Path) -> None:
    """A notebook over a run still training: the next statement reads the steps and trials written since."""
    import shutil

    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    con = rlsql.connect([run])
    # tiny by hand: steps 1-5 in its metrics CSV, 12 trials
    assert con.execute("SELECT max(step), count(*) FROM reward_curve").fetchone() == (5, 5)
    assert con.execute("SELECT trials FROM reward_summary").fetchone() == (12,)
    metrics = next(run.glob("*_metrics_table.csv"))
    header = metrics.read_text().splitlines()[0].split(",")
    row = dict.fromkeys(header, "")
    row.update({"log_file": "job_2", "reward/avg_raw_reward": "0.5", "timing/step": "90.0", "trainer/global_step": "6"})
    with metrics.open("a") as fh:
        fh.write(",".join(row[h] for h in header) + "\n")
    trials = next(run.glob("*_trial_results.csv"))
    last = trials.read_text().splitlines()[-1]
    with trials.open("a") as fh:
        fh.write(last + "\n")
    assert con.execute("SELECT max(step), count(*) FROM reward_curve").fetchone() == (6, 6)
    assert con.execute("SELECT trials FROM reward_summary").fetchone() == (13,)


def test_long_view_holds_every_recorded_metric() -> None:
    con = rlsql.connect([RUNS / "calendar"])
    got = con.execute("SELECT count(*) FROM metrics_long").fetchone()[0]
    rows = oracle.read_metric_rows(RUNS / "calendar")
    # every non-empty numeric cell except log_file, the plain global_step copy and oracle's derived step
    want = sum(1 for r in rows for k, v in r.items() if k not in ("log_file", "global_step", "step") and v is not None)
    assert got == want


def test_config_is_flattened() -> None:
    con = rlsql.connect([RUNS / "calendar"])
    value = con.execute("SELECT value FROM config WHERE key = 'trainer.hf_save_interval'").fetchone()[0]
    assert value == "5"


def make_run(root: Path, name: str, trials: str | None = None, metrics: str | None = None) -> Path:
    run = root / name
    run.mkdir(parents=True)
    if trials is not None:
        (run / "20260301_000000_trial_results.csv").write_text(trials, newline="")
    if metrics is not None:
        (run / "20260301_000000_metrics_table.csv").write_text(metrics, newline="")
    return run


@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_older_trials_file_with_fewer_columns(tmp_path: Path, name: str) -> None:
    # an older parser: no token columns, no durations, columns in another order, CRLF, a UTF-8 BOM
    run = make_run(
        tmp_path,
        "old",
        trials=(
            "\ufeffreward,exception_type,n_episodes,trial_name,task_name\r\n"
            "1.0,,3.0,a__1,a\r\n0.0,AgentTimeoutError,1.0,a__2,a\r\n,DaytonaError,,b__1,b\r\n1.0,,4.0,b__2,b\r\n"
        ),
    )
    assert_rows_match(rlsql.query(name, [run]).to_dicts(), oracle.expected(name, [run]), f"{name} on older file")


@pytest.mark.parametrize("name", ["turn_stats", "reward_summary", "exception_distribution"])
def test_header_only_trials_file(tmp_path: Path, name: str) -> None:
    run = make_run(tmp_path, "empty", trials="task_name,trial_name,n_episodes,exception_type,reward\n")
    assert_rows_match(rlsql.query(name, [run]).to_dicts(), oracle.expected(name, [run]), f"{name} header only")


def test_metrics_with_missing_reward_and_timing_columns(tmp_path: Path) -> None:
    run = make_run(tmp_path, "bare", metrics="log_file,policy/policy_entropy,global_step\njob_1,0.5,1\njob_1,0.4,2\n")
    for name in ("run_overview", "reward_curve", "best_checkpoint", "async_health", "timing_breakdown", "step_timing"):
        assert_rows_match(rlsql.query(name, [run]).to_dicts(), oracle.expected(name, [run]), name)


def test_unreadable_rows_are_skipped_with_a_warning_naming_file_and_line(tmp_path: Path) -> None:
    run = make_run(
        tmp_path,
        "bad",
        trials="task_name,trial_name,n_episodes,exception_type,reward\n"
        "t,t__1,2,,1.0\nt,t__2,abc,,1.0\nt,t__3,4,,0.0,extra\nt,t__4,nan,,1.0\nt,t__5,6",
    )
    with pytest.warns(rlsql.RlsqlWarning) as caught:
        rows = rlsql.query("turn_stats", [run]).to_dicts()
    # by hand: t__1 (2 turns) is read; t__4's nan reads as empty; lines 3, 4 and 6 cannot be read
    assert rows == [{"run": "bad", "trials": 1, "mean": 2.0, "median": 2.0, "std": None, "min": 2, "max": 2}]
    message = " ".join(str(w.message) for w in caught)
    assert str(run / "20260301_000000_trial_results.csv") in message
    assert "skipped 3 unreadable rows" in message
    assert "line 3: column n_episodes: 'abc' is not a number" in message and "line 4: 6 fields, expected 5" in message
    assert "line 6: 3 fields, expected 5" in message


def test_query_names_complete_in_the_shell(rlsql_exe: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"_RLSQL_COMPLETE": "complete_bash", "COMP_WORDS": "rlsql query turns_by", "COMP_CWORD": "2"})
    proc = subprocess.run([rlsql_exe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["turns_by_exception", "turns_by_outcome"], proc.stdout + proc.stderr


def test_importing_rlsql_does_not_import_pandas() -> None:
    code = "import sys, rlsql; rlsql.query('turn_stats'); print('pandas' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
