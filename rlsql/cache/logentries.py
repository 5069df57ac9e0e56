"""The cache of what a raw training log yields (docs/semantics.md "Raw training logs: the cache").

Each log read through the cache has one entry in rlsql's Parquet cache (rlsql/cache/store.py: the same
root, naming, records, `cache status` and `cache clear` as the CSV entries), keyed by the log's
path. The entry covers the log up to its last newline (`cut`) and holds three parts
(sql/sources/_log_cache.sql.j2): the lines the metric pipeline keeps (with their byte offsets),
the log's long metric rows and the fields of its vLLM stat lines. A query reads the last two
instead of the log.

The entry is reused while the log is the same file (inode) and still begins with the bytes the
entry was built from: longer than when the entry was built (a log whose stat changed without growing
was edited in place, and is read again), and its first `cut` bytes hash as recorded (prefix_digest:
every byte of a log up to 8 MiB; beyond that its first and last 64 KiB and 62 blocks of 64 KiB
spread between, 4 MiB in all). An edit in place that keeps the length of the part already read and
touches none of those blocks, followed by growth, is the one change not noticed: docs/caching.md
says so. A log that only grew is then parsed from `cut` on: the new vLLM
stat lines add their rows, the new metric lines join the kept ones and the metric rows are
recomputed from them (a block or step cut at the old end is whole again): into the entry by `cache build`
or `--cache`, and by a plain query into a copy in rlsql's private folder for its process only (a read never
writes the cache folder). A log truncated, replaced or rewritten is parsed again from its start (by
`cache build` or `--cache`; a plain query reads it in place).
A log whose last line has no newline yet (a line being written: block-buffered output ends
mid-line most of the time) is read from its entry up to its last newline; when that last line
holds a substring the pipelines look for, the query recomputes the log's rows from the entry's
kept lines and that line.

Lines end at every LF and every CR, as DuckDB's line reader (the in-place reader's) ends them. A
log parsed from its start is read by that reader itself, in parallel (direct_read: several times
faster than a Python scan), when the lengths it gives add up to the log's size (nothing dropped)
and the log did not change meanwhile. A log written to in the last RECENT_WRITE_SECONDS (a run still
training), one that changed while DuckDB read it, and the bytes a grown log gained have their kept
lines found here, in Python (bytes.find of each substring, then the line around it), which can
start at an offset and stop at the size the log had when the build began. Both keep the same lines
with the same byte offsets: a line truncated at a NUL byte, skipped when it is not UTF-8, ANSI colour
codes removed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlsql.cache import reading
from rlsql.cache import store as cache
from rlsql.catalog.catalog import load_catalog
from rlsql.core import settings
from rlsql.core.errors import DataError, one_line
from rlsql.core.exactpaths import why_unnameable
from rlsql.duck.fileio import run_copy
from rlsql.duck.memorydb import DuckError, memory_connection, scalar
from rlsql.runs.logfiles import TERMINAL_CODES

#: the substrings that keep a line for each pipeline: those of sources/_rawlogs.sql.j2
METRIC_NEEDLES = ("': ", "}", "Step ", "WANDB_MIRROR", "Batch generation complete", "Exception breakdown")
VLLM_NEEDLES = ("Avg prompt throughput",)
#: a log whose entry covers at most this many bytes is checked byte for byte before its entry is extended
FULL_CHECK_BYTES = 8 * 2**20
#: beyond that: its first and last PROBE_BYTES and SAMPLES blocks between (prefix_digest)
PROBE_BYTES = 64 * 1024
SAMPLES = 62
LOG_KIND = "log"
#: a log whose mtime is at most this many seconds old when its entry is built from its start is taken
#: for one a run is still writing, and scanned in Python up to its size then (direct_read)
RECENT_WRITE_SECONDS = 10
#: a plain query reads a log in place (with the hint) rather than parse its new bytes when they are more than
#: 1/GROWN_SHARE of the log and at least RLSQL_CACHE_HINT_BYTES: the Python scan of the new bytes then costs
#: more than DuckDB's read of the whole log (bench/RESULTS.md "Raw logs": 11.5 MB new of 134 MB: 1.6 s
#: against 2.0 s in place; 38 MB of 133 MB: 2.2 s against 1.9 s)
GROWN_SHARE = 5
#: the layout of a log entry's parts (sql/sources/_log_cache.sql.j2); an entry of another layout is rebuilt
LOG_FORMAT = 4


def log_format() -> str:
    """What an entry's record names as its layout: LOG_FORMAT and the version of the templates that parse a
    log (store.sql_version: an entry another rlsql built, parsing lines another way, is rebuilt, never extended)."""
    return f"{LOG_FORMAT}-{cache.sql_version()}"


_ANSI = re.compile(TERMINAL_CODES)


@dataclass(frozen=True)
class KeptLine:
    offset: int
    text: str
    is_metric: bool
    is_vllm: bool


_METRIC_BYTES = tuple(n.encode() for n in METRIC_NEEDLES)
_VLLM_BYTES = tuple(n.encode() for n in VLLM_NEEDLES)
#: a log is read this many bytes at a time when its entry is built (memory stays bounded)
CHUNK_BYTES = 32 * 2**20


def kept_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line of `data` that holds a needle, in file order. A line ends at every
    `\\n` and at every `\\r` (DuckDB's line reader, which the in-place reader uses, does the same; a
    CRLF gives an empty line between, which holds no needle). Each needle is found with bytes.find
    (C speed), so the ~95 % of lines that hold none are never looked at one by one; the CR search
    is bounded by the line's LF, so a log without CR costs nothing more."""
    spans: dict[int, int] = {}
    find, rfind = data.find, data.rfind
    for raw in (*_METRIC_BYTES, *_VLLM_BYTES):
        i = find(raw)
        while i >= 0:
            end = find(b"\n", i)
            if end < 0:
                end = len(data)
            start = rfind(b"\n", 0, i) + 1
            cr = rfind(b"\r", start, i)
            if cr >= 0:
                start = cr + 1
            cr = find(b"\r", i, end)
            if cr >= 0:
                end = cr
            spans[start] = end
            i = find(raw, end)
    return sorted(spans.items())


