"""Both halves of a Harbor run: a trials CSV beside trace_jobs/ (issue 27, item 5).

The CSV gives the trials; result.json gives, by trial_name, what the CSV lacks (exception_message,
started_at, finished_at, and the durations an older CSV has no column for); `--json-trials` reads
trace_jobs/ outright. Expectations come from tests/oracle.py (plain Python over the files, written from
docs/semantics.md, "Harbor trial folders") and from counts made by hand on runs built here from the
harbor_csv fixture.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import sys
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import rlsql
from rlsql.engine.statements import open_connection, reads_result_files
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.test_cli import run_main

sys.path.insert(0, str(RUNS.parent))
try:
    from harbor_runs import write_trial
finally:
    sys.path.remove(str(RUNS.parent))

PARSED = RUNS / "harbor_csv"
TRIAL_QUERIES = [
    "turn_stats", "turn_percentiles", "turns_by_exception", "turns_by_outcome", "exception_distribution",
    "exception_treatment", "reward_summary", "trial_phases",
]  # fmt: skip
#: the trials view's columns the oracle's rows hold
COLUMNS = [
    "task_name", "trial_name", "n_episodes", "n_input_tokens", "n_output_tokens", "exception_type", "reward",
    "agent_duration_sec", "trial_duration", "environment_setup_duration", "agent_setup_duration",
    "agent_execution_duration", "verifier_duration", "exception_message", "started_at", "finished_at",
]  # fmt: skip
#: the mid-2026 parser's columns (data-contract.md section 3): no phases, agent_duration_sec
OLDER = [
    "task_name",
    "trial_name",
    "n_episodes",
    "n_input_tokens",
    "n_output_tokens",
    "exception_type",
    "reward",
    "agent_duration_sec",
]


def _csv(run: Path) -> Path:
    return next(run.glob("*_trial_results.csv"))


def _rows(run: Path) -> list[dict[str, str]]:
    with _csv(run).open(newline="") as fh:
        return list(csv.DictReader(fh))


def _write(run: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with _csv(run).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def both_run(tmp_path: Path, name: str = "both", older: bool = False) -> Path:
    """harbor_csv (its CSV and the trace_jobs/ it was parsed from) with the awkward cases: the CSV's last 3
    trials gone (finished after the parse: in trace_jobs only), 2 trial folders gone (in the CSV only), and one
    trial named by a second folder that sorts before it, with another message (the first in folder order
    counts). `older`: the CSV in the mid-2026 parser's columns, so the durations come from result.json."""
    run = tmp_path / name
    shutil.copytree(PARSED, run)
    rows = _rows(run)
    trace_jobs = run / "trace_jobs"
    for row in rows[:2]:
        shutil.rmtree(trace_jobs / row["trial_name"])
    twin = json.loads((trace_jobs / rows[5]["trial_name"] / "result.json").read_text())
    twin["exception_info"] = {"exception_type": "NetworkError", "exception_message": "the twin sorts first"}
    write_trial(trace_jobs, "aaa-twin", twin)
    _write(run, OLDER if older else list(rows[0]), [{**r, "agent_duration_sec": ""} for r in rows[:-3]])
    return run


def trials_view(runs: list[Path]) -> list[dict]:
    con = rlsql.connect(runs)
    cursor = con.execute(f"SELECT {', '.join(COLUMNS)} FROM trials ORDER BY run, row_no")
    return [dict(zip(COLUMNS, row, strict=True)) for row in cursor.fetchall()]


@pytest.mark.parametrize("older", [False, True], ids=["newest CSV", "older CSV"])
def test_the_trials_view_is_the_csv_filled_by_trial_name(tmp_path: Path, older: bool) -> None:
    run = both_run(tmp_path, older=older)
    got = trials_view([run])
    want = [{c: t[c] for c in COLUMNS} for t in oracle.read_trials(run)]
    assert_rows_match(got, want, "trials view vs the oracle")
    # by hand: the CSV's 56 trials, no more (3 are in trace_jobs only); the 2 whose folder is gone have no stamp
    assert len(got) == len(_rows(PARSED)) - 3
    assert [r["started_at"] is None for r in got[:3]] == [True, True, False]
    names = [r["trial_name"] for r in _rows(PARSED)]
    assert next(r for r in got if r["trial_name"] == names[5])["exception_message"] == "the twin sorts first"
    # durations: an older CSV has none, so they are result.json's; a newest CSV keeps its own
    assert sum(r["agent_execution_duration"] is not None for r in got) == sum(
        bool(r["agent_execution_duration"]) for r in _rows(PARSED)[2 if older else 0 : -3]
    )


