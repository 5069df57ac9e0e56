"""Measure `rlsql serve`'s fleet page and compare page after one row is appended to one run (issue 38, item 4):
the first load against the load after the change, in CPU seconds of this process (DuckDB's threads included)
and wall seconds, the pages computed in process as the server computes them (rlsql/serve/pages.py).

Usage (from the repository root; the fleet is changed, so use a copy)::

    python bench/make_fleet.py 300 /tmp/fleet300
    python bench/serve_refresh.py /tmp/fleet300 [--page fleet|compare] [--rounds 3] [--whole]

Each round appends one metrics row (a copy of the last) to a different run, lets the server notice it
(Served.refresh, as its watcher does) and loads the page again. The compare page (`/compare?runs=...`) is over
COMPARE_RUNS runs of the fleet: measured after changes to runs it does not show (the common case, of 300 runs),
then after changes to runs it shows. Last, the first load again on fresh servers in this process (`--rounds` of
them, the median): the first load above also pays this process's one-time costs (the catalog read, the templates
compiled), which a server that has answered any page has paid already.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

from rlsql.cache.mirrors import resolve_runs
from rlsql.serve import pages, state
from rlsql.serve.state import Served


def timed(what: object) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    what()  # type: ignore[operator]
    return time.process_time() - cpu, time.perf_counter() - wall


def append_row(metrics: Path) -> None:
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join([*lines, lines[-1]]) + "\n")


#: the runs the compare page is asked about (pages.COMPARE_MAX at most)
COMPARE_RUNS = 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fleet", type=Path)
    parser.add_argument("--page", choices=("fleet", "compare"), default="fleet")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--whole", action="store_true", help="keep nothing per run (as before issue 38, item 4)")
    args = parser.parse_args()
    if args.whole:
        state.PER_RUN = frozenset()
    warnings.simplefilter("ignore")  # the fleet's runs without metrics say so on every query
    served = Served(resolve_runs([str(args.fleet)]), poll_seconds=0)
    # the metrics CSV each run reads (a row appended to a file it ignores, an older parse, changes nothing)
    changing = [a.path for r in served.runs.values() if (a := r.artifact("metrics")) is not None]
    if args.page == "fleet":
        page = lambda s: pages.fleet(s, {})  # noqa: E731
        cases = {"one run changed": [changing[i * 7 % len(changing)] for i in range(args.rounds)]}
    else:
        compared = changing[:: max(1, len(changing) // COMPARE_RUNS)][:COMPARE_RUNS]
        names = [p.parent.name for p in compared]
        page = lambda s: pages.compare_page(s, names, {})  # noqa: E731
        others = [p for p in changing if p not in compared]
        cases = {
            "a run it does not show changed": [others[i * 7 % len(others)] for i in range(args.rounds)],
            "one of its runs changed": [compared[i % len(compared)] for i in range(args.rounds)],
        }
    load = lambda: page(served)  # noqa: E731
    first = timed(load)
    print(f"{args.page}: first load {first[0]:.2f} CPU-s {first[1]:.2f} s", file=sys.stderr)
    for case, changed_runs in cases.items():
        after = []
        for run in changed_runs:
            append_row(run)
            changed = served.refresh()
            assert changed, "the change was not seen"
            after.append(timed(load))
        cpu = statistics.median(a[0] for a in after)
        wall = statistics.median(a[1] for a in after)
        print(
            f"{args.page}: after {case} (median of {args.rounds}) {cpu:.2f} CPU-s {wall:.2f} s "
            f"({cpu / first[0]:.0%} of the first load's CPU)",
            file=sys.stderr,
        )
    fresh = []
    for _ in range(args.rounds):
        again = Served(resolve_runs([str(args.fleet)]), poll_seconds=0)
        fresh.append(timed(lambda: page(again)))  # noqa: B023
    print(
        f"{args.page}: first load on a fresh server, the process warm (median of {args.rounds}) "
        f"{statistics.median(f[0] for f in fresh):.2f} CPU-s {statistics.median(f[1] for f in fresh):.2f} s "
        f"(the last case: {cpu / statistics.median(f[0] for f in fresh):.0%} of it)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
