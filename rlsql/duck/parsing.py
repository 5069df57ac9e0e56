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


def inner_statement(statement: str) -> str:
    """`statement` (one statement's text, as a user wrote it) as the body of a subquery: without the `;` that
    ends it, and ending in a newline, so that a `-- comment` at its end ends there and not over the `)` that
    rlsql's outputs put after it (`SELECT 1 AS a; -- why` was a syntax error). The tokens say which `;` ends
    it: one inside a string or a comment does not."""
    code = [start for start, kind in tokens(statement) if kind != "comment"]
    while code and statement[code[-1]] == ";":  # `SELECT 1;;` is one statement too
        statement = statement[: code[-1]] + statement[code[-1] + 1 :]
        code.pop()
    return statement.rstrip() + "\n"
