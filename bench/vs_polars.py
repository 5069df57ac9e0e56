"""rlsql against the scripts a user would write instead: polars, pandas, and a bare DuckDB statement.

Usage (from the repository root, in a venv with ``pip install '.[bench]'``: installed as a user installs
it; an editable install adds its import hook, ~8 ms, to every rlsql start)::

    python bench/make_run.py --preset 1m /work/bench-data/1m          # runs live outside the repository
    python bench/vs_polars.py --run real=/work/bench-data/real --run 1m=/work/bench-data/1m \\
        --pairs 5 --markdown-out bench/RESULTS.md
    python bench/vs_polars.py --run 10m=/work/bench-data/10m --pairs 3 --tools rlsql,polars,duckdb,rlsql-cached

For every run and trial-level named query it runs each tool as a whole fresh process, as a user
would, in paired rounds: round i runs the tools one after the other, in an order that alternates
(A B C D, then D C B A, ...), so slow and fast moments of a shared machine fall on every tool
alike; rlsql's time over each other tool's is taken per round and the median of those ratios is
reported beside the medians of wall time, CPU time (user + system) and peak RSS. Per child the
accounting is what ``/usr/bin/time -v`` reports: ``os.wait4`` rusage (ru_utime, ru_stime,
ru_maxrss). Before the timed rounds each tool runs once untimed (the OS file cache warm), and its
output is checked against rlsql's: every tool must print the same figures (same rows, values equal
to 1e-9) or the table says so.

Tools: ``rlsql`` (``rlsql query NAME --run DIR -f csv``, CSV read in place: RLSQL_CACHE=off, the
first query a user asks of the files), ``rlsql-cached`` (the run's Parquet copies built first by
``rlsql cache build``, untimed: every later question on the same files), ``polars``
(bench/polars_baseline.py), ``pandas`` (bench/pandas_baseline.py), ``duckdb`` (bench/duckdb_baseline.py).
Measured, never asserted.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
RLSQL = str(Path(PY).parent / "rlsql")
QUERIES = [
    "turn_stats",
    "turns_by_exception",
    "turns_by_outcome",
    "turn_percentiles",
    "exception_distribution",
    "exception_treatment",
    "reward_summary",
    "trial_phases",
]
TOOLS = ["rlsql", "rlsql-cached", "polars", "pandas", "duckdb"]
SCRIPTS = {"polars": "polars_baseline.py", "pandas": "pandas_baseline.py", "duckdb": "duckdb_baseline.py"}


@dataclass
class Run:
    """One timed child process."""

    wall: float
    cpu: float
    rss_mb: float
    ok: bool
    output: str


@dataclass
class Cell:
    """Every timed run of one tool on one (run, query)."""

    runs: list[Run] = field(default_factory=list)
    same: bool | None = None  # prints rlsql's figures (None: rlsql itself, or not compared)
    note: str = ""

    def median(self, what: str) -> float:
        values = [getattr(r, what) for r in self.runs]
        return statistics.median(values) if values else math.nan


def command(tool: str, name: str, run_dir: Path) -> list[str]:
    if tool.startswith("rlsql"):
        return [RLSQL, "query", name, "--run", str(run_dir), "-f", "csv"]
    return [PY, str(BENCH / SCRIPTS[tool]), name, str(run_dir)]


class Environments:
    """The environment of each tool's process; the rlsql cache folders live in a scratch folder."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.base = {k: v for k, v in os.environ.items() if k not in ("RLSQL_CACHE", "RLSQL_CACHE_DIR")}
        # Python's bytecode cache as an installed package has it (pip compiles polars' and pandas' at
        # install; an editable rlsql under PYTHONDONTWRITEBYTECODE=1 compiled ~25 modules per start)
        self.base.pop("PYTHONDONTWRITEBYTECODE", None)
        self.built: dict[Path, Path] = {}

    def cached_dir(self, run_dir: Path) -> Path:
        """A cache folder with `run_dir`'s entries built (by `rlsql cache build`, untimed)."""
        if run_dir not in self.built:
            folder = self.scratch / f"cache-{len(self.built)}"
            env = {**self.base, "RLSQL_CACHE_DIR": str(folder)}
            subprocess.run(
                [RLSQL, "cache", "build", "--run", str(run_dir)], env=env, check=True, stdout=subprocess.DEVNULL
            )
            self.built[run_dir] = folder
        return self.built[run_dir]

    def for_tool(self, tool: str, run_dir: Path) -> dict[str, str]:
        if tool == "rlsql":
            return {**self.base, "RLSQL_CACHE": "off", "RLSQL_CACHE_DIR": str(self.scratch / "unused-cache")}
        if tool == "rlsql-cached":
            return {**self.base, "RLSQL_CACHE_DIR": str(self.cached_dir(run_dir))}
        return dict(self.base)


