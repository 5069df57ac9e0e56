"""rlsql: SQL-first analytics for the logs of reinforcement-learning runs of LLM agents."""

from rlsql.api import QueryResult, query
from rlsql.connection import connect
from rlsql.errors import DataError, ExitCode, RlsqlError, RlsqlWarning, UsageError

__version__ = "0.1.0"


def spark(runs=None, session=None, name: str | None = None, **params):
    """rlsql on Apache Spark (rlsql/engines/spark.py): with `name`, that named query's result, as rlsql.query
    returns it; without, a runner whose .query(name, **params) reuses the session. `session`: a SparkSession
    to use; else Spark Connect at $SPARK_REMOTE; else a local session. Needs `pip install 'rlsql[spark]'`."""
    from rlsql.engines.spark import spark as on_spark  # late: sqlglot and pyspark load only for Spark

    return on_spark(runs, session, name, **params)


__all__ = [
    "DataError",
    "ExitCode",
    "QueryResult",
    "RlsqlError",
    "RlsqlWarning",
    "UsageError",
    "__version__",
    "connect",
    "query",
    "spark",
]
