"""Self-check of tests/oracle.py on tiny hand-made runs whose answers are worked out by hand."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests import oracle


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def approx_rows(rows: list[dict]) -> list[dict]:
    return [{k: pytest.approx(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows]


# ---------------------------------------------------------------------------- discovery


def test_find_artifacts_newest_prefix_wins_and_splits_are_ignored(tmp_path: Path) -> None:
    run = tmp_path / "run_a"
    for name in [
        "20250101_000000_metrics_table.csv",
        "20250102_000000_metrics_table.csv",
        "metrics.csv",
        "20250103_000000_metrics_job_1.csv",  # per-log split: never read
        "20250102_000000_vllm_metrics_table.csv",
        "20250104_000000_vllm_metrics_job_1.csv",
        "vllm_metrics.csv",
        "trial_results.csv",
        "20250102_000000_metrics_report.md",
    ]:
        write(run / name, "log_file\n")
    found = oracle.find_artifacts(run)
    assert found["metrics"] == run / "20250102_000000_metrics_table.csv"
    assert found["vllm"] == run / "20250102_000000_vllm_metrics_table.csv"
    assert found["trials"] == run / "trial_results.csv"
    assert found["config"] is None
    write(run / "rl_config.yml", "a: 1\n")
    assert oracle.find_artifacts(run)["config"] == run / "rl_config.yml"


# ---------------------------------------------------------------------------- statistics


def test_median_percentiles_std_on_turns(tmp_path: Path) -> None:
    run = tmp_path / "r"
    # `3.0` is an integer; `nan` and empty cells are NULL; there is no reward column at all
    write(
        run / "trial_results.csv",
        """
task_name,trial_name,n_episodes,exception_type
t,t__1,1,
t,t__2,2.0,AgentTimeoutError
t,t__3,nan,
t,t__4,4,
t,t__5,3.0,
t,t__6,,DaytonaError
""",
    )
    (stats,) = oracle.expected("turn_stats", [run])
    assert stats == {
        "run": "r",
        "trials": 4,
        "mean": 2.5,
        "median": 2.5,  # the average of the two middle values
        "std": pytest.approx(statistics.stdev([1, 2, 3, 4])),
        "min": 1.0,
        "max": 4.0,
    }
    rows = oracle.expected("turn_percentiles", [run])
    assert [r["exception_type"] for r in rows] == ["All trials", "AgentTimeoutError", "No exception"]
    all_trials = rows[0]
    assert all_trials["trials"] == 4
    # position (n-1)*q: p75 at 2.25 -> 3.25, p90 at 2.7 -> 3.7, p99 at 2.97 -> 3.97
    assert all_trials["p50"] == pytest.approx(2.5)
    assert all_trials["p75"] == pytest.approx(3.25)
    assert all_trials["p90"] == pytest.approx(3.7)
    assert all_trials["p95"] == pytest.approx(3.85)
    assert all_trials["p99"] == pytest.approx(3.97)
    assert all_trials["max"] == 4.0
    inclusive = statistics.quantiles([1, 2, 3, 4], n=100, method="inclusive")  # numpy's linear
    assert all_trials["p90"] == pytest.approx(inclusive[89])
    assert rows[1]["trials"] == 1 and rows[1]["p99"] == 2.0  # one value: every percentile is it
    (summary,) = oracle.expected("reward_summary", [run])
    assert summary == {
        "run": "r",
        "trials": 6,
        "trials_with_reward": 0,
        "mean_reward": None,
        "success_rate": None,
        "trials_with_turns": 4,
    }


def test_turns_by_outcome_and_exception(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(
        run / "trial_results.csv",
        """
