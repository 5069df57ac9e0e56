"""The findings query's rules on tiny hand-made runs, worked out by hand (docs/findings.md): each kind where it
just fires and where it just does not (thresholds inclusive where the contract says "at least"), runs lacking
a rule's inputs, a run still being written, and the calendar-shaped runs' known problems.

tests/test_queries.py compares the query with tests/oracle.py on every fixture run; here every expected value is
written out by hand.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rlsql
from tests.conftest import RUNS

PREFIX = "20260101_000000_"
VLLM_COLUMNS = [
    "log_file", "datetime_str", "n_engines_reporting", "unique_ips", "total_prompt_throughput_tokens_per_sec",
    "total_generation_throughput_tokens_per_sec", "total_running_requests", "total_waiting_requests",
    "avg_prompt_throughput_per_engine", "avg_generation_throughput_per_engine", "avg_running_requests_per_engine",
    "avg_waiting_requests_per_engine", "avg_gpu_kv_cache_usage_pct", "avg_prefix_cache_hit_rate_pct",
    "min_running_requests", "max_running_requests", "min_generation_throughput", "max_generation_throughput",
]  # fmt: skip


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header: list[str] = []
    for row in rows:
        header += [c for c in row if c not in header]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows(rows)


def metrics_run(tmp_path: Path, column: str, values: list[float | None], name: str = "r", **more: list) -> Path:
    """A run whose metrics CSV has one row per value (steps 1, 2, ...), every step 100 s unless `column` is
    timing/step, all in log job_1."""
    run = tmp_path / name
    rows = []
    for i, value in enumerate(values):
        row: dict = {"log_file": "job_1", "trainer/global_step": i + 1, "timing/step": 100.0}
        row[column] = value
        for key, series in more.items():
            row[key.replace("__", "/")] = series[i]
        rows.append(row)
    write_csv(run / f"{PREFIX}metrics_table.csv", rows)
    return run


def findings(run: Path | list[Path], **params) -> list[dict]:
    runs = run if isinstance(run, list) else [run]
    return rlsql.query("findings", runs, **params).to_dicts()


def kinds(rows: list[dict]) -> list[tuple]:
    return [(r["kind"], r["severity"], r["step_from"], r["step_to"]) for r in rows]


# ---------------------------------------------------------------------------- slow_step


def test_slow_step_fires_at_five_times_the_median_and_not_below(tmp_path: Path) -> None:
    run = metrics_run(
        tmp_path,
        "timing/step",
        [100.0, 100.0, 100.0, 100.0, 500.0],
        timing__wait_for_generation_buffer=[10.0, 10.0, 10.0, 10.0, 400.0],
    )
    (row,) = findings(run)
    assert row == {
        "run": "r", "kind": "slow_step", "severity": "warning", "log_file": "job_1", "step_from": 5, "step_to": 5,
        "metric": "timing/step", "value": 500.0, "baseline": 100.0,
        "message": "step 5 took 8 m 20 s, 5.0x the median step (1 m 40 s); "
                   "6 m 40 s of it in wait_for_generation_buffer",
        "evidence": "rlsql query step_timing --run r",
    }  # fmt: skip
    run = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 499.0], name="below")
    assert findings(run) == []


def test_slow_step_is_critical_from_twenty_times(tmp_path: Path) -> None:
    run = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 2000.0])
    assert kinds(findings(run)) == [("slow_step", "critical", 5, 5)]
    run = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 1999.0], name="just_below")
    assert kinds(findings(run)) == [("slow_step", "warning", 5, 5)]
    # a parameter moves the threshold: 1999 s is 19.99x
    assert kinds(findings(run, critical_factor=19.99)) == [("slow_step", "critical", 5, 5)]


def test_consecutive_slow_steps_are_one_row_with_the_worst(tmp_path: Path) -> None:
    # median of [600, 700, 100, 100, 100, 100, 600] is 100; steps 1-2 and 7 trip the rule
    run = metrics_run(tmp_path, "timing/step", [600.0, 700.0, 100.0, 100.0, 100.0, 100.0, 600.0])
    rows = findings(run)
    assert kinds(rows) == [("slow_step", "warning", 1, 2), ("slow_step", "warning", 7, 7)]
    assert rows[0]["value"] == 700.0 and rows[0]["baseline"] == 100.0
    assert rows[0]["message"] == (
        "steps 1-2 each took 5x the median step (1 m 40 s) or more; the slowest, step 2, took 11 m 40 s (7.0x)"
    )


# ---------------------------------------------------------------------------- other step rules


def test_grad_spike_at_ten_times_the_median(tmp_path: Path) -> None:
    run = metrics_run(tmp_path, "policy/raw_grad_norm", [1.0, 1.0, 1.0, 1.0, 10.0])
    (row,) = findings(run)
    assert (row["kind"], row["step_from"], row["value"], row["baseline"]) == ("grad_spike", 5, 10.0, 1.0)
    assert row["message"] == "step 5: policy/raw_grad_norm reached 10, 10x its run median 1"
    assert row["evidence"] == "rlsql query step_signals --run r"
    assert findings(metrics_run(tmp_path, "policy/raw_grad_norm", [1.0, 1.0, 1.0, 1.0, 9.99], name="b")) == []


def test_entropy_collapse_strictly_below_a_quarter_of_the_early_mean(tmp_path: Path) -> None:
    at = metrics_run(tmp_path, "policy/policy_entropy", [1.0, 1.0, 1.0, 1.0, 1.0, 0.25])
    assert findings(at) == []
    below = metrics_run(tmp_path, "policy/policy_entropy", [1.0, 1.0, 1.0, 1.0, 1.0, 0.2, 0.1], name="b")
    (row,) = findings(below)
    assert kinds([row]) == [("entropy_collapse", "warning", 6, 7)]
    assert (row["value"], row["baseline"]) == (0.1, 1.0)
    assert row["message"] == (
        "steps 6-7: policy/policy_entropy fell to 0.1 at step 7, below 0.25x its mean over the first 5 steps (1)"
    )


def test_staleness_by_median_or_discard_rate(tmp_path: Path) -> None:
    run = metrics_run(
        tmp_path, "async/staleness_mean", [1.0, 1.0, 1.0, 1.0, 3.0], async__discard_rate=[0.0, 0.05, 0.0499, 0.0, 0.0]
    )
    rows = findings(run)
    assert [(r["kind"], r["metric"], r["step_from"], r["value"], r["baseline"]) for r in rows] == [
        ("staleness", "async/discard_rate", 2, 0.05, 0.05),
        ("staleness", "async/staleness_mean", 5, 3.0, 1.0),
    ]
    assert rows[0]["message"] == "step 2: async/discard_rate reached 5.0%, at or above 5.0%"
    assert findings(metrics_run(tmp_path, "async/staleness_mean", [1.0, 1.0, 1.0, 1.0, 2.99], name="b")) == []


def test_reward_drop_from_the_running_maximum(tmp_path: Path) -> None:
    # span 1: the EMA is the reward itself. Running max 1.0 from step 2; steps 4-5 are 0.25 below it (fires at
    # drop=0.25), step 3 only 0.125
    run = metrics_run(tmp_path, "reward/avg_raw_reward", [0.5, 1.0, 0.875, 0.75, 0.75, 1.0])
    (row,) = findings(run, span=1, drop=0.25)
    assert row == {
        "run": "r", "kind": "reward_drop", "severity": "critical", "log_file": "job_1", "step_from": 4, "step_to": 5,
        "metric": "reward/avg_raw_reward", "value": 0.75, "baseline": 1.0,
        "message": "steps 4-5: the reward EMA (1-step) fell to 0.75 at step 4, 0.25 below its running maximum 1",
        "evidence": "rlsql query reward_curve --run r -p span=1",
    }  # fmt: skip
    assert findings(run, span=1, drop=0.2501) == []


def test_still_improving_when_the_pick_is_the_last_eligible_step(tmp_path: Path) -> None:
    # span 1, save_every 2: eligible steps 4 and 6; the EMA (= reward) rises, so 6 is the pick and the last
    # eligible step, and over the last 3 steps it rose from 0.5 (step 4) to 0.75 (step 6)
    rising = metrics_run(tmp_path, "reward/avg_raw_reward", [0.125, 0.25, 0.375, 0.5, 0.625, 0.75])
    (row,) = findings(rising, span=1, save_every=2, rising_steps=3)
    assert kinds([row]) == [("still_improving", "info", 6, 6)]
    assert (row["value"], row["baseline"]) == (0.75, 0.5)
    assert row["message"] == (
        "the checkpoint picked, step 6, is the last eligible step, and the reward EMA (1-step) rose from 0.5 to 0.75 "
        "over the last 3 steps: training may not have converged"
    )
    assert row["evidence"] == "rlsql query best_checkpoint --run r -p span=1"
    # the best EMA at step 4 (ties go to the earliest step): the pick is not the last eligible step
    flat = metrics_run(tmp_path, "reward/avg_raw_reward", [0.125, 0.25, 0.375, 0.75, 0.75, 0.75], name="flat")
    assert findings(flat, span=1, save_every=2, rising_steps=3) == []


def test_a_step_being_written_never_fires_alone(tmp_path: Path) -> None:
    # the last row has no timing/step yet: still being written, its grad norm is not read
    rows = [
        {"log_file": "job_1", "trainer/global_step": s, "timing/step": 100.0, "policy/raw_grad_norm": 1.0}
        for s in range(1, 6)
    ]
    rows.append({"log_file": "job_1", "trainer/global_step": 6, "policy/raw_grad_norm": 50.0})
    run = tmp_path / "live"
    write_csv(run / f"{PREFIX}metrics_table.csv", rows)
    assert findings(run) == []
    # once a later step exists, step 6 is complete and its spike is a finding
    rows.append({"log_file": "job_1", "trainer/global_step": 7, "timing/step": 100.0, "policy/raw_grad_norm": 1.0})
    write_csv(run / f"{PREFIX}metrics_table.csv", rows)
    assert kinds(findings(run)) == [("grad_spike", "warning", 6, 6)]


# ---------------------------------------------------------------------------- vLLM logs


def vllm_run(tmp_path: Path, name: str, lines: list[dict]) -> Path:
    run = tmp_path / name
    rows = []
    for i, line in enumerate(lines):
        row = dict.fromkeys(VLLM_COLUMNS, 1)
        row.update(
            {
                "log_file": "job_1",
                "datetime_str": f"01-01 00:00:{i:02d}",
                "total_waiting_requests": 0,
                "avg_gpu_kv_cache_usage_pct": 50.0,
            }
        )
        row.update(line)
        rows.append(row)
    write_csv(run / f"{PREFIX}vllm_metrics_table.csv", rows)
    return run


def test_idle_engines_from_half_the_stat_lines(tmp_path: Path) -> None:
    half = vllm_run(tmp_path, "half", [{"total_running_requests": 0}] * 2 + [{"total_running_requests": 3}] * 2)
    (row,) = findings(half)
    assert row == {
        "run": "half", "kind": "idle_engines", "severity": "warning", "log_file": "job_1", "step_from": None,
        "step_to": None, "metric": "total_running_requests", "value": 0.5, "baseline": 0.5,
        "message": "job_1: 2 of 4 vLLM stat lines (50.0%) show no running request: its engines sat idle",
        "evidence": "rlsql query vllm_activity --run half -p kv_full_pct=95",
    }  # fmt: skip
    quarter = vllm_run(tmp_path, "quarter", [{"total_running_requests": 0}] + [{"total_running_requests": 3}] * 3)
    assert findings(quarter) == []


def test_kv_cache_pressure_and_waiting_requests(tmp_path: Path) -> None:
    lines = [{"avg_gpu_kv_cache_usage_pct": 95.0, "total_waiting_requests": 2}] + [{}] * 3 + [{}] * 6
    rows = findings(vllm_run(tmp_path, "r", lines))  # 1 of 10 at 95% (0.1), 1 of 10 waiting (under 0.25)
    assert [(r["kind"], r["severity"], r["value"]) for r in rows] == [("kv_cache_pressure", "warning", 0.1)]
    assert rows[0]["message"] == "job_1: 1 of 10 vLLM stat lines (10.0%) have a KV-cache usage of 95% or more"
    below = [{"avg_gpu_kv_cache_usage_pct": 94.9}] + [{}] * 9
    assert findings(vllm_run(tmp_path, "below", below)) == []
    waiting = [{"total_waiting_requests": 1}] + [{}] * 3  # 1 of 4: 0.25
    assert kinds(findings(vllm_run(tmp_path, "waiting", waiting))) == [("waiting_requests", "info", None, None)]


# ---------------------------------------------------------------------------- trials


def trials_run(tmp_path: Path, name: str, exceptions: list[str], rewards: list[float | None]) -> Path:
    run = tmp_path / name
    write_csv(run / f"{PREFIX}trial_results.csv", [
        {"task_name": "t", "trial_name": f"t__{i:07d}", "n_episodes": 3, "exception_type": e, "reward": r}
        for i, (e, r) in enumerate(zip(exceptions, rewards, strict=True))
    ])  # fmt: skip
    return run


def test_trial_shares(tmp_path: Path) -> None:
    # 20 trials: 1 timeout (0.05), 1 DaytonaError (masked by the default routing, 0.05), the rest rewarded
    run = trials_run(tmp_path, "r", ["AgentTimeoutError", "DaytonaError"] + [""] * 18, [0.0, None] + [1.0] * 18)
    rows = findings(run)
    assert [(r["kind"], r["severity"], r["value"], r["baseline"]) for r in rows] == [
        ("masked_trials", "warning", 0.05, 0.05),
        ("timeouts", "warning", 0.05, 0.05),
    ]
    assert rows[1]["message"] == "1 of 20 trials (5.0%) ended in AgentTimeoutError"
    assert rows[1]["evidence"] == "rlsql query exception_distribution --run r"
    # 1 of 21: under 0.05 each
    assert (
        findings(trials_run(tmp_path, "b", ["AgentTimeoutError", "DaytonaError"] + [""] * 19, [0.0, None] + [1.0] * 19))
        == []
    )
    # no exception and no reward: 1 of 100 is 0.01
    one = trials_run(tmp_path, "n", [""] * 100, [None] + [1.0] * 99)
    assert kinds(findings(one)) == [("no_reward", "info", None, None)]
    assert findings(trials_run(tmp_path, "n2", [""] * 101, [None] + [1.0] * 100)) == []


def test_looping_on_the_harbor_fixture() -> None:
    # 3 of the 13 trials with a readable trajectory repeat a call 3 times or more (looping_trials)
    (row,) = [r for r in findings(RUNS / "harbor", looping_share=3 / 13) if r["kind"] == "looping"]
    assert row["message"] == "3 of 13 trials with a trajectory (23.1%) repeat a call 3 times or more"
    assert row["evidence"] == "rlsql query looping_trials --run harbor -p min_repeats=3"
    assert not [r for r in findings(RUNS / "harbor", looping_share=0.231) if r["kind"] == "looping"]


def result_json(trial: Path, reward: float) -> None:
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(
        json.dumps({"task_name": "t", "trial_name": trial.name, "verifier_result": {"rewards": {"reward": reward}}})
    )


def test_damaged_input_names_the_skipped_files_of_finished_trials(tmp_path: Path) -> None:
    run = tmp_path / "h"
    jobs = run / "trace_jobs"
    for name in ("t__a", "t__b", "t__c"):
        result_json(jobs / name, 1.0)
    (jobs / "t__d").mkdir()
    (jobs / "t__d" / "result.json").write_text('{"task_name": "t", "trial_na')  # cut off: no trial
    # trajectories: t__a fine, t__b not JSON; t__e is in flight (no result.json) and cut off mid-write: not counted
    steps = {"steps": [{"step_id": 1, "source": "user", "message": "go"}]}
    for name, text in (("t__a", json.dumps(steps)), ("t__b", "[1, 2"), ("t__e", '{"steps": [')):
        (jobs / name / "agent").mkdir(parents=True)
        (jobs / name / "agent" / "trajectory.json").write_text(text)
    with pytest.warns(rlsql.RlsqlWarning):
        rows = [r for r in findings(run) if r["kind"] == "damaged_input"]
    assert [(r["metric"], r["severity"], r["value"], r["baseline"], r["message"], r["evidence"]) for r in rows] == [
        (
            "result.json",
            "warning",
            0.25,
            0.0,
            "1 of 4 trial result files (25.0%) are no trial and were skipped; the first: trace_jobs/t__d/result.json",
            "rlsql check --run h",
        ),
        (
            "trajectory",
            "warning",
            0.5,
            0.0,
            "1 of 2 trajectory files of finished trials (50.0%) are damaged and were skipped; the first: "
            "trace_jobs/t__b/agent/trajectory.json",
            "rlsql check --run h",
        ),
    ]
    # a trial in flight whose trajectory is still being written is no finding
    (jobs / "t__b" / "agent" / "trajectory.json").write_text(json.dumps(steps))
    (jobs / "t__d" / "result.json").unlink()
    result_json(jobs / "t__f", 0.0)
    with pytest.warns(rlsql.RlsqlWarning):  # t__e's file is still said as skipped
        assert [r for r in findings(run) if r["kind"] == "damaged_input"] == []


def trials_lines(n: int) -> list[str]:
    """A trials CSV of `n` clean trials, as lines (the header first)."""
    header = "task_name,trial_name,n_episodes,n_input_tokens,n_output_tokens,exception_type,reward,agent_duration_sec"
    return [header] + [f"t,t__{i},2,100,10,,1.0,30.0" for i in range(n)]


def test_damaged_input_counts_the_csv_rows_a_read_skips_in_any_column(tmp_path: Path) -> None:
    run = tmp_path / "c"
    run.mkdir()
    trials = run / f"{PREFIX}trial_results.csv"
    lines = trials_lines(10)
    trials.write_text("\n".join(lines) + "\n")
    assert [r for r in findings(run) if r["kind"] == "damaged_input"] == []  # a clean file: no finding
    # data line 3 (file line 4) has a field too many; data line 7 (file line 8) a duration that is no number, in a
    # column no findings rule reads: `rlsql check` counts it, and so does the finding
    lines[3] += ",extra"
    lines[7] = lines[7].rsplit(",", 1)[0] + ",soon"
    trials.write_text("\n".join(lines) + "\n")
    with pytest.warns(rlsql.RlsqlWarning, match="skipped 2 unreadable rows"):
        rows = [r for r in findings(run) if r["kind"] == "damaged_input"]
    assert [(r["metric"], r["severity"], r["value"], r["baseline"], r["message"], r["evidence"]) for r in rows] == [
        (
            "trials",
            "warning",
            0.2,
            0.0,
            f"2 of 10 rows of the trials CSV (20.0%) cannot be read and were skipped, in {PREFIX}trial_results.csv",
            "rlsql check --run c",
        )
    ]
    # the same in a connection of views (rlsql.connect), which makes skipped_rows_src when findings is first read
    con = rlsql.connect(run)
    found = con.execute("SELECT metric, value FROM findings WHERE kind = 'damaged_input'").fetchall()
    assert found == [("trials", 0.2)]
    # and from the CSV's cached copy, whose build counted the rows it skipped (the CSV is not read again)
    cache = tmp_path / "cache"
    built = subprocess.run(
        [sys.executable, "-m", "rlsql", "cache", "build", "--run", str(run)],
        env={**os.environ, "RLSQL_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    cached = rlsql.Settings.from_env().replace(cache_dir=cache, cache="auto")
    with pytest.warns(rlsql.RlsqlWarning, match="skipped 2 unreadable rows"):
        again = [r for r in rlsql.query("findings", run, settings=cached).to_dicts() if r["kind"] == "damaged_input"]
    assert [(r["metric"], r["value"], r["message"]) for r in again] == [
        (r["metric"], r["value"], r["message"]) for r in rows
    ]


def test_a_share_too_small_to_show_in_one_decimal_is_not_written_as_none(tmp_path: Path) -> None:
    run = tmp_path / "few"
    run.mkdir()
    lines = trials_lines(2001)
    lines[5] += ",extra"  # 1 of 2,001 rows: 0.05%, which one decimal would round to 0.0%
    (run / f"{PREFIX}trial_results.csv").write_text("\n".join(lines) + "\n")
    with pytest.warns(rlsql.RlsqlWarning):
        rows = [r for r in findings(run) if r["kind"] == "damaged_input"]
    assert [r["message"] for r in rows] == [
        f"1 of 2,001 rows of the trials CSV (<0.1%) cannot be read and were skipped, in {PREFIX}trial_results.csv"
    ]


def test_damaged_input_names_a_csv_skipped_whole(tmp_path: Path) -> None:
    run = tmp_path / "w"
    run.mkdir()
    lines = trials_lines(3)
    (run / f"{PREFIX}trial_results.csv").write_text("\n".join([lines[0] + ",reward", *lines[1:]]) + "\n")
    with pytest.warns(rlsql.RlsqlWarning, match="header repeats column reward"):
        rows = [r for r in findings(run) if r["kind"] == "damaged_input"]
    assert [(r["metric"], r["value"], r["message"]) for r in rows] == [
        (
            "trials",
            1.0,
            f"the trials CSV {PREFIX}trial_results.csv is unreadable and was skipped "
            "(line 1: header repeats column reward)",
        )
    ]


# ---------------------------------------------------------------------------- inputs lacking, order, names


def test_runs_lacking_inputs_give_no_row_and_no_error(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    only_trials = trials_run(tmp_path, "only_trials", [""] * 10, [1.0] * 10)
    no_timing = metrics_run(tmp_path, "reward/avg_raw_reward", [0.5, 0.5])  # timing 100 s each: nothing
    assert findings([only_trials, no_timing]) == []
    assert not [w for w in recwarn if issubclass(w.category, rlsql.RlsqlWarning)]


def test_rows_are_ordered_by_run_severity_step_kind(tmp_path: Path) -> None:
    a = metrics_run(
        tmp_path,
        "timing/step",
        [100.0, 100.0, 100.0, 100.0, 2000.0],
        name="a",
        policy__raw_grad_norm=[10.0, 1.0, 1.0, 1.0, 1.0],
    )
    b = trials_run(tmp_path, "b", ["AgentTimeoutError"] + [""] * 9, [0.0] + [1.0] * 9)
    got = [(r["run"], r["kind"], r["severity"]) for r in findings([b, a])]
    assert got == [("a", "slow_step", "critical"), ("a", "grad_spike", "warning"), ("b", "timeouts", "warning")]


def test_a_run_name_that_needs_quotes_is_quoted_in_the_evidence(tmp_path: Path) -> None:
    run = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 500.0], name="my run's")
    (row,) = findings(run)
    assert row["evidence"] == "rlsql query step_timing --run 'my run'\"'\"'s'"


# ---------------------------------------------------------------------------- the calendar-shaped runs


def test_the_calendar_fixture_shows_its_known_problems_and_nothing_else() -> None:
    rows = findings(RUNS / "calendar")
    serious = [(r["kind"], r["log_file"], r["step_from"]) for r in rows if r["severity"] != "info"]
    # step 1 (with job_554408's other slow steps, 2-3), the idle first job
    assert serious == [("slow_step", "job_554408", 1), ("idle_engines", "job_554408", None)]
    improving = [r for r in rows if r["kind"] == "still_improving"]
    assert [(r["step_from"], r["log_file"]) for r in improving] == [(20, "job_554410")]


@pytest.mark.slow
def test_the_calendar80_sized_run_shows_its_known_problems(tmp_path: Path) -> None:
    """bench/make_run.py --preset real: 45,711 trials, 80 steps, 3 logs."""
    subprocess.run(
        [sys.executable, "bench/make_run.py", "--preset", "real", str(tmp_path / "real")],
        check=True,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    rows = findings(tmp_path / "real")
    serious = [(r["kind"], r["log_file"], r["step_from"], r["step_to"]) for r in rows if r["severity"] != "info"]
    assert serious == [("slow_step", "job_554408", 1, 1), ("idle_engines", "job_554408", None, None)]
    assert [(r["step_from"]) for r in rows if r["kind"] == "still_improving"] == [80]


# ---------------------------------------------------------------------------- rlsql findings, rlsql query findings


def run_cli(args: list[str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> tuple:
    from rlsql.cli import app as cli

    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def test_findings_command_prints_one_line_each_worst_first(tmp_path, capsys, monkeypatch) -> None:
    # run a: a warning (grad spike at step 1) and, later in the query's order, nothing else; run b: a critical
    a = metrics_run(tmp_path, "policy/raw_grad_norm", [10.0, 1.0, 1.0, 1.0, 1.0], name="a")
    b = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 2000.0], name="b")
    code, out, err = run_cli(["findings", "--run", str(a), "--run", str(b)], capsys, monkeypatch)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "critical  b  slow_step: step 5 took 33 m 20 s, 20x the median step (1 m 40 s)  "
        "[rlsql query step_timing --run b]",
        "warning   a  grad_spike: step 1: policy/raw_grad_norm reached 10, 10x its run median 1  "
        "[rlsql query step_signals --run a]",
    ]


def test_fail_on_exits_1_at_or_above_the_severity(tmp_path, capsys, monkeypatch) -> None:
    run = metrics_run(tmp_path, "policy/raw_grad_norm", [10.0, 1.0, 1.0, 1.0, 1.0])  # one warning
    code, out, err = run_cli(["findings", "-r", str(run), "--fail-on", "critical"], capsys, monkeypatch)
    assert code == 0 and out.startswith("warning")
    for level in ("warning", "INFO"):
        code, out, err = run_cli(["findings", "-r", str(run), "--fail-on", level], capsys, monkeypatch)
        assert code == 1 and out.startswith("warning")
        assert err == f"rlsql: 1 finding at or above {level.lower()} (--fail-on)\n"
    # a parameter moves the rule: no finding, no failure
    code, out, err = run_cli(
        ["findings", "-r", str(run), "-p", "spike_factor=11", "--fail-on", "info"], capsys, monkeypatch
    )
    assert (code, out, err) == (0, "no findings\n", "")


def test_findings_command_bad_input_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    run = metrics_run(tmp_path, "policy/raw_grad_norm", [1.0, 1.0])
    code, out, err = run_cli(["findings", "-r", str(run), "--fail-on", "bad"], capsys, monkeypatch)
    assert code == 2 and err == "rlsql: error: --fail-on 'bad': choose one of critical, warning, info\n"
    code, out, err = run_cli(["findings", "-r", str(run), "-p", "slow_factor=fast"], capsys, monkeypatch)
    assert code == 2 and out == "" and "parameter slow_factor: 'fast' is not a valid DOUBLE" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl", "markdown", "table"])
def test_query_findings_in_every_format(fmt, capsys, monkeypatch) -> None:
    code, out, _err = run_cli(["query", "findings", "-r", str(RUNS / "calendar"), "-f", fmt], capsys, monkeypatch)
    assert code == 0
    if fmt == "json":
        assert [r["kind"] for r in json.loads(out)] == [
            "slow_step",
            "idle_engines",
            "still_improving",
            "waiting_requests",
        ]
    elif fmt == "jsonl":
        assert [json.loads(line)["kind"] for line in out.splitlines()] == [
            "slow_step",
            "idle_engines",
            "still_improving",
            "waiting_requests",
        ]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [(r["kind"], r["step_from"], r["step_to"]) for r in rows] == [
            ("slow_step", "1", "3"),
            ("idle_engines", "", ""),
            ("still_improving", "20", "20"),
            ("waiting_requests", "", ""),
        ]
    else:
        assert "idle_engines" in out and "rlsql query vllm_activity --run calendar -p kv_full_pct=95" in out


# ---------------------------------------------------------------------------- the report opens with them


def test_the_report_opens_with_the_findings_worst_first(tmp_path: Path) -> None:
    from rlsql.outputs.report import build_report

    a = metrics_run(tmp_path, "policy/raw_grad_norm", [10.0, 1.0, 1.0, 1.0, 1.0], name="a")
    b = metrics_run(tmp_path, "timing/step", [100.0, 100.0, 100.0, 100.0, 2000.0], name="b")
    build_report(rlsql_runs([a, b]), tmp_path / "md", "md")
    text = (tmp_path / "md" / "report.md").read_text()
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["## Contents", "## Findings"]
    findings_part = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert [line for line in findings_part.splitlines() if line.startswith("- ")] == [
        "- **critical** b, slow_step: step 5 took 33 m 20 s, 20x the median step (1 m 40 s). "
        "Evidence: `rlsql query step_timing --run b`",
        "- **warning** a, grad_spike: step 1: policy/raw_grad_norm reached 10, 10x its run median 1. "
        "Evidence: `rlsql query step_signals --run a`",
    ]
    build_report(rlsql_runs([a, b]), tmp_path / "html", "html")
    html = (tmp_path / "html" / "report.html").read_text()
    first_h2 = html.split("<h2", 2)[1]
    assert first_h2.startswith(' id="findings">Findings</h2>')
    assert first_h2.index("<strong>critical</strong> b, slow_step") < first_h2.index("<strong>warning</strong> a")


def test_a_report_without_findings_says_so(tmp_path: Path) -> None:
    from rlsql.outputs.report import build_report

    quiet = metrics_run(tmp_path, "reward/avg_raw_reward", [0.5, 0.5, 0.5])
    build_report(rlsql_runs([quiet]), tmp_path / "md", "md")
    findings_part = (tmp_path / "md" / "report.md").read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "No findings: nothing in this run trips a rule" in findings_part


def rlsql_runs(paths: list[Path]) -> list:
    from rlsql.runs.folders import resolve_runs

    return resolve_runs([str(p) for p in paths])


# ---------------------------------------------------------------------------- rlsql serve's run page


def test_the_run_page_opens_with_its_findings_each_linking_to_its_query(tmp_path: Path) -> None:
    import re

    from tests.test_serve import client

    a = metrics_run(
        tmp_path,
        "timing/step",
        [100.0, 100.0, 100.0, 100.0, 2000.0],
        name="a",
        policy__raw_grad_norm=[10.0, 1.0, 1.0, 1.0, 1.0],
    )
    quiet = metrics_run(tmp_path, "reward/avg_raw_reward", [0.5, 0.5, 0.5], name="quiet")
    with client([a, quiet]) as c:
        page = c.get("/run", params={"run": "a"}).text
        assert re.findall(r'<section id="(\w+)">', page)[0] == "findings"
        items = re.findall(
            r'<li class="finding (\w+)"><strong>\w+</strong> (\w+): .*?<a href="([^"]+)">evidence</a>', page, re.S
        )
        assert items == [
            ("critical", "slow_step", "/query/step_timing?run=a"),
            ("warning", "grad_spike", "/query/step_signals?run=a"),
        ]
        assert c.get("/query/step_timing", params={"run": "a"}).status_code == 200
        assert "No findings: nothing in this run trips a rule" in c.get("/run", params={"run": "quiet"}).text


def test_a_damaged_input_finding_links_to_the_check_page_naming_the_lines(tmp_path: Path) -> None:
    import re

    from tests.test_serve import client

    run = tmp_path / "d"
    run.mkdir()
    lines = trials_lines(4)
    lines[2] += ",extra"  # file line 3
    (run / f"{PREFIX}trial_results.csv").write_text("\n".join(lines) + "\n")
    with client([run]) as c:
        page = c.get("/run", params={"run": "d"}).text
        items = re.findall(
            r'<li class="finding (\w+)"><strong>\w+</strong> (\w+): .*?<a href="([^"]+)">evidence</a>', page, re.S
        )
        assert ("warning", "damaged_input", "/check?run=d") in items
        check = c.get("/check", params={"run": "d"})
        assert check.status_code == 200
        cells = re.findall(r"<tr>(.*?)</tr>", check.text, re.S)
        found = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in cells]
        assert [f for f in found if f and f[1] == "warning"] == [
            ["d", "warning", str(run / f"{PREFIX}trial_results.csv"), "3", "row skipped: 9 fields, expected 8"]
        ]
        assert c.get("/check", params={"run": "nope"}).status_code == 404


def test_the_fleet_table_counts_each_runs_findings_and_filters_on_them(tmp_path: Path) -> None:
    import re

    from tests.test_serve import client

    a = metrics_run(
        tmp_path,
        "timing/step",
        [100.0, 100.0, 100.0, 100.0, 2000.0],
        name="a",
        policy__raw_grad_norm=[10.0, 1.0, 1.0, 1.0, 1.0],
    )  # 1 critical, 1 warning
    b = metrics_run(tmp_path, "policy/raw_grad_norm", [10.0, 1.0, 1.0, 1.0, 1.0], name="b")  # 1 warning
    quiet = metrics_run(tmp_path, "reward/avg_raw_reward", [0.5, 0.5, 0.5], name="quiet")
    for name in ("a", "b", "quiet"):  # the fleet table (run_table) needs trials: 10 rewarded ones, no finding
        trials_run(tmp_path, name, [""] * 10, [1.0] * 10)

    def table(page: str) -> list[list[str]]:
        body = page.split('<table class="fleet"', 1)[1].split("</table>", 1)[0]
        header = [re.sub(r"<[^>]+>|[▲▼]", "", h).strip() for h in re.findall(r"<th>(.*?)</th>", body, re.S)]
        rows = [
            [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr><td>.*?</tr>", body, re.S)
        ]
        return [header[1:4], *[r[1:4] for r in rows]]

    with client([a, b, quiet]) as c:
        assert table(c.get("/").text) == [
            ["run", "findings_critical", "findings_warning"],
            ["a", "1", "1"],
            ["b", "0", "1"],
            ["quiet", "0", "0"],
        ]
        warned = table(c.get("/", params={"f": "findings_warning=1"}).text)
        assert [r[0] for r in warned[1:]] == ["a", "b"]
        critical = table(c.get("/", params={"f": "findings_critical=1"}).text)
        assert [r[0] for r in critical[1:]] == ["a"]


def test_an_exception_type_on_the_run_page_leads_to_its_failed_trials() -> None:
    import html
    import re

    from tests import oracle
    from tests.test_serve import client

    with client([RUNS / "tiny"]) as c:
        page = c.get("/run", params={"run": "tiny"}).text
        section = page.split('data-source="exception_distribution"', 1)[1].split("</table>", 1)[0]
        links = dict((t, html.unescape(h)) for h, t in re.findall(r'<a href="(/trials\?[^"]+)">([^<]+)</a>', section))
        want = {t["exception_type"] for t in oracle.read_trials(RUNS / "tiny")}
        assert set(links) == want
        timeouts = c.get(links["AgentTimeoutError"]).text
        shown = set(re.findall(r"tiny__\w+|calendar-\d+__\w+", timeouts.split('data-source="trials"', 1)[1]))
        expected = {
            t["trial_name"] for t in oracle.read_trials(RUNS / "tiny") if t["exception_type"] == "AgentTimeoutError"
        }
        assert shown == expected
