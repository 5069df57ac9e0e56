"""Every named query on fixtures/runs/tiny, against figures worked out by hand.

The tiny run is written by fixtures/generate.py from literal tables (TINY_METRICS, TINY_TRIALS,
TINY_VLLM, TINY_CONFIG). The expectations below were computed by hand from those tables, never
by running rlsql or any SQL; the arithmetic is in the comments. Where the contract
(docs/queries.md, docs/data-contract.md) and docs/semantics.md are both silent, the assumption is marked ASSUMPTION.

The tiny run at a glance
------------------------
Metric rows (CSV order; step 3 is logged by both jobs, job_1's row is first-seen):

    row log   step reward pass@4 st_mean st_max d_rate d_cnt  step  wait  run_tr policy sync save myst
    r1  job_1  1   0.25   0.5    0.0     0      0.0    0      1000  800   100    50     50   -    -
    r2  job_1  2   1.0    1.0    1.0     2      0.0    0       200   40   100    80     20   10   -
    r3  job_1  3   0.5    0.75   2.0     4      0.25   -       100   20    50    25     10   -    -
    r4  job_2  3   0.0    0.25   0.5     1      0.125  2       400  300    80    40     -    -    -
    r5  job_2  4   0.75   1.0    1.5     3      0.0    0       200   40   120    60     20   30   5
    r6  job_2  5   0.75   1.0    3.0     5      0.0625 1       100   10    50    40     20   -    7

Trials (CSV order), 3 tasks x 4 samples:

    #  turns exception                   reward agent_s
    1  3     -                           1.0    30
    2  -     DaytonaError                -      -
    3  5     -                           0.0    50
    4  1     AgentTimeoutError           0.0    600
    5  2     -                           1.0    20
    6  4     RuntimeError                -      40
    7  8     ContextLengthExceededError  -      80
    8  2     DaytonaError                -      10
    9  3     AgentTimeoutError           -      600
    10 5     -                           1.0    45.5
    11 6     -                           -      60
    12 4     -                           0.5    35

Routing (rl_config.yaml, terminal_bench.harbor): passthrough [AgentTimeoutError],
mask [DaytonaError, ContextLengthExceededError], zero [], default zero; hf_save_interval 2.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import rlsql

TINY = Path(__file__).parent.parent / "fixtures" / "runs" / "tiny"
RUN = "tiny"  # the run id is the folder name


def check(
    name: str,
    columns: list[str],
    expected: list[tuple[Any, ...]],
    ints: tuple[str, ...] = (),
    **params: Any,
) -> None:
    """Run `name` on the tiny run and compare the column list, the row order and every value.

    `expected` holds one tuple per row in the order of `columns`. Floats compare with
    pytest.approx, strings and NULLs exactly; the columns named in `ints` must come back as
    Python ints (counts, steps).
    """
    result = rlsql.query(name, [str(TINY)], **params)
    assert result.columns == columns
    rows = result.to_dicts()
    assert len(rows) == len(expected), rows
    for i, (row, values) in enumerate(zip(rows, expected, strict=True)):
        want = dict(zip(columns, values, strict=True))
        assert row == pytest.approx(want), f"{name} row {i}: got {row}, want {want}"
        for column in ints:
            if want[column] is not None:
                assert type(row[column]) is int, f"{name} row {i}: {column} = {row[column]!r} is not an int"


def check_best_checkpoint(expected: tuple[Any, ...], **params: Any) -> None:
    """best_checkpoint's single row; `reason` is free text, so only its presence is checked."""
    result = rlsql.query("best_checkpoint", [str(TINY)], **params)
    assert result.columns == BEST_CHECKPOINT_COLUMNS
    (row,) = result.to_dicts()
    reason = row.pop("reason")
    assert isinstance(reason, str) and reason
    assert row == pytest.approx(dict(zip(BEST_CHECKPOINT_COLUMNS[:-1], expected, strict=True)))
    for column in ("step", "save_every", "eligible_steps"):
        assert row[column] is None or type(row[column]) is int


# --------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------


