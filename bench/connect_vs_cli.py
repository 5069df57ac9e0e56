"""A notebook's first answer against the CLI's (issue 27, item 1): `rlsql.connect()` plus its first
statement, and `rlsql query NAME`, each a cold process, paired (the two alternate, first one then the
other), over the same runs.

Usage (from the repository root; fleets from bench/make_fleet.py)::

    python bench/make_fleet.py 1000 /tmp/fleet-1000
    python bench/connect_vs_cli.py /tmp/fleet-1000 --runs 300,1000 --repeat 3

Each command runs under `/usr/bin/time -v`; a row gives the median wall seconds and peak RSS of each
side and their ratio. Both sides must succeed and give the same number of rows. The cache is off for
both (RLSQL_CACHE=off): a first look at the files, as a new user makes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUERIES = ("run_summary", "run_table", "reward_curve", "compare_runs")
NOTEBOOK = (
    "import sys, rlsql\n"
    "con = rlsql.connect(sys.argv[2:])\n"
    "rows = con.execute('SELECT * FROM ' + sys.argv[1]).fetchall()\n"
    "print(len(rows))\n"
)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one process under /usr/bin/time -v."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        done = subprocess.run(["/usr/bin/time", "-v", "-o", report.name, *cmd], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:3])}…: exit {done.returncode}: {done.stderr.strip()[-300:]}")
        fields = dict(
            line.strip().rsplit(": ", 1) for line in Path(report.name).read_text().splitlines() if ": " in line
        )
    wall = fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    seconds = float(wall[-1]) + 60 * float(wall[-2]) + (3600 * float(wall[0]) if len(wall) == 3 else 0)
    return seconds, int(fields["Maximum resident set size (kbytes)"]) / 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", type=Path, help="a folder of run folders")
    parser.add_argument("--runs", default="300,1000", help="comma-separated: the first N runs of the fleet")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", default=",".join(QUERIES))
    args = parser.parse_args()
    folders = sorted(p for p in args.fleet.iterdir() if p.is_dir())
    rlsql = str(Path(sys.executable).with_name("rlsql"))
    env = {**os.environ, "RLSQL_CACHE": "off"}
    print("| runs | query | CLI s | connect() s | ratio | CLI MB | connect() MB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="rlsql-bench-") as scratch:
        for count in (int(n) for n in args.runs.split(",")):
            runs = [str(p) for p in folders[:count]]
            for name in args.queries.split(","):
                out = str(Path(scratch) / f"{name}.csv")
                cli = [rlsql, "query", name, "-f", "csv", "-o", out, *(a for r in runs for a in ("-r", r))]
                notebook = [sys.executable, "-c", NOTEBOOK, name, *runs]
                walls: dict[str, list[float]] = {"cli": [], "connect": []}
                peaks: dict[str, list[float]] = {"cli": [], "connect": []}
                for rep in range(args.repeat):
                    order = (("cli", cli), ("connect", notebook))
                    for side, cmd in order if rep % 2 == 0 else order[::-1]:
                        wall, peak, stdout = timed(cmd, env)
                        walls[side].append(wall)
                        peaks[side].append(peak)
                        if side == "connect":
                            got = int(stdout.strip())
                        else:
                            with open(out) as fh:
                                want = sum(1 for _ in fh) - 1
                    if got != want:
                        raise SystemExit(f"{name} over {count} runs: connect() gave {got} rows, the CLI {want}")
                c, n = statistics.median(walls["cli"]), statistics.median(walls["connect"])
                print(
                    f"| {count:,} | {name} | {c:.2f} | {n:.2f} | {n / c:.2f} | "
                    f"{statistics.median(peaks['cli']):.0f} | {statistics.median(peaks['connect']):.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
