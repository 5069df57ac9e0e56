"""Local Spark vs DuckDB on a generated fleet of runs: where the crossover lies on this machine.

Usage (from the repository root; keep the fleet outside the repository)::

    python bench/spark_vs_duckdb.py --runs 1000 --trials 1000 /work/bench-data/fleet1000
    python bench/spark_vs_duckdb.py --runs 50 --trials 2000 /tmp/fleet50 turns_by_exception turn_stats

Writes RUNS run folders with bench/make_run.py (TRIALS trials, 20 steps, 1 log, 200 vLLM seconds
each) into an empty or missing FLEET folder (one that holds anything is used as it is), then times
each named query:

- DuckDB: one cold `rlsql query NAME -r FLEET -f csv` process per query (what a user runs);
- Spark: one local session (local[2], as rlsql starts it) for all queries: the session start once,
  then each query's first run (sources read, views created and cached) and a second, warm run.

Prints a markdown table to paste into bench/RESULTS.md. Wall-clock only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_QUERIES = ["turns_by_exception", "turn_stats", "exception_distribution", "run_overview", "reward_curve"]


def make_fleet(out: Path, runs: int, trials: int) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from make_run import make_run

    if out.is_dir() and any(out.iterdir()):
        return  # a fleet already there (e.g. /work/bench-data/fleet-1000/runs) is used as it is
    out.mkdir(parents=True, exist_ok=True)
    for i in range(runs):
        run = out / f"run{i:05d}"
        if not run.exists():
            make_run(run, trials=trials, steps=20, logs=1, vllm_seconds=200, threads=1)


def time_duckdb(fleet: Path, name: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlsql", "query", name, "-r", str(fleet), "-f", "csv"],
                   check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", type=Path)
    parser.add_argument("queries", nargs="*", default=DEFAULT_QUERIES)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args(argv)

    make_fleet(args.fleet, args.runs, args.trials)
    print(f"load average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    from rlsql.engines.spark import SparkCatalog, get_session, run_query_spark
    from rlsql.runs import resolve_runs

    warnings.simplefilter("ignore")
    runs = resolve_runs([str(args.fleet)])
    started = time.perf_counter()
    spark = get_session()
    session_s = time.perf_counter() - started
    objects = SparkCatalog(spark, runs)
    print(f"fleet: {len(runs)} runs; local Spark session start {session_s:.1f} s\n")
    print("| query | DuckDB (cold process) | Spark first run | Spark warm |")
    print("|---|---:|---:|---:|")
    for name in args.queries:
        duck = time_duckdb(args.fleet, name)
        started = time.perf_counter()
        run_query_spark(name, runs, {}, objects=objects)
        first = time.perf_counter() - started
        started = time.perf_counter()
        run_query_spark(name, runs, {}, objects=objects)
        warm = time.perf_counter() - started
        print(f"| {name} | {duck:.2f} s | {first:.2f} s | {warm:.2f} s |", flush=True)
    # the machine is shared: the load says how far these wall-clock figures are inflated
    print(f"\nload average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