def test_run_overview() -> None:
    # ASSUMPTION (order not stated in queries.md): rows ordered by run, log_file.
    # job_1: rows r1-r3. total_steps = max(1, 2, 3) = 3; blocks 3;
    #        mean_reward = (0.25 + 1.0 + 0.5) / 3 = 1.75 / 3 = 0.583333; max 1.0;
    #        total_time_s = 1000 + 200 + 100 = 1300.
    # job_2: rows r4-r6. total_steps = max(3, 4, 5) = 5; blocks 3;
    #        mean_reward = (0.0 + 0.75 + 0.75) / 3 = 0.5; max 0.75;
    #        total_time_s = 400 + 200 + 100 = 700.
    # version 2: max_step repeats total_steps; distinct_steps = |{1, 2, 3}| = 3 and |{3, 4, 5}| = 3.
    check(
        "run_overview",
        [
            "run",
            "log_file",
            "total_steps",
            "metric_blocks",
            "mean_reward",
            "max_reward",
            "total_time_s",
            "max_step",
            "distinct_steps",
        ],
        [
            (RUN, "job_1", 3, 3, 1.75 / 3, 1.0, 1300.0, 3, 3),
            (RUN, "job_2", 5, 3, 0.5, 0.75, 700.0, 5, 3),
        ],
        ints=("total_steps", "metric_blocks", "max_step", "distinct_steps"),
    )


REWARD_CURVE_COLUMNS = ["run", "step", "log_file", "reward", "pass_at_k", "k", "ema", "rolling_mean"]


def test_reward_curve_default_span() -> None:
    # Deduplicated steps (first-seen row): 1 r1, 2 r2, 3 r3 (job_1, reward 0.5, NOT r4's 0.0),
    # 4 r5, 5 r6. Rewards 0.25, 1.0, 0.5, 0.75, 0.75; pass@4 0.5, 1.0, 0.75, 1.0, 1.0; k = 4.
    # EMA, alpha = 2 / (5 + 1) = 1/3:
    #   e1 = 0.25
    #   e2 = 1.0/3 + 2/3 * 0.25  = 1/3 + 1/6  = 0.5
    #   e3 = 0.5/3 + 2/3 * 0.5   = 1/6 + 1/3  = 0.5
    #   e4 = 0.75/3 + 2/3 * 0.5  = 1/4 + 1/3  = 7/12  = 0.583333
    #   e5 = 0.75/3 + 2/3 * 7/12 = 1/4 + 7/18 = 23/36 = 0.638889
    # rolling_mean over the last 5 deduplicated steps (fewer at the start):
    #   0.25; 1.25/2 = 0.625; 1.75/3 = 0.583333; 2.5/4 = 0.625; 3.25/5 = 0.65
    check(
        "reward_curve",
        REWARD_CURVE_COLUMNS,
        [
            (RUN, 1, "job_1", 0.25, 0.5, 4, 0.25, 0.25),
            (RUN, 2, "job_1", 1.0, 1.0, 4, 0.5, 0.625),
            (RUN, 3, "job_1", 0.5, 0.75, 4, 0.5, 1.75 / 3),
            (RUN, 4, "job_2", 0.75, 1.0, 4, 7 / 12, 0.625),
            (RUN, 5, "job_2", 0.75, 1.0, 4, 23 / 36, 0.65),
        ],
        ints=("step", "k"),
    )


def test_reward_curve_span_3() -> None:
    # span 3: alpha = 2 / (3 + 1) = 0.5.
    #   e1 = 0.25; e2 = 0.5*1.0 + 0.5*0.25 = 0.625; e3 = 0.5*0.5 + 0.5*0.625 = 0.5625;
    #   e4 = 0.5*0.75 + 0.5*0.5625 = 0.65625; e5 = 0.5*0.75 + 0.5*0.65625 = 0.703125
    # rolling over the last 3: 0.25; 0.625; (0.25+1.0+0.5)/3 = 0.583333;
    #   (1.0+0.5+0.75)/3 = 0.75; (0.5+0.75+0.75)/3 = 0.666667
    check(
        "reward_curve",
        REWARD_CURVE_COLUMNS,
        [
            (RUN, 1, "job_1", 0.25, 0.5, 4, 0.25, 0.25),
            (RUN, 2, "job_1", 1.0, 1.0, 4, 0.625, 0.625),
            (RUN, 3, "job_1", 0.5, 0.75, 4, 0.5625, 1.75 / 3),
            (RUN, 4, "job_2", 0.75, 1.0, 4, 0.65625, 0.75),
            (RUN, 5, "job_2", 0.75, 1.0, 4, 0.703125, 2.0 / 3),
        ],
        span=3,
    )


