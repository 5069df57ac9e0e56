"""Run named queries on Apache Spark: a given session, Spark Connect ($SPARK_REMOTE), or a local session.

Every source a query needs becomes a temporary view over a DataFrame (spark_sources), every view a
temporary view of its compiled SQL (spark_sql), created in dependency order, so Spark analyses
each object as it is created; then the query runs. Parameter validation, artifact checks and
warnings are the DuckDB engine's own code, so both engines accept and refuse the same things.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core import settings
from rlsql.core.errors import QueryError, RlsqlWarning, UsageError
from rlsql.engine.query import QueryResult, bind_params
from rlsql.engine.sources import SourceContext
from rlsql.engine.spark_sources import SparkSources
from rlsql.engine.spark_sql import compile_file
from rlsql.engine.statements import skipped_rows_last
from rlsql.runs.artifacts import check_artifacts
from rlsql.runs.folders import Run

REMOTE_ENV = "SPARK_REMOTE"
#: session settings the compiled SQL relies on: wall-clock timestamps (DuckDB's TIMESTAMP), UTC
SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
}
#: a local session's settings: small, quiet, sized for one machine; the status store keeps few finished
#: jobs and SQL plans (the catalogue's plans are large: by default a long session filled a 1 GB driver)
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "500",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
    **SESSION_CONF,
}
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def _extra_conf() -> dict[str, str]:
    """RLSQL_SPARK_CONF: more settings for a local session, `key=value` pairs separated by spaces."""
    pairs = settings.current().spark_conf
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"RLSQL_SPARK_CONF: {pair!r} is not key=value")
        conf[key] = value
    return conf


def java_options() -> str:
    """The local driver JVM's options: rlsql's log configuration, then $RLSQL_SPARK_JAVA_OPTIONS (JVM flags,
    separated by spaces, e.g. `-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`, which the tests use)."""
    return " ".join([f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}", *settings.current().spark_java_options])


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError("the Spark engine needs pyspark: pip install 'rlsql[spark]'") from None


def require_java() -> None:
    java_home = settings.current().java_home
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
#: compiled SQL that holds a recursive CTE (the compiler writes WITH RECURSIVE first)
_RECURSIVE = re.compile(r"\s*WITH\s+RECURSIVE\b", re.IGNORECASE)


def _quiet_python_loggers() -> None:
    """pyspark logs every analysis error with its JVM stack trace; rlsql reports the error in one line instead."""
    import logging

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).disabled = True


def _local_session() -> Any:
    """A local session whose JVM's own output (its start-up notices, Spark's log) reaches stderr only with
    -v: its stderr goes to /dev/null otherwise, and its stdout, which carries no data of ours, to stderr."""
    import subprocess

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    conf = SparkConf().setMaster(settings.current().spark_master).setAppName("rlsql")
    for key, value in {**LOCAL_CONF, "spark.driver.extraJavaOptions": java_options(), **_extra_conf()}.items():
        conf.set(key, value)
    verbose = settings.current().verbose
    streams = {"stdout": 2, "stderr": None if verbose else subprocess.DEVNULL}  # 2: the process's stderr
    context = SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs=streams))
    spark = SparkSession(context)
    with contextlib.suppress(Exception):  # a log level is a nicety, never a reason to fail
        spark.sparkContext.setLogLevel("WARN" if verbose else "OFF")
    return spark


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

        remote = settings.current().spark_remote
        if remote:
            try:
                spark = SparkSession.builder.remote(remote).getOrCreate()
            except ImportError as exc:
                raise UsageError(
                    f"Spark Connect needs its client libraries ({exc}): pip install 'pyspark[connect]'"
                ) from None
        else:
            require_java()
            spark = _local_session()
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
    """The catalogue's objects over `runs` in one Spark session, created as a query needs them and kept.

    Each source is built once (its warnings are kept and repeated for every query that reads it, as
    DuckDB repeats them per query connection); each view is created once per distinct compiled SQL
    (its parameter values are literals in it) and checkpointed lazily, so a view that several others read
    (metrics_long, span_seconds, trial_rows) is computed once, and the views over it read its rows, not
    its plan.
    """

    def __init__(self, spark: Any, runs: Sequence[Run], catalog: Catalog | None = None):
        self.spark = spark
        self.runs = list(runs)
        self.catalog = catalog or load_catalog()
        self.sources = SparkSources(spark, SourceContext(self.runs), self.catalog)
        #: compiled statements, by what they depend on (spark_sql.compiled_key)
        self.compiled_sql: dict[str, list[tuple[str, str]]] = {}
        #: name -> the SQL it was created with ("" for a source)
        self.created: dict[str, str] = {}
        #: every temporary view this object made (helper views too), in the order last made (a dict as an
        #: ordered set: close() drops them newest first), and the rows it keeps for them
        self.views: dict[str, None] = {}
        #: helper view (a query's NAME__CTE) -> the SQL it was created with
        self.helpers: dict[str, str] = {}
        self.kept: list[Any] = []
        self.source_warnings: dict[str, list[str]] = {}

    def compiled(self, f: SqlFile, values: dict[str, Any]) -> list[tuple[str, str]]:
        # run_table: its config columns depend on the runs and `keys` (SqlFile.per_runs)
        f = self.sources.context.specialised(self.catalog, f, values.get("keys"))
        sources = [d.name for d in self.catalog.closure([f.name]) if d.kind == "source"]
        return compile_file(
            f, self.catalog, values, columns_of(self.spark), _schema_key(self.spark, sources), self.compiled_sql
        )

    def _create_source(self, f: SqlFile, said: set[str]) -> None:
        """`said`: the warnings this query's sources gave so far: two sources over the same files (a run's
        trajectory steps and its tool calls) name a damaged file once, as one DuckDB statement does."""
        if f.name in self.created:
            for message in self.source_warnings.get(f.name, []):
                if message not in said:
                    said.add(message)
                    warnings.warn(message, RlsqlWarning, stacklevel=4)
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = self.sources.frame(f)
        self.source_warnings[f.name] = [str(w.message) for w in caught if issubclass(w.category, RlsqlWarning)]
        for w in caught:
            if str(w.message) not in said:
                said.add(str(w.message))
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        frame.createOrReplaceTempView(f.name)
        self._made(f.name)
        self.created[f.name] = ""

    def _create_view(self, name: str, sql: str) -> None:
        from pyspark.errors import PySparkException

        # a view of that name may be left from other runs (another SparkCatalog in this session), over
        # sources whose columns have changed since: drop it without analysing it (that would fail)
        with contextlib.suppress(PySparkException):
            self.spark.catalog.dropTempView(name)
        frame = self.spark.sql(sql)
        if _RECURSIVE.match(sql):
            # Spark never finds a plan holding a recursive CTE in its cache (the CTE gets new ids each
            # time a view is read), so every query reading span_tree or timing_breakdown would run the
            # recursion again, inside its own plan (a 1 GB driver ran out of memory for timing_table):
            # such a view is computed once, here, and its rows kept (its output is one row per run and
            # span, small)
            frame = frame.localCheckpoint(eager=True)
            frame.createOrReplaceTempView(name)
            self._made(name)
            self.kept.append(frame)
            return
        # a view of the analysed plan, not of its SQL text, which Spark would analyse again (with every
        # view below it) at each reference: creating the catalogue's views takes half the time. Checkpointed
        # lazily, so that the view's plan is a scan of its own rows, computed once when first read: a view
        # over it is analysed and checked down to that scan, not through every view below (a cached view's
        # plan still holds them all; Spark's checks walked that whole stack for each new view and query,
        # and its cache manager matched each plan against every cached one: test_spark.py took 109 JVM
        # CPU-s that way, 47 this way; bench/RESULTS.md at 9434c57, session 6)
        frame = frame.localCheckpoint(eager=False)
        self.kept.append(frame)
        frame.createOrReplaceTempView(name)
        self._made(name)

    def _made(self, name: str) -> None:
        self.views.pop(name, None)  # made again: it now comes after the views it reads
        self.views[name] = None

    def create(self, files: Sequence[SqlFile], values: dict[str, Any]) -> set[str]:
        """Create sources and views (in dependency order) as temporary views; macros are inlined instead.

        Returns the names of the views (re)created by this call."""
        from pyspark.errors import PySparkException

        renewed: set[str] = set()
        said: set[str] = set()
        for f in skipped_rows_last(self.catalog, list(files)):
            if f.kind == "source":
                self._create_source(f, said)
                continue
            if f.kind not in ("view", "query"):  # a query another query reads is a view here
                continue
            statements = self.compiled(f, values)
            sql = "\n;\n".join(text for _, text in statements)
            if self.created.get(f.name) == sql and not renewed & set(f.depends_on):
                continue
            try:
                for view, text in statements:
                    self._create_view(view, text)
            except PySparkException as exc:
                raise QueryError(f"{f.path}: Spark cannot create {f.name}: {one_line(exc)}") from exc
            self.helpers.update(statements[:-1])
            self.created[f.name] = sql
            renewed.add(f.name)
        return renewed

    def close(self) -> None:
        """Drop this object's temporary views and free what they hold (the cached sources and views, the
        kept rows of recursive views): a long-lived session reused for other runs does not keep them."""
        from pyspark.errors import PySparkException

        # newest first: a view goes before the views it reads. Spark's uncache compares every cached plan
        # left with the one dropped and re-plans a cached view not yet computed that reads it; dropping a
        # view's readers first leaves none to re-plan (alphabetically, "all" fixture runs' close() was
        # ~13 JVM CPU-s; bench/RESULTS.md at 9434c57, session 5)
        for name in reversed(list(self.views)):
            with contextlib.suppress(PySparkException):
                self.spark.catalog.dropTempView(name)  # uncaches it too
        for frame in self.sources.persisted:
            with contextlib.suppress(PySparkException):
                frame.unpersist()
        for frame in self.kept:
            _release_checkpoint(frame)
        self.views.clear()
        self.kept.clear()
        self.sources.persisted.clear()
        self.created.clear()
        self.helpers.clear()
        self.source_warnings.clear()

    def query_frame(self, name: str, values: dict[str, Any]) -> Any:
        f = self.catalog.files[name]
        if f.kind != "query":  # a view: created (and cached) as the others
            self.create(self.catalog.closure([name]), values)
            return self.spark.table(name)
        renewed = self.create([d for d in self.catalog.closure([name]) if d.name != name], values)
        *helpers, (_, sql) = self.compiled(f, values)
        for view, text in helpers:
            # a helper made with this SQL over the same objects (a query another one reads, or the same
            # query again) is reused: timing_breakdown's recursion is computed (kept) once, not per query
            if self.helpers.get(view) == text and not renewed & set(f.depends_on):
                continue
            self._create_view(view, text)
            self.helpers[view] = text
        return self.spark.sql(sql)


def _release_checkpoint(frame: Any) -> None:
    """Free the rows a checkpointed DataFrame holds. Its unpersist() does not (its plan is a scan of the
    checkpointed RDD, which is in no cache), and Spark's cleaner would free them only once the JVM has
    collected every reference to that RDD. A local session's: that RDD, unpersisted (through the
    DataFrame's JVM handle: pyspark has no public call for it). Spark Connect's: the server drops its
    reference when the client's DataFrame goes (pyspark's CachedRemoteRelation.__del__)."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        return
    with contextlib.suppress(Exception):  # freeing early is a nicety; the cleaner frees them in the end
        jdf.queryExecution().logical().rdd().unpersist(False)


