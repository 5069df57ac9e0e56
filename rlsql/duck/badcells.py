"""Whole-number cells (turns, tokens, steps) that read as empty, named in a query's warnings.

The CSV sources read such a column as DOUBLE and keep only whole values up to 2**53. In a query
connection a finite cell outside that calls `error(BAD_CELL_MARK)` (DuckDB evaluates that
branch only for the cells that reach it: none in an undamaged file, so its scan costs nothing
more). A query stopped so runs again (rlsql/engine/answer.py) with FUNCTION(file, row_no, column, value) in
that branch, a Python function that records the cell and returns NULL (registering
one costs ~50 ms, numpy's import, which DuckDB's Python functions need: paid only by damaged
runs). An answer whose rows go to stdout as they come (rlsql/outputs/rows.py) cannot be answered again once
some went out: its first attempt counts such cells instead of stopping (`counting`: FUNCTION is then a SQL macro
over a sequence, COUNTER, reading the cell as empty; no Python function, so no numpy before the first row), and
when the count is not 0, the statement runs once more, its rows not wanted, with the Python function recording
the cells (`naming`). One warning per file then names the cells; the lines come from the csv module
(csvread.scan_records) for files up to LINE_SCAN_BYTES, else `rlsql check` gives them.
"""

from __future__ import annotations

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
#: the sequence a counting attempt counts bad cells with
COUNTER = "rlsql_cells_counted"
T = TypeVar("T")


@dataclass
class BadCells:
    """(file, row_no, column) -> value of each bad cell a query's scans met."""

    cells: dict[tuple[str, int, str], float] = field(default_factory=dict)
    #: the cells are counted (COUNTER), not recorded: a streamed answer's first attempt
    counting: bool = False
    #: the statement runs again for its bad cells alone, its rows not wanted (`name_cells`)
    naming: bool = False
    #: the cells a counting attempt met (a cell read twice counts twice)
    counted: int = 0

    def record(self, file: str, row: int, column: str, value: float) -> None:
        """The UDF, called once per bad cell: remember it (a view read twice in one statement meets it
        twice), read it as NULL. A native function: an arrow one would need pyarrow, which rlsql does not."""
        self.cells[(file, row, column)] = value

    def name(self, work: Callable[[BadCells], object]) -> None:
        """After a counting attempt that met bad cells: `work` again, naming them (its rows not wanted, its
        warnings said already). Should that fail, the warning says how many cells, unnamed."""
        self.counting, self.naming = False, True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                work(self)
        except Exception:  # the rows went out already: they are not answered again
            pass
        finally:
            self.naming = False

    def warn(self) -> None:
        if self.counted and not self.cells:
            warnings.warn(
                f"{self.counted} cell{'s' if self.counted > 1 else ''} not a whole number up to 2**53, read as "
                "empty (`rlsql check` names them)",
                RlsqlWarning,
                stacklevel=3,
            )
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
    """Create FUNCTION on `con`, recording into `bad`; counting, a macro of the same name over COUNTER."""
    if bad.counting:
        con.execute(f"CREATE TEMP SEQUENCE {COUNTER}")
        # nextval in a CASE branch runs for the rows that reach it alone, as the Python function would
        con.execute(
            f"CREATE TEMP MACRO {FUNCTION}(file, row_no, col, value) AS "
            f"CAST(CASE WHEN nextval('{COUNTER}') < 0 THEN value END AS DOUBLE)"
        )
        return
    con.create_function(
        FUNCTION,
        bad.record,
        ["VARCHAR", "BIGINT", "VARCHAR", "DOUBLE"],
        "DOUBLE",  # type: ignore[call-overload]
        null_handling="special",
        side_effects=True,
    )


def count(con: duckdb.DuckDBPyConnection, bad: BadCells | None) -> None:
    """After a counting statement on `con`: add the bad cells it met to `bad.counted`."""
    if bad is None or not bad.counting:
        return
    row = con.execute("SELECT last_value FROM duckdb_sequences() WHERE sequence_name = ?", [COUNTER]).fetchone()
    bad.counted += int(row[0] or 0) if row else 0


def name_cells(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Run query `sql` on `con` for its bad cells alone: every column computed (so each cell reaches FUNCTION),
    counted, no row fetched."""
    con.execute(f"SELECT count(COLUMNS(*)) FROM (\n{sql}\n)").fetchall()
