"""One rlsql command run by two (or more) checkouts of rlsql, paired and alternated: issue 38's before and after.

Usage (from the repository root)::

    git archive BASE | tar -x -C /tmp/before
    python bench/paired.py --tree before=/tmp/before --tree after=. --pairs 3 -- trial NAME -r RUN -f json -o OUT

Each round runs `python -m rlsql ARGS...` once per tree, in turn (the order flips every round, so that neither
always runs on a warmer page cache), each under `/usr/bin/time -v` in the tree's folder and with it first on
PYTHONPATH (paths given must be absolute), and prints
one markdown row per tree: median wall s, median CPU s (user + system) and the largest peak RSS in MB, and the
exit codes seen. `--shell` runs the arguments as a shell pipeline instead, with `rlsql` standing for
`python -m rlsql` (`--shell -- 'rlsql query trials -r RUN -f csv | head -3'`): the figures are then the
shell's, the whole pipeline's.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def timed(tree: Path, args: list[str], shell: bool) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of one run of `args` with `tree` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    if shell:
        line = re.sub(r"\brlsql\b", f"{sys.executable} -m rlsql", " ".join(args))
        command = ["/usr/bin/time", "-v", "sh", "-c", line]
    else:
        command = ["/usr/bin/time", "-v", sys.executable, "-m", "rlsql", *args]
    with tempfile.TemporaryFile() as err:
        # run in the tree: `python -m` puts the current folder before PYTHONPATH
        done = subprocess.run(command, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=err, check=False)
        err.seek(0)
        text = err.read().decode(errors="replace")
    field = dict(re.findall(r"^\s*([^:\n]+):\s*(.*)$", text, re.M))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([0-9:.]+)", text)
    wall = wall.group(1) if wall else "0"
    seconds = sum(float(p) * 60**i for i, p in enumerate(reversed(wall.split(":"))))
    cpu = float(field.get("User time (seconds)", 0)) + float(field.get("System time (seconds)", 0))
    return seconds, cpu, int(field.get("Maximum resident set size (kbytes)", 0)) // 1024, done.returncode


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout of rlsql")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--shell", action="store_true", help="run the arguments as a shell line")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in opts.tree)]
    got: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name, _ in trees}
    for i in range(opts.pairs):
        for name, tree in trees if i % 2 == 0 else trees[::-1]:
            got[name].append(timed(tree, args, opts.shell))
    print(f"`{' '.join(args)}`, {opts.pairs} rounds\n")
    print("| tree | wall s (median) | CPU s (median) | peak RSS MB (max) | exit codes |")
    print("|---|---:|---:|---:|---|")
    for name, runs in got.items():
        print(
            f"| {name} | {statistics.median(r[0] for r in runs):.2f} | {statistics.median(r[1] for r in runs):.2f} "
            f"| {max(r[2] for r in runs)} | {sorted({r[3] for r in runs})} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