BEST_CHECKPOINT_COLUMNS = ["run", "step", "ema", "reward", "save_every", "eligible_steps", "reason"]


def test_best_checkpoint_from_config() -> None:
    # save_every = trainer.hf_save_interval = 2. Eligible: step % 2 == 0 and step >= 4 -> {4}
    # (step 2, the first save, is skipped). Best = step 4, ema 7/12, reward 0.75.
    check_best_checkpoint((RUN, 4, 7 / 12, 0.75, 2, 1))


def test_best_checkpoint_every_step_prefers_ema_over_spike() -> None:
    # save_every = 1: eligible steps >= 2 -> {2, 3, 4, 5}, EMAs 0.5, 0.5, 0.583333, 0.638889.
    # Step 2 has the highest raw reward (1.0, a spike) but step 5 has the highest EMA (23/36).
    check_best_checkpoint((RUN, 5, 23 / 36, 0.75, 1, 4), save_every=1)


def test_best_checkpoint_none_eligible() -> None:
    # save_every = 3: eligible needs step % 3 == 0 and step >= 6; the run ends at step 5.
    check_best_checkpoint((RUN, None, None, None, 3, 0), save_every=3)


def test_timing_breakdown() -> None:
    # All 6 metric rows count (a re-run step took its time twice). Spans: step,
    # wait_for_generation_buffer, run_training, policy_train, sync_weights, save_checkpoints,
    # mystery_span. ASSUMPTION: `span` is the name without the `timing/` prefix.
    # policy_train's declared parent train_critic_and_policy is not recorded, so its effective
    # parent is run_training.
    #
    # step: mean (1000+200+100+400+200+100)/6 = 2000/6 = 333.333; 6 rows.
    # wait: mean (800+40+20+300+40+10)/6 = 1210/6 = 201.667;
    #       share mean(800/1000, 40/200, 20/100, 300/400, 40/200, 10/100)
    #             = (0.8+0.2+0.2+0.75+0.2+0.1)/6 = 2.25/6 = 0.375
    # run_training: mean (100+100+50+80+120+50)/6 = 500/6 = 83.333;
    #       share (0.1+0.5+0.5+0.2+0.6+0.5)/6 = 2.4/6 = 0.4
    # policy_train (within run_training): mean (50+80+25+40+60+40)/6 = 295/6 = 49.1667;
    #       share (50/100+80/100+25/50+40/80+60/120+40/50)/6 = (0.5+0.8+0.5+0.5+0.5+0.8)/6 = 0.6
    # sync_weights: ran in 5 rows (not r4): mean (50+20+10+20+20)/5 = 24;
    #       share over all 6 rows, r4 counting 0: (0.05+0.1+0.1+0+0.1+0.2)/6 = 0.55/6 = 0.0916667
    # children of step, by mean desc: wait 201.667, run_training 83.333, sync_weights 24.
    # unattributed per row = step - (wait + run_training + sync):
    #       r1 1000-950=50, r2 200-160=40, r3 100-80=20, r4 400-380=20, r5 200-180=20, r6 100-80=20
    #       mean 170/6 = 28.333 >= 0 -> unattributed;
    #       share (50/1000+40/200+20/100+20/400+20/200+20/100)/6 = (0.05+0.2+0.2+0.05+0.1+0.2)/6 = 0.8/6
    # save_checkpoints (outside step): (10+30)/2 = 20, 2 rows, share NULL.
    # mystery_span (not declared): (5+7)/2 = 6, 2 rows, share NULL.
    check(
        "timing_breakdown",
        ["run", "span", "within", "mean_seconds", "share_of_within", "steps"],
        [
            (RUN, "step", "-", 2000 / 6, None, 6),
            (RUN, "wait_for_generation_buffer", "step", 1210 / 6, 0.375, 6),
            (RUN, "run_training", "step", 500 / 6, 0.4, 6),
            (RUN, "policy_train", "run_training", 295 / 6, 0.6, 6),
            (RUN, "sync_weights", "step", 24.0, 0.55 / 6, 5),
            (RUN, "unattributed", "step", 170 / 6, 0.8 / 6, 6),
            (RUN, "save_checkpoints", "outside step", 20.0, None, 2),
            (RUN, "mystery_span", "not declared", 6.0, None, 2),
        ],
        ints=("steps",),
    )


