"""Write a large synthetic run folder in the mid-2026 parser format, fast, with DuckDB.

Usage (from the repository root)::

    python bench/make_run.py --preset real /work/bench-data/real     # 45,711 trials, 80 steps, 3 logs, 10k vLLM s
    python bench/make_run.py --preset 1m   /work/bench-data/1m       # 1M trials, 1,000 steps, 8 logs, 1M vLLM s
    python bench/make_run.py --preset 10m  /work/bench-data/10m      # 10M trials, 1,000 steps, 8 logs, 1M vLLM s
    python bench/make_run.py --trials N --steps S --logs L --vllm-seconds V OUT_DIR

OUT_DIR gets ``<ts>_metrics_table.csv``, ``<ts>_trial_results.csv``, ``<ts>_vllm_metrics_table.csv``
and ``rl_config.yaml`` (see docs/data-contract.md). Keep it outside the repository
(the benchmarks use /work/bench-data). Every value is a deterministic function of the row number
(DuckDB's ``hash``), so the same arguments always write the same bytes; each CSV is one
``COPY (SELECT ... FROM range(N)) TO ...`` statement, so 10M trials take well under a minute.

Shapes follow the published calendar run: 94.9% of trials without an exception,
AgentTimeoutError ~3.1%, ContextLengthExceededError ~0.5%, infrastructure noise for the rest;
~91% success among rewarded trials; 1-27 turns, mostly 2-4, empty when the sandbox never started;
integer columns with gaps written as floats (``3.0``), as pandas does. Metrics: every key family
of the fully async trainer, nested timing spans, checkpoint/export/eval spans between steps,
``batch_errors/*``; a chain of L jobs where each resumed job re-runs the previous job's last step.
vLLM: one row per second with a stat line (1-3 s apart), crossing midnight, in L logs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import time
from pathlib import Path

import duckdb

PRESETS: dict[str, dict[str, int]] = {
    "real": {"trials": 45_711, "steps": 80, "logs": 3, "vllm_seconds": 10_000},
    "1m": {"trials": 1_000_000, "steps": 1_000, "logs": 8, "vllm_seconds": 1_000_000},
    "10m": {"trials": 10_000_000, "steps": 1_000, "logs": 8, "vllm_seconds": 1_000_000},
}

RUN_START = dt.datetime(2026, 6, 1, 22, 14, 5)  # node-local time of the first vLLM stat line
MEAN_VLLM_GAP_S = 1.25  # seconds between stat lines: 1 (80%), 2 (15%), 3 (5%)
SAMPLES_PER_PROMPT = 8
TASKS = 2_000

# (exception_type, share of all trials); '' = no exception. Sums to 1.
EXCEPTIONS: list[tuple[str, float]] = [
    ("", 0.949),
    ("AgentTimeoutError", 0.031),
    ("ContextLengthExceededError", 0.005),
    ("DaytonaError", 0.003),
    ("DaytonaRateLimitError", 0.001),
    ("EnvironmentStartTimeoutError", 0.0015),
    ("NetworkError", 0.0012),
    ("ConnectionError", 0.001),
    ("RuntimeError", 0.0012),
    ("VerifierTimeoutError", 0.0012),
    ("RewardFileNotFoundError", 0.001),
    ("RewardFileEmptyError", 0.0008),
    ("VerifierOutputParseError", 0.0008),
    ("AgentEnvironmentTimeoutError", 0.0015),
    ("CancelledError", 0.0008),
]
# Sandbox failures before the agent's first turn: no turns, tokens, duration or reward.
NEVER_RAN = ["DaytonaRateLimitError", "EnvironmentStartTimeoutError", "NetworkError", "ConnectionError"]
# Turn distributions {turns: weight} (the fixture generator's, calendar-shaped).
SUCCESS_TURNS = {1: 5, 2: 25, 3: 35, 4: 18, 5: 8, 6: 4, 7: 2, 8: 1, 9: 1, 10: 0.5, 12: 0.5}
FAILURE_TURNS = {1: 20, 2: 35, 3: 15, 4: 10, 5: 6, 6: 4, 8: 3, 10: 3, 12: 2, 14: 1, 18: 1}
TIMEOUT_TURNS = {1: 60, 2: 20, 3: 10, 4: 5, 6: 3, 9: 2}

CONFIG_TEMPLATE = """\
# Hydra config dumped by the trainer at start-up (synthetic benchmark run, bench/make_run.py).
trainer:
  project_name: calendar-agent
  run_name: bench-{trials}-trials
  strategy: fsdp2
  policy:
    model:
      path: Qwen/Qwen3-8B
    optimizer_config:
      lr: 1.0e-06
  algorithm:
    advantage_estimator: grpo
    use_kl_loss: true
  fully_async:
    max_staleness_steps: 16
  max_steps: {steps}
  train_batch_size: 64
  ckpt_interval: 10
  hf_save_interval: 5
