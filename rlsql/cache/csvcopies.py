"""The Parquet copies of runs' CSVs: built on request, handed to the sources while fresh.

A source read asks `cached_copy` for a CSV's copy (through rlsql/cache/copies.py): a fresh entry is used;
without one the CSV is read in place. Nothing is built behind the user's back: `rlsql cache build` (and
`--cache`, before the command reads) builds the copies of a set of runs, and a large file read in place earns
the answer a hint saying so (rlsql/cache/reading.py).
rlsql/cache/store.py keeps the files.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlsql.cache import reading, store
from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core import settings
from rlsql.core.errors import DataError, RlsqlWarning, one_line
from rlsql.core.exactpaths import why_unnameable
from rlsql.duck.fileio import run_copy
from rlsql.duck.memorydb import Connection, DuckError, InvalidInput, memory_connection
from rlsql.duck.rejects import REJECT_EXAMPLES, last_scan, lost_after, rejected_lines
from rlsql.runs import csvfiles, writes
from rlsql.runs.artifacts import INTEGER_COLUMNS
from rlsql.runs.folders import CSV_ARTIFACTS, Run, csv_header, read_header


def reading_version(source: SqlFile, header: list[str], types: dict[str, str]) -> str:
    """How this rlsql reads a CSV into its copy (store.sql_version): the templates that read and convert it,
    and the types and whole-number columns the source gives this header."""
    return store.sql_version(header, types, sorted(INTEGER_COLUMNS.get(source.artifact or "", ())))


@functools.cache
def _csv_source(artifact: str) -> SqlFile:
    return load_catalog().files[f"{artifact}_src"]


def read_as_recorded(record: dict) -> bool:
    """Does this rlsql read the CSV of a copy's `record` as the build that made the copy did (`cache status`)?"""
    artifact = record.get("artifact")
    if artifact not in CSV_ARTIFACTS:
        return False  # a copy an older rlsql built, which recorded neither
    source = _csv_source(artifact)
    try:
        header = read_header(Path(record.get("source", "")))
    except DataError:  # unreadable now: a query says so when it reads the CSV; status keeps the entry's state
        return True
    return record.get("reading") == reading_version(source, header, source.column_types(header))


@dataclass(frozen=True)
class CsvCopy:
    """A CSV's fresh copy as a lookup hands it out: its Parquet file, and the rows its build read and skipped."""

    parquet: str
    rows: int
    skipped: int


