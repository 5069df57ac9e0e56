"""Parquet copies of a run's trajectory rows: trajectory_steps_src and tool_calls_src, built on request,
handed to the sources while the run's trajectory files are as they were.

A run's trajectories are thousands of files (45,000 trials: 3 GB) whose rows are a small part of their
bytes, and every query parses them all again: 17-23 s a query at that size, against 5-6.5 s from the
copy, most of it listing the files (bench/RESULTS.md, "Agent trajectories"). One entry per run and source, under
the key `<trace_jobs>\\0<source>`. It is fresh while the run's listing hashes to the recorded digest:
every listed file's path, segment, size, modification and change times and inode (one stat each,
no file opened) and the problem of each file rlsql does not hand DuckDB. A file added, removed,
rewritten or touched makes the entry stale, and so does a change of the source's SQL (its file or a
template it may include, as a new rlsql brings): the copy holds the source's rows, not the files'.

The copy keeps what an in-place read says: the damaged files (cut off, not JSON, ...) and the token
counts out of range (bad cells, read as empty) are recorded with the entry, and a query that reads
the copy names them in the same warnings (rlsql/engine/sources.py hands them to the recorders a read
in place would have called). `rlsql trial` reads one trial's files in place, never a copy.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlsql.cache import reading, store
from rlsql.catalog.catalog import load_catalog, sql_root
from rlsql.core.errors import DataError, one_line
from rlsql.core.sqltext import glob_escaped
from rlsql.duck import badcells, damagedfiles
from rlsql.duck.fileio import run_copy
from rlsql.duck.memorydb import TRAJECTORY_MEMORY, Connection, DuckError, memory_connection
from rlsql.runs import trajectories, writes
from rlsql.runs.folders import Run

#: the sources a copy is kept of (trajectory_texts_src serves `rlsql trial`, one trial's files at a time)
SOURCES = ("trajectory_steps_src", "tool_calls_src")
#: the sources that read another's copy (their rows are its columns but some)
COPIED_FROM = {"tool_call_arguments_src": "tool_calls_src"}
KIND = "trajectories"


def entry_of(trace_jobs: Path, source: str, root: Path) -> store.Entry:
    return store.entry_for(f"{trace_jobs}\0{source}", root)


def listing_digest(listing: trajectories.TrajectoryListing) -> tuple[str, int]:
    """(digest, bytes) of a listing as the sources read it: each file's name, segment, stat and problem."""
    digest = hashlib.sha256()
    for f in listing.files:
        digest.update(repr((f.trial, f.segment, f.path, f.problem, f.signature)).encode() + b"\n")
    return digest.hexdigest(), sum(f.signature[0] for f in listing.files if f.signature)


@functools.cache
def sql_version(source: str) -> str:
    """What the rows of `source` depend on besides the files (store.sql_version): its SQL file and the
    templates it may include."""
    text = (sql_root() / "sources" / f"{source}.sql").read_bytes()
    return store.sql_version(hashlib.sha256(text).hexdigest())


#: the reasons an entry is stale (its rows no longer what the source gives), not damaged
STALE = ("the trajectory files changed", "rlsql's SQL for the source changed", store.NO_CHECKSUM)


def _why_not_fresh(entry: store.Entry, record: dict, digest: str) -> str | None:
    if not record or record.get("kind") != KIND:
        return "no cache entry"
    if record.get("damaged"):
        return f"its cache entry failed a read ({record['damaged']})"
    if record.get("digest") != digest:
        return "the trajectory files changed since its cache entry was built"
    if record.get("table") not in SOURCES or record.get("sql") != sql_version(record["table"]):
        return "rlsql's SQL for the source changed since its cache entry was built (another rlsql version)"
    if not record.get("parquet_crc32"):
        return store.NO_CHECKSUM
    return store.parquet_looks_whole(entry, record)


def cached_rows(source: str, run: Run, trace_jobs: Path, listing: trajectories.TrajectoryListing) -> dict | None:
    """The fresh copy of `source`'s rows of `run` for the source templates: {"run", "parquet" (glob-escaped),
    "damaged" (run, path, problem of each damaged file)}; None: read the files in place. Nothing is built
    here: `rlsql cache build` and `--cache` build copies before a command reads (rlsql/cache/copies.py)."""
    root = reading.cache_root()
    digest, size = listing_digest(listing)
    if root is None:
        reading.notice(f"{trace_jobs}: {source} read in place (no cache built yet: rlsql cache build)")
        reading.read_in_place(trace_jobs, size, reading.TRAJECTORY_SAVING)
        return None
    entry = entry_of(trace_jobs, source, root)
    why = _why_not_fresh(entry, entry.read_meta(), digest)
    if why is not None:
        if why != "no cache entry" and not why.startswith(STALE):
            reading.damaged_copy(f"{trace_jobs} ({source})", entry.parquet, why)
        reading.notice(f"{trace_jobs}: {source} read in place ({why})")
        reading.read_in_place(trace_jobs, size, reading.TRAJECTORY_SAVING)
        return None
    reading.notice(f"{trace_jobs}: {source} read from the cache ({entry.parquet})")
    reading.handed_out(entry)
    record = entry.read_meta()
    return {
        "run": run.name,
        "parquet": glob_escaped(entry.parquet),
        "damaged": [{"run": run.name, "path": p, "problem": why} for p, why in record.get("damaged_files", [])],
        "bad_cells": [tuple(cell) for cell in record.get("bad_cells", [])],
    }