def run_query_spark(
    name: str, runs: Sequence[Run], params: dict[str, Any], spark: Any = None, objects: SparkCatalog | None = None
) -> SparkResult:
    """The Spark engine's run_query: same validation, checks and result object as rlsql.engine.query.run_query.

    `objects` reuses the sources and views an earlier query created over the same runs.
    """
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, params)
    check_artifacts(runs, catalog.closure([name]), name)
    require_pyspark()
    from pyspark.errors import PySparkException

    if objects is None:
        objects = SparkCatalog(get_session(spark), runs, catalog)
    try:
        frame = objects.query_frame(qfile.name, values)
        columns = list(frame.columns)
        rows = [tuple(row) for row in frame.collect()]
    except PySparkException as exc:
        raise QueryError(f"{name}: {one_line(exc)}") from exc
    return SparkResult(name, columns, rows, list(runs), values, frame=frame)


def spark(runs: Sequence[Run], session: Any = None, name: str | None = None, **params: Any):
    """rlsql on Spark. With `name`: run that named query, returning the result object rlsql.query returns.

    Without `name`: a `SparkRunner` whose .query(name, **params) does the same, reusing the session.
    `session` is a SparkSession to use (else Spark Connect at $SPARK_REMOTE, else a local one).
    """
    runner = SparkRunner(runs, session)
    return runner if name is None else runner.query(name, **params)


class SparkRunner:
    """Named queries over one set of runs in one Spark session; sources and views are created once."""

    def __init__(self, runs: Sequence[Run], session_: Any = None):
        self.runs: list[Run] = list(runs)
        self.session = session_
        self.objects: SparkCatalog | None = None

    def query(self, name: str, **params: Any) -> SparkResult:
        if self.objects is None:
            require_pyspark()
            self.objects = SparkCatalog(get_session(self.session), self.runs)
        return run_query_spark(name, self.runs, params, objects=self.objects)


def show_spark(name: str) -> str:
    """The named query's SQL compiled for Spark (default parameters), for `rlsql show --dialect spark`."""
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, {})
    statements = compile_file(qfile, catalog, values)
    parts = [f"CREATE OR REPLACE TEMPORARY VIEW `{view}` AS\n{sql};\n" for view, sql in statements[:-1]]
    return "".join(parts) + statements[-1][1] + "\n"
