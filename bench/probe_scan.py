"""Where the time of a trial query goes at scale: the same statistic through variants of the scan.

Usage (from the repository root)::

    python bench/probe_scan.py /work/bench-data/10m [--repeat 3] [--markdown-out FILE]

Runs in one process (warm: the file is in the OS cache after the first variant) and times, with the
median of --repeat runs and DuckDB's default threads, `turn_stats`-like aggregates
(count/avg/median/stddev/min/max of n_episodes per run) over the run's trial CSV:

1. named queries through rlsql's views (``open_connection``) and rewrites of them: aggregating
   before joining run_files / exception_routing, ``list(DISTINCT ...)`` in exception_treatment;
2. a bare ``read_csv`` with the columns declared (no sniffing), as the source view does but without
   its extras, then adding each extra: ``row_number() OVER ()``, ``ignore_errors/store_rejects``,
   the ``isfinite`` guards, the ``trials`` view's join with exception_routing;
3. the same aggregates over a Parquet copy of the file (what a cache would give), plus the copy's cost;
4. pandas: ``read_csv`` default (the baseline), ``usecols``, ``engine='pyarrow'``.

Each variant reports median wall and CPU seconds (CPU is what to trust on a loaded machine) and,
for DuckDB, its peak buffer memory. It prints a markdown table. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

AGG = (
    "count(n_episodes) AS trials, avg(n_episodes) AS mean, quantile_cont(n_episodes, 0.5) AS median, "
    "stddev_samp(n_episodes) AS std, min(n_episodes) AS min, max(n_episodes) AS max"
)
COLUMNS = {
    "task_name": "VARCHAR",
    "trial_name": "VARCHAR",
    "n_episodes": "DOUBLE",
    "n_input_tokens": "DOUBLE",
    "n_output_tokens": "DOUBLE",
    "exception_type": "VARCHAR",
    "reward": "DOUBLE",
    "agent_duration_sec": "DOUBLE",
}


def trial_file(run: Path) -> Path:
    pattern = r"\d{8}_\d{6}_trial_results\.csv"
    found = sorted(p for p in run.glob("*_trial_results.csv") if re.fullmatch(pattern, p.name))
    return found[-1]


def read_csv_sql(path: Path, extra: str = "") -> str:
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    return (
        f"read_csv('{path}', header = true, auto_detect = false, delim = ',', quote = '\"', escape = '\"'"
        f"{extra}, columns = {{{cols}}})"
    )


Measure = tuple[float, float, float]  # median wall s, median process CPU s, DuckDB peak buffer MiB (nan: not known)


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[], object], repeat: int) -> Measure:
    """Median wall and CPU seconds of `repeat` calls (CPU time is the robust one on a loaded machine)."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), cpu_now()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_now() - cpu)
    return statistics.median(walls), statistics.median(cpus), float("nan")


