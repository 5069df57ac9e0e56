"""The copies a command hands the engine: what the sources read instead of a file, and nothing else.

The engine never opens the cache folder itself. A command that reads runs (rlsql/cli/, the Python API in
rlsql/__init__.py) builds one `Copies` from the settings (rlsql/cache/copies.py; None when the cache is off)
and hands it to run_query, run_sql, export, the report or the inspection commands; the sources
(rlsql/engine/sources.py, rlsql/engine/rawlogs.py) ask it, file by file, for a fresh copy, and read the file in
place when it has none. Asking builds nothing and writes nothing: `rlsql cache build` and `--cache` build the
copies before the command reads (docs/caching.md). The answer (rlsql/engine/answer.py) records what the
copies handed out and read in place (`recording`), answers again from the files when a read of copies fails,
and then has them named (`failed`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from rlsql.catalog.sqlfile import SqlFile
from rlsql.core import settings
from rlsql.runs.folders import Run
from rlsql.runs.trajectories import TrajectoryListing


class LogEntry(Protocol):
    """A raw log's fresh entry: its Parquet file, and the kept lines after its cut (a line being written), each
    with `offset`, `text`, `is_metric` and `is_vllm`."""

    @property
    def parquet(self) -> str: ...

    @property
    def tail(self) -> tuple: ...


class Reads(Protocol):
    """What one answer's lookups met: the copies handed out (what `Copies.failed` names), and the large files
    read in place, path -> (bytes, what a copy would save) (the answer's hint)."""

    @property
    def handed_out(self) -> Sequence[object]: ...

    @property
    def in_place(self) -> dict[str, tuple[int, str]]: ...


class CsvCopy(Protocol):
    """A CSV's fresh Parquet copy: its file, and the rows its build read and skipped (skipped_rows_src counts
    them instead of reading the CSV again)."""

    @property
    def parquet(self) -> str: ...

    @property
    def rows(self) -> int: ...

    @property
    def skipped(self) -> int: ...


class Copies(Protocol):
    """The fresh copies of the runs' files, asked for one file (or one run's trajectories) at a time."""

    def csv_copy(self, source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> CsvCopy | None:
        """The Parquet copy of the CSV at `path` as `source` reads it (`header` typed as `types`); None: read
        the CSV in place."""
        ...

    def trajectory_rows(self, source: str, run: Run, trace_jobs: Path, listing: TrajectoryListing) -> dict | None:
        """`source`'s rows of `run` as the trajectory templates take them ({run, parquet, damaged, bad_cells}) while
        `listing` is the one they were copied from; None: read the files."""
        ...

    def log_entry(self, path: Path, run_bytes: int) -> LogEntry | None:
        """The entry of raw log `path` (its run's logs `run_bytes` together, for the hint); None: read it in place."""
        ...

    def recording(self) -> AbstractContextManager[Reads]:
        """The lookups within the block (one answer) record what they handed out and read in place."""
        ...

    def failed(self, used: Sequence[object], cause: BaseException) -> None:
        """An answer failed with `cause` after reading the copies `used` (Reads.handed_out), and its files
        answered: say which copies failed (warnings; nothing is written)."""
        ...


def without_copies(path: Path | str) -> None:
    """With `-v`, what a lookup would have said of a file read while no copies were handed in (the cache off,
    or a command whose views must read the files themselves: `connect()`, `shell-init`, `db build`)."""
    if settings.current().verbose:
        print(f"rlsql: cache: {path}: read in place (the cache is off)", file=sys.stderr)