generator:
  backend: vllm
  num_inference_engines: 48
  n_samples_per_prompt: 8
terminal_bench:
  harbor:
    agent_name: terminus-2
    environment_type: daytona
    exclude_exceptions: [AgentTimeoutError, ContextLengthExceededError]
    passthrough_exceptions: [AgentTimeoutError]
    mask_exceptions:
      - DaytonaError
      - EnvironmentStartTimeoutError
      - NetworkError
      - ConnectionError
      - RewardFileNotFoundError
      - RewardFileEmptyError
      - AgentEnvironmentTimeoutError
      - ContextLengthExceededError
    zero_exceptions: []
    default_error_treatment: zero
    orchestrator:
      n_concurrent_trials: 675
"""


def u(salt: int, row: str = "i") -> str:
    """SQL for a deterministic uniform draw in [0, 1) from the row number and a salt."""
    return f"((hash({row}, {salt}) % 1000000007) / 1000000007.0)"


def pick(draw: str, weights: dict[int, float] | list[tuple[str, float]], quote: bool = False) -> str:
    """SQL CASE choosing a value by cumulative weight thresholds of a uniform draw."""
    items = list(weights.items()) if isinstance(weights, dict) else list(weights)
    total = sum(w for _, w in items)
    parts, acc = [], 0.0
    for value, weight in items[:-1]:
        acc += weight / total
        parts.append(f"WHEN {draw} < {acc!r} THEN {repr(value) if quote else value}")
    last = items[-1][0]
    return f"CASE {' '.join(parts)} ELSE {repr(last) if quote else last} END"


def trials_sql(n: int) -> str:
    """The SELECT writing `n` trial rows in the mid-2026 column set (directory order = hash order)."""
    exceptions = [(name if name else "", share) for name, share in EXCEPTIONS]
    exc_case = pick(u(1), exceptions, quote=True)
    never_ran = ", ".join(repr(x) for x in NEVER_RAN)
    return f"""
