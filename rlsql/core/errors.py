"""Errors rlsql expects, each with the exit code the CLI maps it to.

The CLI prints these as one line on stderr (no traceback); anything else is a bug.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented in docs/cli.md, "Exit codes"; scripts depend on these values."""

    OK = 0
    QUERY_FAILED = 1
    USAGE = 2
    BAD_DATA = 3
    WRITE_FAILED = 4


class RlsqlError(Exception):
    """Base of every error rlsql reports without a traceback."""

    exit_code: ExitCode = ExitCode.QUERY_FAILED


class UsageError(RlsqlError):
    """The user asked for something that does not exist or is malformed (name, parameter, option)."""

    exit_code = ExitCode.USAGE


class DataError(RlsqlError):
    """A run folder, file or config is missing or unreadable."""

    exit_code = ExitCode.BAD_DATA


class UnparsableCsv(DataError):
    """A CSV DuckDB's parser gives up on as a whole (a stray CR): the query skips that file and retries."""

    def __init__(self, path: str, line: int | None, problem: str):
        self.path = path
        super().__init__(f"{path}{'' if line is None else f':{line}'}: {problem}")


class CatalogError(RlsqlError):
    """The SQL catalog itself is inconsistent (unknown reference, cycle, bad header): a bug in sql/."""

    exit_code = ExitCode.QUERY_FAILED


class QueryError(RlsqlError):
    """DuckDB failed while running a query."""

    exit_code = ExitCode.QUERY_FAILED


class ReaderGone(Exception):
    """stdout's reader went away (`| head -3`): no error of ours, the command ends quietly with exit 0. Not an
    OSError, which click's standalone mode turns into exit 1, and no RlsqlError, which would be answered again."""


class RlsqlWarning(UserWarning):
    """Something rlsql skipped or assumed; the numbers it prints do not include it."""


#: an `error()` raised by rlsql's own SQL about the input files starts with this (the templates get it
#: as the Jinja global DATA_ERROR_MARK; rlsql.engine.failures.data_error turns such a failure into a DataError)
DATA_ERROR_MARK = "rlsql-data: "
#: the error a whole-number cell that reads as empty raises in a query's first attempt (rlsql/duck/badcells.py;
#: the templates get it as the Jinja global BAD_CELL_MARK)
BAD_CELL_MARK = "rlsql-bad-cell"
#: the Python function a query's second attempt calls on such a cell to record it (rlsql/duck/badcells.py registers
#: it; the templates get its name as the Jinja global BAD_CELL_FUNCTION)
BAD_CELL_FUNCTION = "rlsql_bad_cell"


def one_line(exc: BaseException) -> str:
    """DuckDB's messages span lines (and carry hints); keep the first meaningful line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
