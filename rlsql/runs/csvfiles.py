"""What rlsql must know about a CSV before DuckDB reads it, and an independent count for `rlsql check`.

DuckDB's CSV reader rejects a line longer than `max_line_size` (2 MB) with a LINE SIZE OVER
MAXIMUM error, but a line about as long as its read buffer (`buffer_size`) or longer vanishes
without an error or a reject. rlsql reads every CSV with a 16 MiB buffer (DuckDB's default is 32
MB: a fifth to two fifths less peak memory at the same CPU; 8 MiB cost trial_phases 13% more CPU at
10M trials; bench/RESULTS.md, "CSV reading"), and
`buffer_size()` finds the files that hold a line too long for it and sizes their buffer so that
DuckDB sees the line whole and rejects it like any other.
"""

from __future__ import annotations

import atexit
import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlsql.core.errors import DataError

#: the read buffer of every CSV read: a line of 15.9 MiB is rejected correctly with it, one of 16.2 MiB
#: vanishes (measured with DuckDB 2.0, max_line_size MAX_LINE; the guard below leaves a margin)
DEFAULT_BUFFER = 16 * 1024 * 1024
#: the longest line DuckDB reads as a row: its own default, stated because a read given a buffer_size
#: and no max_line_size reads lines up to the buffer's size as rows
MAX_LINE = 2 * 1024 * 1024
#: `_has_long_line` finds every line longer than 2 * SAFE_LINE (12 MiB: read or rejected correctly with
#: DEFAULT_BUFFER)
SAFE_LINE = 6 * 1024 * 1024
#: the largest read buffer rlsql asks for; DuckDB holds one per thread
MAX_BUFFER = 1024 * 1024 * 1024
_SLACK = 4 * 1024 * 1024
#: a line-bounded copy -> the CSV it stands for: DuckDB names the copy in its errors and rejected rows
copied_from: dict[str, str] = {}
#: a CSV -> its version (file_version) and the line-bounded copy made of it: an answer that reads the same
#: version line-bounded again reads that copy, made once per version of the file
_copies: dict[str, tuple[tuple[str, int, int], str]] = {}
#: what a line whose quote never closes becomes in the copy: a line DuckDB rejects for the same reason
#: ("a quote that is not closed, or text after a closing quote"), so the warning names the right line
_REJECTED_LINE = b'"x"x'


def original(path: str) -> str:
    """The CSV a path DuckDB names stands for: itself, or the CSV a line-bounded copy was made of."""
    return copied_from.get(path, path)


def never_closed(path: Path) -> list[int]:
    """The 1-based lines of `path` that open a quoted cell no later line closes.

    DuckDB reads such a cell to the end of the file, rejects it as one row and drops every row after it
    (an appended `,"unterminated` on line 101 of 2,980: 99 rows read). The scan counts quotes per line
    (an escaped `""` counts twice); after a line whose quote never closes it starts again on the next line.
    """
    bad: list[int] = []
    start_line, start_offset = 1, 0
    with path.open("rb") as fh:
        while True:
            fh.seek(start_offset)
            line, opened = start_line, None
            for raw in iter(fh.readline, b""):
                if raw.count(b'"') % 2:
                    opened = (line, fh.tell()) if opened is None else None
                line += 1
            if opened is None:
                return bad
            bad.append(opened[0])
            start_line, start_offset = opened[0] + 1, opened[1]


