"""What one answer read through the cache, and the retries that keep one bad file from failing it.

A query, export or report answers inside `answering(work)`: while `work()` renders its sources,
the cache lookups (rlsql/cache/csvcopies.py for CSVs, logentries.py for raw logs) record here the
entries they handed out and the large files they read in place. Afterwards:

- a failure after reading cached copies is answered again from the files themselves, and the
  entries that failed are marked damaged (a copy never costs a failed query);
- a CSV that DuckDB cannot read row by row (mixed line endings; a quote that never closes, which
  loses every row after it) fails `work()` once; `work()` runs again reading a line-bounded copy of
  it (rlsql/runs/csvfiles.py); when even that fails, the file is skipped with a warning naming its
  file and line, and `work()` runs again without it;
- a trajectory file removed while DuckDB read the run (a trial folder cleaned up or retried) fails
  `work()`; its trial is skipped with a warning, and `work()` runs again over the files there now;
- the large files read in place give one hint line: how long the answer took and what
  `rlsql cache build` would save.

The record is scoped to the call (a context variable), so nothing carries over between commands.
"""

from __future__ import annotations

import contextvars
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import duckdb

from rlsql.cache import store
from rlsql.core import settings
from rlsql.core.errors import RlsqlError, RlsqlWarning, UnparsableCsv, one_line
from rlsql.duck.memorydb import memory_connection
from rlsql.runs import csvfiles, trajectories
from rlsql.runs.writes import WriteError

T = TypeVar("T")

#: what a later query saves by reading a cached copy instead of the file (bench/RESULTS.md, "Cache":
#: 10M trials, a trial query 0.3-0.65 CPU-s from the copy against 1.4-1.7 from the CSV)
SAVING = "later queries read its Parquet copy in about a third of the time"
#: the same for a run's trajectories (bench/RESULTS.md, "Agent trajectories": 45,000 trials, a query 17-23 s in
#: place, 4.9-6.5 s from the copy)
TRAJECTORY_SAVING = "later trajectory queries read a copy of their rows instead of every file, 3-4 times faster"


@dataclass
class Reads:
    """The cache's part of one answer."""

    handed_out: list[store.Entry] = field(default_factory=list)
    #: files at least Settings.cache_hint_bytes large read in place: path -> (bytes, what a copy saves)
    in_place: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: the cache folder problems said so far (once per answer, not once per file)
    said: set[str] = field(default_factory=set)
    #: seconds of the answer spent writing a table or markdown in Python, not reading (the hint leaves them out)
    formatting: float = 0.0


_current: contextvars.ContextVar[Reads | None] = contextvars.ContextVar("rlsql_cache_reads", default=None)


def handed_out(entry: store.Entry) -> None:
    """A lookup handed `entry` to the statement being answered (marked used for the size limit)."""
    store.touch(entry)
    reads = _current.get()
    if reads is not None:
        reads.handed_out.append(entry)


def read_in_place(path: Path, size: int, saving: str = SAVING) -> None:
    """A lookup found no fresh copy of `path` (`size` bytes); a large one earns the answer a hint."""
    reads = _current.get()
    if reads is not None and size >= settings.current().cache_hint_bytes:
        reads.in_place[str(path)] = (size, saving)


def formatted(seconds: float) -> None:
    """`seconds` of the answer went into rendering rows in Python (rlsql/outputs/rows.py), not into reading:
    at 1M trials a markdown file takes ~16 s to write against a read of ~1.5 s, which the hint must not claim."""
    reads = _current.get()
    if reads is not None:
        reads.formatting += seconds


def cache_root(for_writing: bool) -> Path | None:
    """The cache folder this answer uses (store.usable_root), or None: read in place. A folder that cannot
    be used is one warning per answer: which folder, why, the fix."""
    try:
        return store.usable_root(settings.current(), for_writing)
    except store.CacheUnavailable as exc:
        reads = _current.get()
        message = f"{exc}; reading every file in place (RLSQL_CACHE=off stops this warning)"
        if reads is None or message not in reads.said:
            if reads is not None:
                reads.said.add(message)
            warnings.warn(message, RlsqlWarning, stacklevel=3)
        return None


def damaged_copy(source: Path | str, parquet: Path, why: str) -> None:
    """A copy found damaged before use (store.quick_state): its file answers instead, with a warning naming
    the file, the copy and why (nothing is written: `cache build` rebuilds the copy). Not kept in `said`:
    an attempt stopped by a bad cell (rlsql/duck/badcells.py) drops its warnings and the next says them
    again; the command line says a warning repeated word for word once."""
    warnings.warn(
        f"{source}: its cached copy {parquet} is damaged ({why}); answered from the file "
        "(`rlsql cache build` rebuilds the copy)",
        RlsqlWarning,
        stacklevel=3,
    )


