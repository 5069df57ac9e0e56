"""Where rlsql's CSV path loses against the bare DuckDB statement: the same trial query, in one process.

Usage (from the repository root)::

    python bench/probe_csv_path.py /work/bench-data/1m [--queries turn_stats,...] [--repeat 3] [--plans DIR]

For each query it times (median of --repeat, after one warm-up, the CSV in the OS file cache) the
statement rlsql renders for ``rlsql query NAME`` (``connection.query_connection``: the sources and
views inlined as CTEs, the small sources loaded first, the cache off) against the statement
bench/duckdb_baseline.py runs, wall and CPU seconds of this process (CPU is what to trust on a
shared machine). With --plans it writes both EXPLAIN ANALYZE trees to DIR/LABEL_NAME_{rlsql,bare}.txt.
Measured, never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import time
from pathlib import Path

os.environ["RLSQL_CACHE"] = "off"  # the CSV path, read in place

import duckdb  # noqa: E402

from rlsql.catalog import load_catalog  # noqa: E402
from rlsql.connection import query_connection  # noqa: E402
from rlsql.runs import resolve_runs  # noqa: E402

BENCH = Path(__file__).resolve().parent
QUERIES = ["turn_stats", "turns_by_exception", "turns_by_outcome", "turn_percentiles", "exception_distribution",
           "exception_treatment", "reward_summary", "trial_phases"]


def baseline_module():
    spec = importlib.util.spec_from_file_location("duckdb_baseline", BENCH / "duckdb_baseline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def timed(con: duckdb.DuckDBPyConnection, sql: str, repeat: int) -> tuple[float, float]:
    con.execute(sql).fetchall()
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), cpu()
        con.execute(sql).fetchall()
        walls.append(time.perf_counter() - w)
        cpus.append(cpu() - c)
    return statistics.median(walls), statistics.median(cpus)


def plan(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    return "\n".join(str(r[1]) for r in con.execute("EXPLAIN ANALYZE " + sql).fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--plans", type=Path)
    parser.add_argument("--label", default=None)
    parser.add_argument("--show", action="store_true", help="print rlsql's statement")
    args = parser.parse_args()
    bare = baseline_module()
    runs = resolve_runs([args.run])
    catalog = load_catalog()
    label = args.label or args.run.name
    print(f"| query | rlsql wall s | rlsql CPU s | bare wall s | bare CPU s | CPU ratio |\n|---|---:|---:|---:|---:|---:|")
    for name in args.queries.split(","):
        con, sql = query_connection(runs, name, catalog)
        if args.show:
            print(sql)
        bare_sql = bare.STATISTICS[name](args.run.resolve())
        bcon = duckdb.connect()
        rw, rc = timed(con, sql, args.repeat)
        bw, bc = timed(bcon, bare_sql, args.repeat)
        print(f"| {name} | {rw:.3f} | {rc:.3f} | {bw:.3f} | {bc:.3f} | {rc / bc:.2f} |", flush=True)
        if args.plans:
            args.plans.mkdir(parents=True, exist_ok=True)
            (args.plans / f"{label}_{name}_rlsql.txt").write_text(sql + "\n\n" + plan(con, sql), encoding="utf-8")
            (args.plans / f"{label}_{name}_bare.txt").write_text(bare_sql + "\n\n" + plan(bcon, bare_sql),
                                                                   encoding="utf-8")


if __name__ == "__main__":
    main()
