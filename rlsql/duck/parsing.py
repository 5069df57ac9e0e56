"""SQL text as DuckDB's own parser reads it: the kind of each statement a text holds, and its tokens."""

from __future__ import annotations

from typing import Any

import duckdb


def statement_types(con: Any, sql: str) -> list[str]:
    """The type of each statement in `sql` (SELECT, LOAD, CREATE, ...; DuckDB parses INSTALL as LOAD, and DESCRIBE,
    SHOW, SUMMARIZE, FROM ..., VALUES and WITH as SELECT), parsed by `con` (a Connection, or rlsql's lazy one).
    Raises DuckError for a text DuckDB cannot parse."""
    return [statement.type.name for statement in con.extract_statements(sql)]


def tokens(statement: str) -> list[tuple[int, str]]:
    """(offset, kind) of each token of `statement`, kind one of identifier, numeric_const, string_const,
    operator, keyword, comment."""
    return [(start, kind.name) for start, kind in duckdb.tokenize(statement)]