WITH base AS (
    SELECT i, {exc_case} AS exc, {u(2)} AS r2, {u(3)} AS r3, {u(4)} AS r4, {u(5)} AS r5, {u(6)} AS r6
    FROM range({n}) AS t(i)
),
rewarded AS (
    SELECT *,
        CASE
            WHEN exc = '' THEN CASE WHEN r2 < 0.012 THEN NULL WHEN r2 < 0.0125 THEN 0.5
                                    WHEN r2 < 0.0125 + 0.9875 * 0.932 THEN 1.0 ELSE 0.0 END
            WHEN exc = 'AgentTimeoutError' THEN CASE WHEN r2 < 0.1 THEN NULL WHEN r2 < 0.26 THEN 1.0 ELSE 0.0 END
        END AS reward,
        exc IN ({never_ran}) OR (exc = 'DaytonaError' AND r3 < 0.5) AS never_ran
    FROM base
),
turned AS (
    SELECT *,
        CASE
            WHEN never_ran THEN NULL
            WHEN exc = 'ContextLengthExceededError' THEN
                CASE WHEN r4 < 0.01 THEN 27 ELSE 10 + CAST(floor(r4 * 15) AS BIGINT) END
            WHEN exc = 'AgentTimeoutError' THEN {pick("r4", TIMEOUT_TURNS)}
            WHEN exc = '' AND reward > 0 THEN {pick("r4", SUCCESS_TURNS)}
            WHEN exc = '' THEN {pick("r4", FAILURE_TURNS)}
            ELSE 1 + CAST(floor(r4 * 4) AS BIGINT)
        END AS turns
    FROM rewarded
)
SELECT
    printf('calendar-%04d', hash(i // {SAMPLES_PER_PROMPT}, 7) % {TASKS}) AS task_name,
    printf('calendar-%04d__%s', hash(i // {SAMPLES_PER_PROMPT}, 7) % {TASKS},
           lower(to_base(CAST(hash(i, 8) % 78364164096 AS BIGINT), 36, 7))) AS trial_name,
    CAST(turns AS DOUBLE) AS n_episodes,
    CAST(3500 * turns + (turns * (turns + 1) // 2) * (900 + CAST(floor(r5 * 900) AS BIGINT)) AS DOUBLE)
        AS n_input_tokens,
    CAST(turns * (150 + CAST(floor(r6 * 550) AS BIGINT)) AS DOUBLE) AS n_output_tokens,
    CASE WHEN exc <> '' THEN exc END AS exception_type,
    reward,
    CASE
        WHEN turns IS NULL THEN NULL
        WHEN exc = 'AgentTimeoutError' THEN round(900.1 + r5 * 2.9, 3)
        ELSE round(turns * (8 + r6 * 17) + 5 + r3 * 15, 3)
    END AS agent_duration_sec
FROM turned
ORDER BY hash(i, 9)
"""


def log_ranges(steps: int, logs: int) -> list[tuple[str, int, int]]:
    """(log_file, first step, last step) for a chain of `logs` jobs; each resumed job re-runs one step."""
    logs = max(1, min(logs, steps))
    bounds = [1 + round(k * (steps - 1) / logs) for k in range(logs + 1)]
    bounds[-1] = steps
    out = []
    for k in range(logs):
        out.append((f"job_{554408 + k}", bounds[k], bounds[k + 1]))  # job k>0 re-runs job k-1's last step
    return out


def metrics_sql(steps: int, logs: int) -> str:
    """The SELECT writing one metric row per (log, step) block, columns in the parser's order."""
    ranges = log_ranges(steps, logs)
    values = ", ".join(f"({k}, '{name}', {a}, {b})" for k, (name, a, b) in enumerate(ranges))
    r = lambda salt: u(salt, "rid")  # noqa: E731 - a short alias keeps the column list readable
    return f"""
WITH jobs(job_no, log_file, first_step, last_step) AS (VALUES {values}),
blocks AS (
    SELECT j.job_no, j.log_file, s.step, s.step = j.first_step AS first_of_job,
        j.job_no > 0 AND s.step = j.first_step AS rerun,
        j.job_no * 1000003 + s.step AS rid
    FROM jobs AS j, LATERAL range(j.first_step, j.last_step + 1) AS s(step)
),
valued AS (
    SELECT *,
        CASE WHEN step = 1 THEN 0.33
             WHEN rerun THEN 0.7
             WHEN first_of_job OR step <= 3 THEN 0.24
             ELSE least(0.97, 0.77 + 0.2 * step / {steps}) END + ({r(1)} - 0.5) * 0.02 AS reward_target,
        CASE WHEN step = 1 THEN 5300 + {r(2)} * 200
             WHEN first_of_job THEN 2800 + {r(2)} * 400
             ELSE 60 + {r(2)} * 260 END AS wait_s,
        2 + {r(3)} * 4 AS convert_s, 20 + {r(4)} * 15 AS fwd_s, 0.05 + {r(5)} * 0.25 AS kl_s,
        0.02 + {r(6)} * 0.08 AS adv_s, 120 + {r(7)} * 40 AS policy_s, 15 + {r(8)} * 13 AS sync_s,
        CASE WHEN step = 1 THEN 0.0 ELSE 2.6 + {r(9)} * 2.1 END AS staleness,
        CAST(floor({r(10)} * 4) AS BIGINT) AS discarded,
        7000 + {r(11)} * 4000 AS avg_tokens,
        CAST(floor({r(12)} * 10) AS BIGINT) AS n_timeout, CAST(floor({r(13)} * 3) AS BIGINT) AS n_ctx,
        CAST(floor({r(14)} * 4) AS BIGINT) AS n_daytona, -0.05 + {r(15)} * 0.1 AS policy_loss
    FROM blocks
),
timed AS (
    SELECT *, policy_s + 0.5 + {r(16)} * 1.5 AS tcp_s FROM valued
),
timed2 AS (
    SELECT *, fwd_s + kl_s + adv_s + tcp_s + 0.5 + {r(17)} AS run_training_s FROM timed
)
SELECT
    log_file,
    round(staleness, 4) AS "async/staleness_mean",
    CASE WHEN step = 1 THEN 0 ELSE CAST(floor(staleness) AS BIGINT) + 2 + CAST(floor({r(18)} * 4) AS BIGINT) END
        AS "async/staleness_max",
    0 AS "async/staleness_min",
    CASE WHEN step = 1 THEN 0.0 ELSE round(0.6 + {r(19)} * 0.35, 4) END AS "async/staleness_ratio",
    64 AS "async/effective_batch_groups",
    512 AS "async/effective_batch_samples",
    round(avg_tokens, 4) AS "generate/avg_num_tokens",
    900 + CAST(floor({r(20)} * 600) AS BIGINT) AS "generate/min_num_tokens",
    25000 + CAST(floor({r(21)} * 7768) AS BIGINT) AS "generate/max_num_tokens",
    round(3000 + {r(22)} * 2000, 4) AS "generate/std_num_tokens",
    round(avg_tokens * (0.85 + {r(23)} * 0.1), 4) AS "generate/avg_tokens_non_zero_rewards",
    round(avg_tokens * (1.3 + {r(24)} * 0.5), 4) AS "generate/avg_tokens_zero_rewards",
    round(round(greatest(0.0, least(1.0, reward_target)) * 512) / 512, 4) AS "reward/avg_raw_reward",
    CASE WHEN step < 8 THEN round((20 + floor({r(25)} * 44)) / 64, 4) ELSE 1.0 END AS "reward/avg_pass_at_8",
    round(wait_s, 4) AS "timing/wait_for_generation_buffer",
    round(convert_s, 4) AS "timing/convert_to_training_input",
    round(fwd_s, 4) AS "timing/fwd_logprobs_values_reward",
    round(kl_s, 4) AS "timing/apply_reward_kl_penalty",
    round(adv_s, 4) AS "timing/compute_advantages_and_returns",
    round(policy_s, 4) AS "timing/policy_train",
    round(tcp_s, 4) AS "timing/train_critic_and_policy",
    round(run_training_s, 4) AS "timing/run_training",
    round(sync_s, 4) AS "timing/sync_weights",
    round(wait_s + convert_s + run_training_s + sync_s + 1 + {r(26)} * 4, 4) AS "timing/step",
    round(policy_loss + {r(27)} * 0.01, 4) AS "loss/final_loss",
    round(policy_loss + {r(27)} * 0.01, 4) AS "policy/final_loss",
    round(policy_loss, 4) AS "policy/policy_loss",
    1e-06 AS "policy/policy_lr",
    round(0.001 + {r(28)} * 0.009, 4) AS "policy/ppo_clip_ratio",
    round(0.3 + {r(29)} * 0.3, 4) AS "policy/policy_entropy",
    round(0.1 + {r(30)} * 0.4, 4) AS "policy/raw_grad_norm",
    round(0.001 + {r(31)} * 0.009, 4) AS "policy/policy_kl",
    round(0.01 + {r(32)} * 0.04, 4) AS "policy/log_ratio_abs_mean",
    round(2 + {r(33)} * 6, 4) AS "policy/log_ratio_abs_max",
    round(0.2 + {r(34)} * 0.4, 4) AS "policy/log_ratio_abs_p99",
    round(300 + {r(35)} * 100, 4) AS "system/cpu_mem_used_gb",
    round(30 + {r(36)} * 10, 4) AS "system/cpu_mem_percent",
    (step - 1) * 64 // {TASKS} AS "trainer/epoch",
    step AS "trainer/global_step",
    CASE WHEN step > 1 THEN CAST(discarded AS DOUBLE) END AS "async/discarded_count",
    CASE WHEN step > 1 THEN round(discarded / (512.0 + discarded), 4) END AS "async/discard_rate",
    CASE WHEN step % 2 = 0 THEN round(1 + {r(37)} * 4, 4) END AS "timing/cleanup_old_checkpoints",
    CASE WHEN step % 2 = 0 THEN round(40 + {r(38)} * 30, 4) END AS "timing/save_checkpoints",
    CASE WHEN step % 5 = 0 THEN round(60 + {r(39)} * 30, 4) END AS "timing/save_hf_model",
    CASE WHEN step % 10 = 0 THEN round(300 + {r(40)} * 100, 4) END AS "timing/eval",
    CASE WHEN job_no = {len(ranges) - 1} AND {len(ranges)} > 1 THEN round(3 + {r(41)} * 5, 4) END
        AS "timing/mystery_span",
    64 AS "batch_errors/total_batches",
    512 AS "batch_errors/total_instances",
    512 - n_timeout - n_ctx - n_daytona AS "batch_errors/total_successful",
    n_timeout + n_ctx + n_daytona AS "batch_errors/total_failed",
    n_ctx + n_daytona AS "batch_errors/total_masked",
    n_timeout AS "batch_errors/total_AgentTimeoutError",
    round(n_timeout / 64, 4) AS "batch_errors/avg_AgentTimeoutError",
    n_ctx AS "batch_errors/total_ContextLengthExceededError",
    round(n_ctx / 64, 4) AS "batch_errors/avg_ContextLengthExceededError",
    n_daytona AS "batch_errors/total_DaytonaError",
    round(n_daytona / 64, 4) AS "batch_errors/avg_DaytonaError",
    step AS global_step
FROM timed2
ORDER BY job_no, step
"""


#: the share of the first log's stat lines with no request running (the idle_engines finding)
IDLE_SHARE = 0.72

# vLLM load profiles, cycled over the logs: starved, saturated, busy but slow (three verdicts).
VLLM_PROFILES = [
    {"running": (1, 4), "waiting": 0, "gen": (100.0, 400.0), "kv": (3.0, 15.0)},
    {"running": (20, 60), "waiting": 12, "gen": (800.0, 1500.0), "kv": (40.0, 85.0)},
    {"running": (5, 12), "waiting": 0, "gen": (120.0, 280.0), "kv": (15.0, 40.0)},
]


def vllm_sql(seconds: int, logs: int) -> str:
    """The SELECT writing `seconds` rows of per-second engine stats over `logs` consecutive logs."""
    logs = max(1, logs)

    def by_log(key: str, idx: int) -> str:
        cases = " ".join(
            f"WHEN {k} THEN {VLLM_PROFILES[k % 3][key][idx]!r}"
            for k in range(min(logs, 3))  # type: ignore[index]
        )
        return f"CASE log_no % 3 {cases} END"

    wait_cases = " ".join(f"WHEN {k} THEN {VLLM_PROFILES[k % 3]['waiting']}" for k in range(min(logs, 3)))
    return f"""
WITH base AS (
    SELECT i, CAST(i * {logs} // {seconds} AS BIGINT) AS log_no,
        CASE WHEN {u(1)} < 0.80 THEN 1 WHEN {u(1)} < 0.95 THEN 2 ELSE 3 END AS gap,
        CASE WHEN {u(2)} < 0.85 THEN 1 WHEN {u(2)} < 0.95 THEN 2 WHEN {u(2)} < 0.99 THEN 3 ELSE 4 END AS engines,
        {u(3)} AS r3, {u(4)} AS r4, {u(5)} AS r5, {u(6)} AS r6, {u(7)} AS r7, {u(8)} AS r8,
        -- the first log's engines sit idle most of the time, as calendar80's did while step 1 waited for the
        -- sandboxes (1,503 of 2,084 stat lines): nothing running, waiting or generated
        CASE WHEN log_no = 0 AND {u(9)} < {IDLE_SHARE} THEN 0 ELSE 1 END AS busy
    FROM range({seconds}) AS t(i)
),
stamped AS (
    SELECT *, TIMESTAMP '{RUN_START:%Y-%m-%d %H:%M:%S}' + to_seconds(sum(gap) OVER (ORDER BY i) - gap) AS ts,
        busy * ({by_log("running", 0)} + floor(r3 * ({by_log("running", 1)} - {by_log("running", 0)} + 1))) AS run_pe,
        busy * CASE WHEN r4 < 0.35 THEN floor(r4 / 0.35 * (CASE log_no % 3 {wait_cases} END + 1)) ELSE 0 END AS wait_pe,
        busy * round({by_log("gen", 0)} + r5 * ({by_log("gen", 1)} - {by_log("gen", 0)}), 1) AS gen_pe,
        busy * round(500 + r6 * 9000, 1) AS prompt_pe,
        round({by_log("kv", 0)} + r7 * ({by_log("kv", 1)} - {by_log("kv", 0)}), 4) AS kv,
        round(70 + r8 * 22, 4) AS prefix
    FROM base
)
SELECT
    'job_' || (554408 + log_no) AS log_file,
    strftime(ts, '%m-%d %H:%M:%S') AS datetime_str,
    engines AS n_engines_reporting,
    1 + CAST(floor(r3 * engines) AS BIGINT) AS unique_ips,
    round(prompt_pe * engines, 1) AS total_prompt_throughput_tokens_per_sec,
    round(gen_pe * engines, 1) AS total_generation_throughput_tokens_per_sec,
    CAST(run_pe * engines AS BIGINT) AS total_running_requests,
    CAST(wait_pe * engines AS BIGINT) AS total_waiting_requests,
    prompt_pe AS avg_prompt_throughput_per_engine,
    gen_pe AS avg_generation_throughput_per_engine,
    CAST(run_pe AS DOUBLE) AS avg_running_requests_per_engine,
    CAST(wait_pe AS DOUBLE) AS avg_waiting_requests_per_engine,
    kv AS avg_gpu_kv_cache_usage_pct,
    prefix AS avg_prefix_cache_hit_rate_pct,
    CAST(greatest(0, run_pe - 1) AS BIGINT) AS min_running_requests,
    CAST(busy * (run_pe + 1) AS BIGINT) AS max_running_requests,
    round(gen_pe * 0.9, 1) AS min_generation_throughput,
    round(gen_pe * 1.1, 1) AS max_generation_throughput
FROM stamped
ORDER BY i
"""


def copy(con: duckdb.DuckDBPyConnection, select: str, path: Path) -> float:
    """COPY the SELECT to a CSV the way pandas writes one (header, comma, empty = missing)."""
    start = time.perf_counter()
    tmp = path.with_name(path.name + ".tmp")
    con.execute(f"COPY ({select}) TO '{tmp}' (HEADER, DELIMITER ',')")
    tmp.replace(path)
    return time.perf_counter() - start


def make_run(out: Path, trials: int, steps: int, logs: int, vllm_seconds: int, threads: int | None = None) -> None:
    """Write the run folder `out` (replacing it)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    run_end = RUN_START + dt.timedelta(seconds=vllm_seconds * MEAN_VLLM_GAP_S * 1.1)
    prefix = (run_end + dt.timedelta(hours=2)).strftime("%Y%m%d_%H%M%S_")
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = true")
    timings = {}
    if steps:
        timings["metrics"] = copy(con, metrics_sql(steps, logs), out / f"{prefix}metrics_table.csv")
    if trials:
        timings["trials"] = copy(con, trials_sql(trials), out / f"{prefix}trial_results.csv")
    if vllm_seconds:
        timings["vllm"] = copy(con, vllm_sql(vllm_seconds, logs), out / f"{prefix}vllm_metrics_table.csv")
    (out / "rl_config.yaml").write_text(CONFIG_TEMPLATE.format(trials=trials, steps=steps), encoding="utf-8")
    for kind, seconds in timings.items():
        print(f"{kind:8} {seconds:7.2f} s", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="run folder to write (replaced if it exists)")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="default sizes: real, 1m or 10m")
    parser.add_argument("--trials", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--logs", type=int)
    parser.add_argument("--vllm-seconds", type=int)
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    args = parser.parse_args(argv)
    sizes = dict(PRESETS[args.preset or "real"])
    for key in sizes:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    start = time.perf_counter()
    make_run(args.out, threads=args.threads, **sizes)
    print(f"wrote {args.out} ({sizes}) in {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
