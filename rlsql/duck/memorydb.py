"""Every DuckDB connection rlsql opens, so that DuckDB spills only into a folder rlsql owns; its settings; and
the names the packages above duck/ and engine/ use for DuckDB's connection and errors (they import no DuckDB).

DuckDB's default temp_directory for an in-memory database is `.tmp` in the current folder, which
may be a run folder: rlsql never writes there. Each process spills into its own folder under
`$TMPDIR/rlsql-UID/` (rlsql.runs.writes.private_folder), named by rlsql.runs.writes.temp_name, so what a
killed process left is swept by the next one (DuckDB removes the folder itself when the connection closes).
"""

from __future__ import annotations

import contextvars
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from rlsql.core.sqltext import literal
from rlsql.runs import writes

#: a DuckDB connection (or a cursor of one), as the modules above duck/ and engine/ name it
Connection = duckdb.DuckDBPyConnection
#: every error DuckDB raises
DuckError = duckdb.Error
#: the error DuckDB raises for input it cannot read (a CSV its parser fails)
InvalidInput = duckdb.InvalidInputException


@functools.cache
def spill_folder() -> Path:
    """This process's spill folder (DuckDB creates it on the first spill), in rlsql's private folder."""
    return writes.private_temp("duckdb-spill")


#: a callable every connection opened in this context is handed to (rlsql serve interrupts a request's
#: connections at its time limit: rlsql/serve/deadline.py)
opened: contextvars.ContextVar[Callable[[duckdb.DuckDBPyConnection], None] | None] = contextvars.ContextVar(
    "rlsql_opened", default=None
)


#: DuckDB's memory limit for a statement over agents' trajectories: what it holds grows with the run (the
#: tool calls sorted to write their canonical arguments, the steps numbered into turns), and past this it spills
#: into spill_folder(). Measured (bench/RESULTS.md, "Issue 38: interactive at the real run's size"):
#: looping_trials at 90,000 trials 1,454 MB peak without, 953 MB with it; the rest of the peak is the files
#: being parsed, which DuckDB does not count (one file per reader at a time, bounded by
#: RLSQL_TRAJECTORY_MAX_BYTES)
TRAJECTORY_MEMORY = "512MB"


def memory_connection(threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """duckdb.connect(":memory:") with its temp_directory in spill_folder(); `threads` DuckDB's threads
    (None: one per core, DuckDB's default); `memory_limit` DuckDB's (None: its default, 80 % of the RAM)."""
    # set at connect, not by a SET statement after it: the same setting, ~4 MB less peak memory
    # (bench/RESULTS.md at 9434c57, "Questions answered ahead")
    config: dict[str, str | bool | int | float | list[str]] = {"temp_directory": str(spill_folder())}
    if threads is not None:
        config["threads"] = threads
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    con = quiet(duckdb.connect(":memory:", config=config))
    if (watcher := opened.get()) is not None:
        watcher(con)
    return con


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con` without DuckDB's progress bar unless stdout and stderr are a person's terminal (its cursors start
    without one)."""
    if not (_isatty(sys.stdout) and _isatty(sys.stderr)):
        # DuckDB draws its bar into the process's stdout, terminal or not: without this a slow
        # `rlsql query -f csv > out.csv` writes the bar's frames into the CSV
        con.execute("SET enable_progress_bar = false")
    return con


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def spill_into(con: Connection, folder: Path) -> None:
    """Make `con` spill into `folder` (an export's, beside its output) instead of spill_folder()."""
    con.execute(f"SET temp_directory = {literal(str(folder))}")


def limit_memory(con: Connection, memory_limit: str) -> None:
    """DuckDB's memory limit for what `con` runs (a size DuckDB reads: `512MB`)."""
    con.execute("SET memory_limit = ?", [memory_limit])


def confine(con: Connection, folders: list[str], files: list[str]) -> None:
    """Let `con` read only below `folders` and the `files` named, load no extension and change no setting from
    now on (DuckDB enforces it; the statements' own check is the caller's)."""
    con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET allowed_paths = ?", [files])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def write_as_produced(con: Connection) -> None:
    """Without DuckDB's asynchronous writer, which hands COPY's bytes on in blocks of ~8 MB, a COPY's bytes go
    out as DuckDB writes them (a stream into stdout)."""
    con.execute("SET async_threads = 0")


def interrupt(con: Connection) -> None:
    """Stop the statement `con` is running (none: nothing happens)."""
    con.interrupt()


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> Any:
    """The first column of the first row `sql` gives (None for no row)."""
    row = con.execute(sql, params or []).fetchone()
    return None if row is None else row[0]


def duckdb_version() -> str:
    """The version of the DuckDB rlsql runs on (`rlsql --version`)."""
    return duckdb.__version__
