"""Run named queries on Apache Spark: a given session, Spark Connect ($SPARK_REMOTE), or a local session.

Every source a query needs becomes a temporary view over a DataFrame (spark_sources), every view a
temporary view of its compiled SQL (spark_sql), created in dependency order, so Spark analyses
each object as it is created; then the query runs. Parameter validation, artifact checks and
warnings are the DuckDB engine's own code, so both engines accept and refuse the same things.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsql.api import QueryResult, bind_params
from rlsql.catalog import Catalog, SqlFile, load_catalog
from rlsql.connection import RunSpec, SourceContext, check_artifacts
from rlsql.engines.spark_sql import CompiledCache, compile_file
from rlsql.engines.spark_sources import SparkSources
from rlsql.errors import QueryError, UsageError
from rlsql.runs import Run, resolve_runs

REMOTE_ENV = "SPARK_REMOTE"
#: session settings the compiled SQL relies on: wall-clock timestamps (DuckDB's TIMESTAMP), UTC
SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
}
#: a local session's settings: small, quiet, sized for one machine
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
    **SESSION_CONF,
}
LOCAL_MASTER = os.environ.get("RLSQL_SPARK_MASTER", "local[2]")
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError("the Spark engine needs pyspark: pip install 'rlsql[spark]'") from None


def require_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java") is None:
        raise UsageError(
            "a local Spark session needs Java 17 or later (e.g. apt-get install openjdk-17-jre-headless), "
            f"or set {REMOTE_ENV} to a Spark Connect server"
        )


def one_line(exc: BaseException) -> str:
    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


_SESSION: Any = None


def _quiet_python_loggers() -> None:
    """pyspark logs every analysis error with its JVM stack trace; rlsql reports the error in one line instead."""
    import logging

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).disabled = True


def get_session(given: Any = None) -> Any:
    """The session to run on: `given`, else Spark Connect at $SPARK_REMOTE, else one local session per process."""
    global _SESSION
    if given is not None:
        spark = given
    elif _SESSION is not None:
        return _SESSION
    else:
        require_pyspark()
        import warnings

        # pyspark warns about its pandas support on import; rlsql does not hand pandas to Spark
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        from pyspark.sql import SparkSession

        remote = os.environ.get(REMOTE_ENV)
        if remote:
            try:
                spark = SparkSession.builder.remote(remote).getOrCreate()
            except ImportError as exc:
                raise UsageError(f"Spark Connect needs its client libraries ({exc}): pip install 'pyspark[connect]'"
                                 ) from None
        else:
            require_java()
            builder = SparkSession.builder.master(LOCAL_MASTER).appName("rlsql")
            for key, value in LOCAL_CONF.items():
                builder = builder.config(key, value)
            builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}")
            spark = builder.getOrCreate()
            _quiet_python_loggers()
            try:
                spark.sparkContext.setLogLevel("OFF")
            except Exception:  # noqa: BLE001 - a log level is a nicety, never a reason to fail
                pass
        _SESSION = spark
    _quiet_python_loggers()
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    return spark


@dataclass
class SparkResult(QueryResult):
    """A named query's output from Spark: rows as QueryResult's; df()/arrow() convert the Spark DataFrame."""

    frame: Any = field(default=None, repr=False)

    def df(self):
        return self.frame.toPandas()

    def arrow(self):
        return self.frame.toArrow()


def columns_of(spark: Any):
    def lookup(sql: str) -> list[str]:
        return list(spark.sql(sql).columns)

    return lookup


def _schema_key(spark: Any, names: Sequence[str]) -> str:
    return ";".join(f"{n}:{','.join(spark.table(n).columns)}" for n in names)


class SparkCatalog:
    """Creates the catalogue's objects over `runs` in one Spark session."""

    def __init__(self, spark: Any, runs: Sequence[Run], catalog: Catalog | None = None):
        self.spark = spark
        self.runs = list(runs)
        self.catalog = catalog or load_catalog()
        self.sources = SparkSources(spark, SourceContext(self.runs))
        self.cache = CompiledCache()
        self.created: list[str] = []

    def compiled(self, f: SqlFile, values: dict[str, Any]) -> str:
        sources = [d.name for d in self.catalog.closure([f.name]) if d.kind == "source"]
        return compile_file(f, self.catalog, values, columns_of(self.spark), _schema_key(self.spark, sources),
                            self.cache)

    def create(self, files: Sequence[SqlFile], values: dict[str, Any]) -> None:
        """Create sources and views (in dependency order) as temporary views; macros are inlined instead."""
        from pyspark.errors import PySparkException

        try:
            for f in files:
                if f.kind == "source":
                    self.sources.frame(f).createOrReplaceTempView(f.name)
                elif f.kind in ("view", "query"):  # a query another query reads is a view here
                    sql = self.compiled(f, values)
                    try:
                        self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{f.name}` AS\n{sql}")
                    except PySparkException as exc:
                        raise QueryError(f"{f.path}: Spark cannot create {f.name}: {one_line(exc)}") from exc
                else:
                    continue
                self.created.append(f.name)
        finally:
            self.cache.save()

    def query_frame(self, name: str, values: dict[str, Any]) -> Any:
        f = self.catalog.files[name]
        self.create([d for d in self.catalog.closure([name]) if d.name != name], values)
        sql = self.compiled(f, values)
        self.cache.save()
        return self.spark.sql(sql) if f.kind == "query" else self.spark.table(name)


def run_query_spark(name: str, runs: Sequence[Run], params: dict[str, Any], spark: Any = None) -> SparkResult:
    """The Spark engine's run_query: same validation, checks and result object as rlsql.api.run_query."""
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, params)
    check_artifacts(runs, catalog.closure([name]), name)
    spark = get_session(spark)
    from pyspark.errors import PySparkException

    objects = SparkCatalog(spark, runs, catalog)
    try:
        frame = objects.query_frame(qfile.name, values)
        columns = list(frame.columns)
        rows = [tuple(row) for row in frame.collect()]
    except PySparkException as exc:
        raise QueryError(f"{name}: {one_line(exc)}") from exc
    return SparkResult(name, columns, rows, list(runs), values, frame=frame)


def spark(runs: RunSpec = None, session: Any = None, name: str | None = None, **params: Any):
    """rlsql on Spark. With `name`: run that named query, returning the result object rlsql.query returns.

    Without `name`: a `SparkRunner` whose .query(name, **params) does the same, reusing the session.
    `session` is a SparkSession to use (else Spark Connect at $SPARK_REMOTE, else a local one).
    """
    runner = SparkRunner(runs, session)
    return runner if name is None else runner.query(name, **params)


class SparkRunner:
    def __init__(self, runs: RunSpec = None, session_: Any = None):
        self.runs = resolve_runs(runs)
        self.session = session_

    def query(self, name: str, **params: Any) -> SparkResult:
        return run_query_spark(name, self.runs, params, self.session)


def show_spark(name: str) -> str:
    """The named query's SQL compiled for Spark (default parameters), for `rlsql show --dialect spark`."""
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, {})
    return compile_file(qfile, catalog, values) + "\n"
