"""Whole-number cells (turns, tokens, steps) that read as empty, named in a query's warnings.

The CSV sources read such a column as DOUBLE and keep only whole values up to 2**53. In a query
connection a finite cell outside that calls `error(BAD_CELL_MARK)` (DuckDB evaluates that
branch only for the cells that reach it: none in an undamaged file, so its scan costs nothing
more). A query stopped so runs again (`answering`) with FUNCTION(file, row_no, column, value) in
that branch, a Python function that records the cell and returns NULL (registering
one costs ~50 ms, numpy's import, which DuckDB's Python functions need: paid only by damaged
runs). An answer whose rows go to stdout as they come (rlsql/outputs/rows.py) cannot be answered again once
some went out: it records from its first attempt (`at_once`). One warning per file then names the cells; the
lines come from the csv module (csvread.scan_records) for files up to LINE_SCAN_BYTES, else `rlsql check` gives
them.
"""

from __future__ import annotations

import contextvars
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import duckdb

from rlsql.core.errors import BAD_CELL_FUNCTION, BAD_CELL_MARK, RlsqlWarning
from rlsql.runs import csvfiles as csvread

FUNCTION = BAD_CELL_FUNCTION
#: the text of the error a bad cell raises in a first attempt
FOUND = BAD_CELL_MARK
#: a file with bad cells up to this size is read again by the csv module to name their lines (~0.5 s)
LINE_SCAN_BYTES = 16 * 1024 * 1024
EXAMPLES = 3
T = TypeVar("T")
#: record the bad cells from the first attempt (set while an answer streams into stdout: no second attempt)
at_once: contextvars.ContextVar[bool] = contextvars.ContextVar("badcells_at_once", default=False)


@dataclass
class BadCells:
    """(file, row_no, column) -> value of each bad cell a query's scans met."""

    cells: dict[tuple[str, int, str], float] = field(default_factory=dict)

    def record(self, file: str, row: int, column: str, value: float) -> None:
        """The UDF, called once per bad cell: remember it (a view read twice in one statement meets it
        twice), read it as NULL. A native function: an arrow one would need pyarrow, which rlsql does not."""
        self.cells[(file, row, column)] = value

    def warn(self) -> None:
        by_file: dict[str, dict[str, list[float]]] = {}
        for (path, _row, column), value in sorted(self.cells.items()):
            by_file.setdefault(path, {}).setdefault(column, []).append(value)
        for path, columns in by_file.items():
            count = sum(len(v) for v in columns.values())
            where = (
                _lines(path, list(columns))
                or "; ".join(
                    f"column {c}: {', '.join(_number(v) for v in values[:EXAMPLES])}" for c, values in columns.items()
                )
                + "; `rlsql check` names their lines"
            )
            warnings.warn(
                f"{path}: {count} cell{'s' if count > 1 else ''} not a whole number up to 2**53, "
                f"read as empty ({where})",
                RlsqlWarning,
                stacklevel=3,
            )


def _number(value: float) -> str:
    return repr(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def _lines(path: str, columns: list[str]) -> str | None:
    """`line N: column C: 'cell'` for the first EXAMPLES bad cells, found by the csv module; None when
    the file is too large to read again or cannot be read."""
    if path.endswith(".json"):
        return None  # a trajectory's count (rlsql/trajectories.py): named by its JSON path, no line
    try:
        if os.path.getsize(path) > LINE_SCAN_BYTES:
            return None
    except OSError:
        return None
    scan = csvread.scan_records(Path(path), numeric=(), whole=columns)
    found = sorted((line, column, cell) for column, cells in scan.not_whole.items() for line, cell in cells)
    if scan.failed or not found:
        return None
    shown = "; ".join(f"line {line}: column {column}: {cell!r}" for line, column, cell in found[:EXAMPLES])
    return shown + (f"; and {len(found) - EXAMPLES} more" if len(found) > EXAMPLES else "")


def register(con: duckdb.DuckDBPyConnection, bad: BadCells) -> None:
    """Create FUNCTION on `con`, recording into `bad`."""
    con.create_function(
        FUNCTION,
        bad.record,
        ["VARCHAR", "BIGINT", "VARCHAR", "DOUBLE"],
        "DOUBLE",  # type: ignore[call-overload]
        null_handling="special",
        side_effects=True,
    )


def answering(work: Callable[[BadCells | None], T]) -> T:
    """`work(None)`; when a bad cell stopped it, `work(BadCells())` again and warn about the cells.

    The warnings of the stopped attempt are dropped: the second one says them again. With `at_once`, one
    attempt that records.
    """
    if at_once.get():
        bad = BadCells()
        result = work(bad)
        bad.warn()
        return result
    failure: BaseException | None = None
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            result = work(None)
        except Exception as exc:
            failure = exc
    # said again only outside the block: inside it, they would land in the list being read
    if failure is None or FOUND not in str(failure):
        _say_again(said)
        if failure is not None:
            raise failure
        return result
    bad = BadCells()
    result = work(bad)
    bad.warn()
    return result


def _say_again(said: list[warnings.WarningMessage]) -> None:
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