def test_step_timing() -> None:
    # One row per metric row and recorded span, ordered by step, log_file, span name;
    # share_of_step = seconds / timing/step of the same row. Step 3 appears once per log;
    # r4 (job_2, step 3) has no sync_weights.
    expected = [
        (RUN, 1, "job_1", "policy_train", 50.0, 50 / 1000),
        (RUN, 1, "job_1", "run_training", 100.0, 100 / 1000),
        (RUN, 1, "job_1", "step", 1000.0, 1.0),
        (RUN, 1, "job_1", "sync_weights", 50.0, 50 / 1000),
        (RUN, 1, "job_1", "wait_for_generation_buffer", 800.0, 800 / 1000),
        (RUN, 2, "job_1", "policy_train", 80.0, 80 / 200),
        (RUN, 2, "job_1", "run_training", 100.0, 100 / 200),
        (RUN, 2, "job_1", "save_checkpoints", 10.0, 10 / 200),
        (RUN, 2, "job_1", "step", 200.0, 1.0),
        (RUN, 2, "job_1", "sync_weights", 20.0, 20 / 200),
        (RUN, 2, "job_1", "wait_for_generation_buffer", 40.0, 40 / 200),
        (RUN, 3, "job_1", "policy_train", 25.0, 25 / 100),
        (RUN, 3, "job_1", "run_training", 50.0, 50 / 100),
        (RUN, 3, "job_1", "step", 100.0, 1.0),
        (RUN, 3, "job_1", "sync_weights", 10.0, 10 / 100),
        (RUN, 3, "job_1", "wait_for_generation_buffer", 20.0, 20 / 100),
        (RUN, 3, "job_2", "policy_train", 40.0, 40 / 400),
        (RUN, 3, "job_2", "run_training", 80.0, 80 / 400),
        (RUN, 3, "job_2", "step", 400.0, 1.0),
        (RUN, 3, "job_2", "wait_for_generation_buffer", 300.0, 300 / 400),
        (RUN, 4, "job_2", "mystery_span", 5.0, 5 / 200),
        (RUN, 4, "job_2", "policy_train", 60.0, 60 / 200),
        (RUN, 4, "job_2", "run_training", 120.0, 120 / 200),
        (RUN, 4, "job_2", "save_checkpoints", 30.0, 30 / 200),
        (RUN, 4, "job_2", "step", 200.0, 1.0),
        (RUN, 4, "job_2", "sync_weights", 20.0, 20 / 200),
        (RUN, 4, "job_2", "wait_for_generation_buffer", 40.0, 40 / 200),
        (RUN, 5, "job_2", "mystery_span", 7.0, 7 / 100),
        (RUN, 5, "job_2", "policy_train", 40.0, 40 / 100),
        (RUN, 5, "job_2", "run_training", 50.0, 50 / 100),
        (RUN, 5, "job_2", "step", 100.0, 1.0),
        (RUN, 5, "job_2", "sync_weights", 20.0, 20 / 100),
        (RUN, 5, "job_2", "wait_for_generation_buffer", 10.0, 10 / 100),
    ]
    assert len(expected) == 5 + 6 + 5 + 4 + 7 + 6  # spans recorded in r1..r6
    check(
        "step_timing",
        ["run", "step", "log_file", "span", "seconds", "share_of_step"],
        expected,
        ints=("step",),
    )


