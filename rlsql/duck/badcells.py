"""Whole-number cells (turns, tokens, steps) that read as empty, named in a query's warnings.

The CSV sources read such a column as DOUBLE and keep only whole values up to 2**53. In a query
connection a finite cell outside that calls `error(BAD_CELL_MARK)` (DuckDB evaluates that
branch only for the cells that reach it: none in an undamaged file, so its scan costs nothing
more). A query stopped so runs again (rlsql/engine/answer.py) with FUNCTION(file, row_no, column, value) in
that branch, a Python function that records the cell and returns NULL (registering
one costs ~50 ms, numpy's import, which DuckDB's Python functions need: paid only by damaged
runs). An answer whose rows go to stdout as they come (rlsql/outputs/rows.py) cannot be answered again once
some went out: it records from its first attempt (answer.at_once). One warning per file then names the cells; the
lines come from the csv module (csvread.scan_records) for files up to LINE_SCAN_BYTES, else `rlsql check` gives
them.
"""

from __future__ import annotations

import os
import warnings
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
