"""Harbor trial folders read in place: `trace_jobs/<trial>/result.json` answers the trial queries.

fixtures/runs/harbor holds 59 result.json files laid out as Harbor 0.25 writes them;
fixtures/runs/harbor_csv holds the trials CSV the log parser makes of the same trials. Every
trial query must give the same rows on both, and the CSV run must match tests/oracle.py.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.cli import app as cli
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

HARBOR, PARSED = RUNS / "harbor", RUNS / "harbor_csv"
TRIAL_QUERIES = [
    "turn_stats", "turn_percentiles", "turns_by_exception", "turns_by_outcome", "exception_distribution",
    "exception_treatment", "reward_summary", "trial_phases",
]  # fmt: skip


def without_run(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "run"} for row in rows]


@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_trace_jobs_answer_like_the_parsed_csv(name: str) -> None:
    from_json = rlsql.query(name, [HARBOR]).to_dicts()
    from_csv = rlsql.query(name, [PARSED]).to_dicts()
    assert from_json, f"{name} gave no rows on the Harbor run"
    assert_rows_match(without_run(from_json), without_run(from_csv), f"{name}: trace_jobs vs its CSV")
    assert_rows_match(from_csv, oracle.expected(name, [PARSED]), f"{name} on harbor_csv vs the oracle")
    assert_rows_match(from_json, oracle.expected(name, [HARBOR]), f"{name} on harbor vs the oracle")


def test_trials_view_is_the_same_row_for_row() -> None:
    """harbor_csv keeps the trace_jobs/ its CSV was parsed from, which fills what the CSV lacks: every column
    of the trials view is the Harbor run's, messages and stamps included."""
    columns = (
        "row_no, task_name, trial_name, n_episodes, n_input_tokens, n_output_tokens, exception_type, reward, "
        "outcome, agent_duration_sec, trial_duration, environment_setup_duration, agent_setup_duration, "
        "agent_execution_duration, verifier_duration, treatment, effective_treatment, exception_message, "
        "started_at, finished_at"
    )
    con = rlsql.connect([HARBOR, PARSED])
    rows = {
        run: con.execute(f"SELECT {columns} FROM trials WHERE run = '{run}' ORDER BY row_no").fetchall()
        for run in ("harbor", "harbor_csv")
    }
    assert len(rows["harbor"]) == 59
    for got, want in zip(rows["harbor"], rows["harbor_csv"], strict=True):
        assert got[:10] == want[:10] and got[15:] == want[15:]
        for g, w in zip(got[10:15], want[10:15], strict=True):
            assert g == pytest.approx(w, abs=1e-9) if w is not None else g is None


def test_extra_fields_are_readable() -> None:
    con = rlsql.connect([HARBOR, PARSED])
    messages = con.execute(
        "SELECT DISTINCT exception_message FROM trials WHERE run = 'harbor' AND exception_type = 'DaytonaError'"
    ).fetchall()
    assert messages == [("Failed to create sandbox: internal server error",)]
    started, finished, unfinished = con.execute(
        "SELECT count(started_at), count(finished_at), count(*) FILTER (WHERE finished_at IS NULL) "
        "FROM trials WHERE run = 'harbor'"
    ).fetchone()
    assert (started, finished, unfinished) == (59, 58, 1)
    # the CSV has none of them: they come from the trace_jobs/ beside it, by trial_name, as the oracle reads them
    got = con.execute(
        "SELECT trial_name, exception_message, started_at, finished_at FROM trials WHERE run = 'harbor_csv' "
        "ORDER BY row_no"
    ).fetchall()
    want = [
        (t["trial_name"], t["exception_message"], t["started_at"], t["finished_at"]) for t in oracle.read_trials(PARSED)
    ]
    assert got == want and sum(1 for _, m, _, _ in got if m) == 17
    first = json.loads(next((HARBOR / "trace_jobs").glob("*/result.json")).read_text())
    got = con.execute(
        f"SELECT started_at FROM trials WHERE run = 'harbor' AND trial_name = '{first['trial_name']}'"
    ).fetchone()
    # a TIMESTAMP now: the stamp's instant in UTC (Harbor writes `...Z`), without a time zone
    stamp = dt.datetime.fromisoformat(first["started_at"].replace("Z", "+00:00"))
    assert got == (stamp.astimezone(dt.UTC).replace(tzinfo=None),)


