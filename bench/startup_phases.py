"""Time the phases of one cold `rlsql query NAME`: import, argument parsing, object creation, the rest.

Usage: python bench/startup_phases.py NAME [RUN_DIR]   (default run: /work/bench-data/real)
Prints cumulative seconds since the interpreter reached this script, one line per phase, on stderr.
"""

from __future__ import annotations

import contextlib
import sys
import time

START = time.perf_counter()
marks: list[tuple[str, float]] = []


def mark(label: str) -> None:
    marks.append((label, time.perf_counter() - START))


def main() -> None:
    import rlsql.cli.app as cli

    mark("import rlsql.cli.app")
    import rlsql.engine.query as api

    create = api.query_connection

    def timed_query_connection(*args: object, **kwargs: object) -> object:
        mark("argument parsing, params, catalog, runs")
        result = create(*args, **kwargs)
        mark("render sources, create objects")
        return result

    api.query_connection = timed_query_connection
    run = sys.argv[2] if len(sys.argv) > 2 else "/work/bench-data/real"
    sys.argv = ["rlsql", "query", sys.argv[1], "-r", run]
    with contextlib.suppress(SystemExit):
        cli.main()
    mark("execute, print, exit")
    for label, seconds in marks:
        print(f"{seconds:.3f} {label}", file=sys.stderr)


if __name__ == "__main__":
    main()
