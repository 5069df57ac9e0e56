"""Local Spark vs DuckDB on a generated fleet of runs: where the crossover lies on this machine.

Usage (from the repository root; keep the fleet outside the repository)::

    python bench/spark_vs_duckdb.py --runs 1000 --trials 1000 /work/bench-data/fleet1000
    python bench/spark_vs_duckdb.py --first 100 /work/bench-data/fleet-1000/runs turns_by_exception turn_stats

Writes RUNS run folders with bench/make_run.py (TRIALS trials, 20 steps, 1 log, 200 vLLM seconds
each) into an empty or missing FLEET folder (one that holds anything is used as it is, never
written into). `--first N` uses only the first N run folders of FLEET, through symlinks in a
temporary folder (removed at the end). Then, for each named query:

- DuckDB: one cold `rlsql query NAME -r FLEET -f csv` process (what a user runs; `RLSQL_CACHE=0`,
  so the CSVs are read in place) with its wall, CPU seconds and peak RSS; and one process that runs
  the query twice through `rlsql.engine.query.run_query`, the second run timed (warm: imports and the SQL
  analysis done, files in the page cache);
- Spark: one local session (local[2], as rlsql starts it) for all queries: the session start once,
  then per query a fresh `SparkCatalog` (cold: its sources read and cached, its views created), a
  second, warm run on the same catalogue, and the JVM's peak RSS so far (VmHWM; the JVM's start and
  JIT warm-up are shared by the queries, in the order given).

Every line carries the load average: the machine may be shared. Prints a markdown table to paste
into bench/RESULTS.md (and `--json OUT` writes the figures). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_QUERIES = ["turns_by_exception", "turn_stats", "exception_distribution", "run_overview", "reward_curve"]
#: DuckDB's warm run: a second run_query in one process (imports and SQL analysis already done)
WARM_CHILD = """
import json, sys, time, resource
from rlsql.engine.query import run_query
from rlsql.runs.folders import resolve_runs
runs = resolve_runs([sys.argv[1]])
t0 = time.perf_counter(); run_query(sys.argv[2], runs, {}); t1 = time.perf_counter()
c1 = time.process_time(); run_query(sys.argv[2], runs, {}); t2 = time.perf_counter(); c2 = time.process_time()
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first": t1 - t0, "warm": t2 - t1, "warm_cpu": c2 - c1, "rss_mb": rss_mb}))
"""


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


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


def first_runs(fleet: Path, n: int) -> Path:
    """A temporary folder of symlinks to the first `n` run folders of `fleet` (nothing written into it)."""
    folder = Path(tempfile.mkdtemp(prefix=f"fleet-first{n}-"))
    for run in sorted(p for p in fleet.iterdir() if p.is_dir())[:n]:
        (folder / run.name).symlink_to(run.resolve())
    return folder


def child_env() -> dict[str, str]:
    # the CSVs read in place: no Parquet cache built or read (the fleet's files are small anyway)
    return {**os.environ, "RLSQL_CACHE": "0"}


def time_duckdb(fleet: Path, name: str) -> dict:
    """A cold `rlsql query` process: wall, CPU (user+sys, DuckDB's threads included), peak RSS."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a fleet's warnings would fill a pipe and block
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rlsql", "query", name, "-r", str(fleet), "-f", "csv"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=child_env(),
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if status != 0:
            err.seek(0)
            raise SystemExit(f"rlsql query {name} failed: {err.read().decode()[-500:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def warm_duckdb(fleet: Path, name: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WARM_CHILD, str(fleet), name],
        check=True,
        capture_output=True,
        text=True,
        env=child_env(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def jvm_pid() -> int | None:
    """The JVM this process started (pyspark's gateway: a `java` child), None for Spark Connect."""
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == me and fields.get("Name", "").strip() == "java":
            return int(proc.name)
    return None


def jvm_peak_mb(pid: int | None) -> float:
    """The JVM's peak RSS so far (VmHWM)."""
    if pid is None:
        return 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def spark_cpu(pid: int | None) -> float:
    """CPU seconds (user+sys, every thread) of the JVM and of this Python driver so far."""
    own = time.process_time()
    if pid is None:
        return own
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", type=Path)
    parser.add_argument("queries", nargs="*", default=DEFAULT_QUERIES)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--first", type=int, help="use only the first N run folders of FLEET (symlinks in /tmp)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    make_fleet(args.fleet, args.runs, args.trials)
    fleet = first_runs(args.fleet, args.first) if args.first else args.fleet
    try:
        measure(fleet, args)
    finally:
        if args.first:
            shutil.rmtree(fleet)  # only the symlinks made above; rmtree does not follow them


def measure(fleet: Path, args: argparse.Namespace) -> None:
    from rlsql.engine.spark import SparkCatalog, get_session, run_query_spark
    from rlsql.runs.folders import resolve_runs

    warnings.simplefilter("ignore")
    runs = resolve_runs([str(fleet)])
    figures: dict = {"fleet": str(args.fleet), "runs": len(runs), "queries": {}, "load_start": load()}
    print(f"fleet: {args.fleet} ({len(runs)} runs); load average (1/5/15 min) at the start: {load()}")
    duck: dict[str, dict] = {}
    for name in args.queries:  # DuckDB first, before the JVM takes its share of the 2 cores
        duck[name] = {"cold": time_duckdb(fleet, name), **warm_duckdb(fleet, name), "load": load()}
    started, cpu0 = time.perf_counter(), time.process_time()
    spark = get_session()
    session_s = time.perf_counter() - started
    pid = jvm_pid()
    session_cpu = spark_cpu(pid) - cpu0
    figures.update(spark_session_s=session_s, spark_session_cpu=session_cpu)
    print(f"local Spark session start {session_s:.1f} s, {session_cpu:.1f} CPU-s (load {load()})\n")
    print(
        "| query | DuckDB cold process: wall / CPU / RSS | DuckDB warm: wall / CPU | Spark cold (fresh catalogue): "
        "wall / CPU | Spark warm: wall / CPU | Spark / DuckDB, cold CPU | JVM peak RSS so far | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in args.queries:
        objects = SparkCatalog(spark, runs)
        started, cpu0 = time.perf_counter(), spark_cpu(pid)
        run_query_spark(name, runs, {}, objects=objects)
        cold, cold_cpu = time.perf_counter() - started, spark_cpu(pid) - cpu0
        started, cpu0 = time.perf_counter(), spark_cpu(pid)
        run_query_spark(name, runs, {}, objects=objects)
        warm, warm_cpu = time.perf_counter() - started, spark_cpu(pid) - cpu0
        objects.close()
        d = duck[name]
        peak = jvm_peak_mb(pid)
        figures["queries"][name] = {
            "duckdb": d,
            "spark_cold": cold,
            "spark_cold_cpu": cold_cpu,
            "spark_warm": warm,
            "spark_warm_cpu": warm_cpu,
            "jvm_peak_mb": peak,
            "load": load(),
        }
        print(
            f"| {name} | {d['cold']['wall']:.2f} s / {d['cold']['cpu']:.2f} / {d['cold']['rss_mb']:.0f} MB "
            f"| {d['warm']:.2f} s / {d['warm_cpu']:.2f} | {cold:.2f} s / {cold_cpu:.1f} "
            f"| {warm:.2f} s / {warm_cpu:.1f} "
            f"| {cold_cpu / d['cold']['cpu']:.0f}x | {peak:.0f} MB | {d['load']} / {load()} |",
            flush=True,
        )
    figures["load_end"] = load()
    print(f"\nload average (1/5/15 min) at the end: {load()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
