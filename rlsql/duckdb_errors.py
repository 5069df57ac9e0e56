"""DuckDB's errors and rejected rows as rlsql's messages: one line, naming the file (and line) at fault."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from rlsql.errors import DATA_ERROR_MARK, DataError, QueryError, RlsqlError, RlsqlWarning, UnparsableCsv, one_line
from rlsql.probe import locate_unparsable_csv, parser_failure
from rlsql.runs import CSV_ARTIFACTS, Run

if TYPE_CHECKING:
    from rlsql.catalog import SqlFile


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.+)$", re.MULTILINE)


#: the exception classes DuckDB raises for a file its CSV reader cannot read: a cell it cannot convert
#: (ConversionException) or a line it cannot parse (InvalidInputException); rlsql's own error() about the
#: data raises InvalidInputException too. Only these are read for a file and line: a binder, catalog or
#: I/O error never is, whatever its message says.
CSV_FAILURES = (duckdb.ConversionException, duckdb.InvalidInputException)
DATA_FAILURES = (duckdb.InvalidInputException,)


def csv_error(exc: BaseException) -> DataError | None:
    """A DuckDB CSV reading error as `file:line: problem`, or None when it is something else."""
    if not isinstance(exc, CSV_FAILURES):
        return None
    text = str(exc)
    line, path = _CSV_LINE.search(text), _CSV_FILE.search(text)
    if not path:
        return None
    if not line and "state machine reached an invalid state" in text:
        at, problem = parser_failure(Path(path.group(1).strip()), exc)
        return UnparsableCsv(path.group(1).strip(), at, problem)
    details = [
        part.strip()
        for part in text.splitlines()[1:]
        if part.strip() and not part.startswith(("Original Line", "  ", "*", "Possible", "Column ", "This type"))
    ]
    where = f"{path.group(1).strip()}:{line.group(1)}" if line else path.group(1).strip()
    return DataError(f"{where}: {details[0] if details else one_line(exc)}")


REJECT_EXAMPLES = 3


def has_reject_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any scan has stored rejected rows yet (DuckDB creates the tables with the first one)."""
    # DuckDB keeps them in the temp catalogue; naming it lets duckdb_tables() skip the others (~3 ms a query)
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp' AND table_name = 'reject_errors'"
    ).fetchone()[0]
    return bool(found)


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
        return "a quote that is not closed, or text after a closing quote"
    return error_type.lower()


def rejected_lines(con: duckdb.DuckDBPyConnection, after_scan: int = -1) -> list[tuple[str, int, str]]:
    """(file, line, why) of each line the scans after `after_scan` rejected, once per line."""
    if not has_reject_tables(con):
        return []  # nothing was rejected: DuckDB creates the tables on the first rejected row
    return [
        (path, int(line), describe_reject(why["t"], why["c"], why["m"]))
        for path, line, why in con.execute(REJECTS_BY_LINE, [after_scan]).fetchall()
    ]


def warn_rejected_rows(con: duckdb.DuckDBPyConnection) -> None:
    """One warning per CSV file with rows DuckDB skipped (recorded because the sources set store_rejects)."""
    by_file: dict[str, list[tuple[int, str]]] = {}
    for path, line, why in rejected_lines(con):
        by_file.setdefault(path, []).append((line, why))
    for path, rejected in by_file.items():
        examples = "; ".join(f"line {line}: {why}" for line, why in rejected[:REJECT_EXAMPLES])
        more = f"; and {len(rejected) - REJECT_EXAMPLES} more" if len(rejected) > REJECT_EXAMPLES else ""
        warnings.warn(
            f"{path}: skipped {len(rejected)} unreadable row{'s' if len(rejected) > 1 else ''} ({examples}{more})",
            RlsqlWarning,
            stacklevel=3,
        )




def data_error_text(exc: BaseException) -> str:
    text = str(exc)
    return text[text.index(DATA_ERROR_MARK) + len(DATA_ERROR_MARK):].splitlines()[0] if DATA_ERROR_MARK in text \
        else one_line(exc)


def data_error(exc: BaseException) -> DataError | None:
    """A DuckDB error that is about the input files, as a one-line DataError; None for anything else."""
    if isinstance(exc, DATA_FAILURES) and DATA_ERROR_MARK in str(exc):
        return DataError(data_error_text(exc))
    return csv_error(exc)


def query_failure(exc: duckdb.Error, name: str, runs: Sequence[Run], needed: Sequence[SqlFile]) -> RlsqlError:
    """The one-line error for DuckDB failing while answering `name` (a query or view) over `runs`.

    About the input when it can be: a file and line DuckDB named, a result.json rlsql's own SQL
    rejected, or, when DuckDB's CSV reader failed without naming the file (a parser state error),
    the file found by probing each CSV that `needed` reads. Anything else is a failed query.
    """
    problem = data_error(exc)
    if problem is None and isinstance(exc, duckdb.InvalidInputException) and "CSV" in str(exc):
        kinds = [f.artifact for f in needed if f.kind == "source" and f.artifact in CSV_ARTIFACTS]
        problem = locate_unparsable_csv(runs, kinds)
    return problem or QueryError(f"{name}: {one_line(exc)}")
