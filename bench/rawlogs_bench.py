"""Raw training logs at the real run's size: cold query time over the logs vs over the parsed CSVs.

    python bench/rawlogs_bench.py [--scale 1] [--root /tmp/rlsql-rawlogs-bench] [--repeat 3] [--queries a,b]

Writes under ROOT (never in the repository):
- ``raw/``: three chained logs in ``logs/`` of about 100 MB in total at scale 1 (82 console
  metric blocks with WANDB_MIRROR lines, ~20,000 vLLM stat lines from 48 engines, Harbor batch
  lines, and ~600,000 lines of other output: trial progress, Ray noise) plus ``rl_config.yaml``;
- ``csv/``: the metrics and vLLM CSVs of the same run, written by rlsql itself from the logs
  (``COPY`` of metrics_src / vllm_src: for timing, not as a correctness reference).

Then times each named query as a user runs it, a fresh ``rlsql query NAME --run DIR -f csv``
process per run (cold: nothing is shared between processes; the OS page cache is warm after the
first repeat), best of ``--repeat``. Trial folders are not generated: trial queries read
``trace_jobs`` the same way with or without logs (bench/RESULTS.md has their numbers).
Stdlib only besides rlsql; every random draw comes from a seeded ``random.Random``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

QUERIES = ["reward_curve", "best_checkpoint", "timing_breakdown", "async_health", "run_overview", "vllm_summary"]
LOGS = [("calendar_v2_agent_rl_run_8b_554408.out", range(1, 4)),
        ("calendar_v2_agent_rl_run_8b_554409.out", range(3, 76)),
        ("calendar_v2_agent_rl_run_8b_554410.out", range(75, 81))]  # fmt: skip
CONFIG = "trainer:\n  max_steps: 80\n  hf_save_interval: 5\ngenerator:\n  n_samples_per_prompt: 8\n"
PREFIX = "(skyrl_entrypoint pid=4242) "


def metric_values(rng: random.Random, step: int) -> dict:
    values = {f"timing/span_{i:02d}": rng.uniform(0, 500) for i in range(20)}
    values.update({f"policy/m_{i:02d}": rng.uniform(-1, 1) for i in range(40)})
    values.update({f"generate/g_{i:02d}": rng.uniform(0, 3000) for i in range(20)})
    values.update({
        "async/staleness_mean": rng.uniform(0, 8), "async/discard_rate": rng.uniform(0, 0.02),
        "async/staleness_max": rng.randint(0, 16), "reward/avg_raw_reward": rng.uniform(0.3, 0.99),
        "reward/avg_pass_at_8": rng.uniform(0.8, 1.0), "timing/step": rng.uniform(200, 700),
        "trainer/epoch": 0, "trainer/global_step": step,
    })  # fmt: skip
    return dict(sorted(values.items()))


def write_log(path: Path, steps: range, rng: random.Random, lines_per_step: int, start: datetime) -> None:
    clock = start
    with path.open("w", encoding="utf-8") as out:
        for step in steps:
            out.write(f"{PREFIX}Step {step}: effective_batch=64 groups\n")
            for _ in range(lines_per_step):
                kind = rng.random()
                if kind < 0.035:
                    clock += timedelta(seconds=rng.randint(0, 2))
                    pid = 3000 + rng.randint(0, 47)
                    out.write(
                        f"\x1b[36m(AsyncVLLMInferenceEngine pid={pid}, ip=10.0.{pid % 6}.{pid % 200})\x1b[0m INFO "
                        f"{clock:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt throughput: "
                        f"{rng.uniform(0, 4000):.1f} tokens/s, Avg generation throughput: {rng.uniform(0, 1500):.1f} "
                        f"tokens/s, Running: {rng.randint(0, 40)} reqs, Waiting: {rng.choice([0, 0, 3])} reqs, "
                        f"GPU KV cache usage: {rng.uniform(0, 90):.1f}%, "
                        f"Prefix cache hit rate: {rng.uniform(60, 95):.1f}%\n"
                    )
                elif kind < 0.045:
                    out.write(f"(TerminalBenchGenerator pid=5151, ip=10.0.0.2) Exception breakdown: "
                              f"{{'AgentTimeoutError': {rng.randint(1, 3)}}}\n"
                              f"(TerminalBenchGenerator pid=5151, ip=10.0.0.2) Batch generation complete: 7/8 "
                              f"successful, 1 failed instances, 0 masked (excluded from baseline)\n")  # fmt: skip
                else:
                    out.write(f"(TerminalBenchGenerator pid=5151, ip=10.0.0.2) {clock:%Y-%m-%d %H:%M:%S} INFO "
                              f"trial calendar-{rng.randint(0, 9999):04d}__{rng.getrandbits(40):010x} episode "
                              f"{rng.randint(1, 27)} finished: tokens={rng.randint(100, 90000)} "
                              "status=ok\n")  # fmt: skip
            values = metric_values(rng, step)
            out.write(f"{PREFIX}WANDB_MIRROR kind=train step={step} metrics={json.dumps(values, sort_keys=True)}\n")
            shown = {k: f"{v:.4f}" if isinstance(v, float) else v for k, v in values.items()}
            block = f"Step {step}: " + "{" + ",\n ".join(f"{k!r}: {v!r}" for k, v in shown.items()) + "}"
            out.write("".join(f"{PREFIX}{line}\n" for line in block.split("\n")))


def build(root: Path, scale: int) -> tuple[Path, Path]:
    raw, csv = root / "raw", root / "csv"
    if root.exists():
        shutil.rmtree(root)
    (raw / "logs").mkdir(parents=True)
    csv.mkdir(parents=True)
    for folder in (raw, csv):
        (folder / "rl_config.yaml").write_text(CONFIG)
    rng = random.Random(14)
    lines_per_step = 7500 * scale  # ~82 x 7,500 lines of ~160 bytes: ~100 MB at scale 1
    start = datetime(2026, 6, 1, 20, 0, 0)
    for name, steps in LOGS:
        write_log(raw / "logs" / name, steps, rng, lines_per_step, start)
        start += timedelta(seconds=len(steps) * lines_per_step * 0.035)
    import rlsql

    con = rlsql.connect([raw])
    con.execute(f"COPY (SELECT * EXCLUDE (run, source_file, row_no) FROM metrics_src ORDER BY row_no) "
                f"TO '{csv / '20260604_120000_metrics_table.csv'}' (HEADER)")  # fmt: skip
    con.execute(f"COPY (SELECT * EXCLUDE (run, source_file, row_no) FROM vllm_src ORDER BY row_no) "
                f"TO '{csv / '20260604_120000_vllm_metrics_table.csv'}' (HEADER)")  # fmt: skip
    return raw, csv


def cold(query: str, run: Path, repeat: int, env: dict | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of `repeat` fresh processes (CPU: user + system of the child,
    all threads)."""
    exe = str(Path(sys.executable).parent / "rlsql")
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        before = os.times()
        began = time.perf_counter()
        subprocess.run(
            [exe, "query", query, "--run", str(run), "-f", "csv"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        wall = time.perf_counter() - began
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        best = min(best, (wall, cpu))
    return best


def grow(raw: Path, cache_dir: Path, log: str, rounds: int = 3) -> None:
    """A run in progress: append one step's lines to `log` between queries; time the plain query (the
    entry `cache build` made, and the bytes the log gained since, parsed for the answer: `-v` says which)
    against the same query in place."""
    exe = str(Path(sys.executable).parent / "rlsql")
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": "auto"}
    run = [exe, "query", "reward_curve", "--run", str(raw), "-f", "csv"]
    step = raw.parent / "one_step.txt"  # beside the run folder, not in it
    write_log(step, range(81, 82), random.Random(81), 7500, datetime(2026, 6, 2, 9, 0, 0))
    print(f"growing {log} by {step.stat().st_size:,} bytes per round")
    for _ in range(rounds):
        with (raw / "logs" / log).open("ab") as out:
            out.write(step.read_bytes())
        t0, c0 = time.perf_counter(), os.times()
        done = subprocess.run([*run, "-v"], check=True, capture_output=True, text=True, env=env)
        t1, c1 = time.perf_counter(), os.times()
        plain = subprocess.run(run, check=True, capture_output=True, text=True, env={**env, "RLSQL_CACHE": "off"})
        t2, c2 = time.perf_counter(), os.times()

        def cpu(a: os.times_result, b: os.times_result) -> float:
            return b.children_user - a.children_user + b.children_system - a.children_system

        # a plain query parses the bytes the log gained since its entry for its answer only (the entry is left
        # as `cache build` made it): -v names them
        tail = [line.split(") and ", 1)[1] for line in done.stderr.splitlines() if "and its new bytes" in line]
        same = "same answers" if done.stdout == plain.stdout else "ANSWERS DIFFER"
        print(
            f"grown: cached {t1 - t0:.2f} s ({cpu(c0, c1):.2f} CPU), in place {t2 - t1:.2f} s "
            f"({cpu(c1, c2):.2f} CPU), {same}; {'; '.join(tail)}; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    step.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--root", type=Path, default=Path("/tmp/rlsql-rawlogs-bench"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated named queries to time")
    parser.add_argument(
        "--grow",
        metavar="LOG",
        help="after the table, append one step to logs/LOG 3 times "
        "and time the cached query against in place (changes ROOT's logs)",
    )
    parser.add_argument("--reuse", action="store_true", help="keep the logs and CSVs ROOT holds from an earlier run")
    args = parser.parse_args()
    began = time.perf_counter()
    if args.reuse and (args.root / "raw").is_dir() and (args.root / "csv").is_dir():
        raw, csv = args.root / "raw", args.root / "csv"
    else:
        raw, csv = build(args.root, args.scale)
    size = sum(p.stat().st_size for p in (raw / "logs").iterdir())
    lines = sum(1 for p in (raw / "logs").iterdir() for _ in p.open("rb"))
    built = time.perf_counter() - began
    print(f"scale {args.scale}: {size / 1e6:.0f} MB of logs, {lines:,} lines (built in {built:.0f} s)")
    # the raw-log cache (rlsql/cache/logentries.py) in a folder of its own, built by `rlsql cache build`
    cache_dir = args.root / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)  # the bench's own folder under ROOT
    in_place = {"RLSQL_CACHE": "off"}
    cached = {"RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": "auto"}
    exe = str(Path(sys.executable).parent / "rlsql")
    before, began = os.times(), time.perf_counter()
    subprocess.run(
        [exe, "cache", "build", "--run", str(raw)], check=True, capture_output=True, env={**os.environ, **cached}
    )
    after = os.times()
    print(
        f"rlsql cache build: {time.perf_counter() - began:.2f} s "
        f"({after.children_user - before.children_user + after.children_system - before.children_system:.2f} CPU)"
    )
    print(
        f"load average {os.getloadavg()[0]:.1f}; wall s (CPU s = user + system, all threads); ratios of wall "
        "over the CSV query's"
    )
    print(f"{'query':<18} {'CSVs':>12} {'in place':>12} {'ratio':>5} {'cached':>12} {'ratio':>5}")
    for query in args.queries.split(","):
        over_csv = cold(query, csv, args.repeat, in_place)
        over_logs = cold(query, raw, args.repeat, in_place)
        from_cache = cold(query, raw, args.repeat, cached)

        def cell(t: tuple[float, float]) -> str:
            return f"{t[0]:.2f} ({t[1]:.2f})"

        print(
            f"{query:<18} {cell(over_csv):>12} {cell(over_logs):>12} {over_logs[0] / over_csv[0]:>5.1f} "
            f"{cell(from_cache):>12} {from_cache[0] / over_csv[0]:>5.1f}",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.grow:
        grow(raw, cache_dir, args.grow)


if __name__ == "__main__":
    main()
