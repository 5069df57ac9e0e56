"""`rlsql cache build`, `status` and `clear`: the cache folder as a user manages it.

Every function takes the current settings (rlsql/core/settings.py) for the folder, the mode and the
size limit, and returns rows and one summary line for the command line to print.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlsql.cache import csvcopies, logentries, store, trajcopies
from rlsql.core import settings
from rlsql.core.errors import UsageError
from rlsql.duck.memorydb import memory_connection
from rlsql.runs.folders import Run

BUILD_COLUMNS = ["run", "artifact", "file", "state", "rows", "parquet_bytes"]
STATUS_COLUMNS = ["file", "state", "why", "rows", "parquet_bytes", "built_at", "last_build", "parquet"]


@dataclass(frozen=True)
class Done:
    rows: list[tuple]
    summary: str


def _root() -> Path:
    root = settings.current().cache_dir
    if root is None:
        raise UsageError("no cache folder: HOME is not set; set RLSQL_CACHE_DIR")
    try:
        store.check_root(root)
    except store.CacheUnavailable as exc:
        raise UsageError(str(exc)) from exc
    return root


def build(
    runs: Sequence[Run],
    force: bool,
    progress: Callable[[str], None] | None = None,
    sources: frozenset[str] | None = None,
) -> Done:
    """Cached copies of every CSV and of every raw log the runs' queries read, and of their trajectory rows,
    missing or stale ones only (all with `force`); with `sources`, only the copies those sources read
    (`--cache`: rlsql/cache/copies.py). Each entry covered is marked as built now (its record's mtime), and the
    folder is brought to its size limit: the entries least recently built or covered by a build go first."""
    _root()
    try:
        report = csvcopies.build_cache(runs, force, progress, sources)
        rows = report.rows + logentries.build_log_entries(runs, force, progress, sources)
        copies, copied = trajcopies.build_copies(runs, report.root, force, memory_connection(), progress, sources)
    except store.CacheUnavailable as exc:
        raise UsageError(str(exc)) from exc
    rows += copies
    covered = (
        report.entries | copied | {store.entry_for(Path(r[2]), report.root).parquet for r in rows if r[1] == "log"}
    )
    for parquet in covered:  # what this build covers is the last to go when the folder outgrows its limit
        store.touch(store.Entry(parquet, parquet.with_suffix(".json")))
    evicted, freed = store.evict(report.root, settings.current().cache_max_bytes, keep=frozenset(covered))
    count = {state: sum(1 for r in rows if r[3] == state) for state in ("built", "grown", "fresh", "changing")}
    parts = [f"{count['built']} built"]
    if count["grown"]:
        parts.append(f"{count['grown']} grown logs updated")
    parts.append(f"{count['fresh']} already fresh")
    if count["changing"]:
        parts.append(f"{count['changing']} changed while read (not cached)")
    if report.swept:
        parts.append(f"{report.swept} leftover temporary file(s) of an interrupted build swept")
    if evicted:
        parts.append(f"{evicted} least recently built entries removed ({freed:,} bytes) to keep to the size limit")
    return Done(rows, f"cache: {', '.join(parts)}, in {report.root}")


def status() -> Done:
    """Each entry with its state (fresh, stale, grown, orphaned, damaged) and why; the folder's size
    against its limit and the policy."""
    root = _root()
    config = settings.current()
    rows = []
    listing = store.list_root(root) if root.exists() else store.Listing([], [], 0)
    con = memory_connection()
    for entry in listing.entries:
        meta = entry.read_meta()
        state, why = _state(entry, con)
        shown = f"{meta.get('source')} ({meta['table']})" if meta.get("kind") == trajcopies.KIND else meta.get("source")
        rows.append(
            (
                shown,
                state,
                None if state == "fresh" else why,
                meta.get("rows"),
                meta.get("parquet_bytes"),
                meta.get("built_at"),
                _mtime(entry.meta),
                str(entry.parquet),
            )
        )
    mirrors = store.list_mirrors(root) if root.exists() else []
    for m in mirrors:  # runs given as URLs: their copies, in the same folder and under the same limit
        rows.append(
            (
                m.url,
                "fetched",
                f"copy of a run URL: {m.files} files",
                None,
                m.size,
                m.fetched_at,
                _mtime(m.record),
                str(m.folder),
            )
        )
    size = sum(r[4] or 0 for r in rows)
    extra = ""
    if listing.foreign:
        extra += f"; {listing.foreign} file(s) rlsql did not write (left alone)"
    if listing.leftovers:
        extra += f"; {len(listing.leftovers)} temporary file(s) of a build under way or interrupted"
    copies = f" (and {len(mirrors)} copies of run URLs)" if mirrors else ""
    return Done(
        rows,
        f"cache folder: {root}: {len(rows) - len(mirrors)} entries{copies}, {size:,} of at most "
        f"{config.cache_max_bytes:,} bytes (RLSQL_CACHE_MAX_BYTES){extra}; {describe_policy(config)}",
    )


def clear(stale_only: bool) -> str:
    """Delete the entries rlsql wrote and the copies of run URLs (with `stale_only`, the entries whose file
    changed, is gone or is damaged; a grown log's entry stays: queries read it and the log's new bytes, and
    `cache build` extends it; so do the copies of run URLs: the next read refreshes them). Files rlsql did not
    write stay."""
    root = _root()
    if not root.exists() or not store.has_marker(root):
        return f"cache: nothing to clear (no cache entries in {root})"
    listing = store.list_root(root)
    con = memory_connection()
    entries = [e for e in listing.entries if not stale_only or _state(e, con)[0] not in ("fresh", "grown")]
    removed, freed = store.delete_entries(root, entries)
    removed += store.sweep_leftovers(root) + store.sweep_mirrors(root)
    if not stale_only:  # a run URL's copy is never stale: the next read refreshes it
        for mirror in store.list_mirrors(root):
            freed += store.delete_mirror(mirror)
            removed += mirror.files + 1
    kept = f"; left {listing.foreign} file(s) rlsql did not write" if listing.foreign else ""
    return f"cache: removed {removed} files, {freed:,} bytes{kept}"


def _state(entry: store.Entry, con) -> tuple[str, str]:
    """An entry's state in its own words: a log's (grown, ...), trajectory rows' (stale: a file changed), a CSV's."""
    record = entry.read_meta()
    if record.get("kind") == trajcopies.KIND:
        return trajcopies.entry_state(entry, con)
    state, why = logentries.entry_state(entry, con)
    if state == "fresh" and record.get("kind") != logentries.LOG_KIND and not csvcopies.read_as_recorded(record):
        return "stale", store.READ_ANOTHER_WAY
    return state, why


def describe_policy(config: settings.Settings) -> str:
    if config.cache == "off":
        return "the cache is off (RLSQL_CACHE=off or --no-cache): every file is read in place"
    if config.cache == "on":
        return (
            "every file a command reads is cached before it is read (RLSQL_CACHE=on or --cache); "
            "RLSQL_CACHE=off turns the cache off"
        )
    return (
        f"a file's fresh cached copy is read where there is one; copies are made by `rlsql cache build` "
        f"or --cache, never in the background; a file of {config.cache_hint_bytes / 2**20:g} MiB or more read "
        "in place prints a hint (RLSQL_CACHE_HINT_BYTES)"
    )


def _mtime(path: Path) -> str | None:
    import time

    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(path.stat().st_mtime))
    except OSError:
        return None
