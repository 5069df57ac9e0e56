"""The cache's part of one answer (rlsql/engine/answer.py): what the lookups handed out and read in place.

While an answer renders its sources, the cache lookups (rlsql/cache/csvcopies.py for CSVs, logentries.py for
raw logs, trajcopies.py for trajectory rows, asked through rlsql/cache/copies.py) record here the entries they
handed out and the large files they read in place. The answer uses the record afterwards: a failure after
reading cached copies is answered again from the files, with one warning per entry that failed
(`copies_failed`: nothing is written, a read never writes the cache folder); the large files read in place
give its hint. The record is scoped to
the answer (a context variable), so nothing carries over between commands.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rlsql.cache import store
from rlsql.core import settings
from rlsql.core.errors import RlsqlWarning, one_line
from rlsql.duck.memorydb import memory_connection

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


_current: contextvars.ContextVar[Reads | None] = contextvars.ContextVar("rlsql_cache_reads", default=None)


def handed_out(entry: store.Entry) -> None:
    """A lookup handed `entry` to the statement being answered (nothing is written: a read never writes the
    cache folder)."""
    reads = _current.get()
    if reads is not None:
        reads.handed_out.append(entry)


def read_in_place(path: Path, size: int, saving: str = SAVING) -> None:
    """A lookup found no fresh copy of `path` (`size` bytes); a large one earns the answer a hint."""
    reads = _current.get()
    if reads is not None and size >= settings.current().cache_hint_bytes:
        reads.in_place[str(path)] = (size, saving)


def cache_root(for_writing: bool = False) -> Path | None:
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


@contextlib.contextmanager
def recording(reads: Reads) -> Iterator[Reads]:
    """The lookups within the block record into `reads`."""
    token = _current.set(reads)
    try:
        yield reads
    finally:
        _current.reset(token)


def copies_failed(used: list[store.Entry], cause: BaseException) -> None:
    """An answer failed with `cause` after reading the cached copies `used`, and its files answered: one
    warning per entry that failed (all those read, when none fails a footer check). Nothing is recorded: the
    checksum checked before every use finds a copy whose bytes changed, and `cache status` and `cache build`
    read each footer too; a copy DuckDB fails on with its bytes as built is rebuilt by `cache build --force`."""
    con = memory_connection()
    bad = [e for e in used if store.footer_problem(e, e.read_meta(), con)] or used
    reason = one_line(cause)
    for e in bad:
        warnings.warn(
            f"{e.read_meta().get('source', e.parquet)}: its cached copy {e.parquet} could not be "
            f"read ({reason}); answered from the file (`rlsql cache build --force` rebuilds it)",
            RlsqlWarning,
            stacklevel=4,
        )