def peak_buffer_mib(con: duckdb.DuckDBPyConnection, query: str) -> float:
    """DuckDB's own peak buffer memory for one run of `query` (from its JSON profile)."""
    with tempfile.TemporaryDirectory(prefix="rlsql-probe-profile-") as tmp:
        out = Path(tmp) / "profile.json"
        con.execute("SET enable_profiling = 'json'")
        con.execute(f"SET profiling_output = '{out}'")
        con.execute(query).fetchall()
        con.execute("SET enable_profiling = 'no_output'")
        con.execute("PRAGMA disable_profiling")
        return json.loads(out.read_text(encoding="utf-8"))["system"]["peak_buffer_memory"] / 2**20


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown-out", type=Path)
    parser.add_argument("--skip-pandas", action="store_true")
    args = parser.parse_args(argv)
    run = args.run.resolve()
    path = trial_file(run)
    results: list[tuple[str, Measure]] = []
    con = duckdb.connect()

    def report(label: str, measure: Measure) -> None:
        results.append((label, measure))
        print(f"{label:78} {measure[0]:7.3f} s wall {measure[1]:7.3f} s CPU {measure[2]:6.0f} MiB", flush=True)

    def sql(label: str, query: str, on: duckdb.DuckDBPyConnection | None = None) -> None:
        target = on or con
        peak = peak_buffer_mib(target, query)  # also the warm-up (and the OS cache)
        wall, cpu, _ = timed(lambda: target.execute(query).fetchall(), args.repeat)
        report(label, (wall, cpu, peak))

    from rlsql.catalog.catalog import load_catalog
    from rlsql.engine.statements import open_connection
    from rlsql.runs.folders import resolve_runs

    runs = resolve_runs([run])
    view_con = open_connection(runs, ["turn_stats", "exception_treatment", "turns_by_outcome"], load_catalog())
    sql(
        "rlsql: SELECT * FROM turn_stats (run_files LEFT JOIN trials, then aggregate)",
        "SELECT * FROM turn_stats",
        view_con,
    )
    sql(
        "rewrite: the same aggregates FROM trials GROUP BY run (no run_files join)",
        f"SELECT run, {AGG} FROM trials GROUP BY run",
        view_con,
    )
    sql(
        "rewrite: the same aggregates FROM trials_src (no exception_routing join either)",
        f"SELECT run, {AGG} FROM trials_src GROUP BY run",
        view_con,
    )
    sql("rlsql: SELECT * FROM turns_by_outcome", "SELECT * FROM turns_by_outcome", view_con)
    sql(
        "rewrite: turns_by_outcome over trials_src (no exception_routing join)",
        "SELECT run, CASE WHEN reward > 0 THEN 'Success' WHEN reward = 0 THEN 'Failure' END AS outcome, count(*), "
        "avg(n_episodes), quantile_cont(n_episodes, 0.5) FROM trials_src "
        "WHERE n_episodes IS NOT NULL AND reward >= 0 GROUP BY ALL",
        view_con,
    )
    sql(
        "rlsql: SELECT * FROM exception_treatment (list(exception_type) per group)",
        "SELECT * FROM exception_treatment",
        view_con,
    )
    sql(
        "rewrite: exception_treatment with list(DISTINCT exception_type)",
        "SELECT run, effective_treatment, count(*), 100.0 * count(*) / sum(count(*)) OVER (PARTITION BY run), "
        "array_to_string(list_sort(list(DISTINCT exception_type)), ', ') FROM trials GROUP BY run, effective_treatment",
        view_con,
    )
    base = read_csv_sql(path)
    rejects = read_csv_sql(path, ", ignore_errors = true, store_rejects = true")
    sql("bare read_csv, columns declared: count(*) only", f"SELECT count(*) FROM {base}")
    sql("bare read_csv: turn_stats aggregates", f"SELECT {AGG} FROM {base}")
    sql(
        "+ row_number() OVER () in the scan",
        f"SELECT {AGG} FROM (SELECT row_number() OVER () AS row_no, * FROM {base})",
    )
    sql("+ ignore_errors, store_rejects (no row_number)", f"SELECT {AGG} FROM {rejects}")
    sql(
        "+ row_number() and ignore_errors/store_rejects",
        f"SELECT {AGG} FROM (SELECT row_number() OVER () AS row_no, * FROM {rejects})",
    )
    guarded = ", ".join(
        f"CASE WHEN isfinite({k}) THEN {k} END AS {k}" if v == "DOUBLE" else k for k, v in COLUMNS.items()
    )
    sql(
        "+ row_number(), rejects and isfinite guards (= the source view)",
        f"SELECT {AGG} FROM (SELECT row_number() OVER () AS row_no, {guarded} FROM {rejects})",
    )
    sql(
        "exception_distribution-like: group by type, min(row_no) (row_number needed)",
        f"SELECT coalesce(exception_type, 'No exception') AS e, count(*), min(row_no) FROM "
        f"(SELECT row_number() OVER () AS row_no, * FROM {base}) GROUP BY e",
    )
    sql(
        "turn_percentiles-like: 5 quantiles per type, bare read_csv",
        f"SELECT exception_type, quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]) FROM {base} "
        f"WHERE n_episodes IS NOT NULL GROUP BY ALL",
    )
    with tempfile.TemporaryDirectory(prefix="rlsql-probe-") as tmp:
        parquet = Path(tmp) / "trials.parquet"
        start, cpu = time.perf_counter(), cpu_now()
        con.execute(f"COPY (SELECT row_number() OVER () AS row_no, * FROM {base}) TO '{parquet}' (FORMAT parquet)")
        size = parquet.stat().st_size / 1e6
        report(
            f"one-off: CSV -> Parquet copy with row_no ({size:.0f} MB)",
            (time.perf_counter() - start, cpu_now() - cpu, float("nan")),
        )
        sql("Parquet copy: turn_stats aggregates", f"SELECT {AGG} FROM '{parquet}'")
        sql(
            "Parquet copy: turn_percentiles-like",
            f"SELECT exception_type, quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]) FROM '{parquet}' "
            f"WHERE n_episodes IS NOT NULL GROUP BY ALL",
        )
    if not args.skip_pandas:
        import pandas as pd

        def pandas_variant(label: str, **kwargs: object) -> None:
            def go() -> object:
                s = pd.read_csv(path, **kwargs)["n_episodes"].dropna()  # type: ignore[call-overload]
                return (len(s), s.mean(), s.median(), s.std(), s.min(), s.max())

            report(label, timed(go, args.repeat))

        pandas_variant("pandas read_csv (all columns, C engine) + stats")
        pandas_variant("pandas read_csv usecols=[n_episodes, exception_type]", usecols=["n_episodes", "exception_type"])
        pandas_variant("pandas read_csv engine='pyarrow'", engine="pyarrow")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines = [
        f"Scan probe on `{path}` ({path.stat().st_size / 1e6:.0f} MB), median of {args.repeat}, in-process "
        f"(file in the OS cache); load average at the end {load}; process peak RSS {peak:.0f} MB "
        "(pandas included). Peak buffer = DuckDB's own accounting from its JSON profile.",
        "",
        "| variant | wall s | CPU s | peak buffer MiB |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {label} | {wall:.3f} | {cpu:.3f} | {'-' if mib != mib else f'{mib:.0f}'} |"
        for label, (wall, cpu, mib) in results
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown_out:
        with args.markdown_out.open("a", encoding="utf-8") as handle:
            handle.write("\n" + text)


if __name__ == "__main__":
    main()