@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_trial_queries_match_the_oracle(tmp_path: Path, name: str) -> None:
    runs = [both_run(tmp_path, "newer"), both_run(tmp_path, "older", older=True)]
    for run in runs:
        assert_rows_match(rlsql.query(name, [run]).to_dicts(), oracle.expected(name, [run]), f"{name} {run.name}")
    # a run answers alike alone and beside another (the older run's phases do not change the newer's)
    assert_rows_match(rlsql.query(name, runs).to_dicts(), oracle.expected(name, runs), f"{name} together")


def test_the_older_csv_gets_its_phases_from_result_json(tmp_path: Path) -> None:
    older = both_run(tmp_path, older=True)
    phases = [r["phase"] for r in rlsql.query("trial_phases", [older]).to_dicts()]
    assert phases == ["environment_setup", "agent_setup", "agent_execution", "verifier", "unattributed"]
    # the same trials without trace_jobs/: no phase column, so no phase rows (trial_phases version 1's answer)
    shutil.rmtree(older / "trace_jobs")
    assert rlsql.query("trial_phases", [older]).rows == []


def test_only_what_reads_a_column_the_csv_lacks_reads_result_json(tmp_path: Path) -> None:
    """DuckDB drops the join to result.json, and its read, where no column of it is used (a LEFT JOIN to rows
    grouped by its key); the plan says which objects read the files."""
    newer, older = both_run(tmp_path, "newer"), both_run(tmp_path, "older", older=True)
    for runs, phases in (([newer], False), ([older], True)):
        con = open_connection(resolve_runs(runs))
        readers = {
            name
            for name in [
                "trials",
                "trial_fill",
                "trial_rows",
                "turn_stats",
                "turn_percentiles",
                "turns_by_exception",
                "turns_by_outcome",
                "exception_distribution",
                "exception_treatment",
                "reward_summary",
                "compare_runs",
                "run_summary",
                "trial_phases",
            ]
            if reads_result_files(con, name)
        }
        assert readers == {"trials", "trial_fill", *(["trial_phases"] if phases else [])}, runs
        # the trials view itself, asked for none of those columns
        plan = con.execute("EXPLAIN SELECT outcome, count(*), avg(n_episodes) FROM trials GROUP BY outcome")
        assert "READ_BLOB" not in str(plan.fetchall()).upper()