task_name,trial_name,n_episodes,exception_type,reward
t,t__1,3,,1.0
t,t__2,5,,1.0
t,t__3,2,AgentTimeoutError,0.0
t,t__4,7,,-1.0
t,t__5,,,0.0
t,t__6,4,ContextLengthExceededError,
""",
    )
    assert oracle.expected("turns_by_outcome", [run]) == [
        {"run": "r", "outcome": "Success", "trials": 2, "mean_turns": 4.0, "median_turns": 4.0},
        {"run": "r", "outcome": "Failure", "trials": 1, "mean_turns": 2.0, "median_turns": 2.0},
    ]
    assert oracle.expected("turns_by_exception", [run]) == [
        {"run": "r", "exception_type": "No exception", "trials": 3, "mean_turns": 5.0, "median_turns": 5.0},
        {"run": "r", "exception_type": "ContextLengthExceededError", "trials": 1, "mean_turns": 4.0,
         "median_turns": 4.0},
        {"run": "r", "exception_type": "AgentTimeoutError", "trials": 1, "mean_turns": 2.0,
         "median_turns": 2.0},
    ]  # fmt: skip


# ---------------------------------------------------------------------------- reward curve, EMA


METRICS = """
log_file,reward/avg_raw_reward,reward/avg_pass_at_8,reward/avg_pass_at_4,trainer/global_step,global_step
job_1,0.0,0.5,,1.0,1
job_1,1.0,0.6,,2,2
job_1,0.2,0.7,,3,3
job_2,0.9,0.8,,3,3
job_2,,0.9,,,4
job_2,1.0,1.0,,5,5
job_2,0.4,1.0,,6,6
"""


def test_reward_curve_dedup_ema_rolling(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "20250101_000000_metrics_table.csv", METRICS)
    rows = oracle.expected("reward_curve", [run], span=2)  # alpha = 2/3
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[2]["log_file"] == "job_1" and rows[2]["reward"] == 0.2  # first-seen row of step 3
    assert rows[3]["log_file"] == "job_2"  # step 4 from the plain global_step
    assert {r["k"] for r in rows} == {8}  # the all-empty pass@4 column is not the run's
    assert [r["pass_at_k"] for r in rows] == [0.5, 0.6, 0.7, 0.9, 1.0, 1.0]
    a = 2 / 3
    e1 = 0.0
    e2 = a * 1.0 + (1 - a) * e1
    e3 = a * 0.2 + (1 - a) * e2
    e5 = a * 1.0 + (1 - a) * e3  # the NULL reward of step 4 is skipped
    e6 = a * 0.4 + (1 - a) * e5
    assert [r["ema"] for r in rows] == pytest.approx([e1, e2, e3, None, e5, e6])
    assert [r["rolling_mean"] for r in rows] == pytest.approx([0.0, 0.5, 0.6, 0.2, 1.0, 0.7])
    default = oracle.expected("reward_curve", [run])  # span 5: alpha 1/3
    assert default[1]["ema"] == pytest.approx(1 / 3)
    assert default[5]["rolling_mean"] == pytest.approx((1.0 + 0.2 + 1.0 + 0.4) / 4)


def test_best_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "metrics.csv", METRICS)
    (best,) = oracle.expected("best_checkpoint", [run], span=2, save_every=2)
    # eligible: steps 4 (no EMA: excluded) and 6; step 2 is the skipped first save
    assert best["step"] == 6 and best["eligible_steps"] == 1 and best["reward"] == 0.4
    (none,) = oracle.expected("best_checkpoint", [run])  # no config: save_every 20
    assert none == {"run": "r", "step": None, "ema": None, "reward": None, "save_every": 20,
                    "eligible_steps": 0, "reason": None}  # fmt: skip
    write(run / "rl_config.yaml", "trainer:\n  hf_save_interval: 1\n")
    (one,) = oracle.expected("best_checkpoint", [run], span=1)  # EMA = reward; steps >= 2
    assert one["save_every"] == 1 and one["eligible_steps"] == 4
    assert one["step"] == 2  # 1.0 at steps 2 and 5: ties go to the earliest


def test_best_checkpoint_tie_to_earliest(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "metrics.csv", "trainer/global_step,reward/avg_raw_reward\n1,0.5\n2,0.5\n3,0.5\n4,0.5\n")
    (best,) = oracle.expected("best_checkpoint", [run], save_every=1)
    assert best["step"] == 2 and best["ema"] == 0.5 and best["eligible_steps"] == 3


# ---------------------------------------------------------------------------- timing tree


TIMING = """
log_file,timing/step,timing/wait_for_generation_buffer,timing/policy_train,timing/sync_weights,\
timing/save_checkpoints,timing/cleanup_old_checkpoints,timing/my_custom,timing/never,trainer/global_step
job_1,10,4,3,1,2,1,5,,1
job_1,20,6,5,,,,,,2
"""


def test_timing_breakdown_tree(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "metrics.csv", TIMING)
    rows = oracle.expected("timing_breakdown", [run])
    table = [(r["span"], r["within"], r["mean_seconds"], r["share_of_within"], r["steps"]) for r in rows]
    assert table == [
        ("step", "-", 15.0, None, 2),
        ("wait_for_generation_buffer", "step", 5.0, pytest.approx(0.35), 2),
        # declared parents train_critic_and_policy and run_training not recorded: hangs under step
        ("policy_train", "step", 4.0, pytest.approx(0.275), 2),
        ("sync_weights", "step", 1.0, pytest.approx(0.05), 1),  # a row without it counts as 0
        ("unattributed", "step", 5.5, pytest.approx(0.325), 2),  # residuals 2 and 9
        ("save_checkpoints", "outside step", 2.0, None, 1),
        ("cleanup_old_checkpoints", "save_checkpoints", 1.0, 0.5, 1),
        ("my_custom", "not declared", 5.0, None, 1),
    ]


def test_timing_breakdown_overlap_and_nesting(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(
        run / "metrics.csv",
        """