def _flags(line: bytes) -> tuple[bytes, bool, bool]:
    """The line as the in-place reader sees it (cut at a NUL byte, its field separator) and which
    pipelines' substrings it holds."""
    if b"\0" in line:
        line = line.split(b"\0", 1)[0]
    return line, any(n in line for n in _METRIC_BYTES), any(n in line for n in _VLLM_BYTES)


def write_kept(data: bytes, base: int, out) -> int:
    """Append the kept lines of `data` (complete lines at offset `base` of the log) to `out` as
    `offset NUL is_metric NUL is_vllm NUL line`, the raw bytes DuckDB then decodes as it decodes a
    log read in place (a line that is not UTF-8 is skipped). Returns how many were written."""
    n = 0
    for start, end in kept_spans(data):
        line, is_metric, is_vllm = _flags(data[start:end])
        if is_metric or is_vllm:
            out.write(b"%d\0%d\0%d\0" % (base + start, is_metric, is_vllm) + line + b"\n")
            n += 1
    return n


def kept_lines(data: bytes, base: int = 0) -> list[KeptLine]:
    """The kept lines of `data` decoded, ANSI codes removed (for the line being written after an
    entry's end, which a query passes as a literal); `data` may end without a newline."""
    out = []
    for start, end in kept_spans(data):
        line, is_metric, is_vllm = _flags(data[start:end])
        if not (is_metric or is_vllm):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            continue  # the in-place reader skips a line that is not UTF-8
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        out.append(KeptLine(base + start, text, is_metric, is_vllm))
    return out


