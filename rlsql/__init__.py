"""rlsql: SQL-first analytics for the logs of reinforcement-learning runs of LLM agents.

The public names load lazily (PEP 562): `import rlsql.cli.app` must not pay for DuckDB, jinja2, PyYAML
and the SQL catalogue before a command needs them. `query`, `connect` and `spark` are composed here: the runs
found as `--run` finds them (a URL mirrored into the cache folder: rlsql/cache/mirrors.py), then handed to
the engine, which takes runs already found (and, for `query`, the cached copies: rlsql/cache/copies.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlsql.core.version import __version__

#: public name -> the module that defines it
_LAZY = {
    "QueryResult": "rlsql.engine.query",
    "DataError": "rlsql.core.errors",
    "ExitCode": "rlsql.core.errors",
    "RlsqlError": "rlsql.core.errors",
    "RlsqlWarning": "rlsql.core.errors",
    "UsageError": "rlsql.core.errors",
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
    from rlsql.engine.connection import LazyConnection
    from rlsql.engine.query import QueryResult
    from rlsql.engine.statements import RunSpec


def query(name: str, runs: RunSpec = None, settings: Settings | None = None, **params: Any) -> QueryResult:
    """Run the named query (or view) `name` over `runs` (default: the packaged sample run).

    `runs` takes what `--run` takes: run folders, folders of runs, globs, URLs. Warnings about skipped runs or
    rows are issued through the `warnings` module (RlsqlWarning). `settings` (rlsql.Settings) replaces the
    environment's for this call; its `cache` is the command line's: `auto` reads fresh cached copies, `on` first
    builds the copies of the files this query reads (as `rlsql --cache query` does), `off` reads every file in
    place.
    """
    from rlsql.cache.copies import for_command
    from rlsql.cache.mirrors import resolve_runs
    from rlsql.core.settings import active
    from rlsql.engine.query import run_query

    with active(settings):
        found = resolve_runs(runs)
        return run_query(name, found, params, copies=for_command(found, [name]))


def connect(runs: RunSpec = None, settings: Settings | None = None) -> LazyConnection:
    """A DuckDB connection with every rlsql view and macro over `runs` (default: the sample run).

    `runs` takes what `--run` takes: run folders, folders of runs, globs. The views are created
    when a statement first names them: connecting costs finding the runs.
    `settings` (rlsql.Settings) replaces the environment's while the runs are found.
    """
    from rlsql.cache.mirrors import resolve_runs
    from rlsql.core.settings import active
    from rlsql.engine.connection import connect as over

    with active(settings):
        return over(resolve_runs(runs))


def spark(runs: RunSpec = None, session: Any = None, name: str | None = None, **params: Any) -> Any:
    """rlsql on Spark. With `name`: run that named query, returning the result object rlsql.query returns.

    Without `name`: a runner whose .query(name, **params) does the same, reusing the session.
    `session` is a SparkSession to use (else Spark Connect at $SPARK_REMOTE, else a local one).
    """
    from rlsql.cache.mirrors import resolve_runs
    from rlsql.engine.spark import spark as on_spark
    from rlsql.runs.folders import Run

    given = runs if isinstance(runs, list | tuple) else ()
    found = list(given) if given and all(isinstance(r, Run) for r in given) else resolve_runs(runs)
    return on_spark(found, session, name, **params)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlsql' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
