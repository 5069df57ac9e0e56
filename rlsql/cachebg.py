"""The detached process that builds cache entries after an answer: `python -m rlsql.cachebg ROOT NAME=PATH...`.

Under the default policy (cache.mode() "auto") the first read of a large CSV is answered from the
CSV in place, at the speed of a bare DuckDB read, and the command then starts this process
(cachebuild.start_deferred) at low CPU priority to build the Parquet copies of the CSVs it read so;
later questions read the copy. Converting a 680 MB CSV costs ~5 CPU-s, four times the read itself:
paid inside the first command, it made the first question 4-5x a bare read (bench/RESULTS.md).

The builder claims an entry by creating the Parquet file's temporary name (rlsql/writes.py: host
and pid in the name) before it reads the CSV (cachebuild.build_cache_entry); a read that finds a
live claim (cache.builder_of) neither builds nor starts another builder. Its entries are the ones
`cache build` makes (same record, same checks on every read), and a CSV that changes while it is
read is not put in place. It prints nothing. A CSV it could not cache gets a mark in its entry's record
(cache.mark_unbuilt) instead of a copy: one that changed while read (a run still writing it) is not
tried again until nobody has written it for a while, one DuckDB cannot convert not until it changes;
reads answer in place meanwhile. A `cache clear` during a build stamps the folder's marker, and the
builder then puts nothing in place (cache.cleared_since).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

from rlsql import cache
from rlsql.cachebuild import build_cache_entry
from rlsql.catalog import load_catalog
from rlsql.duckconn import memory_connection
from rlsql.errors import DataError, RlsqlError
from rlsql.runs import read_header

#: the builder's CPU priority: it must not slow the user's next command
NICE = 10


def build(root: Path, pairs: list[str]) -> list[Path]:
    """Build the entries of `pairs` (SOURCE=CSV) under `root` that are not fresh and no one else builds.

    Returns the CSVs cached. Anything that stops one CSV (changed while read, not convertible, the
    folder unusable) leaves it uncached.
    """
    try:
        cache.ensure_root(root)
    except cache.CacheUnavailable:
        return []
    catalog = load_catalog()
    con = memory_connection()
    done = []
    for pair in pairs:
        name, _, text = pair.partition("=")
        path = Path(text)
        source = catalog.files.get(name)
        if source is None or source.kind != "source" or not path.is_absolute():
            continue
        entry = cache.entry_for(path, root)
        try:
            # the claim the reader made in this process's name (cachebuild.start_deferred) is not another builder
            if cache.quick_state(entry, path)[0] == "fresh" or cache.builder_of(entry, os.getpid()) is not None:
                continue
            started, started_ns = time.perf_counter(), time.time_ns()
            try:
                header = read_header(path)
                if not header:
                    continue
                if build_cache_entry(source, path, header, source.column_types(header), root, con):
                    done.append(path)
                elif not cache.cleared_since(root, started_ns):
                    # changed while read: marked, so that the reads of a run still writing it stop starting
                    # builders whose copies are thrown away (cache.retry_due)
                    cache.mark_unbuilt(entry, path, cache.CHANGED, "it changed while it was read",
                                       time.perf_counter() - started)
            except DataError as exc:
                # the same bytes would fail again: not retried until the CSV changes
                cache.mark_unbuilt(entry, path, cache.UNCONVERTIBLE, str(exc).removeprefix(f"{path}: "),
                                   time.perf_counter() - started)
            except (RlsqlError, cache.CacheUnavailable, OSError):
                continue
        finally:
            cache.drop_claims_of(entry, os.getpid())
    con.close()
    return done


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python -m rlsql.cachebg CACHE_ROOT SOURCE=CSV...", file=sys.stderr)
        return 2
    with contextlib.suppress(OSError):
        os.nice(NICE)
    warnings.simplefilter("ignore")  # nobody reads them: the foreground read already said what it found
    build(Path(args[0]), args[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
