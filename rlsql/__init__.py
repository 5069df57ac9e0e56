"""rlsql: SQL-first analytics for the logs of reinforcement-learning runs of LLM agents.

The public names load lazily (PEP 562): `import rlsql.cli` must not pay for DuckDB, jinja2, PyYAML
and the SQL catalogue before a command needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlsql.version import __version__

#: public name -> the module that defines it
_LAZY = {
    "QueryResult": "rlsql.api",
    "query": "rlsql.api",
    "connect": "rlsql.lazyconn",
    "DataError": "rlsql.errors",
    "ExitCode": "rlsql.errors",
    "RlsqlError": "rlsql.errors",
    "RlsqlWarning": "rlsql.errors",
    "UsageError": "rlsql.errors",
    "spark": "rlsql.engines.spark",
}

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

if TYPE_CHECKING:
    from rlsql.api import QueryResult, query
    from rlsql.engines.spark import spark
    from rlsql.errors import DataError, ExitCode, RlsqlError, RlsqlWarning, UsageError
    from rlsql.lazyconn import connect


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlsql' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
