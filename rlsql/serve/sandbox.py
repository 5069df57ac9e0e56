"""The sandboxed connection that `rlsql serve`'s and `rlsql mcp`'s SQL runs on: every view and macro over the
runs served, reading nothing but the runs' files, and one read-only SELECT at a time."""

from __future__ import annotations

from collections.abc import Sequence

from rlsql.catalog.catalog import load_catalog
from rlsql.core.errors import QueryError, UsageError
from rlsql.duck import memorydb
from rlsql.duck.parsing import statement_types
from rlsql.engine.connection import LazyConnection, OnDemand
from rlsql.engine.query import sql_failure
from rlsql.runs.folders import Run


def sandboxed(runs: Sequence[Run], memory_limit: str) -> LazyConnection:
    """A connection with every view and macro over `runs` that can read only the runs' folders, cannot load
    extensions, and cannot change any setting (DuckDB enforces it; statements are checked as well: a COPY
    into a run folder would be allowed by these settings alone)."""
    raw = memorydb.memory_connection()
    folders = sorted({str(r.path).rstrip("/") + "/" for r in runs})
    # exactly the files the runs' listings found: one that links out of its run folder (a trials CSV kept
    # elsewhere) is read as the CLI reads it, and nothing else outside the folders is
    files = sorted({str(a.path) for r in runs for a in r.artifacts.values()})
    memorydb.limit_memory(raw, memory_limit)
    memorydb.confine(raw, folders, files)
    return LazyConnection(OnDemand(raw, list(runs), load_catalog()))


def check_select(con: LazyConnection, sql: str) -> None:
    """Refuse anything but one SELECT (DESCRIBE, SHOW, SUMMARIZE, FROM ..., VALUES and WITH are SELECTs),
    as DuckDB's own parser reads the text."""
    try:
        kinds = statement_types(con, sql)
    except memorydb.DuckError as exc:
        raise QueryError(f"SQL: {sql_failure(exc)}") from exc
    if not kinds:
        raise UsageError("SQL: no statement given (only comments or blanks)")
    if len(kinds) != 1:
        raise PermissionError(f"one statement at a time, please ({len(kinds)} given)")
    (kind,) = kinds
    if kind != "SELECT":
        # DuckDB parses INSTALL as a LOAD statement: name both, as the user may have written either
        what = "INSTALL and LOAD" if kind == "LOAD" else kind
        raise PermissionError(f"read-only: {what} statements are refused; only SELECT runs here")