def test_async_health() -> None:
    # Over every metric row (6):
    #   mean_staleness = (0.0+1.0+2.0+0.5+1.5+3.0)/6 = 8/6 = 1.333333
    #   max_staleness = max(0, 2, 4, 1, 3, 5) = 5
    #   mean_discard_rate = (0+0+0.25+0.125+0+0.0625)/6 = 0.4375/6 = 0.0729167
    # steps_with_discards over deduplicated steps (first-seen rows r1, r2, r3, r5, r6):
    #   step 1: count 0; step 2: count 0; step 3 (r3): count empty, discard_rate 0.25 > 0 -> yes;
    #   step 4: count 0; step 5: count 1 -> yes. -> 2. (r4, the re-run of step 3, is not counted
    #   again: counting every row would give 3.)
    # ASSUMPTION: "where the count is absent" is read per row (the r3 cell is empty), so r3 falls
    # back to its discard_rate.
    check(
        "async_health",
        ["run", "mean_staleness", "max_staleness", "mean_discard_rate", "steps_with_discards"],
        [(RUN, 8 / 6, 5, 0.4375 / 6, 2)],
        ints=("steps_with_discards",),
    )


# --------------------------------------------------------------------------------------------
# trials
# --------------------------------------------------------------------------------------------


def test_turn_stats() -> None:
    # Trials with turns: all but #2 -> 11. Sorted turns: 1 2 2 3 3 4 4 5 5 6 8.
    # sum 43, mean 43/11 = 3.909091; median = 6th value = 4; min 1; max 8.
    # sum of squares 1+4+4+9+9+16+16+25+25+36+64 = 209; SS = 209 - 43^2/11 = (2299-1849)/11 = 450/11
    # sample variance = (450/11)/10 = 45/11 = 4.090909; std = sqrt(45/11) = 2.022600
    check(
        "turn_stats",
        ["run", "trials", "mean", "median", "std", "min", "max"],
        [(RUN, 11, 43 / 11, 4.0, math.sqrt(45 / 11), 1, 8)],
        ints=("trials",),
    )


def test_turn_percentiles() -> None:
    # Linear interpolation at position (n-1)*q of the sorted values.
    # All trials, n=11: 1 2 2 3 3 4 4 5 5 6 8 (index 0..10)
    #   p50 @5 = 4; p75 @7.5 = (5+5)/2 = 5; p90 @9 = 6; p95 @9.5 = 6 + 0.5*2 = 7;
    #   p99 @9.9 = 6 + 0.9*2 = 7.8; max 8
    # Then types by name; `No exception` sorts by name between DaytonaError and RuntimeError.
    # AgentTimeoutError, n=2: 1 3 -> p@q = 1 + 2q: p50 2, p75 2.5, p90 2.8, p95 2.9, p99 2.98; max 3
    # ContextLengthExceededError: 8 only. DaytonaError: #8's 2 only (#2 has no turns).
    # No exception, n=6: 2 3 4 5 5 6 (index 0..5), position 5q:
    #   p50 @2.5 = 4.5; p75 @3.75 = 5 + 0.75*0 = 5; p90 @4.5 = 5.5; p95 @4.75 = 5.75;
    #   p99 @4.95 = 5.95; max 6
    # RuntimeError: 4 only.
    check(
        "turn_percentiles",
        ["run", "exception_type", "trials", "p50", "p75", "p90", "p95", "p99", "max"],
        [
            (RUN, "All trials", 11, 4, 5, 6, 7, 7.8, 8),
            (RUN, "AgentTimeoutError", 2, 2, 2.5, 2.8, 2.9, 2.98, 3),
            (RUN, "ContextLengthExceededError", 1, 8, 8, 8, 8, 8, 8),
            (RUN, "DaytonaError", 1, 2, 2, 2, 2, 2, 2),
            (RUN, "No exception", 6, 4.5, 5, 5.5, 5.75, 5.95, 6),
            (RUN, "RuntimeError", 1, 4, 4, 4, 4, 4, 4),
        ],
        ints=("trials",),
    )


