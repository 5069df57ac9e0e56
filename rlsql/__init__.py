"""rlsql: SQL-first analytics for the logs of reinforcement-learning runs of LLM agents.

The public names load lazily (PEP 562): `import rlsql.cli.app` must not pay for DuckDB, jinja2, PyYAML
and the SQL catalogue before a command needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlsql.core.version import __version__

#: public name -> the module that defines it
_LAZY = {
    "QueryResult": "rlsql.engine.query",
    "query": "rlsql.engine.query",
    "connect": "rlsql.engine.connection",
    "DataError": "rlsql.core.errors",
    "ExitCode": "rlsql.core.errors",
    "RlsqlError": "rlsql.core.errors",
    "RlsqlWarning": "rlsql.core.errors",
    "UsageError": "rlsql.core.errors",
    "spark": "rlsql.engine.spark",
    "Settings": "rlsql.core.settings",
}

__all__ = [
    "DataError",
    "ExitCode",
    "QueryResult",
    "RlsqlError",
    "RlsqlWarning",
    "Settings",
    "UsageError",
    "__version__",
    "connect",
    "query",
    "spark",
]

if TYPE_CHECKING:
    from rlsql.core.errors import DataError, ExitCode, RlsqlError, RlsqlWarning, UsageError
    from rlsql.core.settings import Settings
    from rlsql.engine.connection import connect
    from rlsql.engine.query import QueryResult, query
    from rlsql.engine.spark import spark


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlsql' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
