"""The cache as the engine's copies (rlsql/engine/copies.py): what a command hands the engine.

`for_command` is called by the command (rlsql/cli/, the Python API) before it reads: None when the cache is off
(RLSQL_CACHE=off, `--no-cache`); under `--cache` (RLSQL_CACHE=on) it first builds the copies of the files the
command's queries and views read, as `rlsql cache build` would for those sources only (a query of the trials
CSV builds no trajectory copy), and brings the folder to its size limit; then, as under `auto`, the engine
reads each fresh copy it is handed. The lookups themselves never write the cache folder.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from rlsql.cache import admin, csvcopies, logentries, reading, store, trajcopies
from rlsql.cache.csvcopies import CsvCopy
from rlsql.cache.logentries import CachedLog
from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core import settings
from rlsql.core.errors import RlsqlWarning, UsageError
from rlsql.runs.folders import Run
from rlsql.runs.trajectories import TrajectoryListing


class CacheCopies:
    """The fresh entries of the cache folder the settings name, looked up file by file (nothing is written)."""

    def csv_copy(self, source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> CsvCopy | None:
        return csvcopies.cached_copy(source, path, header, types)

    def trajectory_rows(self, source: str, run: Run, trace_jobs: Path, listing: TrajectoryListing) -> dict | None:
        # tool_call_arguments_src is tool_calls_src without a column: it reads that source's copy; the texts of
        # `rlsql trial` have none
        copied = trajcopies.COPIED_FROM.get(source, source)
        return trajcopies.cached_rows(copied, run, trace_jobs, listing) if copied in trajcopies.SOURCES else None

    def log_entry(self, path: Path, run_bytes: int) -> CachedLog | None:
        return logentries.cached_log(path, run_bytes)

    def recording(self) -> AbstractContextManager[reading.Reads]:
        return reading.recording(reading.Reads())

    def failed(self, used: Sequence[object], cause: BaseException) -> None:
        reading.copies_failed([e for e in used if isinstance(e, store.Entry)], cause)


def sources_read(names: Iterable[str] | None) -> frozenset[str] | None:
    """The sources the closure of queries or views `names` reads (None: every source)."""
    if names is None:
        return None
    return frozenset(f.name for f in load_catalog().closure(list(names)) if f.kind == "source")


def for_command(runs: Sequence[Run], names: Iterable[str] | None = None) -> CacheCopies | None:
    """The copies a command that reads `runs` through the queries and views `names` (None: any) hands the
    engine, under the current settings' policy (the module docstring)."""
    config = settings.current()
    if config.cache == "off":
        return None
    if config.cache == "on":
        if reading.cache_root(for_writing=True) is None:
            return None  # the folder cannot be used: said once, every file read in place
        try:
            # a file the build cannot copy is read in place, and that read says what is wrong with it: the
            # build's own warning would say it twice (with -v it is a notice, as `cached now` is)
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                admin.build(runs, force=False, sources=sources_read(names))
        except UsageError as exc:  # the folder cannot take the copies (full, unwritable): read in place
            warnings.warn(f"{exc}; reading every file in place", RlsqlWarning, stacklevel=2)
            return None
        for w in said:
            reading.notice(str(w.message))
    return CacheCopies()