def prefix_digest(fh, cut: int) -> str:
    """A digest of the log's first `cut` bytes, to tell a grown log from one edited in place: of every byte
    when `cut` is at most FULL_CHECK_BYTES; else of its first and last PROBE_BYTES and of SAMPLES blocks of
    PROBE_BYTES spread evenly between (4 MiB read for a log of any size)."""
    digest = hashlib.sha256(str(cut).encode())
    if cut <= FULL_CHECK_BYTES:
        spans = [(0, cut)]
    else:
        step = (cut - PROBE_BYTES) / (SAMPLES + 1)
        spans = [
            (0, PROBE_BYTES),
            *((int(step * i), int(step * i) + PROBE_BYTES) for i in range(1, SAMPLES + 1)),
            (cut - PROBE_BYTES, cut),
        ]
    for start, end in spans:
        fh.seek(start)
        left = end - start
        while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def reusable_prefix(record: dict, path: Path, st: os.stat_result, fh) -> int:
    """How many bytes of the log the entry's record still covers: its cut, or 0 (parse from the start)."""
    if (
        not record
        or record.get("kind") != LOG_KIND
        or record.get("log_format") != log_format()
        or record.get("source") != str(path)
        or record.get("damaged")
    ):
        return 0
    cut = record.get("cut")
    if not isinstance(cut, int) or cut <= 0 or record.get("inode") != st.st_ino or st.st_size < cut:
        return 0
    if st.st_size == record.get("size"):
        return 0  # changed (the caller saw its stat differ) without growing: edited in place, read again
    if prefix_digest(fh, cut) != record.get("prefix_sha256"):
        return 0
    return cut


@dataclass(frozen=True)
class CachedLog:
    """A log's fresh entry, and the kept lines of the bytes after its cut (a last line without newline)."""

    parquet: str
    tail: tuple[KeptLine, ...] = ()


def _after_cut(path: Path, cut: int) -> tuple[KeptLine, ...]:
    """The kept lines of the bytes after `cut`: at most one line, still being written."""
    with path.open("rb") as fh:
        fh.seek(cut)
        return tuple(kept_lines(fh.read(), cut))


def _entry_of(path: Path, root: Path) -> tuple[cache.Entry, dict, os.stat_result] | None:
    """Log `path`'s entry under `root`, its record ({} when none) and the log's stat; None when the log
    cannot be stat'ed (gone or unreadable meanwhile: it is read, or reported, in place)."""
    entry = cache.entry_for(path, root)
    record = entry.read_meta()
    try:
        return entry, record, path.stat()
    except OSError:
        return None