def test_a_folder_holding_only_trace_jobs_is_a_run(tmp_path: Path) -> None:
    run = tmp_path / "bare"
    shutil.copytree(HARBOR / "trace_jobs", run / "trace_jobs")
    (found,) = resolve_runs([tmp_path])  # found as a sub-folder run of tmp_path
    # its trials from result.json, and the agents' trajectories beside them
    assert found.name == "bare" and set(found.artifacts) == {"harbor", "trajectories"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the trials come from result.json
        got = rlsql.query("reward_summary", [run]).to_dicts()
    assert got[0]["trials"] == 59


def test_the_csv_wins_when_a_run_has_both(tmp_path: Path) -> None:
    run = tmp_path / "both"
    shutil.copytree(PARSED, run)  # the CSV and trace_jobs/
    csv_path = next(run.glob("*_trial_results.csv"))
    lines = csv_path.read_text().splitlines(keepends=True)
    csv_path.write_text("".join(lines[:11]))  # header and 10 trials: proves which source is read
    con = rlsql.connect([run])
    assert con.execute("SELECT count(*), count(DISTINCT trial_name) FROM trials").fetchone() == (10, 10)
    assert con.execute("SELECT count(*) FROM harbor_trials_src").fetchone() == (0,)
    assert rlsql.query("reward_summary", [run]).to_dicts()[0]["trials"] == 10


def test_timing_blocks_become_seconds_like_the_parser(tmp_path: Path) -> None:
    """finished_at - started_at as datetime.fromisoformat reads them: offsets honoured, naive pairs
    as wall-clock, a mixed, missing or unreadable pair is NULL."""
    blocks = {
        "utc": ("2026-07-14T06:00:00.250000Z", "2026-07-14T06:01:40.750001Z"),
        "offsets": ("2026-07-14T08:00:00+02:00", "2026-07-14T06:00:30Z"),
        "naive": ("2026-07-14T06:00:00", "2026-07-14T06:00:12.5"),
        "mixed": ("2026-07-14T06:00:00", "2026-07-14T06:00:12Z"),
        "unfinished": ("2026-07-14T06:00:00Z", None),
        "garbage": ("just after lunch", "2026-07-14T06:00:12Z"),
    }
    for i, (label, (start, end)) in enumerate(blocks.items()):
        folder = tmp_path / "run" / "trace_jobs" / f"t{i}__{label}"
        folder.mkdir(parents=True)
        data = {
            "task_name": "t",
            "trial_name": folder.name,
            "agent_execution": {"started_at": start, "finished_at": end},
        }
        (folder / "result.json").write_text(json.dumps(data))
    con = rlsql.connect([tmp_path / "run"])
    got = dict(con.execute("SELECT trial_name, agent_execution_duration FROM trials").fetchall())
    want = {
        f"t{i}__{label}": oracle._seconds({"started_at": s, "finished_at": e})
        for i, (label, (s, e)) in enumerate(blocks.items())
    }
    assert want["t0__utc"] == pytest.approx(100.500001) and want["t1__offsets"] == 30.0
    assert want["t3__mixed"] is None and want["t5__garbage"] is None
    assert got == want


def test_row_order_is_the_sorted_trial_folders(tmp_path: Path) -> None:
    for name in ("b-task__2", "a__1", "a-task__3", "b__0"):
        folder = tmp_path / "run[1]" / "trace_jobs" / name  # glob characters in the run folder name
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"task_name": name[:1], "trial_name": name}))
    con = rlsql.connect([tmp_path])  # the folder of runs: "run[1]" as a --run value would be a glob
    got = [name for (name,) in con.execute("SELECT trial_name FROM trials ORDER BY row_no").fetchall()]
    assert got == sorted(["b-task__2", "a__1", "a-task__3", "b__0"])


