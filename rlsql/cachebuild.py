"""Build and hand out the Parquet copies of the cache (rlsql/cache.py keeps the files; this module fills them).

A source read asks `cached_copy` for a CSV's copy: a fresh entry is used, a missing or stale one is
built first when the policy says so (cache.mode: large CSVs by default), and anything that stops
the cache (a foreign or unwritable folder) costs one warning and a read of the CSV in place.
A query that fails while it read cached copies is answered again from the CSVs
(`with_cache_fallback`), and the entries that failed are marked damaged.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb

from rlsql import cache, csvread, detached
from rlsql.artifacts import INTEGER_COLUMNS
from rlsql.catalog import SqlFile, load_catalog
from rlsql.duckconn import memory_connection
from rlsql.duckdb_errors import REJECT_EXAMPLES, has_reject_tables, rejected_lines
from rlsql.duckpaths import why_unnameable
from rlsql.errors import DataError, RlsqlError, RlsqlWarning, UnparsableCsv, one_line
from rlsql.runs import CSV_ARTIFACTS, Run, read_header
from rlsql.writes import WriteError

T = TypeVar("T")

#: set by `-v`: one stderr line per CSV source read, saying whether it came from the cache
VERBOSE = False

_warned: set[str] = set()
#: the entries handed out to the statement being answered (with_cache_fallback's retry list)
_handed_out: list[cache.Entry] = []


#: CSVs read in place that the default policy caches after the answer: path -> the source reading it
_deferred: dict[str, str] = {}
#: the builders this process started and has not reaped (tests wait on them; the CLI exits without
#: waiting, and the builder carries on)
builders: list[int] = []


def defer(path: Path, name: str) -> None:
    """Have the file at `path` (a CSV read by source `name`, or a raw log: name "log") cached after this
    command's answer, by the builder start_deferred starts."""
    _deferred[str(path)] = name


#: the raw logs this command has read in place so far (rlsql/logcache.py: a second read of one, by the
#: next query of a report, builds its entry first instead)
_read_in_place: set[str] = set()


def first_read_in_place(path: Path) -> bool:
    """True the first time this command reads `path` in place (remembered); False after that, and the file
    is then no longer deferred: the caller builds its entry now."""
    if str(path) in _read_in_place:
        _deferred.pop(str(path), None)
        return False
    _read_in_place.add(str(path))
    return True


def start_deferred() -> int | None:
    """Start one detached builder (rlsql/cachebg.py) for the files deferred so far and return its pid;
    None: nothing to build, or it could not start (the next read defers them again)."""
    reap_builders(wait=False)
    root = cache.cache_root()
    pairs = [f"{name}={path}" for path, name in _deferred.items()]
    paths = [Path(path) for path in _deferred]
    _deferred.clear()
    if not pairs or root is None:
        return None
    pid = detached.start("rlsql.cachebg", [str(root), *pairs])
    if pid is None:
        return None
    builders.append(pid)
    for path in paths:  # claimed in its name now: a read before its own claim (~0.3 s) starts no second one
        cache.claim_for(cache.entry_for(path, root), pid)
    notice(f"building the cached copies of {len(pairs)} file(s) in process {pid}")
    return pid


def reap_builders(wait: bool) -> None:
    """Collect the builders that ended (all of them, waiting, with `wait`), so none is left a zombie."""
    for pid in list(builders):
        try:
            done, _ = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            builders.remove(pid)


def notice(message: str) -> None:
    if VERBOSE:
        print(f"rlsql: cache: {message}", file=sys.stderr)