def cached_log(path: Path, run_bytes: int = 0) -> CachedLog | None:
    """The entry a query reads for log `path`, or None: read the log in place.

    A fresh entry is read. A log that only grew since its entry is read from the entry plus its new bytes,
    parsed now (a step's worth of a live run: well under a second, against seconds to read a large log in
    place) into a copy in rlsql's private folder for this process's answers (`extended_for_this_process`):
    the cache folder is not written. A log that grew by more than a fifth and RLSQL_CACHE_HINT_BYTES is read
    in place instead, with the hint (GROWN_SHARE). Only `rlsql cache build` (or `--cache`, before the command
    reads: rlsql/cache/copies.py) extends the entry itself, or builds the entry of a log without a usable one;
    otherwise such a log is read in place, and a large one (alone or with its run's other logs, `run_bytes`:
    every query reads them all) earns the answer a hint (rlsql/cache/reading.py).
    """
    root = reading.cache_root()
    if root is None or why_unnameable(path):
        reading.notice(f"{path}: read in place (no cache entry)")
        _read_in_place(path, run_bytes)
        return None
    found = _entry_of(path, root)
    if found is None:
        return None
    entry, record, st = found
    if is_fresh(entry, record, st):
        reading.notice(f"{path}: read from the cache ({entry.parquet})")
        reading.handed_out(entry)
        return _with_tail(path, entry.parquet, record)
    growth = _growth(path, entry, record, st)
    if growth is None:
        reading.notice(f"{path}: read in place (no usable cache entry: `rlsql cache build` makes one)")
        _read_in_place(path, run_bytes)
        return None
    if growth > max(st.st_size // GROWN_SHARE, settings.current().cache_hint_bytes):
        # parsing that much in Python for every answer costs more than DuckDB's read of the whole log
        reading.notice(f"{path}: read in place (grown by {growth:,} bytes since its entry: `rlsql cache build`)")
        _read_in_place(path, run_bytes)
        return None
    extended = extended_for_this_process(path, entry, record)
    if extended is None:
        _read_in_place(path, run_bytes)
        return None
    reading.handed_out(entry)
    return _with_tail(path, *extended)


#: log path -> (the log's stat and the entry's checksum it was made from, the copy, its record): the grown
#: logs this process extended in its private folder (a long-lived process parses a log's new bytes once per
#: growth, not once per answer)
_extended: dict[str, tuple[tuple, Path, dict]] = {}


def extended_for_this_process(path: Path, entry: cache.Entry, record: dict) -> tuple[Path, dict] | None:
    """The entry of a log that only grew, extended with its new bytes into rlsql's private folder
    (writes.private_temp: removed when the process exits; a killed process's copy is swept by the next),
    and its record; None when the log cannot be read so (it was replaced meanwhile, the entry does not
    read): then it is read in place. The cache folder is neither written nor locked."""
    from rlsql.runs import writes

    try:
        st = path.stat()
    except OSError:
        return None
    made_from = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, record.get("parquet_crc32"))
    known = _extended.get(str(path))
    if known is not None and known[0] == made_from and known[1].exists():
        reading.notice(f"{path}: read from the cache ({entry.parquet}) and its new bytes, parsed before")
        return known[1], known[2]
    target = writes.private_temp("log-entry.parquet")
    lines = writes.private_temp("log-entry.lines")
    try:
        new = parse_log(path, entry, record, target, lines)
    except (DataError, OSError) as exc:
        target.unlink(missing_ok=True)
        reading.notice(f"{path}: read in place ({exc})")
        return None
    finally:
        lines.unlink(missing_ok=True)
    if new is None:
        target.unlink(missing_ok=True)
        reading.notice(f"{path}: read in place (it was replaced while it was read)")
        return None
    if known is not None:
        known[1].unlink(missing_ok=True)
    atexit.register(target.unlink, missing_ok=True)
    _extended[str(path)] = (made_from, target, new)
    reading.notice(
        f"{path}: read from the cache ({entry.parquet}) and its new bytes {new['parsed_from']:,}-{new['cut']:,}, "
        f"parsed for this answer ({new['seconds']:.2f} s; `rlsql cache build` extends the entry)"
    )
    return target, new


def _read_in_place(path: Path, run_bytes: int) -> None:
    with contextlib.suppress(OSError):  # gone meanwhile: the read says so
        reading.read_in_place(path, max(path.stat().st_size, run_bytes))


def is_fresh(entry: cache.Entry, record: dict, st: os.stat_result) -> bool:
    """The entry covers the log as it is now (its stat as recorded, the Parquet file whole)."""
    return bool(
        record
        and record.get("kind") == LOG_KIND
        and record.get("log_format") == log_format()
        and not record.get("damaged")
        and cache.Stat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino).matches(record)
        and cache.parquet_looks_whole(entry, record) is None
    )


def entry_state(entry: cache.Entry, con) -> tuple[str, str]:
    """cache.full_state in a log's words, for `cache status` and `cache clear --stale`: a log whose stat
    changed is grown (it only grew: queries parse the bytes after its cut, `cache build` extends it) or stale
    (replaced, truncated or rewritten: parsed again from its start); a CSV entry's state is full_state's."""
    state, why = cache.full_state(entry, con)
    record = entry.read_meta()
    if record.get("kind") == LOG_KIND and state == "fresh" and record.get("log_format") != log_format():
        return "stale", "its entry was built by an rlsql that parses logs another way: parsed again on the next read"
    if record.get("kind") != LOG_KIND or state not in ("stale", "orphaned"):
        return state, why
    path = Path(record["source"])
    try:
        st = path.stat()
    except OSError:
        return "orphaned", "the log is gone"
    grown = _growth(path, entry, record, st)
    if grown is not None:
        return "grown", f"grown: {grown:,} new bytes, parsed by each query until `rlsql cache build` extends the entry"
    return "stale", "the log was replaced, truncated or rewritten since its cache entry: parsed again on the next read"


