"""One answer: the attempts that keep one bad file from failing it, the files it skipped, what it says after.

`rlsql query`, `sql`, `export`, `report` and `serve` (and the Python API) all answer through
`Answer(copies).run(work)`. `work(bad_cells)` renders the sources over the answer's `copies` (the cached copies
the command handed in, rlsql/engine/copies.py; None: every file in place), runs the statements and consumes the
rows, and may be called again from the start (a streamed answer cannot: `at_once`). When an attempt fails, the loop
mends what it can and runs `work` again:

- a CSV that DuckDB cannot read row by row (mixed line endings; a quote that never closes, which loses every
  row after it: UnparsableCsv) is read from a line-bounded copy of it (rlsql/runs/csvfiles.py); when even that
  fails, the sources skip it with a warning naming its file and line;
- a trajectory file removed while DuckDB read the run (a trial folder cleaned up or retried): its trial is
  skipped with one warning, and the run read again over the files there now; a file that fails so twice fails;
- a whole-number cell that reads as empty stops an attempt (rlsql/duck/badcells.py): the next records such
  cells with a Python function, and one warning per file names them (`bad_cells` is then not None); an answer
  whose rows go out as they come counts them instead (`at_once`), and names them by running `work` once more,
  its rows not wanted (BadCells.naming);
- a DuckDB failure after reading cached copies is answered again from the files themselves (`copies` None
  for the rest of the answer), with one warning per copy that failed (`Copies.failed`; nothing is written: a
  read never writes the cache folder); a failure the files repeat is theirs, and it is raised.

The files skipped and read line-bounded are this answer's (`current()`, read by rlsql/engine/sources.py
while it renders): the next answer looks at the file again. The warnings of an attempt that failed are
dropped: the next attempt says them again. After each statement, `work` calls `said_after(con)`: the rows
DuckDB rejected and the damaged trajectory files. Last, when large files were read in place, one hint: how
long the answer took (less the time spent rendering rows in Python) and what `rlsql cache build` would save.
"""

from __future__ import annotations

import contextvars
import sys
import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import duckdb

from rlsql.core import settings
from rlsql.core.errors import BAD_CELL_MARK, RlsqlError, RlsqlWarning, UnparsableCsv
from rlsql.duck.badcells import BadCells
from rlsql.duck.damagedfiles import warn_damaged
from rlsql.duck.rejects import REJECT_EXAMPLES, UNCLOSED_QUOTE, lost_after, rejected_lines
from rlsql.engine.copies import Copies, Reads
from rlsql.runs import csvfiles, trajectories
from rlsql.runs.writes import WriteError

T = TypeVar("T")
#: a CSV as it is now: (path, size, mtime_ns) (csvfiles.file_version)
Version = tuple[str, int, int]

#: the answer's rows go out as they come (rlsql/outputs/rows.py into a pipe): no attempt can start over once
#: some went out, so bad cells are counted from the first attempt (and named after it: rlsql/duck/badcells.py)
at_once: contextvars.ContextVar[bool] = contextvars.ContextVar("rlsql_answer_at_once", default=False)


