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
shell's, the whole pipeline's. `--first-lines N` reads the command's stdout through a pipe instead (issue 38 item 3):
each round runs it twice per tree, once reading N lines and closing the pipe (`| head -N`), once reading every line
(`| cat > /dev/null`), and prints the wall seconds to the first line, to the command's end, its CPU seconds and peak
RSS (from wait4), for both.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
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


def first_lines(tree: Path, args: list[str], lines: int | None) -> tuple[float, float, float, int, int]:
    """(wall s to the first line, wall s to the end, CPU s, peak RSS MB, exit code) of `python -m rlsql ARGS` with
    its stdout a pipe this process reads: `lines` lines and then closes it, or (None) every line."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rlsql", *args], env=env, cwd=tree, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    first = None
    for n, _line in enumerate(proc.stdout, 1):
        if first is None:
            first = time.perf_counter() - start
        if lines is not None and n >= lines:
            break
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    return first or end, end, cpu, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main_first_lines(trees: list[tuple[str, Path]], args: list[str], pairs: int, lines: int) -> None:
    got: dict[tuple[str, str], list[tuple[float, float, float, int, int]]] = {}
    for i in range(pairs):
        for name, tree in trees if i % 2 == 0 else trees[::-1]:
            for what, n in ((f"{lines} lines", lines), ("whole", None)):
                got.setdefault((name, what), []).append(first_lines(tree, args, n))
    print(f"`{' '.join(args)}` through a pipe, {pairs} rounds\n")
    print("| tree | read | first line s | end s | CPU s | peak RSS MB (max) | exit codes |")
    print("|---|---|---:|---:|---:|---:|---|")
    for (name, what), runs in got.items():
        print(
            f"| {name} | {what} | {statistics.median(r[0] for r in runs):.2f} | "
            f"{statistics.median(r[1] for r in runs):.2f} | {statistics.median(r[2] for r in runs):.2f} | "
            f"{max(r[3] for r in runs)} | {sorted({r[4] for r in runs})} |"
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout of rlsql")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--shell", action="store_true", help="run the arguments as a shell line")
    parser.add_argument("--first-lines", type=int, help="time the first N lines through a pipe, and the whole")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in opts.tree)]
    if opts.first_lines:
        main_first_lines(trees, args, opts.pairs, opts.first_lines)
        return
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