def _growth(path: Path, entry: cache.Entry, record: dict, st: os.stat_result) -> int | None:
    """How many bytes a log gained since its entry's cut, when the entry can be extended (the log only
    grew); None when it must be parsed from its start (no entry, another layout, replaced, rewritten)."""
    if not record or cache.parquet_looks_whole(entry, record) is not None:
        return None
    try:
        with path.open("rb") as fh:
            cut = reusable_prefix(record, path, st, fh)
    except OSError:
        return None
    return st.st_size - cut if cut else None


def _with_tail(path: Path, parquet: Path, record: dict) -> CachedLog | None:
    """The entry, with the kept line being written after its cut when there is one: the query then
    recomputes this log's rows from the entry's kept lines and that line (a cut batch line may
    already count, as it does in place)."""
    if record["cut"] == record["size"]:
        return CachedLog(str(parquet))
    try:
        tail = _after_cut(path, record["cut"])
    except OSError:
        return None
    if tail:
        reading.notice(f"{path}: its last line has no newline yet: its rows are recomputed from the entry's lines")
    return CachedLog(str(parquet), tail)


def last_line_end(fh, size: int) -> int:
    """The offset just after the last `\\n` in the first `size` bytes of `fh` (0: none)."""
    pos = size
    while pos > 0:
        step = min(pos, 1 << 16)
        fh.seek(pos - step)
        i = fh.read(step).rfind(b"\n")
        if i >= 0:
            return pos - step + i + 1
        pos -= step
    return 0


def expected_line_bytes(size: int, after_cut: bytes) -> int:
    """What DuckDB's line reader counts over a log of `size` bytes whose bytes after its last LF are
    `after_cut`, when it reads every byte: each line's length plus one for its terminator, plus one
    for a last line without any (a line being written)."""
    return size + (1 if after_cut and not after_cut.endswith(b"\r") else 0)


