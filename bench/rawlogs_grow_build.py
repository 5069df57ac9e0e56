"""A log's cache entry built while the run appends to the log: DuckDB through a pipe vs the Python scan.

    python bench/rawlogs_grow_build.py LOG [--rounds 2]

LOG is a raw training log (e.g. the 10x bench's big log, bench/rawlogs_bench.py); it is copied into a
folder of its own under /tmp first (the copy is the one appended to; LOG is never changed). Each round
builds the copy's entry from its start twice, in a cache folder of its own, while one line is appended
to the copy as DuckDB's parallel read runs (the case of a run still training, whose log grows during
the background build, rlsql/cachebg.py): once as rlsql does now and once as before (the Python scan).
"Now" is DuckDB reading a named pipe of exactly the log's first bytes (logcache.piped_read): at once
when the copy's mtime is under logcache.RECENT_WRITE_SECONDS old ("pipe"), or after a parallel read
the append spoiled (`--old`: the copy's mtime set an hour back, "pipe after a parallel try").
Prints each build's CPU seconds (user + system, all threads) and wall seconds, how the lines were found
and the entry's rows (the same in both). In-process; stdlib only besides rlsql.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from rlsql.cache import logentries as logcache
from rlsql.cache import store as cache

NOISE = "(TerminalBenchGenerator pid=5151, ip=10.0.0.2) 2026-06-04 01:00:00 INFO trial x episode 1 finished\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--old", action="store_true", help="set the copy's mtime an hour back before each build")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlsql-grow-build-"))
    try:
        log = work / "run" / "logs" / args.log.name
        log.parent.mkdir(parents=True)
        shutil.copyfile(args.log, log)
        root = work / "cache"
        real = logcache.direct_read
        for _ in range(args.rounds):
            for piped in (True, False):
                def writes_meanwhile(con, path, fh, before, pipe=None, piped=piped):
                    with log.open("a") as writer:  # the trainer prints a line while DuckDB reads the log
                        writer.write(NOISE)
                    return real(con, path, fh, before, pipe=pipe if piped else None)

                logcache.direct_read = writes_meanwhile
                shutil.rmtree(root, ignore_errors=True)
                cache.ensure_root(root)
                if args.old:
                    os.utime(log, (time.time() - 3600, time.time() - 3600))
                t0, w0 = os.times(), time.perf_counter()
                record = logcache.update_entry(log, cache.entry_for(log, root), {}, root, background=True)
                t1, w1 = os.times(), time.perf_counter()
                logcache.direct_read = real
                cpu = t1.user + t1.system - t0.user - t0.system
                print(f"{'pipe' if piped else 'before':<7} found by {record['lines_found_by']:<14} {cpu:.2f} CPU-s "
                      f"{w1 - w0:.2f} s, {record['rows']:,} rows, load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