def test_a_run_without_any_trials_says_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "rl_config.yaml").write_text("trainer: {max_steps: 1}\n")
    with pytest.raises(rlsql.DataError, match=r"trace_jobs/\*/result\.json"):
        rlsql.query("turn_stats", [tmp_path / "cfg"])


#: a Python (>= 3.12) with Harbor 0.25 installed, for the fixture check below when this one has no Harbor:
#: .ci/run makes one and sets it, and then the check must run
HARBOR_PYTHON_ENV = "RLSQL_HARBOR_PYTHON"
_HARBOR_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
import tempfile
from pathlib import Path
from harbor_runs import check_with_harbor, write_harbor_runs
from trajectory_runs import check_with_harbor as check_trajectories
runs = Path(sys.argv[1]) / "runs"
with tempfile.TemporaryDirectory() as scratch:  # written again, to learn which files are meant to be damaged
    write_harbor_runs(Path(scratch))
print(json.dumps({"results": check_with_harbor(runs / "harbor"),
                  "trajectories": {r: check_trajectories(runs / r) for r in ("harbor", "harbor_csv")}}))
"""


def test_fixture_files_are_what_harbor_writes() -> None:
    """Every fixture result.json round-trips through Harbor's TrialResult model byte for byte, and every
    trajectory through its Trajectory model (the ones meant to be damaged are refused by it): here when
    Harbor imports (it needs Python >= 3.12), else in the Python RLSQL_HARBOR_PYTHON names (.ci/run's)."""
    import importlib.util
    import subprocess

    fixtures = RUNS.parent
    harbor_python = os.environ.get(HARBOR_PYTHON_ENV)
    if importlib.util.find_spec("harbor") is not None:
        command = [sys.executable, "-c", _HARBOR_CHECK, str(fixtures)]
    elif harbor_python:
        command = [harbor_python, "-c", _HARBOR_CHECK, str(fixtures)]
    else:
        pytest.skip(
            f"Harbor needs Python >= 3.12 and is not installed here: set {HARBOR_PYTHON_ENV} to a Python "
            "with `pip install 'harbor==0.25.*'` (.ci/run does)"
        )
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    checked = json.loads(done.stdout)
    # every file of each kind, counted here by glob (continuations numbered cont-0... are no segment)
    assert checked["results"] == len(list(HARBOR.glob("trace_jobs/*/result.json"))) == 59
    for run, n in checked["trajectories"].items():
        files = [
            p
            for p in (RUNS / run).glob("trace_jobs/*/agent/trajectory*.json")
            if not re.search(r"cont-0\d*\.json$", p.name)
        ]
        assert n == len(files) > 15, run


def test_a_result_json_cut_off_mid_write_is_skipped_naming_the_file(tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(HARBOR / "trace_jobs", run / "trace_jobs")
    broken = sorted((run / "trace_jobs").glob("*/result.json"))[3]
    broken.write_text('{"task_name": "calendar-0001", "trial_name": ')  # cut off mid-write
    with pytest.warns(rlsql.RlsqlWarning, match=re.escape(f"{broken} (not valid JSON")):
        got = rlsql.query("reward_summary", [run]).to_dicts()
    assert got[0]["trials"] == 58  # the fixture's 59 trials but the broken one
    # an export reading the same view answers too, with the same one-line warning
    monkeypatch.setattr(sys, "argv", ["rlsql", "export", "trials", "-r", str(run), "-o", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "warning" in line]
    assert stop.value.code == 0 and len(warned) == 1 and str(broken) in warned[0]
    assert list((tmp_path / "out").iterdir())
