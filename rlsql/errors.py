"""Errors rlsql expects, each with the exit code the CLI maps it to.

The CLI prints these as one line on stderr (no traceback); anything else is a bug.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented in the README; scripts depend on these values."""

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


class CatalogError(RlsqlError):
    """The SQL catalog itself is inconsistent (unknown reference, cycle, bad header): a bug in sql/."""

    exit_code = ExitCode.QUERY_FAILED


class QueryError(RlsqlError):
    """DuckDB failed while running a query."""

    exit_code = ExitCode.QUERY_FAILED


class RlsqlWarning(UserWarning):
    """Something rlsql skipped or assumed; the numbers it prints do not include it."""
