"""What a fresh JVM costs the Spark tests: the catalogue's objects over the five fixture runs, made twice.

    python bench/spark_warmup.py            # the JVM flags and settings of the tests (tests/conftest.py)
    RLSQL_SPARK_JAVA_OPTIONS='-XX:+UseSerialGC' python bench/spark_warmup.py   # other JVM flags

One local session (rlsql.engine.spark.get_session); every source and view created (SparkCatalog.create,
as test_spark.py's "all" run set does), every one collected and every named query run; then the same
again in the same JVM, and then only the planning of the same view statements (parse, analyse,
optimise, physical plan) a third time. The JVM's CPU is read from /proc/PID/stat of every java process
under this one, so the first round shows the JVM's warm-up (class loading, the JIT, the first jobs) and
the second what the same work costs warm. Needs pyspark and Java.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the fixture runs, and the tests' environment: their JVM flags and Spark settings (unless given), their
# own cache folder, the cache off
from tests.conftest import FIXTURE_RUNS, RUNS  # noqa: E402


def jvm_cpu() -> float:
    """CPU seconds (user + system) of the java processes whose parent is this process."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and command.endswith(b"java"):
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def main() -> int:
    from rlsql.catalog.catalog import load_catalog
    from rlsql.core.errors import RlsqlError
    from rlsql.engine.spark import SparkCatalog, get_session, run_query_spark
    from rlsql.runs.folders import resolve_runs

    warnings.simplefilter("ignore")
    started = time.monotonic()
    spark = get_session()
    print(f"session: {time.monotonic() - started:.1f} s, JVM {jvm_cpu():.1f} CPU-s")
    catalog = load_catalog()
    runs = resolve_runs([RUNS / name for name in FIXTURE_RUNS])
    for round_ in ("first", "second"):
        cpu, started = jvm_cpu(), time.monotonic()
        objects = SparkCatalog(spark, runs, catalog)
        objects.create([f for f in catalog.order if f.kind != "macro"], {})
        created = jvm_cpu() - cpu
        for f in catalog.order:
            if f.kind in ("source", "view"):
                spark.table(f.name).collect()
        for query in catalog.queries():
            with contextlib.suppress(RlsqlError):  # refused alike on DuckDB (test_spark.py checks that)
                run_query_spark(query.name, runs, {}, objects=objects)
        print(
            f"{round_} round: {time.monotonic() - started:.1f} s, JVM {jvm_cpu() - cpu:.1f} CPU-s "
            f"(creating the {len(objects.created)} objects {created:.1f})"
        )
        if round_ == "second":  # over the views still there: only planning, warm
            # each view's SQL as it was created (a source's is ""; a recursive query's helpers come first)
            statements = [part for sql in objects.created.values() if sql for part in sql.split("\n;\n")]
            cpu, started = jvm_cpu(), time.monotonic()
            for sql in statements:
                spark.sql(sql)._jdf.queryExecution().executedPlan()  # pyspark has no public call for it
            print(
                f"planning the {len(statements)} view statements again: {time.monotonic() - started:.1f} s, "
                f"JVM {jvm_cpu() - cpu:.1f} CPU-s"
            )
        objects.close()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
