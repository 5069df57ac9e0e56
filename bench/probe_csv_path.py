"""Where rlsql's CSV path loses against the bare DuckDB statement: the same trial query, in one process.

Usage (from the repository root)::

    python bench/probe_csv_path.py /work/bench-data/1m [--queries turn_stats,...] [--repeat 3] [--plans DIR]

For each query it times (medians of --repeat paired runs, alternating, after one warm-up each, the
CSV in the OS file cache) the
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

import duckdb

from rlsql.catalog.catalog import load_catalog
from rlsql.engine.statements import query_connection
from rlsql.runs.folders import resolve_runs

BENCH = Path(__file__).resolve().parent
QUERIES = [
    "turn_stats",
    "turns_by_exception",
    "turns_by_outcome",
    "turn_percentiles",
    "exception_distribution",
    "exception_treatment",
    "reward_summary",
    "trial_phases",
]


def baseline_module():
    spec = importlib.util.spec_from_file_location("duckdb_baseline", BENCH / "duckdb_baseline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def paired(
    a: tuple[duckdb.DuckDBPyConnection, str], b: tuple[duckdb.DuckDBPyConnection, str], repeat: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Wall and CPU seconds of a and b, run alternately (a b, b a, ...) after one warm-up each."""
    for con, sql in (a, b):
        con.execute(sql).fetchall()
    out: dict[int, tuple[list[float], list[float]]] = {0: ([], []), 1: ([], [])}
    for i in range(repeat):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            con, sql = (a, b)[k]
            w, c = time.perf_counter(), cpu()
            con.execute(sql).fetchall()
            out[k][0].append(time.perf_counter() - w)
            out[k][1].append(cpu() - c)
    return out[0][0], out[0][1], out[1][0], out[1][1]


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
    print("| query | rlsql wall s | rlsql CPU s | bare wall s | bare CPU s | CPU ratio (paired median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.queries.split(","):
        con, sql = query_connection(runs, name, catalog)
        if args.show:
            print(sql)
        bare_sql = bare.STATISTICS[name](args.run.resolve())
        bcon = duckdb.connect()
        rws, rcs, bws, bcs = paired((con, sql), (bcon, bare_sql), args.repeat)
        rw, rc, bw, bc = (statistics.median(x) for x in (rws, rcs, bws, bcs))
        ratio = statistics.median(r / b for r, b in zip(rcs, bcs, strict=True))
        print(f"| {name} | {rw:.3f} | {rc:.3f} | {bw:.3f} | {bc:.3f} | {ratio:.2f} |", flush=True)
        if args.plans:
            args.plans.mkdir(parents=True, exist_ok=True)
            (args.plans / f"{label}_{name}_rlsql.txt").write_text(sql + "\n\n" + plan(con, sql), encoding="utf-8")
            (args.plans / f"{label}_{name}_bare.txt").write_text(
                bare_sql + "\n\n" + plan(bcon, bare_sql), encoding="utf-8"
            )


if __name__ == "__main__":
    main()
