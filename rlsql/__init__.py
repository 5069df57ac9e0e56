"""rlsql: SQL-first analytics for the logs of reinforcement-learning runs of LLM agents."""

from rlsql.api import QueryResult, query
from rlsql.connection import connect
from rlsql.errors import DataError, ExitCode, RlsqlError, RlsqlWarning, UsageError

__version__ = "0.1.0"

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
]
