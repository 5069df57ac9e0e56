"""The connection rlsql.connect() returns: a DuckDB connection whose catalog objects are created when a
statement first names them.

Creating every view and source of the catalog over 1,000 runs takes 1-2 s (each source bound once,
~40 views over stand-ins, every CSV header read, every Harbor folder listed), most of it for objects
a session never reads. So connect() only finds the runs; each statement given to execute(), sql(),
query(), table() or view() first gets the objects it names, with everything they read, created
(rlsql.engine.statements.create_objects, stand-ins and all), then goes to DuckDB unchanged. A name counts
when it appears as a word of the statement (a column called like a view costs only that view's
creation), so no SQL parser has to understand the user's dialect. A statement that lists DuckDB's
catalog (duckdb_views(), information_schema, SHOW, PRAGMA, a DESCRIBE naming nothing of ours) gets
every object first, so a listing shows them all. Everything else is the DuckDB connection's own.

Objects are created as `rlsql query` reads them (rlsql.engine.statements): a view is the statement
that answers it, the views it reads as CTEs; the small sources the CLI loads (the runs, their files,
configs and Harbor's result.json rows) are read into tables when first named, and every other source
(trainer metrics, trials, vLLM seconds, logs, trajectories) stays a view read in place at each
statement. A first statement then costs what the CLI's query does (bench/RESULTS.md, "Fleet"), and a
live run's newer steps and trials show in the next statement; a new connect() sees new Harbor trials.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import duckdb

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.duck.memorydb import memory_connection
from rlsql.engine.sources import SourceContext
from rlsql.engine.statements import (
    CONFIG_FUNCTION,
    IN_STATEMENT,
    LOADED_SOURCES,
    column_comment_statements,
    create_objects,
    register_config_function,
)
from rlsql.runs.folders import Run

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: words of a statement that reads DuckDB's own catalog: every object is created before it runs
LISTING_WORDS = frozenset(
    {
        "duckdb_views",
        "duckdb_tables",
        "duckdb_columns",
        "duckdb_functions",
        "duckdb_dependencies",
        "duckdb_constraints",
        "duckdb_indexes",
        "information_schema",
        "pg_catalog",
        "sqlite_master",
        "show",
        "pragma",
    }
)


class OnDemand:
    """The objects of one connection: which exist, and creating the ones a statement needs."""

    def __init__(self, con: duckdb.DuckDBPyConnection, runs: Sequence[Run], catalog: Catalog):
        self.con = con
        self.runs = list(runs)
        self.catalog = catalog
        #: rendered once for the connection's life: each run's files looked at once, configs parsed once
        self.sources = SourceContext(self.runs, CONFIG_FUNCTION)
        register_config_function(con, self.sources)
        self.created: set[str] = set()
        #: source view -> its columns, for create_objects' stand-ins
        self.bound: dict[str, list[tuple[str, str]]] = {}
        self._names = {name.lower(): name for name in catalog.files}
        self._lock = threading.RLock()

    def named(self, text: str) -> list[str]:
        """The catalog objects `text` names (every one, for a statement that lists DuckDB's catalog)."""
        words = {w.lower() for w in _WORD.findall(text)}
        names = [self._names[w] for w in words if w in self._names]
        if words & LISTING_WORDS or ("describe" in words and not names):
            return list(self.catalog.files)
        return names

    def prepare(self, text: str) -> None:
        """Create what `text` names, and everything that reads, unless it exists already."""
        if len(self.created) == len(self.catalog.files):
            return
        names = self.named(text)
        if not names:
            return
        with self._lock:  # cursors in other threads share the objects
            missing = [f for f in self.catalog.closure(names) if f.name not in self.created]
            if not missing:
                return
            # no copies: a connection reads the runs' own files (the small sources once, module docstring)
            create_objects(
                self.con,
                self.runs,
                missing,
                self.catalog,
                LOADED_SOURCES - IN_STATEMENT,
                sources=self.sources,
                bound=self.bound,
            )
            self.created.update(f.name for f in missing)
            for statement in column_comment_statements(self.con, missing):
                self.con.execute(statement)

    def create_all(self) -> None:
        self.prepare(" ".join(self.catalog.files))


class LazyConnection:
    """A DuckDB connection (every attribute is the wrapped DuckDBPyConnection's) that creates rlsql's views
    and macros as statements name them (module docstring). `create_all()` creates every one now."""

    def __init__(self, objects: OnDemand, con: duckdb.DuckDBPyConnection | None = None):
        self._objects = objects
        self._con = objects.con if con is None else con

    def _same(self, result: Any) -> Any:
        # DuckDB's execute() returns the connection itself (for .fetchall() and chaining): keep the chain lazy
        return self if result is self._con else result

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(query, str):
            self._objects.prepare(query)
        return self._same(self._con.execute(query, *args, **kwargs))

    def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(query, str):
            self._objects.prepare(query)
        return self._same(self._con.executemany(query, *args, **kwargs))

    def sql(self, query: Any, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyRelation:
        if isinstance(query, str):
            self._objects.prepare(query)
        return self._con.sql(query, *args, **kwargs)

    def query(self, query: Any, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyRelation:
        if isinstance(query, str):
            self._objects.prepare(query)
        return self._con.query(query, *args, **kwargs)

    def from_query(self, query: Any, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyRelation:
        if isinstance(query, str):
            self._objects.prepare(query)
        return self._con.from_query(query, *args, **kwargs)

    def table(self, name: str) -> duckdb.DuckDBPyRelation:
        self._objects.prepare(name)
        return self._con.table(name)

    def view(self, name: str) -> duckdb.DuckDBPyRelation:
        self._objects.prepare(name)
        return self._con.view(name)

    def cursor(self) -> LazyConnection:
        """A cursor over the same database, creating objects as this connection does (they are shared)."""
        return LazyConnection(self._objects, self._con.cursor())

    def create_all(self) -> None:
        """Create every view and macro of the catalog now (what connect() did before it was lazy)."""
        self._objects.create_all()

    @property
    def created(self) -> set[str]:
        """The catalog objects created so far."""
        return set(self._objects.created)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def __enter__(self) -> LazyConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()

    def __repr__(self) -> str:
        return f"<rlsql connection over {len(self._objects.runs)} runs: {self._con!r}>"


def connect(runs: Sequence[Run]) -> LazyConnection:
    """A DuckDB connection with every rlsql view and macro over `runs` (`rlsql.connect()` finds them). The
    views are created when a statement first names them (module docstring)."""
    return LazyConnection(OnDemand(memory_connection(), list(runs), load_catalog()))