def notice(message: str) -> None:
    """One stderr line with `-v` (Settings.verbose): how a file was read."""
    if settings.current().verbose:
        print(f"rlsql: cache: {message}", file=sys.stderr)


def answering(work: Callable[[], T]) -> T:
    """`work()` with the retries of the module docstring, and the hint after it."""
    reads = Reads()
    token = _current.set(reads)
    started = time.perf_counter()
    try:
        result = _with_fallback(work, reads)
    finally:
        _current.reset(token)
    if reads.in_place and settings.current().cache == "auto":
        _hint(reads.in_place, max(time.perf_counter() - started - reads.formatting, 0.0))
    return result


def _hint(in_place: dict[str, tuple[int, str]], seconds: float) -> None:
    total = sum(size for size, _ in in_place.values())
    first = next(iter(in_place))
    more = f" and {len(in_place) - 1} more" if len(in_place) > 1 else ""
    saving = max(in_place.values())[1]  # the largest file's
    print(
        f"rlsql: hint: read {total / 2**20:,.0f} MiB in place ({first}{more}) in {seconds:.1f} s; "
        f"`rlsql cache build` with the same --run makes cached copies once, and {saving} "
        "(RLSQL_CACHE=off: no hints)",
        file=sys.stderr,
    )


def _with_fallback(work: Callable[[], T], reads: Reads) -> T:
    """`skipping_unparsable(work)`; when it fails with a DuckDB error after reading cached copies, again
    from the files, and the entries that failed (all those read, when none fails a footer check) are
    marked damaged. A failure that the files repeat is theirs, and that error is raised."""
    try:
        return skipping_unparsable(work)
    except (duckdb.Error, RlsqlError) as exc:
        cause = exc if isinstance(exc, duckdb.Error) else exc.__cause__
        used = list(reads.handed_out)
        # an output that could not be written (a full disk) says nothing about the cached copies
        if not used or not isinstance(cause, duckdb.Error) or isinstance(exc, WriteError):
            raise
        with settings.active(settings.current().replace(cache="off")):
            result = skipping_unparsable(work)
        con = memory_connection()
        bad = [e for e in used if store.footer_problem(e, e.read_meta(), con)] or used
        reason = one_line(cause)
        for e in bad:
            store.mark_damaged(e, reason)
            warnings.warn(
                f"{e.read_meta().get('source', e.parquet)}: its cached copy {e.parquet} could not be "
                f"read ({reason}); answered from the file, and the entry is marked damaged "
                "(`rlsql cache build` rebuilds it)",
                RlsqlWarning,
                stacklevel=4,
            )
        return result


def skipping_unparsable(work: Callable[[], T]) -> T:
    """`work()`; when a CSV fails it as a whole (UnparsableCsv: a stray CR), `work()` again without that
    file, which the sources then skip with a warning naming its file and line.

    A trajectory file gone while DuckDB read it (trajectories.removed_while_read) is the same: `work()`
    again, its trial not listed any more, and one warning naming it; a file that fails so twice fails.

    The warnings of an attempt that failed so are dropped: the next attempt says them again.
    """
    removed: list[str] = []
    while True:
        failure: RlsqlError | None = None
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                result = work()
            except RlsqlError as exc:
                failure = exc
        gone = trajectories.removed_while_read(failure) if failure is not None else None
        if gone is not None and gone not in removed:
            removed.append(gone)
            continue
        # said again only outside the block: inside it, they would land in the list being read
        version = csvfiles.file_version(failure.path) if isinstance(failure, UnparsableCsv) else None
        if version is not None and version not in csvfiles.line_bounded:
            # first read it line-bounded: the rows DuckDB could not reach are read (csvfiles.line_bounded_copy)
            try:
                csvfiles.line_bounded[version] = csvfiles.line_bounded_copy(Path(version[0]))
            except OSError:
                csvfiles.line_bounded[version] = None
            if csvfiles.line_bounded[version] is not None:
                continue
        if version is None or version in csvfiles.unparsable:
            for path in removed:
                trajectories.warn_removed(path)
            for w in said:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if failure is not None:
                raise failure
            return result
        csvfiles.unparsable[version] = str(failure)