def test_turns_by_exception() -> None:
    # Trials with turns, grouped:
    #   ContextLengthExceededError: [8]          -> 1, mean 8, median 8
    #   No exception: [3,5,2,5,6,4], sum 25      -> 6, mean 25/6 = 4.166667, median (4+5)/2 = 4.5
    #   RuntimeError: [4]                        -> 1, mean 4, median 4
    #   AgentTimeoutError: [1,3]                 -> 2, mean 2, median 2
    #   DaytonaError: [2] (#2 has no turns)      -> 1, mean 2, median 2
    # Order: mean desc, then exception_type: the tie at 2.0 puts AgentTimeoutError before
    # DaytonaError (by name), although DaytonaError appears first in the CSV.
    check(
        "turns_by_exception",
        ["run", "exception_type", "trials", "mean_turns", "median_turns"],
        [
            (RUN, "ContextLengthExceededError", 1, 8.0, 8.0),
            (RUN, "No exception", 6, 25 / 6, 4.5),
            (RUN, "RuntimeError", 1, 4.0, 4.0),
            (RUN, "AgentTimeoutError", 2, 2.0, 2.0),
            (RUN, "DaytonaError", 1, 2.0, 2.0),
        ],
        ints=("trials",),
    )


def test_turns_by_outcome() -> None:
    # Trials with turns and reward: #1 (1.0, 3), #3 (0.0, 5), #4 (0.0, 1), #5 (1.0, 2),
    # #10 (1.0, 5), #12 (0.5, 4).
    # Success (reward > 0): 3, 2, 5, 4 -> 4 trials, mean 14/4 = 3.5, median (3+4)/2 = 3.5
    # Failure (reward = 0): 5, 1 -> 2 trials, mean 3, median 3
    check(
        "turns_by_outcome",
        ["run", "outcome", "trials", "mean_turns", "median_turns"],
        [
            (RUN, "Success", 4, 3.5, 3.5),
            (RUN, "Failure", 2, 3.0, 3.0),
        ],
        ints=("trials",),
    )


def test_exception_distribution() -> None:
    # Counts over all 12 trials: No exception 6 (#1,3,5,10,11,12); DaytonaError 2 (#2,8);
    # AgentTimeoutError 2 (#4,9); RuntimeError 1 (#6); ContextLengthExceededError 1 (#7).
    # Ties in first-appearance order: DaytonaError (#2) before AgentTimeoutError (#4),
    # RuntimeError (#6) before ContextLengthExceededError (#7): the opposite of name order.
    # pct: 6/12 = 50%, 2/12 = 16.6667%, 1/12 = 8.3333%.
    # treatment (configured): AgentTimeoutError passthrough (even though #9, without reward, ends
    # up masked); DaytonaError and ContextLengthExceededError mask; RuntimeError unlisted ->
    # default_error_treatment zero.
    check(
        "exception_distribution",
        ["run", "exception_type", "trials", "pct", "treatment"],
        [
            (RUN, "No exception", 6, 50.0, "none"),
            (RUN, "DaytonaError", 2, 200 / 12, "mask"),
            (RUN, "AgentTimeoutError", 2, 200 / 12, "passthrough"),
            (RUN, "RuntimeError", 1, 100 / 12, "zero"),
            (RUN, "ContextLengthExceededError", 1, 100 / 12, "mask"),
        ],
        ints=("trials",),
    )


def test_exception_treatment() -> None:
    # Effective treatment per trial:
    #   none: the 6 clean trials (#11 has no reward but no exception either)   -> 6, 50%
    #   passthrough: #4 AgentTimeoutError with reward 0.0                        -> 1, 8.3333%
    #   mask: #2, #8 DaytonaError; #7 ContextLengthExceededError; #9 AgentTimeoutError
    #         without a reward (passthrough without reward is treated as mask)  -> 4, 33.3333%
    #   zero: #6 RuntimeError (default)                                          -> 1, 8.3333%
    # exception_types: distinct types of the treatment, sorted, joined with ", ".
    check(
        "exception_treatment",
        ["run", "treatment", "trials", "pct", "exception_types"],
        [
            (RUN, "none", 6, 50.0, "No exception"),
            (RUN, "passthrough", 1, 100 / 12, "AgentTimeoutError"),
            (RUN, "mask", 4, 400 / 12, "AgentTimeoutError, ContextLengthExceededError, DaytonaError"),
            (RUN, "zero", 1, 100 / 12, "RuntimeError"),
        ],
        ints=("trials",),
    )