def line_bounded_copy(path: Path) -> str | None:
    """A copy of `path` DuckDB can read row by row, in rlsql's own temp folder, or None when nothing needs changing.

    Line for line the file (so DuckDB's line numbers stay the file's): a line that opens a quote no later line
    closes (never_closed) becomes a line DuckDB rejects for the same reason, so the rows after it are read; a
    record that ends in CRLF ends in LF (DuckDB's parser fails a file whose line endings are mixed, a live CSV
    whose last row was appended with `\r\n`). Removed when the process exits; a killed process's copy is
    swept by the next (writes.private_temp).
    """
    from rlsql.runs import writes

    version = file_version(str(path))
    made = _copies.get(str(path))
    if made is not None and made[0] == version and Path(made[1]).exists():
        return made[1]
    bad = set(never_closed(path))
    folder = writes.private_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    target = writes.temp_name(folder / "line-bounded.csv")
    changed, quoted = False, False
    try:
        with path.open("rb") as src, target.open("xb") as out:
            for line, raw in enumerate(iter(src.readline, b""), 1):
                if line in bad:
                    out.write(_REJECTED_LINE + (b"\n" if raw.endswith(b"\n") else b""))
                    changed = True
                    continue
                if raw.count(b'"') % 2:
                    quoted = not quoted
                if not quoted and raw.endswith(b"\r\n"):  # within a quoted cell a CRLF is the cell's text
                    raw = raw[:-2] + b"\n"
                    changed = True
                out.write(raw)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    if not changed:
        target.unlink(missing_ok=True)
        return None
    # a copy of an earlier version of the file (a live CSV that grew, in a long-lived process) is not read again
    for old in [c for c, of in copied_from.items() if of == str(path)]:
        Path(old).unlink(missing_ok=True)
        del copied_from[old]
    atexit.register(target.unlink, missing_ok=True)
    copied_from[str(target)] = str(path)
    _copies[str(path)] = (version, str(target))
    return str(target)


def mixed_line_ending(path: Path, chunk: int = 1 << 24) -> tuple[int, str] | None:
    """(line, why) of the first record of `path` whose line ending (CRLF or LF) is not the first record's, or None.

    DuckDB's parser fails such a file (a live CSV whose last row was appended with `\r\n`); rlsql's queries read
    it through line_bounded_copy, but a view of `rlsql db build` reads the file itself. A CRLF inside a quoted
    cell is the cell's text. A file without a carriage return (nearly every one) is only searched for one.
    """
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            if b"\r" in block:
                break
        else:
            return None
        fh.seek(0)
        first, quoted = None, False
        for line, raw in enumerate(iter(fh.readline, b""), 1):
            if raw.count(b'"') % 2:
                quoted = not quoted
            if quoted or not raw.endswith(b"\n"):
                continue
            ending = "CRLF" if raw.endswith(b"\r\n") else "LF"
            if first is None:
                first = ending
            elif ending != first:
                return line, f"its lines end in {first} and this one in {ending}"
    return None


def file_version(path: str) -> tuple[str, int, int]:
    """A CSV as it is now (an answer's key for the files it skips): the path, its size and modification time
    (0, 0 when gone)."""
    try:
        st = Path(path).stat()
    except OSError:
        return path, 0, 0
    return path, st.st_size, st.st_mtime_ns


class LongLineError(DataError):
    """A line too long for any read buffer rlsql will ask for: the file is skipped."""

    def __init__(self, path: Path, line: int, problem: str):
        self.path, self.line, self.problem = path, line, problem
        super().__init__(f"{path}:{line}: {problem}")


def _has_long_line(path: Path) -> bool:
    """True when some stretch of SAFE_LINE bytes holds no newline (a line may be longer than 2 SAFE_LINE).

    Reads only the start of each SAFE_LINE window up to its first newline: a few hundred bytes per
    6 MiB of an ordinary file.
    """
    size = path.stat().st_size
    if size <= 2 * SAFE_LINE:
        return False
    with path.open("rb") as fh:
        for start in range(0, size, SAFE_LINE):
            fh.seek(start)
            seen = 0
            while seen < SAFE_LINE:
                block = fh.read(min(65536, SAFE_LINE - seen))
                if not block:
                    return False  # the last window ends the file
                if b"\n" in block:
                    break
                seen += len(block)
            else:
                return True
    return False


def longest_line(path: Path) -> tuple[int, int]:
    """(length in bytes, 1-based line number) of the longest line of `path`."""
    longest, at, line, start, offset = 0, 1, 1, 0, 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 24):
            pos = block.find(b"\n")
            while pos != -1:
                end = offset + pos
                if end - start > longest:
                    longest, at = end - start, line
                line, start = line + 1, end + 1
                pos = block.find(b"\n", pos + 1)
            offset += len(block)
    if offset - start > longest:
        longest, at = offset - start, line
    return longest, at


