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
import re
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


def clear_entries(cache_dir: Path) -> None:
    """Remove the cache entries (the two-hex-digit folders), keeping the folder's marker and the SQL
    analysis cache beside them: a first query over logs then pays what a user's does, not the
    analysis of rlsql's SQL files that every other column has cached in the user's cache folder."""
    if cache_dir.is_dir():
        for child in cache_dir.iterdir():
            if child.is_dir() and len(child.name) == 2:
                shutil.rmtree(child)


def log_records(cache_dir: Path) -> list[dict]:
    """The records of the log entries under `cache_dir` (rlsql/cache/logentries.py)."""
    out = []
    for meta in cache_dir.glob("??/*.json"):
        try:
            record = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        if record.get("kind") == "log":
            out.append(record)
    return out


def wait_for_builder(stderr: str, timeout: float = 300.0) -> bool:
    """Wait until the detached builder a first query started (rlsql/cachebg.py; `-v` names its pid in
    `stderr`) has exited; False when the query started none."""
    found = re.search(r"building the cached copies of \d+ file\(s\) in process (\d+)", stderr)
    if not found:
        return False
    pid, deadline = int(found.group(1)), time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True  # gone
        if state == "Z":
            return True
        time.sleep(0.1)
    raise SystemExit(f"the background builder {pid} did not finish within {timeout:.0f} s")


def cold(query: str, run: Path, repeat: int, env: dict | None = None, clear: Path | None = None,
         builds: list | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of `repeat` fresh processes (CPU: user + system of the child,
    all threads); `clear`: a cache folder whose entries are removed before each (a first query), and
    whose background builder is waited for after each (its records' seconds appended to `builds`)."""
    exe = str(Path(sys.executable).parent / "rlsql")
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        if clear is not None:
            clear_entries(clear)
        before = os.times()
        began = time.perf_counter()
        done = subprocess.run([exe, *(["-v"] if clear else []), "query", query, "--run", str(run), "-f", "csv"],
                              check=True, capture_output=True, text=True, env={**os.environ, **(env or {})})
        wall = time.perf_counter() - began
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        best = min(best, (wall, cpu))
        if clear is not None and wait_for_builder(done.stderr) and builds is not None:
            records = log_records(clear)
            builds.append((sum(r["seconds"] for r in records), sum(r.get("cpu_seconds", 0) for r in records)))
    return best


def grow(raw: Path, cache_dir: Path, log: str, rounds: int = 3) -> None:
    """A run in progress: append one step's lines to `log` between queries; time the cached query
    (its entry parses only the new tail: `-v` says which bytes) against the same query in place."""
    exe = str(Path(sys.executable).parent / "rlsql")
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": "auto", "RLSQL_CACHE_ANSWERS": "0"}
    run = [exe, "query", "reward_curve", "--run", str(raw), "-f", "csv"]
    first = subprocess.run([exe, "-v", *run[1:]], check=True, capture_output=True, text=True, env=env)
    wait_for_builder(first.stderr)  # the entries exist before it grows (built in the background when they did not)
    step = raw.parent / "one_step.txt"  # beside the run folder, not in it
    write_log(step, range(81, 82), random.Random(81), 7500, datetime(2026, 6, 2, 9, 0, 0))
    print(f"growing {log} by {step.stat().st_size:,} bytes per round")
    for _ in range(rounds):
        with (raw / "logs" / log).open("ab") as out:
            out.write(step.read_bytes())
        t0, c0 = time.perf_counter(), os.times()
        done = subprocess.run([*run, "-v"], check=True, capture_output=True, text=True, env=env)
        t1, c1 = time.perf_counter(), os.times()
        plain = subprocess.run(run, check=True, capture_output=True, text=True, env={**env, "RLSQL_CACHE": "0"})
        t2, c2 = time.perf_counter(), os.times()

        def cpu(a: os.times_result, b: os.times_result) -> float:
            return b.children_user - a.children_user + b.children_system - a.children_system

        tail = [line.split(": cache entry updated: ")[1] for line in done.stderr.splitlines() if "updated" in line]
        same = "same answers" if done.stdout == plain.stdout else "ANSWERS DIFFER"
        print(f"grown: cached {t1 - t0:.2f} s ({cpu(c0, c1):.2f} CPU), in place {t2 - t1:.2f} s "
              f"({cpu(c1, c2):.2f} CPU), {same}; {'; '.join(tail)}; load {os.getloadavg()[0]:.1f}", flush=True)
    step.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--root", type=Path, default=Path("/tmp/rlsql-rawlogs-bench"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated named queries to time")
    parser.add_argument("--grow", metavar="LOG", help="after the table, append one step to logs/LOG 3 times "
                        "and time the cached query against in place (changes ROOT's logs)")
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
    # the raw-log cache (rlsql/cache/logentries.py) in a folder of its own; the CSVs are far below the CSV
    # cache's threshold and are read in place either way
    cache_dir = args.root / "cache"
    in_place = {"RLSQL_CACHE": "0"}
    # answers kept for repeated questions (rlsql/answers.py) off: every column measures the query itself
    # (with them on, a "first" repeat after the first, or a "repeated" one, would print the kept answer)
    cached = {"RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": "auto", "RLSQL_CACHE_ANSWERS": "0"}
    # the analysis cache of rlsql's SQL in the log cache's folder, as it is for a user (RLSQL_CACHE_DIR
    # also moves it): the first query of each row must not pay for it
    exe = str(Path(sys.executable).parent / "rlsql")
    subprocess.run([exe, "query", "reward_curve", "--run", str(csv), "-f", "csv"], check=True, capture_output=True,
                   env={**os.environ, **cached})
    print(f"load average {os.getloadavg()[0]:.1f}; wall s (CPU s = user + system, all threads); ratios of wall, "
          "and the first query's CPU over the CSV query's")
    print(f"{'query':<18} {'CSVs':>12} {'in place':>12} {'ratio':>5} {'1st cached':>12} {'ratio':>5} "
          f"{'repeat cached':>13} {'ratio':>5} {'bg build':>12} {'1st CPU ratio':>13}")
    for query in args.queries.split(","):
        over_csv = cold(query, csv, args.repeat, in_place)
        over_logs = cold(query, raw, args.repeat, in_place)
        builds: list = []
        first = cold(query, raw, args.repeat, cached, clear=cache_dir, builds=builds)
        repeat = cold(query, raw, args.repeat, cached)

        def cell(t: tuple[float, float]) -> str:
            return f"{t[0]:.2f} ({t[1]:.2f})"

        # the background build (rlsql/cachebg.py, nice 10) after a first query: its records' wall and CPU
        # seconds summed over the run's logs, the fastest repeat; "-" when the first query built in the
        # foreground (RLSQL_CACHE=1, or a platform without posix_spawn)
        bg = cell(min(builds)) if builds else "-"
        print(f"{query:<18} {cell(over_csv):>12} {cell(over_logs):>12} {over_logs[0] / over_csv[0]:>5.1f} "
              f"{cell(first):>12} {first[0] / over_csv[0]:>5.1f} {cell(repeat):>13} {repeat[0] / over_csv[0]:>5.1f} "
              f"{bg:>12} {first[1] / over_csv[1]:>13.1f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.grow:
        grow(raw, cache_dir, args.grow)


if __name__ == "__main__":
    main()
