"""The sandboxed connection that `rlsql serve`'s and `rlsql mcp`'s SQL runs on: every view and macro over the
runs served, reading nothing but the runs' files, and one read-only SELECT at a time."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from rlsql.catalog.catalog import load_catalog
from rlsql.core.errors import QueryError, UsageError
from rlsql.duck import memorydb
from rlsql.engine.connection import LazyConnection, OnDemand
from rlsql.engine.query import sql_failure
from rlsql.runs.folders import Run


def sandboxed(runs: Sequence[Run], memory_limit: str) -> LazyConnection:
    """A connection with every view and macro over `runs` that can read only the runs' folders, cannot load
    extensions, and cannot change any setting (DuckDB enforces it; statements are checked as well: a COPY
    into a run folder would be allowed by these settings alone)."""
    con = LazyConnection(OnDemand(memorydb.memory_connection(), list(runs), load_catalog()))
    folders = sorted({str(r.path).rstrip("/") + "/" for r in runs})
    # exactly the files the runs' listings found: one that links out of its run folder (a trials CSV kept
    # elsewhere) is read as the CLI reads it, and nothing else outside the folders is
    files = sorted({str(a.path) for r in runs for a in r.artifacts.values()})
    con.execute("SET memory_limit = ?", [memory_limit])
    con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET allowed_paths = ?", [files])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def check_select(con: LazyConnection, sql: str) -> None:
    """Refuse anything but one SELECT (DESCRIBE, SHOW, SUMMARIZE, FROM ..., VALUES and WITH are SELECTs),
    as DuckDB's own parser reads the text."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL: {sql_failure(exc)}") from exc
    if not statements:
        raise UsageError("SQL: no statement given (only comments or blanks)")
    if len(statements) != 1:
        raise PermissionError(f"one statement at a time, please ({len(statements)} given)")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        # DuckDB parses INSTALL as a LOAD statement: name both, as the user may have written either
        what = "INSTALL and LOAD" if kind == duckdb.StatementType.LOAD else kind.name
        raise PermissionError(f"read-only: {what} statements are refused; only SELECT runs here")