def _warn_once(message: str) -> None:
    """A cache problem is said once per process, not once per file or per query of a report."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RlsqlWarning, stacklevel=4)


def cached_copy(source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> str | None:
    """The fresh Parquet copy of a CSV, built now when the policy asks for it; None: read the CSV."""
    if cache.mode() == "off":
        notice(f"{path}: read in place (the cache is off)")
        return None
    root = cache.cache_root()
    if root is None or why_unnameable(path):
        why = "no home folder for the cache" if root is None else "DuckDB cannot name its path exactly"
        notice(f"{path}: read in place ({why})")
        return None
    entry = cache.entry_for(path, root)
    state, why = cache.quick_state(entry, path)
    if state != "fresh":
        try:
            size = path.stat().st_size
        except OSError:
            return None
        if not cache.should_build(size):
            if state == "missing":
                why = (f"not cached: CSVs under {cache.min_bytes() / 2**20:g} MiB are cached by "
                       "`rlsql cache build` or --cache")
            notice(f"{path}: read in place ({why})")
            return None
        builder = cache.builder_of(entry)
        if builder is not None:
            notice(f"{path}: read in place (process {builder} is building its cached copy)")
            return None
        if state == "unbuilt" and cache.mode() == "auto" and not cache.retry_due(entry.read_meta(), path):
            notice(f"{path}: read in place ({why}; no builder is started for it until "
                   + ("it changes)" if entry.read_meta().get("unbuilt") == cache.UNCONVERTIBLE
                      else "nobody has written it for a while)"))
            return None
        # after the answer where a detached process can be started (POSIX); elsewhere before the read, as --cache
        if cache.mode() == "auto" and detached.CAN_SPAWN:
            # answered in place now, at the speed of a bare read; the copy is built after the answer
            try:
                cache.ensure_root(root)
            except cache.CacheUnavailable as exc:
                _warn_once(f"{exc}; reading the CSVs in place")
                return None
            defer(path, source.name)
            notice(f"{path}: read in place ({why}); its cached copy is built in the background after this "
                   "answer, for the next read")
            return None
        try:
            built = build_cache_entry(source, path, header, types, root)
        except cache.CacheUnavailable as exc:
            _warn_once(f"{exc}; reading the CSVs in place")
            return None
        except DataError as exc:
            notice(f"{path}: read in place (not cached: {exc})")
            return None
        if built is None:
            notice(f"{path}: read in place (it changed while it was being cached: a run in progress?)")
            return None
        notice(f"{path}: cached now ({built.rows:,} rows in {built.seconds:.2f} s), read from the cache")
    else:
        notice(f"{path}: read from the cache ({entry.parquet})")
    record = entry.read_meta()
    if record.get("rejected_rows"):
        warnings.warn(rejects_warning(path, record.get("rejects", []), record["rejected_rows"]), RlsqlWarning,
                      stacklevel=3)
    _handed_out.append(entry)
    return str(entry.parquet)


@dataclass(frozen=True)
class Built:
    entry: cache.Entry
    rows: int
    seconds: float


def _last_scan(con: duckdb.DuckDBPyConnection) -> int:
    """The newest reject scan id on `con` (-1: none): the reject tables accumulate over a shared connection."""
    if not has_reject_tables(con):
        return -1
    return con.execute("SELECT coalesce(max(scan_id), -1) FROM reject_scans").fetchone()[0]


#: rejected lines kept in an entry's record (the count is always whole)
MAX_RECORDED_REJECTS = 100


def rejects_warning(path: Path | str, rejects: list, total: int) -> str:
    """The warning a cached read gives for the rows its build skipped: word for word the one an in-place
    read gives (duckdb_errors.warn_rejected_rows), so a user cannot tell which read it was."""
    examples = "; ".join(f"line {line}: {why}" for line, why in rejects[:REJECT_EXAMPLES])
    more = f"; and {total - REJECT_EXAMPLES} more" if total > REJECT_EXAMPLES else ""
    return f"{path}: skipped {total} unreadable row{'s' if total > 1 else ''} ({examples}{more})"


def build_cache_entry(
    source: SqlFile, path: Path, header: list[str], types: dict[str, str], root: Path | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Built | None:
    """Convert one CSV into its cache entry (sources/_cache_csv.sql.j2).

    On `con` when given (`cache build` shares one over every file: a connection costs ten times
    the conversion of a small CSV, and its root is checked once), else on a connection of its own.
    None when the CSV changed while it was read (nothing is recorded then). CacheUnavailable when
    the cache folder cannot take it; DataError when DuckDB cannot convert the CSV.
    """
    root = root or cache.cache_root()
    if root is None:
        raise cache.CacheUnavailable("no cache folder: HOME is not set; set RLSQL_CACHE_DIR")
    own = con is None
    if own:
        cache.ensure_root(root)
        con = memory_connection()
    entry = cache.entry_for(path, root)
    started = time.perf_counter()
    started_ns = time.time_ns()
    before = cache.Stat.of(path)
    template = load_catalog().env.get_template("sources/_cache_csv.sql.j2")
    tmp = cache.temp_path(entry.parquet)
    try:
        entry.parquet.parent.mkdir(exist_ok=True)
        tmp.touch()  # the claim (rlsql/cachebg.py): a reader that sees it neither builds nor starts a builder
        digest = cache.sha256_of(path)
        buffer = csvread.buffer_size([path])
        scans_before = _last_scan(con)
        sql = template.render(path=str(path), header=header, types=types, target=str(tmp), key=entry.key,
                              buffer=buffer, integers=INTEGER_COLUMNS.get(source.artifact or "", ()))
        rows = con.execute(sql).fetchall()[0][0]  # COPY ... TO answers with the rows it wrote
        rejects = [[line, why] for _, line, why in rejected_lines(con, scans_before)]
        if cache.Stat.of(path) != before or cache.cleared_since(root, started_ns):
            return None  # changed while read, or `cache clear` ran meanwhile: nothing is put in place
        parquet_bytes = tmp.stat().st_size
        # the record goes first, so no reader pairs the old record with the new Parquet file
        entry.meta.unlink(missing_ok=True)
        os.replace(tmp, entry.parquet)
        cache.write_json(entry.meta, {
            "format": cache.ENTRY_FORMAT,
            "version": cache.ENTRY_VERSION,
            "key": entry.key,
            "source": str(path),
            "size": before.size,
            "mtime_ns": before.mtime_ns,
            "ctime_ns": before.ctime_ns,
            "inode": before.inode,
            "sha256": digest,
            "rows": rows,
            "rejected_rows": len(rejects),
            "rejects": rejects[:MAX_RECORDED_REJECTS],
            "parquet_bytes": parquet_bytes,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(time.perf_counter() - started, 3),
        })
    except duckdb.Error as exc:
        raise DataError(f"{path}: cannot build its cached copy: {one_line(exc)}") from exc
    except OSError as exc:
        raise cache.CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    finally:
        if own:
            con.close()
        tmp.unlink(missing_ok=True)
    return Built(entry, rows, time.perf_counter() - started)


def skipping_unparsable(work: Callable[[], T]) -> T:
    """`work()`; when a CSV fails it as a whole (duckdb_errors.UnparsableCsv: a stray CR), `work()` again
    without that file, which the sources then skip with a warning naming its file and line.

    The warnings of an attempt that failed so are dropped: the next attempt says them again.
    """
    while True:
        failure: RlsqlError | None = None
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                result = work()
            except RlsqlError as exc:
                failure = exc
        # said again only outside the block: inside it, they would land in the list being read
        version = csvread.file_version(failure.path) if isinstance(failure, UnparsableCsv) else None
        if version is None or version in csvread.unparsable:
            _say_again(said)
            if failure is not None:
                raise failure
            return result
        csvread.unparsable[version] = str(failure)


def _say_again(said: list[warnings.WarningMessage]) -> None:
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def with_cache_fallback(work: Callable[[], T]) -> T:
    """`skipping_unparsable(work)`; when it fails with a DuckDB error after reading cached copies, again from
    the CSVs, and the entries that failed (all those read, when none fails a footer check) are marked damaged.

    A failure that the CSVs repeat is the CSVs' own, and that error is raised.
    """
    _handed_out.clear()
    _deferred.clear()  # what an earlier command that failed deferred is not built on this one's behalf
    _read_in_place.clear()
    try:
        result = skipping_unparsable(work)
    except (duckdb.Error, RlsqlError) as exc:
        cause = exc if isinstance(exc, duckdb.Error) else exc.__cause__
        used = list(_handed_out)
        # an output that could not be written (a full disk) says nothing about the cached copies
        if not used or not isinstance(cause, duckdb.Error) or isinstance(exc, WriteError):
            raise
        with cache.disabled():
            result = skipping_unparsable(work)
        con = memory_connection()
        bad = [e for e in used if cache.footer_problem(e, e.read_meta(), con)] or used
        reason = one_line(cause)
        for e in bad:
            cache.mark_damaged(e, reason)
            _warn_once(f"{e.read_meta().get('source', e.parquet)}: its cached copy {e.parquet} could not be read "
                       f"({reason}); answered from the CSV, and the entry is marked damaged "
                       "(`rlsql cache build` rebuilds it)")
        return result
    start_deferred()  # the CSVs this answer read in place get their copies now, in a process of their own
    return result


@dataclass(frozen=True)
class BuildReport:
    rows: list[tuple]
    swept: int
    root: Path


def build_cache(runs: Sequence[Run], force: bool = False) -> BuildReport:
    """`rlsql cache build`: a fresh Parquet copy of every CSV artifact of `runs`, building only what is
    missing, stale or damaged (all with `force`).

    Rows: (run, artifact, csv path, state, rows, parquet bytes); state is built, fresh, changing
    (the CSV changed while it was read: nothing recorded) or not cached (a path DuckDB cannot name).
    CacheUnavailable when the folder cannot be used.
    """
    root = cache.cache_root()
    if root is None:
        raise cache.CacheUnavailable("no cache folder: HOME is not set; set RLSQL_CACHE_DIR")
    cache.ensure_root(root)
    swept = cache.sweep_leftovers(root)
    catalog = load_catalog()
    con = memory_connection()
    done = []
    for run in runs:
        for kind in CSV_ARTIFACTS:
            artifact = run.artifact(kind)
            if artifact is None:
                continue
            header = read_header(artifact.path)
            if not header:
                continue
            source = catalog.files[f"{kind}_src"]
            if why_unnameable(artifact.path):
                # a path DuckDB cannot be given exactly (rlsql/sqltext.py): the in-place reader skips it too
                done.append((run.name, kind, str(artifact.path), "not cached (DuckDB cannot name its path)",
                             None, None))
                continue
            entry = cache.entry_for(artifact.path, root)
            state = "stale" if force else cache.full_state(entry, con)[0]
            if state != "fresh":
                built = build_cache_entry(source, artifact.path, header, source.column_types(header), root, con)
                state = "built" if built is not None else "changing"
            meta = entry.read_meta() if state != "changing" else {}
            done.append((run.name, kind, str(artifact.path), state, meta.get("rows"), meta.get("parquet_bytes")))
    return BuildReport(done, swept, root)