trainer/global_step,timing/step,timing/run_training,timing/policy_train,timing/sync_weights,timing/eval
1,10,8,6,5,3
""",
    )
    rows = oracle.expected("timing_breakdown", [run])
    table = [(r["span"], r["within"], r["mean_seconds"], r["share_of_within"], r["steps"]) for r in rows]
    assert table == [
        ("step", "-", 10.0, None, 1),
        ("run_training", "step", 8.0, 0.8, 1),
        ("policy_train", "run_training", 6.0, 0.75, 1),
        ("sync_weights", "step", 5.0, 0.5, 1),
        ("overlap", "step", 3.0, None, 1),  # 8 + 5 - 10
        ("eval", "outside step", 3.0, None, 1),
    ]


def test_step_timing(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "metrics.csv", TIMING)
    rows = oracle.expected("step_timing", [run])
    assert [(r["step"], r["span"]) for r in rows[:3]] == [
        (1, "cleanup_old_checkpoints"),
        (1, "my_custom"),
        (1, "policy_train"),
    ]
    assert len(rows) == 7 + 3
    step_row = next(r for r in rows if r["step"] == 2 and r["span"] == "step")
    assert step_row["share_of_step"] == 1.0 and step_row["seconds"] == 20.0
    wait = next(r for r in rows if r["step"] == 2 and r["span"] == "wait_for_generation_buffer")
    assert wait["share_of_step"] == pytest.approx(0.3)


# ---------------------------------------------------------------------------- routing


TRIALS = """
task_name,trial_name,n_episodes,exception_type,reward
t,t__1,1,,1.0
t,t__2,1,AgentTimeoutError,0.0
t,t__3,1,Foo,
t,t__4,1,AgentTimeoutError,
t,t__5,1,MyInfraError,
t,t__6,1,ContextLengthExceededError,
t,t__7,1,DaytonaError,
t,t__8,1,,0.0
"""

CONFIG = """
trainer:
  hf_save_interval: 5
terminal_bench:
  harbor:
    exclude_exceptions: [Foo]
    passthrough_exceptions: [AgentTimeoutError]
    mask_exceptions:
      - MyInfraError
    zero_exceptions: null
other:
  passthrough_exceptions: [Foo]
"""


def test_routing_lookup_and_defaults(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "trial_results.csv", TRIALS)
    assert oracle.routing(run) == oracle.DEFAULT_ROUTING
    write(run / "rl_config.yaml", CONFIG)
    assert oracle.routing(run) == {
        "passthrough": ["AgentTimeoutError"],  # first match in document order
        "mask": ["MyInfraError"],
        "zero": ["AgentTimeoutError", "ContextLengthExceededError"],  # null: the default
        "default": "zero",
    }
    dist = oracle.expected("exception_distribution", [run])
    assert [(r["exception_type"], r["trials"], r["treatment"]) for r in dist] == [
        ("No exception", 2, "none"),
        ("AgentTimeoutError", 2, "passthrough"),
        ("Foo", 1, "zero"),  # ties in order of first appearance
        ("MyInfraError", 1, "mask"),
        ("ContextLengthExceededError", 1, "zero"),
        ("DaytonaError", 1, "zero"),  # the config's mask list replaces the default one
    ]
    assert dist[0]["pct"] == 25.0
    treat = oracle.expected("exception_treatment", [run])
    assert treat == [
        {"run": "r", "treatment": "none", "trials": 2, "pct": 25.0, "exception_types": "No exception"},
        {"run": "r", "treatment": "passthrough", "trials": 1, "pct": 12.5,
         "exception_types": "AgentTimeoutError"},
        {"run": "r", "treatment": "mask", "trials": 2, "pct": 25.0,
         "exception_types": "AgentTimeoutError, MyInfraError"},  # passthrough without reward -> mask
        {"run": "r", "treatment": "zero", "trials": 3, "pct": 37.5,
         "exception_types": "ContextLengthExceededError, DaytonaError, Foo"},
    ]  # fmt: skip


# ---------------------------------------------------------------------------- trial phases


def test_trial_phases(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(
        run / "trial_results.csv",
        """
