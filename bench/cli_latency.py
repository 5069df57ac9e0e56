"""Time `rlsql query NAME` end to end (a fresh process each time, as a user runs it).

Usage: python bench/cli_latency.py [--run DIR] [--repeat N] [NAME ...]
Prints, per query, the median and min wall time over N runs and the peak RSS of the slowest run.
Measured, never asserted: results go into bench/RESULTS.md by hand with the machine and versions.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def time_once(exe: str, args: list[str]) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([exe, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    return elapsed, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["turns_by_exception"])
    parser.add_argument("--run", default=str(ROOT / "fixtures" / "runs" / "calendar"))
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    exe = shutil.which("rlsql") or str(Path(sys.executable).parent / "rlsql")
    time_once(exe, ["query", args.names[0], "--run", args.run])  # warm the OS file cache and the SQL analysis cache
    print(f"{'query':24} {'median_s':>9} {'min_s':>7} {'max_rss_mb':>10}")
    for name in args.names:
        samples = [time_once(exe, ["query", name, "--run", args.run]) for _ in range(args.repeat)]
        times = [t for t, _ in samples]
        rss_mb = max(r for _, r in samples) / 1024
        print(f"{name:24} {statistics.median(times):9.3f} {min(times):7.3f} {rss_mb:10.1f}")


if __name__ == "__main__":
    main()