def test_reward_summary() -> None:
    # Rewards present on #1 1.0, #3 0.0, #4 0.0, #5 1.0, #10 1.0, #12 0.5 -> 6 trials.
    # mean (1+0+0+1+1+0.5)/6 = 3.5/6 = 0.583333; success = reward > 0: #1,5,10,12 -> 4/6.
    # trials_with_turns: 11 (all but #2).
    check(
        "reward_summary",
        ["run", "trials", "trials_with_reward", "mean_reward", "success_rate", "trials_with_turns"],
        [(RUN, 12, 6, 3.5 / 6, 4 / 6, 11)],
        ints=("trials", "trials_with_reward", "trials_with_turns"),
    )


def test_trial_phases() -> None:
    # The mid-2026 file has only agent_duration_sec (-> phase agent_execution) and no
    # trial_duration: no share, no unattributed/overlap row.
    # ASSUMPTION: a phase without any value in the run (environment_setup, agent_setup,
    # verifier: columns absent) has no row, like empty groups elsewhere.
    # agent_duration_sec of the 11 trials that have one: 30 50 600 20 40 80 10 600 45.5 60 35
    #   total 1570.5; mean 1570.5/11 = 142.772727;
    #   sorted 10 20 30 35 40 45.5 50 60 80 600 600 -> median (6th) 45.5
    check(
        "trial_phases",
        ["run", "phase", "median_s", "mean_s", "total_s", "share_of_trial", "trials"],
        [(RUN, "agent_execution", 45.5, 1570.5 / 11, 1570.5, None, 11)],
        ints=("trials",),
    )


# --------------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------------

VLLM_SUMMARY_COLUMNS = [
    "run",
    "log_file",
    "seconds",
    "mean_engines_reporting",
    "mean_running_per_engine",
    "max_total_running",
    "mean_total_waiting",
    "max_total_waiting",
    "mean_generation_tps_per_engine",
    "max_total_generation_tps",
    "mean_kv_cache_pct",
    "mean_prefix_cache_hit_pct",
    "utilization",
    "stat_lines",  # version 2
]


def test_vllm_summary() -> None:
    # job_1 (4 seconds, incl. the 12-31 row):
    #   engines (1+2+1+1)/4 = 1.25; running/engine (4+4+2+1)/4 = 2.75; max total running 8;
    #   waiting mean 0, max 0; gen tps/engine (200+300+100+50)/4 = 162.5; max total gen 600;
    #   kv (10+20+5+1)/4 = 9; prefix (80+75+90+0)/4 = 61.25.
    #   waiting 0 and running/engine 2.75 < 5 -> underutilized.
    # job_2 (3 seconds):
    #   engines (1+2+1)/3 = 4/3; running/engine (40+35+30)/3 = 35; max total running 70;
    #   waiting (10+0+5)/3 = 5, max 10; gen tps/engine (1500+1200+900)/3 = 1200; max total gen 2400;
    #   kv (60+55+50)/3 = 55; prefix (85+88+91)/3 = 88.  waiting > 0 -> well-utilized.
    check(
        "vllm_summary",
        VLLM_SUMMARY_COLUMNS,
        [
            (RUN, "job_1", 4, 1.25, 2.75, 8, 0.0, 0, 162.5, 600.0, 9.0, 61.25, "underutilized", 4),
            (RUN, "job_2", 3, 4 / 3, 35.0, 70, 5.0, 10, 1200.0, 2400.0, 55.0, 88.0, "well-utilized", 3),
        ],
        # version 2: stat_lines repeats seconds (rows with a stat line); the running totals are counts
        ints=("seconds", "stat_lines", "max_total_running", "max_total_waiting"),
    )