def timed(cmd: list[str], env: dict[str, str]) -> Run:
    """Run `cmd` once; wall time, the child's CPU and peak RSS from wait4 (what /usr/bin/time -v reads)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read()
        if proc.returncode != 0:
            text = err.read()[-500:]
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode == 0, text)


def cells(text: str) -> list[list[object]]:
    def value(cell: str) -> object:
        if cell == "":
            return None
        try:
            return float(cell)
        except ValueError:
            return cell

    return [[value(c) for c in row] for row in csv.reader(io.StringIO(text))]


def same_figures(a: str, b: str) -> bool:
    """Same header, same rows, numbers equal to 1e-9 (an integer printed `3` equals `3.0`)."""
    ra, rb = cells(a), cells(b)
    if len(ra) != len(rb):
        return False
    for x, y in zip(ra, rb, strict=True):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) and isinstance(v, float):
                if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif u != v:
                return False
    return True


def order(tools: list[str], round_no: int) -> list[str]:
    """A B C D, then D C B A: each tool runs early and late equally often."""
    return tools if round_no % 2 == 0 else tools[::-1]


def measure(
    label: str, run_dir: Path, names: list[str], tools: list[str], pairs: int, envs: Environments
) -> dict[str, dict[str, Cell]]:
    results: dict[str, dict[str, Cell]] = {}
    for name in names:
        row = results[name] = {t: Cell() for t in tools}
        reference, ref_tool = None, None
        for tool in tools:  # untimed: warm caches, and check that the tool prints rlsql's figures
            first = timed(command(tool, name, run_dir), envs.for_tool(tool, run_dir))
            if not first.ok:
                row[tool].note = "failed: " + (first.output.strip().splitlines() or ["?"])[-1][:80]
            elif reference is None:  # tools[0] (rlsql) is the reference
                reference, ref_tool = first.output, tool
            else:
                row[tool].same = same_figures(reference, first.output)
        for round_no in range(pairs):
            for tool in order(tools, round_no):
                if row[tool].note:
                    continue
                got = timed(command(tool, name, run_dir), envs.for_tool(tool, run_dir))
                row[tool].runs.append(got)
                if not got.ok:
                    row[tool].note = "failed: " + (got.output.strip().splitlines() or ["?"])[-1][:80]
                elif tool != ref_tool and reference is not None:
                    row[tool].same = row[tool].same is not False and same_figures(reference, got.output)
        walls = " ".join(f"{t}={row[t].median('wall'):.2f}s" for t in tools)
        print(f"[{label}] {name}: {walls}", file=sys.stderr, flush=True)
    return results


def paired_ratio(a: Cell, b: Cell, what: str) -> float:
    """Median over rounds of a's value over b's in the same round."""
    ratios = [getattr(x, what) / getattr(y, what) for x, y in zip(a.runs, b.runs, strict=False) if getattr(y, what) > 0]
    return statistics.median(ratios) if ratios else math.nan


def fmt(x: float, digits: int = 2) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}f}"


def markdown(
    label: str,
    run_dir: Path,
    results: dict[str, dict[str, Cell]],
    tools: list[str],
    pairs: int,
    load: tuple[float, float],
) -> str:
    base = "rlsql" if "rlsql" in tools else tools[0]
    others = [t for t in tools if t != base]
    lines = [
        f"### {label}: `{run_dir}` ({trial_rows(run_dir):,} trials), {pairs} paired rounds, "
        f"load {load[0]:.1f} before / {load[1]:.1f} after",
        "",
        "Per tool: median wall s / CPU s / peak RSS MB. Ratios: " + base + "'s over the tool's, "
        "median of the per-round ratios (below 1: " + base + " is faster / smaller).",
        "",
        "| query | " + " | ".join(tools) + " | " + " | ".join(f"{base} ÷ {t} wall, CPU, RSS" for t in others) + " |",
        "|---|" + "---:|" * (len(tools) + len(others)),
    ]
    for name, row in results.items():
        cols = []
        for t in tools:
            c = row[t]
            if c.note:
                cols.append(c.note)
                continue
            mark = " (**different figures**)" if c.same is False else ""
            cols.append(f"{fmt(c.median('wall'))} / {fmt(c.median('cpu'))} / {c.median('rss_mb'):.0f}{mark}")
        for t in others:
            cols.append(", ".join(fmt(paired_ratio(row[base], row[t], w)) for w in ("wall", "cpu", "rss_mb")))
        lines.append(f"| {name} | " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"


def trial_rows(run_dir: Path) -> int:
    found = sorted(run_dir.glob("*_trial_results.csv")) or [run_dir / "trial_results.csv"]
    with found[-1].open("rb") as fh:
        return max(sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b"")) - 1, 0)


def versions() -> str:
    def version(module: str) -> str:
        done = subprocess.run(
            [PY, "-c", f"import {module}; print({module}.__version__)"], capture_output=True, text=True
        )
        return done.stdout.strip() or "absent"

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return (
        f"- machine: {os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}\n"
        f"- Python {platform.python_version()}, duckdb {version('duckdb')}, polars {version('polars')}, "
        f"pandas {version('pandas')}\n"
        f"- rlsql at {commit.stdout.strip()}{' plus uncommitted changes' if dirty else ''}; "
        f"measured {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}\n"
        f"- the driver's own peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB "
        "(a child's ru_maxrss starts from its parent's at the fork)\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="LABEL=DIR",
        help="a run folder to measure, with its label (repeatable)",
    )
    parser.add_argument("--pairs", type=int, default=5, help="timed rounds per query (default 5)")
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated trial queries")
    parser.add_argument("--tools", default="rlsql,polars,pandas,duckdb", help=f"comma-separated, of {TOOLS}")
    parser.add_argument("--scratch", type=Path, help="folder for the rlsql cache folders (default: a temp dir)")
    parser.add_argument("--markdown-out", type=Path, help="append the tables to this file")
    parser.add_argument("--json-out", type=Path, help="write every timed run here")
    args = parser.parse_args(argv)
    tools = args.tools.split(",")
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        parser.error(f"unknown tools {unknown}")
    names = args.queries.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="rlsql-bench-", dir=args.scratch))
    envs = Environments(scratch)
    out = [versions()]
    raw: dict = {}
    try:
        for spec in args.run:
            label, _, folder = spec.partition("=")
            run_dir = Path(folder).resolve()
            before = os.getloadavg()[0]
            results = measure(label, run_dir, names, tools, args.pairs, envs)
            after = os.getloadavg()[0]
            out.append(markdown(label, run_dir, results, tools, args.pairs, (before, after)))
            raw[label] = {
                q: {t: [r.__dict__ | {"output": None} for r in c.runs] for t, c in row.items()}
                for q, row in results.items()
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # only the folder this run made
    text = "\n".join(out)
    text += "\nCommand: `python bench/vs_polars.py " + " ".join(argv if argv is not None else sys.argv[1:]) + "`\n"
    print(text)
    if args.markdown_out:
        with args.markdown_out.open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    if args.json_out:
        args.json_out.write_text(json.dumps(raw, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