@dataclass
class Answer:
    """One answer's attempts and what they found (the module docstring)."""

    #: the cached copies the sources read (rlsql/engine/copies.py); None: every file in place, as after a read
    #: of copies failed
    copies: Copies | None = None
    #: CSVs skipped: why DuckDB cannot parse them
    unparsable: dict[Version, str] = field(default_factory=dict)
    #: CSVs looked at for a line-bounded copy: the copy read instead, or None when the file needs none
    line_bounded: dict[Version, str | None] = field(default_factory=dict)
    #: trajectory files removed while a read of them was under way
    removed: list[str] = field(default_factory=list)
    #: seconds of the answer spent writing a table or markdown in Python, not reading (the hint leaves them out)
    formatting: float = 0.0

    def skipped_because(self, path: str) -> str | None:
        """Why this answer skips the CSV at `path` (None: it reads it)."""
        return self.unparsable.get(csvfiles.file_version(path))

    def read_instead(self, path: str) -> str | None:
        """The line-bounded copy this answer reads instead of the CSV at `path`, if any."""
        return self.line_bounded.get(csvfiles.file_version(path))

    def run(self, work: Callable[[BadCells | None], T]) -> T:
        """`work(bad_cells)` until it succeeds or fails in a way no attempt mends; the hint after it."""
        copies = self.copies
        started = time.perf_counter()
        with copies.recording() if copies is not None else nullcontext() as reads:
            token = _current.set(self)
            try:
                result = self._attempts(work, reads)
            finally:
                _current.reset(token)
        if reads is not None and reads.in_place and settings.current().cache == "auto":
            _hint(reads.in_place, max(time.perf_counter() - started - self.formatting, 0.0))
        return result

    def _attempts(self, work: Callable[[BadCells | None], T], reads: Reads | None) -> T:
        # rows that go out as they come: bad cells counted from the first attempt, never a retry (duck/badcells.py)
        bad = BadCells(counting=True) if at_once.get() else None
        copies = self.copies
        copies_failed: tuple[list, BaseException] | None = None
        while True:
            failure: Exception | None = None
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                try:
                    result = work(bad)
                    if bad is not None:
                        if bad.counted:
                            bad.name(work)
                        bad.warn()
                except Exception as exc:
                    failure = exc
            if failure is None:
                break
            if bad is None and BAD_CELL_MARK in str(failure):
                bad = BadCells()
                continue
            if isinstance(failure, RlsqlError) and self._mended(failure):
                continue
            cause = failure if isinstance(failure, duckdb.Error) else failure.__cause__
            # an output that could not be written (a full disk) says nothing about the cached copies
            if (
                copies_failed is None
                and reads is not None
                and reads.handed_out
                and isinstance(cause, duckdb.Error)
                and not isinstance(failure, WriteError)
            ):
                copies_failed = (list(reads.handed_out), cause)
                self.copies = None  # the files themselves from now on
                continue
            _say_again(said)
            raise failure
        # said again only outside the block: inside it, they would land in the list being read
        for path in self.removed:
            trajectories.warn_removed(path)
        _say_again(said)
        if copies_failed is not None and copies is not None:
            copies.failed(*copies_failed)
        return result

    def _mended(self, failure: RlsqlError) -> bool:
        """Whether the next attempt reads around `failure`: a trajectory file gone, a CSV read line-bounded or
        skipped (each at most once per file)."""
        gone = trajectories.removed_while_read(failure)
        if gone is not None and gone not in self.removed:
            self.removed.append(gone)
            return True
        if not isinstance(failure, UnparsableCsv):
            return False
        version = csvfiles.file_version(failure.path)
        if version not in self.line_bounded:
            try:
                self.line_bounded[version] = csvfiles.line_bounded_copy(Path(version[0]))
            except OSError:
                self.line_bounded[version] = None
            if self.line_bounded[version] is not None:
                return True
        if version in self.unparsable:
            return False
        self.unparsable[version] = str(failure)
        return True


_current: contextvars.ContextVar[Answer | None] = contextvars.ContextVar("rlsql_answer", default=None)


def current() -> Answer | None:
    """The answer under way (None outside one: `rlsql.connect()`, `db build`, `check` read every file)."""
    return _current.get()


def formatted(seconds: float) -> None:
    """`seconds` of the answer under way went into rendering rows in Python (rlsql/outputs/rows.py), not into
    reading: at 1M trials a markdown file takes ~16 s to write against a read of ~1.5 s, which the hint must
    not claim."""
    answer = current()
    if answer is not None:
        answer.formatting += seconds


def said_after(con: duckdb.DuckDBPyConnection) -> None:
    """What a statement on `con` met, said after it: the CSV rows DuckDB rejected, the damaged trajectory files."""
    warn_rejected_rows(con)
    warn_damaged(con)


def warn_rejected_rows(con: duckdb.DuckDBPyConnection) -> None:
    """One warning per CSV file with rows DuckDB skipped (recorded because the sources set store_rejects).

    A file whose quote never closes lost every row after it, not just the one rejected: UnparsableCsv asks
    the answer to read it again line-bounded."""
    answer = current()
    by_file: dict[str, list[tuple[int, str]]] = {}
    for path, line, why in rejected_lines(con):
        by_file.setdefault(path, []).append((line, why))
    for path, rejected in by_file.items():
        version = csvfiles.file_version(path)
        looked_at = answer is not None and version in answer.line_bounded
        if not looked_at and any(why == UNCLOSED_QUOTE for _, why in rejected):
            if lost_after(path, (why for _, why in rejected)):
                raise UnparsableCsv(path, None, "a quote that never closes (DuckDB drops every row after it)")
            if answer is not None:
                answer.line_bounded[version] = None  # every quote closes: scanned once in this answer
    for path, rejected in by_file.items():
        examples = "; ".join(f"line {line}: {why}" for line, why in rejected[:REJECT_EXAMPLES])
        more = f"; and {len(rejected) - REJECT_EXAMPLES} more" if len(rejected) > REJECT_EXAMPLES else ""
        warnings.warn(
            f"{path}: skipped {len(rejected)} unreadable row{'s' if len(rejected) > 1 else ''} ({examples}{more})",
            RlsqlWarning,
            stacklevel=3,
        )


def _say_again(said: list[warnings.WarningMessage]) -> None:
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


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