def cached_copy(source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> CsvCopy | None:
    """The fresh Parquet copy of a CSV; None: read the CSV in place. Nothing is built or written here: `rlsql
    cache build` and `--cache` build copies before a command reads (rlsql/cache/copies.py)."""
    root = reading.cache_root()
    if root is None or why_unnameable(path):
        why = "no cache built yet: rlsql cache build" if root is None else "DuckDB cannot name its path exactly"
        reading.notice(f"{path}: read in place ({why})")
        _read_in_place(path)
        return None
    entry = store.entry_for(path, root)
    state, why = store.quick_state(entry, path, reading_version(source, header, types))
    if state != "fresh":
        if state == "damaged":
            reading.damaged_copy(path, entry.parquet, why)
        reading.notice(f"{path}: read in place ({why})")
        _read_in_place(path)
        return None
    reading.notice(f"{path}: read from the cache ({entry.parquet})")
    record = entry.read_meta()
    if record.get("rejected_rows"):
        warnings.warn(
            rejects_warning(path, record.get("rejects", []), record["rejected_rows"]), RlsqlWarning, stacklevel=3
        )
    reading.handed_out(entry)
    return CsvCopy(str(entry.parquet), int(record.get("rows") or 0), int(record.get("rejected_rows") or 0))


def _read_in_place(path: Path) -> None:
    with contextlib.suppress(OSError):  # gone meanwhile: the read says so
        reading.read_in_place(path, path.stat().st_size)


@dataclass(frozen=True)
class Built:
    entry: store.Entry
    rows: int
    seconds: float


#: rejected lines kept in an entry's record (the count is always whole)
MAX_RECORDED_REJECTS = 100


def rejects_warning(path: Path | str, rejects: list, total: int) -> str:
    """The warning a cached read gives for the rows its build skipped: word for word the one an in-place
    read gives (rlsql/engine/answer.py warn_rejected_rows), so a user cannot tell which read it was."""
    examples = "; ".join(f"line {line}: {why}" for line, why in rejects[:REJECT_EXAMPLES])
    more = f"; and {total - REJECT_EXAMPLES} more" if total > REJECT_EXAMPLES else ""
    return f"{path}: skipped {total} unreadable row{'s' if total > 1 else ''} ({examples}{more})"


def build_cache_entry(
    source: SqlFile,
    path: Path,
    header: list[str],
    types: dict[str, str],
    root: Path,
    con: Connection | None = None,
) -> Built | None:
    """Convert one CSV into its cache entry (sources/_cache_csv.sql.j2).

    On `con` when given (`cache build` shares one over every file: a connection costs ten times
    the conversion of a small CSV, and its root is checked once), else on a connection of its own.
    None when the CSV changed while it was read (nothing is recorded then). CacheUnavailable when
    the cache folder cannot take it; DataError when DuckDB cannot convert the CSV.
    """
    own = con is None
    if con is None:
        store.ensure_root(root)
        con = memory_connection()
    entry = store.entry_for(path, root)
    started = time.perf_counter()
    before = store.Stat.of(path)
    template = load_catalog().env.get_template("sources/_cache_csv.sql.j2")
    tmp = store.temp_path(entry.parquet)
    try:
        entry.parquet.parent.mkdir(exist_ok=True)
        digest = store.sha256_of(path)
        buffer = csvfiles.buffer_size([path])
        read: str | None = str(path)
        while True:
            scans_before = last_scan(con)
            sql = template.render(
                path=read,
                header=header,
                types=types,
                target=str(tmp),
                key=entry.key,
                buffer=buffer,
                integers=INTEGER_COLUMNS.get(source.artifact or "", ()),
            )
            try:
                rows = run_copy(con, sql)
            except InvalidInput:
                if read != str(path) or (read := csvfiles.line_bounded_copy(path)) is None:
                    raise
                continue  # mixed line endings: the copy holds the rows a read in place gets (engine/answer.py)
            rejected = rejected_lines(con, scans_before)
            rejects = [[line, why] for _, line, why in rejected]
            if read == str(path) and lost_after(path, (why for _, _, why in rejected)):
                read = csvfiles.line_bounded_copy(path)  # a quote that never closes: the rows after it too
                continue
            break
        if store.Stat.of(path) != before:
            return None  # changed while read (a run still writing it): nothing is put in place
        parquet_bytes = tmp.stat().st_size
        crc = store.parquet_checksum(tmp)
        # the record goes first, so no reader pairs the old record with the new Parquet file
        entry.meta.unlink(missing_ok=True)
        os.replace(tmp, entry.parquet)
        store.write_json(
            entry.meta,
            {
                "format": store.ENTRY_FORMAT,
                "version": store.ENTRY_VERSION,
                "key": entry.key,
                "source": str(path),
                "artifact": source.artifact,
                "reading": reading_version(source, header, types),
                "size": before.size,
                "mtime_ns": before.mtime_ns,
                "ctime_ns": before.ctime_ns,
                "inode": before.inode,
                "sha256": digest,
                "rows": rows,
                "rejected_rows": len(rejects),
                "rejects": rejects[:MAX_RECORDED_REJECTS],
                "parquet_bytes": parquet_bytes,
                "parquet_crc32": crc,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
    except DuckError as exc:
        # a full cache folder is the cache's failure (exit 4, naming the folder), not the CSV's
        raise writes.disk_failure(root, tmp, str(exc)) or DataError(
            f"{path}: cannot build its cached copy: {one_line(exc)}"
        ) from exc
    except OSError as exc:
        raise store.CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    finally:
        if own:
            con.close()  # (con is ours: made above)
        tmp.unlink(missing_ok=True)
    return Built(entry, rows, time.perf_counter() - started)


@dataclass(frozen=True)
class BuildReport:
    rows: list[tuple]
    swept: int
    root: Path
    #: the Parquet files of the entries this build covers (kept when the folder is brought to its size limit)
    entries: frozenset[Path] = frozenset()


def build_cache(
    runs: Sequence[Run],
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    sources: frozenset[str] | None = None,
) -> BuildReport:
    """`rlsql cache build`: a fresh Parquet copy of every CSV artifact of `runs` (with `sources`, of those whose
    source, `KIND_src`, is among them), building only what is missing, stale or damaged (all with `force`).

    Rows: (run, artifact, csv path, state, rows, parquet bytes); state is built, fresh, changing
    (the CSV changed while it was read: nothing recorded) or not cached (a path DuckDB cannot name, a header
    that cannot be read, a CSV DuckDB cannot read: each also a warning naming the file; the others are built).
    CacheUnavailable when the folder cannot be used.
    """
    config = settings.current()
    root = config.cache_dir
    if root is None:
        raise store.CacheUnavailable("no cache folder: HOME is not set; set RLSQL_CACHE_DIR")
    store.ensure_root(root)
    swept = store.sweep_leftovers(root)
    catalog = load_catalog()
    con = memory_connection()
    done = []
    built_now: set[Path] = set()
    for run in runs:
        for kind in CSV_ARTIFACTS:
            artifact = run.artifact(kind)
            if artifact is None or (sources is not None and f"{kind}_src" not in sources):
                continue
            try:
                header = csv_header(artifact.path).names
            except DataError as exc:
                # a header with a NUL byte (a zero-filled file), not UTF-8, ...: the other files are still built
                warnings.warn(f"{exc}; not cached", RlsqlWarning, stacklevel=2)
                done.append((run.name, kind, str(artifact.path), "not cached (its header cannot be read)", None, None))
                continue
            if not header:
                continue
            source = catalog.files[f"{kind}_src"]
            if why_unnameable(artifact.path):
                # a path DuckDB cannot be given exactly (rlsql/core/sqltext.py): the in-place reader skips it too
                done.append(
                    (run.name, kind, str(artifact.path), "not cached (DuckDB cannot name its path)", None, None)
                )
                continue
            entry = store.entry_for(artifact.path, root)
            types = source.column_types(header)
            state = "stale" if force else store.full_state(entry, con, reading_version(source, header, types))[0]
            if state != "fresh":
                if progress is not None:
                    progress(f"{run.name}: {kind} ({artifact.path.stat().st_size / 2**20:,.0f} MiB)")
                try:
                    with store.build_lock(root):
                        built = build_cache_entry(source, artifact.path, header, types, root, con)
                except DataError as exc:  # DuckDB cannot read this CSV: a query reads it in place, and says so
                    warnings.warn(f"{exc}; not cached", RlsqlWarning, stacklevel=2)
                    done.append((run.name, kind, str(artifact.path), "not cached (DuckDB cannot read it)", None, None))
                    continue
                state = "built" if built is not None else "changing"
                if built is not None:
                    reading.notice(f"{artifact.path}: cached now ({built.rows:,} rows in {built.seconds:.2f} s)")
            built_now.add(entry.parquet)
            meta = entry.read_meta() if state != "changing" else {}
            done.append((run.name, kind, str(artifact.path), state, meta.get("rows"), meta.get("parquet_bytes")))
    return BuildReport(done, swept, root, frozenset(built_now))
