"""task_diff and run_diff on a real-sized pair of runs, against the script people write instead.

Usage (from the repository root)::

    python bench/compare_pair.py generate /work/bench-data/pair      # two runs: 2,600 tasks x 17 trials each
    python bench/compare_pair.py run /work/bench-data/pair --rounds 5

`generate` writes OUT/baseline and OUT/candidate, each a trials CSV of 2,600 tasks x 17 trials (44,200
trials, the real preset's size), the same success rate per task in both but for 40 tasks broken and 25
fixed (deterministic: fixed seeds). `run` times, in alternated rounds, each a fresh process:

- `rlsql query task_diff` and `rlsql query run_diff` over the two runs (CSV out to /dev/null);
- the hand-written baseline: pandas reads both CSVs, groups by task, and calls
  `scipy.stats.fisher_exact` per task and `scipy.stats.false_discovery_control` (what a notebook does).

It prints the median wall and CPU seconds (user + system, from `os.wait4`) and peak RSS of each, and
checks that the two agree on which tasks changed at alpha 0.05.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

TASKS, TRIALS, BROKEN, FIXED = 2_600, 17, 40, 25

BASELINE_SCRIPT = """
import sys
import pandas as pd
from scipy.stats import false_discovery_control, fisher_exact

def tasks(path):
    df = pd.read_csv(path)
    df = df[df.reward.notna()]
    return df.assign(success=df.reward > 0).groupby("task_name").success.agg(["size", "sum"])

base, run = tasks(sys.argv[1]), tasks(sys.argv[2])
both = base.join(run, lsuffix="_base", rsuffix="_run", how="inner")
both["p"] = [fisher_exact([[sb, nb - sb], [sr, nr - sr]]).pvalue
             for nb, sb, nr, sr in both[["size_base", "sum_base", "size_run", "sum_run"]].itertuples(index=False)]
both["q"] = false_discovery_control(both.p)
changed = both[both.q < 0.05]
print("\\n".join(sorted(changed.index)))
"""


def generate(out: Path) -> None:
    rng = random.Random(2600)
    broken = set(rng.sample(range(TASKS), BROKEN))
    fixed = set(rng.sample(sorted(set(range(TASKS)) - broken), FIXED))
    draw = random.Random(7)
    lines: dict[str, list[str]] = {"baseline": [], "candidate": []}
    for t in range(TASKS):
        rate = draw.random()
        for run in ("baseline", "candidate"):
            for i in range(TRIALS):
                if t in broken:
                    reward = 1.0 if run == "baseline" else 0.0
                elif t in fixed:
                    reward = 0.0 if run == "baseline" else 1.0
                else:
                    reward = 1.0 if draw.random() < rate else 0.0
                lines[run].append(f"task-{t:04d},task-{t:04d}__{run[0]}{i:06d},,{reward}")
    for run, rows in lines.items():
        folder = out / run
        folder.mkdir(parents=True, exist_ok=True)
        text = "task_name,trial_name,exception_type,reward\n" + "\n".join(rows) + "\n"
        (folder / "20260101_000000_trial_results.csv").write_text(text, encoding="utf-8")
    print(f"wrote {out}/baseline and {out}/candidate ({TASKS} tasks x {TRIALS} trials each)", file=sys.stderr)


def timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """wall s, CPU s (user + system, children included) and peak RSS MB of one process, and its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def run(out: Path, rounds: int) -> None:
    base, cand = out / "baseline", out / "candidate"
    rlsql = [sys.executable, "-m", "rlsql", "query"]
    tools = {
        "rlsql task_diff": [*rlsql, "task_diff", "-r", str(base), "-r", str(cand), "-f", "csv"],
        "rlsql run_diff": [*rlsql, "run_diff", "-r", str(base), "-r", str(cand), "-f", "csv"],
        "pandas + scipy": [
            sys.executable,
            "-c",
            BASELINE_SCRIPT,
            str(next(base.glob("*.csv"))),
            str(next(cand.glob("*.csv"))),
        ],
    }
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in tools}
    outputs: dict[str, str] = {}
    for _ in range(rounds):
        for name, cmd in tools.items():
            wall, cpu, rss, text = timed(cmd)
            results[name].append((wall, cpu, rss))
            outputs[name] = text
    rows = [line.split(",") for line in outputs["rlsql task_diff"].splitlines()]
    header = rows[0]
    ours = sorted(r[header.index("task_name")] for r in rows[1:] if r[header.index("verdict")] != "same")
    theirs = sorted(outputs["pandas + scipy"].split())
    print(f"changed tasks at alpha 0.05: rlsql {len(ours)}, pandas + scipy {len(theirs)}, same: {ours == theirs}")
    print("| tool | wall s (median) | CPU s (median) | peak RSS MB |")
    print("|---|---:|---:|---:|")
    for name, runs in results.items():
        print(
            f"| {name} | {statistics.median(r[0] for r in runs):.2f} | {statistics.median(r[1] for r in runs):.2f} "
            f"| {max(r[2] for r in runs):.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("generate").add_argument("out", type=Path)
    runner = sub.add_parser("run")
    runner.add_argument("out", type=Path)
    runner.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.out)
    else:
        run(args.out, args.rounds)


if __name__ == "__main__":
    main()