def buffer_size(paths: Iterable[Path]) -> int:
    """The `buffer_size` read_csv needs over `paths`: DEFAULT_BUFFER, or twice their longest line.

    A file whose longest line cannot fit in MAX_BUFFER raises LongLineError naming it and the line.
    """
    needed = 0
    for path in paths:
        try:
            if not _has_long_line(path):
                continue
            length, line = longest_line(path)
        except OSError as exc:
            raise DataError(f"{path}: cannot read ({exc.strerror})") from exc
        wanted = 2 * length + _SLACK
        if wanted > MAX_BUFFER:
            raise LongLineError(path, line, f"a line of {length / 2**20:.0f} MB, too long to read")
        needed = max(needed, wanted)
    return max(needed, DEFAULT_BUFFER)


@dataclass
class RecordScan:
    """What plain Python (the csv module) finds in a CSV, for `rlsql check` to hold DuckDB's reading to."""

    #: data records (blank lines, which DuckDB skips too, are not records)
    records: int = 0
    #: column -> (line, cell) of each nan/inf cell of a numeric column
    nonfinite: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    #: column -> (line, cell) of each number that is not a whole one up to 2**53 in a whole-number column
    not_whole: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    #: why the csv module stopped early (a NUL byte...), when it did: the counts are then partial
    failed: str | None = None


_BLANK = re.compile(rb"\n(?=\r?\n)")  # a newline that ends the line before a blank line


def count_plain_records(path: Path) -> int | None:
    """The data records of a CSV without any `"` (one record per non-blank line after the header),
    counted at memchr speed; None when the file holds a quote (a quoted cell may span lines)."""
    lines = blank = 0
    carry = b""  # the last two bytes of the block before: a blank line may straddle two blocks
    last = b""
    with path.open("rb") as fh:
        while block := fh.read(1 << 24):
            if b'"' in block:
                return None
            joined = carry + block
            for match in _BLANK.finditer(joined):
                end = match.start() + (2 if joined[match.start() + 1] == 0x0A else 3)
                if end > len(carry):  # a match within `carry` alone was counted with the block before
                    blank += 1
            lines += block.count(b"\n")
            carry, last = joined[-2:], block
    if last and not last.endswith(b"\n"):
        lines += 1  # a last line without its newline
    return max(lines - 1 - blank, 0)


def scan_records(path: Path, numeric: Sequence[str], whole: Sequence[str], cells: bool = True) -> RecordScan:
    """Count the data records of `path`; with `cells`, find the lines of its nan/inf and not-whole cells.

    Without `cells` a file without quotes is counted by lines (fast); otherwise Python's csv module
    reads it (about 5 s per million rows).
    """
    scan = RecordScan()
    try:
        plain = None if cells else count_plain_records(path)
    except OSError as exc:
        scan.failed = exc.strerror or str(exc)
        return scan
    if plain is not None:
        scan.records = plain
        return scan
    csv.field_size_limit(2**31 - 1)  # a cell may be as long as DuckDB lets a line be
    try:
        _scan(path, numeric, whole, scan)
    except csv.Error as exc:
        scan.failed = str(exc)
    except OSError as exc:
        scan.failed = exc.strerror or str(exc)
    return scan


def _scan(path: Path, numeric: Sequence[str], whole: Sequence[str], scan: RecordScan) -> None:
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh)
        names = [n.strip() for n in next(reader, [])]
        watch = [(i, n, n in whole) for i, n in enumerate(names) if n in numeric or n in whole]
        line = reader.line_num + 1
        for record in reader:
            if record:
                scan.records += 1
                for index, name, is_whole in watch:
                    if index >= len(record):
                        continue
                    cell = record[index].strip()
                    try:
                        value = float(cell) if cell else None
                    except ValueError:
                        value = None
                    if value is None:
                        continue
                    if not math.isfinite(value):
                        scan.nonfinite.setdefault(name, []).append((line, cell))
                    elif is_whole and not (value.is_integer() and abs(value) <= 2**53):
                        scan.not_whole.setdefault(name, []).append((line, cell))
            line = reader.line_num + 1