def direct_read(con, path: Path, fh, before: os.stat_result) -> int | None:
    """Read the kept lines of the whole log with DuckDB's parallel line reader (the in-place reader's
    own) into the temporary table `direct` on `con`; the entry's cut (the log's last LF), or None when
    the result cannot be proved to be the log's lines byte for byte: then nothing is kept and the
    caller scans the log in Python (several times slower on a large log).

    Each line's byte offset is the running sum of the lengths DuckDB gives plus one per terminator;
    that sum equals the log's size only when DuckDB dropped nothing (a CRLF counted as one
    terminator, a line cut at a NUL byte or skipped as not UTF-8 or too long all make it smaller),
    and the log must not change while it is read: a log a run is writing (written to in the last
    RECENT_WRITE_SECONDS) is scanned in Python at once, up to the size it had when the build began."""
    size = before.st_size
    if size == 0 or time.time() - before.st_mtime <= RECENT_WRITE_SECONDS:
        return None
    cut = last_line_end(fh, size)
    fh.seek(cut)
    after_cut = fh.read(size - cut)
    sql = load_catalog().env.get_template("sources/_log_direct.sql.j2").render(path=str(path), cut=cut)
    con.execute(sql)
    after = os.stat(path)
    same = (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    if same and _direct_is_exact(con, fh, size, cut, after_cut):
        return cut
    con.execute("DROP TABLE direct")
    why = "it changed while it was read" if not same else "DuckDB's line lengths do not add up to its size"
    reading.notice(f"{path}: scanned in Python ({why})")
    return None


def _direct_is_exact(con, fh, size: int, cut: int, after_cut: bytes) -> bool:
    """The table `direct` holds exactly the lines of the first `size` bytes of the log: the lengths add
    up to the size, a line ends at the cut, and the spot check of _spans_end_lines passes."""
    total, at_cut = con.execute("SELECT max(cum), bool_or(cum = ?) FROM direct", [cut]).fetchone() or (None, None)
    exact = total == expected_line_bytes(size, after_cut) and (cut == 0 or bool(at_cut))
    return exact and _spans_end_lines(con, fh, cut)


def _spans_end_lines(con, fh, cut: int) -> bool:
    """The first, middle and last kept lines' offsets each lie just after a line end and their ends
    on one: a spot check that the running sum ran over the lines in file order."""
    rows = con.execute(
        "SELECT line_no, cum FROM direct WHERE cum <= ? AND (is_metric OR is_vllm) AND line_no IN ("
        "SELECT min(line_no) FROM direct WHERE cum <= ? AND (is_metric OR is_vllm) UNION ALL "
        "SELECT max(line_no) FROM direct WHERE cum <= ? AND (is_metric OR is_vllm) UNION ALL "
        "SELECT quantile_disc(line_no, 0.5) FROM direct WHERE cum <= ? AND (is_metric OR is_vllm))",
        [cut] * 4,
    ).fetchall()
    for start, end in rows:
        fh.seek(max(0, start - 1))
        before = fh.read(1) if start > 0 else b"\n"
        fh.seek(end - 1)
        if before not in (b"\n", b"\r") or fh.read(1) not in (b"\n", b"\r"):
            return False
    return True


def scan_kept(path: Path, fh, start: int, out, end: int) -> tuple[int, int]:
    """Write the kept lines of the log from byte `start` to its last LF before byte `end` (its size when
    the build began: what a run writes meanwhile is left to the next update) to `out` (write_kept),
    32 MiB at a time; (cut, lines written)."""
    fh.seek(start)
    cut, carry, kept = start, b"", 0
    while (left := end - fh.tell()) > 0 and (chunk := fh.read(min(CHUNK_BYTES, left))):
        buf = carry + chunk
        last_newline = buf.rfind(b"\n")
        if last_newline < 0:
            carry = buf
            continue
        complete, carry = buf[: last_newline + 1], buf[last_newline + 1 :]
        kept += write_kept(complete, cut, out)
        cut += len(complete)
    return cut, kept


def update_entry(path: Path, entry: cache.Entry, record: dict, root: Path) -> dict | None:
    """Parse the log from the entry's cut (or from its start) to its last newline and write the entry
    (`rlsql cache build` and `--cache` only: a plain query never writes the cache folder).

    Returns the new record, or None when the log was replaced while it was read (nothing written).
    CacheUnavailable when the cache folder cannot take it; DataError when DuckDB cannot build it.
    """
    cache.ensure_root(root)
    tmp = cache.temp_path(entry.parquet)
    try:
        entry.parquet.parent.mkdir(parents=True, exist_ok=True)
        lines = cache.temp_path(entry.parquet.with_suffix(".lines"))
        try:
            new = parse_log(path, entry, record, tmp, lines)
        finally:
            lines.unlink(missing_ok=True)
        if new is None:
            return None
        entry.meta.unlink(missing_ok=True)  # the record goes first: no reader pairs it with the new file
        os.replace(tmp, entry.parquet)
        cache.write_json(entry.meta, new)
    except OSError as exc:
        raise cache.CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    finally:
        tmp.unlink(missing_ok=True)
    start, cut = new["parsed_from"], new["cut"]
    what = f"parsed bytes {start:,}-{cut:,} (the tail after the cached prefix)" if start else f"parsed {cut:,} bytes"
    reading.notice(
        f"{path}: cache entry updated: {what}, {new['kept_lines']:,} kept lines found by {new['lines_found_by']}, "
        f"{new['seconds']:.2f} s"
    )
    return new


def parse_log(path: Path, entry: cache.Entry, record: dict, target: Path, lines: Path) -> dict | None:
    """Parse the log from the entry's cut (or from its start) to its last newline into the Parquet file
    `target` (a Python scan stages its kept lines in `lines`); returns the record of that file (written by
    the caller, if at all), or None when the log was replaced while it was read.

    A log parsed from its start is read by DuckDB (direct_read) when that can be proved exact, else
    by the Python scan; the bytes a grown log gained are always scanned in Python (they are few, and
    only Python can start at an offset). DataError when DuckDB cannot build it; OSError as it comes.
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    con = memory_connection()
    try:
        with path.open("rb") as fh:
            before = os.fstat(fh.fileno())
            usable = record and cache.parquet_looks_whole(entry, record) is None
            start = reusable_prefix(record, path, before, fh) if usable else 0
            direct = direct_read(con, path, fh, before) if start == 0 else None
            if direct is not None:
                cut, how = direct, "DuckDB"
                kept = scalar(con, "SELECT count(*) FROM direct WHERE cum <= ?", [cut])
            else:
                with lines.open("wb") as out:
                    cut, kept = scan_kept(path, fh, start, out, before.st_size)
                how = "Python"
            prefix = prefix_digest(fh, cut)
        after = path.stat()
        if after.st_ino != before.st_ino or after.st_size < cut:
            return None
        sql = (
            load_catalog()
            .env.get_template("sources/_log_cache.sql.j2")
            .render(
                previous=str(entry.parquet) if start else None,
                tail=str(lines) if kept and direct is None else None,
                direct_cut=cut if direct is not None else None,
                target=str(target),
                key=entry.key,
            )
        )
        rows = run_copy(con, sql)
    except DuckError as exc:
        raise DataError(f"{path}: cannot build its cache entry: {one_line(exc)}") from exc
    finally:
        con.close()
    # the log's stat before it was read: a log that grew meanwhile (a run writing it) then differs
    # from the record on the next read, which parses the bytes after `cut`; recording the stat
    # after the read would call such a log fresh and leave those bytes to the line-being-written path
    return {
        "format": cache.ENTRY_FORMAT,
        "version": cache.ENTRY_VERSION,
        "key": entry.key,
        "kind": LOG_KIND,
        "log_format": log_format(),
        "source": str(path),
        "size": before.st_size,
        "mtime_ns": before.st_mtime_ns,
        "ctime_ns": before.st_ctime_ns,
        "inode": before.st_ino,
        "cut": cut,
        "prefix_sha256": prefix,
        "rows": rows,
        "parquet_bytes": target.stat().st_size,
        "parquet_crc32": cache.parquet_checksum(target),
        "parsed_from": start,
        "parsed_bytes": cut - start,
        "kept_lines": kept,
        "lines_found_by": how,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu_started, 3),
    }


def build_log_entries(
    runs,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    sources: frozenset[str] | None = None,
) -> list[tuple]:
    """`rlsql cache build`'s log part: bring the entry of every log a query of `runs` reads (the runs
    whose trainer metrics or vLLM stats come from their logs; with `sources`, only for metrics_src or
    vllm_src among them) up to date now, whatever its size.

    Rows as csvcopies.build_cache gives them: (run, "log", log path, state, rows, parquet bytes);
    state is built (parsed from its start), grown (its new bytes parsed), fresh, changing (replaced
    while it was read: nothing recorded) or not cached (a path DuckDB cannot name). `force` parses
    every log from its start. CacheUnavailable when the cache folder cannot be used.
    """
    from rlsql.runs.logfiles import find_logs

    root = settings.current().cache_dir
    if root is None:
        raise cache.CacheUnavailable("no cache folder: HOME is not set; set RLSQL_CACHE_DIR")
    cache.ensure_root(root)
    kinds = [kind for kind in ("metrics", "vllm") if sources is None or f"{kind}_src" in sources]
    done = []
    con = memory_connection()
    try:
        for run in runs:
            if run.artifact("logs") is None or all(run.artifact(kind) is not None for kind in kinds):
                continue  # no logs, or the CSVs win over them
            for path in find_logs(run.path):
                if progress is not None:
                    progress(f"{run.name}: log {path.name}")
                done.append((run.name, LOG_KIND, str(path), *_build_one(path, root, force, con)))
    finally:
        con.close()
    return done


def _build_one(path: Path, root: Path, force: bool, con) -> tuple[str, int | None, int | None]:
    if why_unnameable(path):
        return "not cached (DuckDB cannot name its path)", None, None
    entry = cache.entry_for(path, root)
    record = entry.read_meta()
    if (
        not force
        and record.get("kind") == LOG_KIND
        and record.get("log_format") == log_format()
        and cache.full_state(entry, con)[0] == "fresh"
    ):
        return "fresh", record.get("rows"), record.get("parquet_bytes")
    try:
        with cache.build_lock(root):
            new = update_entry(path, entry, {} if force else record, root)
    except DataError as exc:
        cache.mark_damaged(entry, str(exc))
        return f"not cached ({exc})", None, None
    if new is None:
        return "changing", None, None
    return ("grown" if new["parsed_from"] else "built"), new["rows"], new["parquet_bytes"]