def test_vllm_seconds_years_and_midnight() -> None:
    # The vLLM file's prefix is 20260105, so the year is 2026 unless the month-day lies more than
    # one day after 2026-01-05: 12-31 does (-> 2025); 01-06 is exactly one day after (slack -> 2026).
    # In true time order the 12-31 row comes first although the file (and string order) puts it
    # last in job_1, and 01-04 23:59:59 precedes 01-05 00:00:01 across midnight.
    con = rlsql.connect([str(TINY)])
    rows = con.execute("SELECT run, log_file, ts FROM vllm_seconds ORDER BY ts").fetchall()
    assert rows == [
        (RUN, "job_1", datetime(2025, 12, 31, 23, 59, 59)),
        (RUN, "job_1", datetime(2026, 1, 4, 23, 59, 58)),
        (RUN, "job_1", datetime(2026, 1, 4, 23, 59, 59)),
        (RUN, "job_1", datetime(2026, 1, 5, 0, 0, 1)),
        (RUN, "job_2", datetime(2026, 1, 5, 0, 0, 2)),
        (RUN, "job_2", datetime(2026, 1, 5, 0, 0, 4)),
        (RUN, "job_2", datetime(2026, 1, 6, 0, 0, 1)),
    ]


@pytest.mark.parametrize("span", [1, 5, 40])
def test_the_ema_past_its_window_depth_equals_the_full_recursion(span: int, tmp_path: Path) -> None:
    """Issue 42 item 9: the EMA reads the last ema_depth(span) + 1 values (older ones weigh below 2^-60), not
    every step's history. Over 1,200 steps (past the depth: 103 for span 5, 832 for span 40), NULL rewards
    on every 7th step, it equals the recursion over all values computed here in plain Python."""
    from rlsql.engine.query import run_sql
    from rlsql.runs.folders import resolve_runs

    run = tmp_path / "long"
    run.mkdir()
    rewards = [None if step % 7 == 0 else ((step * 7919) % 1000) / 1000 for step in range(1, 1201)]
    lines = ["log_file,trainer/global_step,reward/avg_raw_reward"]
    lines += [f"job_1,{step},{'' if r is None else r}" for step, r in enumerate(rewards, 1)]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")
    alpha, ema, want = 2 / (span + 1), None, []
    for r in rewards:
        if r is not None:
            ema = r if ema is None else alpha * r + (1 - alpha) * ema
        want.append(None if r is None else ema)
    got = [row["ema"] for row in rlsql.query("reward_curve", [run], span=span).to_dicts()]
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want, strict=True), 1):
        assert (g is None and w is None) or math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-15), (step, g, w)
    # the table macro ema() over the same points
    sql = (
        "CREATE TEMP TABLE points AS SELECT run AS series, step AS x, reward AS value FROM reward_curve; "
        f"SELECT ema FROM ema('points', span := {span}) ORDER BY x"
    )
    got = [row["ema"] for row in run_sql(sql, resolve_runs([run])).to_dicts()]
    for step, (g, w) in enumerate(zip(got, want, strict=True), 1):
        assert (g is None and w is None) or math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-15), (step, g, w)


def test_the_ema_of_20000_steps_fits_in_300_mb(tmp_path: Path) -> None:
    """Issue 42 item 9: the EMA held every step's history (a list per row: quadratic; 2.3 GB at 20,000 steps).
    DuckDB's own memory limit makes the bound machine-independent: the old window fails it (Out of Memory)."""
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.csv").write_text("log_file,trainer/global_step,reward/avg_raw_reward\njob_1,1,0.5\n")
    with rlsql.connect([run]) as con:
        con.execute("SET memory_limit = '300MB'; SET threads = 1")
        con.execute(
            "CREATE TEMP TABLE points AS SELECT 's' AS series, range AS x, (range * 7919 % 1000) / 1000 "
            "AS value FROM range(20000)"
        )
        n, last = con.execute("SELECT count(ema), arg_max(ema, x) FROM ema('points')").fetchone()
    assert n == 20000 and 0 <= last <= 1