def test_provenance_lists_result_json_only_where_it_was_read(tmp_path: Path, capsys, monkeypatch) -> None:
    run = both_run(tmp_path)
    out = tmp_path / "bi"
    code, _, err = run_main(
        ["export", "trials", "turn_stats", "trial_phases", "-r", str(run), "-o", str(out)], capsys, monkeypatch
    )
    assert code == 0, err

    def sources(name: str) -> list[dict]:
        summary = json.loads(pq.read_schema(out / f"{name}.parquet").metadata[b"rlsql.sources"])
        return json.loads((out / summary["list"]).read_text())

    assert [s["artifact"] for s in sources("turn_stats")] == ["trials"]
    assert [s["artifact"] for s in sources("trial_phases")] == ["trials"]  # a newest CSV: its own phases
    (harbor,) = [s for s in sources("trials") if s["artifact"] == "harbor"]
    # the folder as one record (docs/semantics.md): its result.json files' count, total size, one sha256
    files = sorted((run / "trace_jobs").glob("*/result.json"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.name}/result.json\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    assert (harbor["files"], harbor["size"], harbor["sha256"]) == (
        len(files),
        sum(p.stat().st_size for p in files),
        digest.hexdigest(),
    )


def _json_only(tmp_path: Path, run: Path) -> Path:
    """The same run without its trials CSV: what `--json-trials` must read it as."""
    alone = tmp_path / "expected" / run.name
    shutil.copytree(run, alone)
    _csv(alone).unlink()
    return alone


def test_json_trials_reads_trace_jobs_outright(tmp_path: Path, capsys, monkeypatch) -> None:
    run = both_run(tmp_path, older=True)
    alone = _json_only(tmp_path, run)
    want = {name: oracle.expected(name, [alone]) for name in TRIAL_QUERIES}
    # the command line, for one run by name and for every run by a glob
    for flag in ("both", "b*", "*"):
        code, out, err = run_main(
            ["--json-trials", flag, "query", "reward_summary", "-r", str(run), "-f", "json"], capsys, monkeypatch
        )
        assert code == 0, err
        assert_rows_match(json.loads(out), want["reward_summary"], f"--json-trials {flag}")
    # by hand: the fixture's 59 result.json, 2 folders gone, the twin added: 58 trials, not the CSV's 56
    assert json.loads(out)[0]["trials"] == len(oracle.read_harbor_trials(run / "trace_jobs")) == 58
    # the environment, and Settings in Python
    monkeypatch.setenv("RLSQL_JSON_TRIALS", "other-runs both")
    code, out, err = run_main(["query", "trial_phases", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and "--json-trials other-runs" in err
    assert_rows_match(json.loads(out), want["trial_phases"], "RLSQL_JSON_TRIALS")
    monkeypatch.delenv("RLSQL_JSON_TRIALS")
    settings = rlsql.Settings(json_trials=("both",))
    for name in TRIAL_QUERIES:
        assert_rows_match(rlsql.query(name, [run], settings=settings).to_dicts(), want[name], f"Settings {name}")
    # a run without trace_jobs/ keeps its CSV; a name no run has is a usage error
    tiny = RUNS / "tiny"
    assert_rows_match(
        rlsql.query("reward_summary", [tiny], settings=rlsql.Settings(json_trials=("*",))).to_dicts(),
        oracle.expected("reward_summary", [tiny]),
        "no trace_jobs",
    )
    # a name no run has (a typo, or RLSQL_JSON_TRIALS naming another command's runs): a warning, the CSV read
    code, out, err = run_main(
        ["--json-trials", "bth", "query", "reward_summary", "-r", str(run), "-f", "json"], capsys, monkeypatch
    )
    assert code == 0 and "--json-trials bth (RLSQL_JSON_TRIALS): no run is named so (the runs: both)" in err
    assert_rows_match(json.loads(out), oracle.expected("reward_summary", [run]), "a typo")


def test_check_says_how_the_csv_and_result_json_meet(tmp_path: Path, capsys, monkeypatch) -> None:
    run = both_run(tmp_path)
    write_trial(run / "trace_jobs", "zzz-cut", '{"trial_name": "zzz-cut", "task')  # cut off mid-write
    code, out, err = run_main(["check", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    issues = json.loads(out)["runs"][0]["issues"]
    # the other line about trace_jobs/ counts its trajectories (test_trajectories.py)
    (met,) = [i for i in issues if i["file"] == str(run / "trace_jobs") and "result.json fills" in i["problem"]]
    # by hand: 56 CSV trials, 2 without a folder; 3 trials in trace_jobs only (the twin names a CSV trial)
    assert met["severity"] == "info"
    assert "for 54 of its 56 trials by trial_name; 3 result.json trials are not in the CSV" in met["problem"]
    (cut,) = [i for i in issues if "zzz-cut" in i["file"]]
    assert cut["severity"] == "warning" and cut["problem"].startswith("not valid JSON")
    # --json-trials: the CSV is the file not read
    code, out, err = run_main(["--json-trials", "both", "check", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    issues = json.loads(out)["runs"][0]["issues"]
    assert {"file": str(_csv(run)), "problem": "not read: --json-trials reads the run's trace_jobs/ instead"} in [
        {k: i[k] for k in ("file", "problem")} for i in issues
    ]


def test_a_damaged_result_json_fills_nothing_and_costs_no_trial(tmp_path: Path) -> None:
    run = both_run(tmp_path)
    victim = _rows(run)[3]["trial_name"]
    (run / "trace_jobs" / victim / "result.json").write_text("{not json", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the trial queries read no result.json: no warning about it either
        assert_rows_match(
            rlsql.query("reward_summary", [run]).to_dicts(), oracle.expected("reward_summary", [run]), "reward_summary"
        )
    got = {r["trial_name"]: r for r in trials_view([run])}
    assert len(got) == len(_rows(run)) and got[victim]["started_at"] is None
    assert_rows_match(list(got.values()), [{c: t[c] for c in COLUMNS} for t in oracle.read_trials(run)], "damaged")