@dataclass(frozen=True)
class Built:
    entry: store.Entry
    rows: int
    seconds: float


def build_entry(source: str, run: Run, trace_jobs: Path, root: Path) -> Built | None:
    """Write `source`'s rows of `run` into its entry (sources/_cache_trajectories.sql.j2), with the damaged
    files and bad cells the read met. None when the files changed while they were read (nothing recorded).
    DataError when DuckDB cannot read them; CacheUnavailable when the cache folder cannot take the entry."""
    store.ensure_root(root)
    entry = entry_of(trace_jobs, source, root)
    started = time.perf_counter()
    listing = trajectories.list_trajectories(trace_jobs)
    before, _ = listing_digest(listing)
    catalog = load_catalog()
    context = trajectories.render_context([run], record=True)  # its own listing: a change since shows below
    tmp = store.temp_path(entry.parquet)
    con = memory_connection(memory_limit=TRAJECTORY_MEMORY)
    damagedfiles.record_damaged(con)
    bad = badcells.BadCells()  # recorded as a query's second pass records them, read as NULL
    badcells.register(con, bad)
    try:
        entry.parquet.parent.mkdir(exist_ok=True)
        # the source's own file, included with the context it is rendered with (`source` is one of SOURCES)
        sql = catalog.env.get_template("sources/_cache_trajectories.sql.j2").render(
            source=source, bad_cells="record", target=str(tmp), key=entry.key, **context
        )
        rows = run_copy(con, sql)
        damaged = sorted([path, problem] for path, (_, problem) in damagedfiles.recorded(con).items())
        if listing_digest(trajectories.list_trajectories(trace_jobs))[0] != before:
            return None  # a file changed while read (a run still writing): nothing is put in place
        parquet_bytes = tmp.stat().st_size
        crc = store.parquet_checksum(tmp)
        entry.meta.unlink(missing_ok=True)  # the record first: no reader pairs the old record with the new rows
        os.replace(tmp, entry.parquet)
        store.write_json(
            entry.meta,
            {
                "format": store.ENTRY_FORMAT,
                "version": store.ENTRY_VERSION,
                "key": entry.key,
                "kind": KIND,
                "source": str(trace_jobs),
                "table": source,
                "sql": sql_version(source),
                "digest": before,
                "files": len(listing.files),
                "rows": rows,
                "damaged_files": damaged,
                "bad_cells": [[*key, value] for key, value in sorted(bad.cells.items())],
                "parquet_bytes": parquet_bytes,
                "parquet_crc32": crc,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
    except DuckError as exc:
        raise writes.disk_failure(root, tmp, str(exc)) or DataError(
            f"{trace_jobs}: cannot build the cached copy of {source}: {one_line(exc)}"
        ) from exc
    except OSError as exc:
        raise store.CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    finally:
        damagedfiles.forget(con)
        con.close()
        tmp.unlink(missing_ok=True)
    return Built(entry, rows, time.perf_counter() - started)


def build_copies(
    runs: Sequence[Run],
    root: Path,
    force: bool,
    con: Connection,
    progress: Callable[[str], None] | None = None,
    sources: frozenset[str] | None = None,
) -> tuple[list[tuple], frozenset[Path]]:
    """`rlsql cache build`'s trajectory part: rows (run, "trajectories", trace_jobs (source), state, rows,
    parquet bytes) as csvcopies.build_cache gives them (state built, fresh, changing or not cached (why)),
    and the Parquet files of the entries they cover. With `sources`, only the copies those sources read."""
    done = []
    covered = set()
    wanted = [s for s in SOURCES if sources is None or s in {COPIED_FROM.get(n, n) for n in sources}]
    for run in runs:
        trace_jobs = trajectories.trace_jobs_of(run)
        if trace_jobs is None:
            continue
        for source in wanted:
            entry = entry_of(trace_jobs, source, root)
            label = f"{trace_jobs} ({source})"
            if not force and entry_state(entry, con)[0] == "fresh":
                state = "fresh"
            else:
                if progress is not None:
                    progress(f"{run.name}: trajectories ({source})")
                try:
                    with store.build_lock(root):
                        built = build_entry(source, run, trace_jobs, root)
                except DataError as exc:
                    done.append((run.name, KIND, label, f"not cached ({exc})", None, None))
                    continue
                state = "built" if built is not None else "changing"
                if built is not None:
                    reading.notice(f"{trace_jobs}: {source} cached now ({built.rows:,} rows in {built.seconds:.2f} s)")
            record = entry.read_meta() if state != "changing" else {}
            covered.add(entry.parquet)
            done.append((run.name, KIND, label, state, record.get("rows"), record.get("parquet_bytes")))
    return done, frozenset(covered)


def entry_state(entry: store.Entry, con: Connection | None) -> tuple[str, str]:
    """(state, why) of a trajectory entry for `cache status`, `clear --stale` and `build`: fresh, stale (the
    files changed), orphaned (the trace_jobs folder is gone) or damaged; with `con`, its footer is read too."""
    record = entry.read_meta()
    trace_jobs = Path(record.get("source", ""))
    if not trace_jobs.is_dir():
        return "orphaned", "the trace_jobs folder is gone"
    why = _why_not_fresh(entry, record, listing_digest(trajectories.list_trajectories(trace_jobs))[0])
    if why is None and con is not None:
        why = store.footer_problem(entry, record, con)
    if why is None:
        return "fresh", "fresh"
    return ("stale" if why.startswith(STALE) else "damaged"), why
