"""DuckDB's reject tables: the CSV lines a read skipped, once per line, in the words rlsql uses for them.

The sources read every CSV with `store_rejects`; the query warnings, `rlsql check` and the cache's
records (a copy remembers what its build skipped) all describe a skipped line through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import duckdb

from rlsql.duck.memorydb import scalar
from rlsql.runs import csvfiles

REJECT_EXAMPLES = 3
#: why DuckDB rejects a line with an UNQUOTED VALUE
UNCLOSED_QUOTE = "a quote that is not closed, or text after a closing quote"


def has_reject_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any scan has stored rejected rows yet (DuckDB creates the tables with the first one)."""
    # DuckDB keeps them in the temp catalogue; naming it lets duckdb_tables() skip the others (~3 ms a query)
    found = scalar(
        con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp' AND table_name = 'reject_errors'"
    )
    return bool(found)


def last_scan(con: duckdb.DuckDBPyConnection) -> int:
    """The newest reject scan id on `con` (-1: none): the reject tables accumulate over a shared connection,
    so the lines one read rejected are those of the scans after it."""
    if not has_reject_tables(con):
        return -1
    return int(scalar(con, "SELECT coalesce(max(scan_id), -1) FROM reject_scans"))


#: one description per rejected line: DuckDB may record a line twice (a row with a field too many
#: also fails the cast of the shifted cell); the structural cause is the true one
REJECTS_BY_LINE = """
    SELECT s.file_path, e.line,
        arg_min(struct_pack(t := e.error_type, c := e.column_name, m := e.error_message),
                CASE e.error_type WHEN 'CAST' THEN 2 ELSE 1 END) AS why
    FROM reject_errors AS e JOIN reject_scans AS s USING (scan_id, file_id)
    WHERE e.scan_id > ?
    GROUP BY s.file_path, e.line
    ORDER BY s.file_path, e.line
"""
_COLUMNS_FOUND = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_CAST = re.compile(r"Could not convert string \"(.*)\" to '(\w+)'", re.DOTALL)
_ACTUAL_SIZE = re.compile(r"Actual Size:\s*(\d+)")


def describe_reject(error_type: str, column: str | None, message: str) -> str:
    """Why DuckDB skipped a row, in the words `rlsql check` and the query warnings both use."""
    message = message or ""
    if error_type in ("TOO MANY COLUMNS", "MISSING COLUMNS") and (m := _COLUMNS_FOUND.search(message)):
        return f"{m[2]} fields, expected {m[1]}"
    if error_type == "CAST" and (m := _CAST.search(message)):
        kind = "a number" if m[2] in ("DOUBLE", "FLOAT") else f"a {m[2]}"
        return f"column {column}: {m[1]!r} is not {kind}"
    if error_type == "LINE SIZE OVER MAXIMUM" and (m := _ACTUAL_SIZE.search(message)):
        return f"line size over maximum ({int(m[1]) / 1e6:.1f} MB; the limit is 2 MB)"
    if error_type == "INVALID ENCODING":
        return "invalid encoding (not UTF-8)"
    if error_type == "UNQUOTED VALUE":
        return UNCLOSED_QUOTE
    return error_type.lower()


def read_every_cell(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, int]:
    """Read every cell of the rows `sql` gives (a CSV source: a `source_file` column), keeping only their count
    per file: DuckDB records each row it cannot read, whatever column holds the bad cell (a query that projects
    some columns casts only those). Hashing the whole row is what makes DuckDB read every cell."""
    rows = con.execute(
        f"SELECT s.source_file, count(*) FILTER (WHERE hash(s) IS NOT NULL) FROM ({sql}) AS s GROUP BY ALL"
    ).fetchall()
    return {str(path): int(n) for path, n in rows}


def rejected_lines(con: duckdb.DuckDBPyConnection, after_scan: int = -1) -> list[tuple[str, int, str]]:
    """(file, line, why) of each line the scans after `after_scan` rejected, once per line."""
    if not has_reject_tables(con):
        return []  # nothing was rejected: DuckDB creates the tables on the first rejected row
    return [
        (csvfiles.original(path), int(line), describe_reject(why["t"], why["c"], why["m"]))
        for path, line, why in con.execute(REJECTS_BY_LINE, [after_scan]).fetchall()
    ]


def lost_after(path: str | Path, whys: Iterable[str]) -> bool:
    """Whether a read of the CSV at `path` that rejected lines for `whys` lost more rows than it rejected: a
    quote that never closes takes every row after it (the file is then read line-bounded, csvfiles)."""
    return UNCLOSED_QUOTE in set(whys) and bool(csvfiles.never_closed(Path(path)))
