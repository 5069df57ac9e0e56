"""DuckDB's errors as rlsql's messages: one line, naming the file (and line) at fault."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from rlsql.core.errors import DATA_ERROR_MARK, DataError, QueryError, RlsqlError, UnparsableCsv, one_line
from rlsql.engine.csvprobe import locate_unparsable_csv, parser_failure
from rlsql.runs import csvfiles
from rlsql.runs.folders import CSV_ARTIFACTS, Run

if TYPE_CHECKING:
    from rlsql.catalog.sqlfile import SqlFile


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
        return UnparsableCsv(csvfiles.original(path.group(1).strip()), at, problem)
    details = [
        part.strip()
        for part in text.splitlines()[1:]
        if part.strip() and not part.startswith(("Original Line", "  ", "*", "Possible", "Column ", "This type"))
    ]
    where = f"{path.group(1).strip()}:{line.group(1)}" if line else path.group(1).strip()
    return DataError(f"{where}: {details[0] if details else one_line(exc)}")


def data_error_text(exc: BaseException) -> str:
    text = str(exc)
    return (
        text[text.index(DATA_ERROR_MARK) + len(DATA_ERROR_MARK) :].splitlines()[0]
        if DATA_ERROR_MARK in text
        else one_line(exc)
    )


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
