"""Safe pieces of SQL text: literals and identifiers made from values rlsql controls.

Jinja uses these as filters. They quote; they never let a value end a string or an identifier.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any


def literal(value: Any) -> str:
    """A SQL literal for None, bool, int, float, str or Path."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else f"'{value}'::DOUBLE"
    text = str(value) if isinstance(value, Path) else value
    if not isinstance(text, str):
        raise TypeError(f"no SQL literal for {type(value).__name__}")
    if "\x00" in text:
        raise ValueError("a SQL string literal cannot hold a NUL character")
    return "'" + text.replace("'", "''") + "'"


_GLOB_CHARS = re.compile(r"([\[\]*?])")


def glob_escaped(path: str | Path) -> str:
    """`path` as a DuckDB file pattern that matches exactly that file.

    DuckDB's readers expand `*`, `?` and `[...]` in every path they are given (there is no switch
    to turn that off), and all four are legal in folder names: each becomes a one-character class
    (`[[]`, `[]]`, `[*]`, `[?]`), which matches only itself.
    """
    return _GLOB_CHARS.sub(r"[\1]", str(path))


def glob_cannot_name(path: str | Path) -> bool:
    """True when DuckDB cannot be given `path` exactly: its glob, which a path with `[ ] * ?` goes
    through even escaped, leaves out every name holding a backslash (DuckDB 2.0 on Linux)."""
    text = str(path)
    return "\\" in text and bool(_GLOB_CHARS.search(text))


def file_literal(path: str | Path) -> str:
    """A SQL string literal naming exactly the file `path` for read_csv/read_parquet/read_text."""
    return literal(glob_escaped(path))


def date_literal(value: dt.date | None) -> str:
    return "CAST(NULL AS DATE)" if value is None else f"DATE '{value.isoformat()}'"


#: the column and parameter types rlsql's SQL headers may declare: a type is pasted into SQL text
#: (`CAST(x AS type)`), so only these names ever reach it
SQL_TYPES = frozenset({"VARCHAR", "DOUBLE", "BIGINT", "INTEGER", "BOOLEAN"})


def sql_type(name: str) -> str:
    """`name` as a SQL type, when it is one of SQL_TYPES (any case); anything else is refused."""
    upper = str(name).strip().upper()
    if upper not in SQL_TYPES:
        raise ValueError(f"{name!r} is not a type rlsql declares (one of {', '.join(sorted(SQL_TYPES))})")
    return upper


#: the types DuckDB may report for a column of rlsql's own sources (DESCRIBE, duckdb_columns()), which
#: rlsql pastes back into a source's empty stand-in (rlsql.engine.statements.stub_select): SQL_TYPES and the
#: few others its SQL computes (a DATE from a timestamp's day, ...), each also as a list (`VARCHAR[]`);
#: `"NULL"` is the type of a VALUES column that holds only NULLs (run_files.prefix when no file name has one)
REPORTED_TYPES = SQL_TYPES | frozenset(
    {
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP WITH TIME ZONE",
        "FLOAT",
        "SMALLINT",
        "TINYINT",
        "UBIGINT",
        "HUGEINT",
        "JSON",
        "BLOB",
        "INTERVAL",
        "TIME",
        '"NULL"',
    }
)


def reported_type(name: str) -> str:
    """`name`, a type DuckDB reported, when it is one of REPORTED_TYPES, a STRUCT of plain field names and
    such types (trajectory_steps_src's calls), or a list of one; anything else (a DECIMAL, a quoted field
    name, text that is no type) is refused rather than pasted into SQL."""
    text = str(name).strip()
    base = text
    while base.endswith("[]"):
        base = base.removesuffix("[]")
    struct = re.fullmatch(r"STRUCT\((.*)\)", base, re.IGNORECASE)
    if struct:  # its fields' names keep their case (DuckDB writes them as declared)
        fields = [re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*) (.+)", f) for f in struct[1].split(", ")]
        if all(fields):
            inner = ", ".join(f"{m[1]} {reported_type(m[2])}" for m in fields if m)
            return f"STRUCT({inner})" + text[len(base) :]
    if base.upper() not in REPORTED_TYPES:
        raise ValueError(
            f"{name!r} is not a column type rlsql's sources produce "
            f"(one of {', '.join(sorted(REPORTED_TYPES))}, a STRUCT of them, or a list of one)"
        )
    return text.upper()


def identifier(name: str) -> str:
    """A double-quoted identifier (column names such as `reward/avg_raw_reward` need quoting)."""
    if "\x00" in name:
        raise ValueError("an identifier cannot hold a NUL character")
    return '"' + name.replace('"', '""') + '"'