trial_name,trial_duration,environment_setup_duration,agent_setup_duration,agent_execution_duration,verifier_duration
a,10,2,1,5,1
b,20,4,,12,2
c,,1,,3,
""",
    )
    rows = oracle.expected("trial_phases", [run])
    assert rows == approx_rows(
        [
            {"run": "r", "phase": "environment_setup", "median_s": 2.0, "mean_s": 7 / 3, "total_s": 7.0,
             "share_of_trial": 0.2, "trials": 3},
            {"run": "r", "phase": "agent_setup", "median_s": 1.0, "mean_s": 1.0, "total_s": 1.0,
             "share_of_trial": 1 / 30, "trials": 1},
            {"run": "r", "phase": "agent_execution", "median_s": 5.0, "mean_s": 20 / 3, "total_s": 20.0,
             "share_of_trial": 17 / 30, "trials": 3},
            {"run": "r", "phase": "verifier", "median_s": 1.5, "mean_s": 1.5, "total_s": 3.0,
             "share_of_trial": 0.1, "trials": 2},
            {"run": "r", "phase": "unattributed", "median_s": 1.5, "mean_s": 1.5, "total_s": 3.0,
             "share_of_trial": 0.1, "trials": 2},
        ]
    )  # fmt: skip


def test_trial_phases_overlap_old_and_none(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "trial_results.csv", "trial_name,trial_duration,agent_execution_duration\na,10,12\nb,10,9\n")
    rows = oracle.expected("trial_phases", [run])
    assert rows[-1] == {"run": "r", "phase": "overlap", "median_s": 0.5, "mean_s": 0.5, "total_s": 1.0,
                        "share_of_trial": None, "trials": 2}  # fmt: skip
    write(run / "trial_results.csv", "trial_name,agent_duration_sec\na,4\nb,6\n")
    assert oracle.expected("trial_phases", [run]) == [
        {"run": "r", "phase": "agent_execution", "median_s": 5.0, "mean_s": 5.0, "total_s": 10.0,
         "share_of_trial": None, "trials": 2}
    ]  # fmt: skip
    write(run / "trial_results.csv", "trial_name,trial_duration,n_episodes\na,4,1\n")
    assert oracle.expected("trial_phases", [run]) == []


# ---------------------------------------------------------------------------- vLLM, async, runs


def test_utilization_rule() -> None:
    assert oracle.utilization(0.0, 4.9, 1000.0) == "underutilized"
    assert oracle.utilization(0.0, 5.0, 1000.0) == "moderate"
    assert oracle.utilization(0.0, 5.0, 299.0) == "low throughput"
    assert oracle.utilization(0.1, 1.0, 10.0) == "well-utilized"


def test_vllm_and_async_and_run_order(tmp_path: Path) -> None:
    b, a = tmp_path / "b_run", tmp_path / "a_run"
    for run in (a, b):
        write(
            run / "20250101_000000_vllm_metrics_table.csv",
            """
log_file,datetime_str,n_engines_reporting,avg_running_requests_per_engine,total_running_requests,\
total_waiting_requests,avg_generation_throughput_per_engine,total_generation_throughput_tokens_per_sec
job_2,12-31 23:59:59,1,10,10,0,500,500
job_1,01-01 00:00:00,2,2,4,0,100,200
job_1,01-01 00:00:05,1,4,4,0,300,300
""",
        )
        write(
            run / "metrics.csv",
            """
log_file,async/staleness_mean,async/staleness_max,async/discard_rate,async/discarded_count,trainer/global_step
job_1,2,3,0.0,0,1
job_1,4,5,0.1,,2
job_2,6,9,0.2,0,2
job_2,,,0.0,2,3
""",
        )
    rows = oracle.expected("vllm_summary", [b, a])
    assert [(r["run"], r["log_file"]) for r in rows] == [
        ("a_run", "job_1"),
        ("a_run", "job_2"),
        ("b_run", "job_1"),
        ("b_run", "job_2"),
    ]
    assert rows[0]["seconds"] == 2 and rows[0]["mean_running_per_engine"] == 3.0
    assert rows[0]["mean_generation_tps_per_engine"] == 200.0 and rows[0]["max_total_generation_tps"] == 300.0
    assert rows[0]["utilization"] == "underutilized" and rows[1]["utilization"] == "moderate"
    (health,) = oracle.expected("async_health", [a])
    assert health == {"run": "a_run", "mean_staleness": 4.0, "max_staleness": 9.0,
                      "mean_discard_rate": pytest.approx(0.075), "steps_with_discards": 2}  # fmt: skip
    overview = oracle.expected("run_overview", [a])
    assert [(r["log_file"], r["total_steps"], r["metric_blocks"]) for r in overview] == [
        ("job_1", 2, 2),
        ("job_2", 3, 2),
    ]
    assert overview[0]["mean_reward"] is None and overview[0]["total_time_s"] is None
