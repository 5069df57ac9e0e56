"""Fleet benchmarks (issue 11): hundreds to thousands of run folders of mixed formats.

Usage (from the repository root)::

    python bench/fleet.py generate 1000 /work/bench-data/fleet-1000   # the fleet, once, outside the repo
    python bench/fleet.py run /work/bench-data/fleet-1000 [--only connect,check,...]

`generate` scales up the fixture run kinds of fixtures/generate.py: it writes the fixture tree once
into OUT/.templates, then copies one kind per run folder, cycling calendar, newest, tiny, harbor
(Harbor's trace_jobs/*/result.json) and harbor_csv, so a fleet mixes all three parser formats and
Harbor's own files. Each run's rl_config.yaml gets its own learning rate and staleness cap (so the
runs differ in config, as a real sweep does); the data files are byte copies. Deterministic: the
same N writes the same tree.

`run` times each piece of work in a fresh process with `/usr/bin/time -v` (wall clock and peak RSS)
and prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KINDS = ("calendar", "newest", "tiny", "harbor", "harbor_csv")
LEARNING_RATES = ("1.0e-06", "2.0e-06", "5.0e-07", "3.0e-06")
STALENESS = (4, 8, 16)


def generate(n: int, out: Path) -> None:
    templates = out / ".templates"
    if not templates.exists():
        subprocess.run([sys.executable, str(REPO / "fixtures" / "generate.py"), str(templates)], check=True)
    src = templates / "fixtures" / "runs" if (templates / "fixtures" / "runs").exists() else templates
    runs_root = out / "runs"
    runs_root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        target = runs_root / f"run-{i:05d}-{kind}"
        if target.exists():
            continue
        tmp = runs_root / f".tmp-{target.name}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src / kind, tmp)
        config = tmp / "rl_config.yaml"
        if config.exists():
            text = config.read_text(encoding="utf-8")
            lr = LEARNING_RATES[(i // len(KINDS)) % len(LEARNING_RATES)]
            cap = STALENESS[(i // 7) % len(STALENESS)]
            text = re.sub(r"(\blr: )\S+", rf"\g<1>{lr}", text)
            text = re.sub(r"(\bmax_staleness_steps: )\S+", rf"\g<1>{cap}", text)
            config.write_text(text, encoding="utf-8")
        tmp.rename(target)
    print(f"{n} runs under {runs_root}")


def timed(cmd: list[str], env: dict | None = None) -> dict:
    """Wall seconds and peak RSS (MB) of one fresh process, via /usr/bin/time -v."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-v", "-o", tf.name, *cmd],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        wall = time.perf_counter() - start
        rss = 0
        cpu = 0.0
        for line in Path(tf.name).read_text().splitlines():
            if "Maximum resident set size" in line:
                rss = int(line.split(":")[1]) / 1024
            elif "User time (seconds)" in line or "System time (seconds)" in line:
                cpu += float(line.split(":")[1])
    out = proc.stdout.strip().splitlines()[-1:] if cmd[0] == sys.executable and "-c" in cmd else []
    # the machine is shared: CPU seconds (user + system, all threads) and the load average beside the wall time
    return {
        "cmd": " ".join(cmd),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "rss_mb": round(rss),
        "load": round(os.getloadavg()[0], 1),
        "rc": proc.returncode,
        "err": proc.stderr.strip().splitlines()[-1:] if proc.returncode else [],
        "out": out,
    }


def rlsql_exe() -> str:
    return str(Path(sys.executable).with_name("rlsql"))


CONNECT_SNIPPET = (
    # `t` starts before rlsql.connect() is first looked up, so the imports it triggers count
    "import sys,time,rlsql; t=time.perf_counter(); con=rlsql.connect([sys.argv[1]]); "
    "c=time.perf_counter(); n=con.execute(sys.argv[2]).fetchall(); e=time.perf_counter(); "
    "print(f'connect {c-t:.2f} s, first query {e-c:.2f} s, total {e-t:.2f} s, {len(n)} rows')"
)


def query_names() -> list[str]:
    sys.path.insert(0, str(REPO))
    from rlsql.catalog.catalog import load_catalog

    return [q.name for q in load_catalog().queries()]


def bench(root: Path, only: set[str] | None, scratch: Path, queries: list[str] | None = None) -> list[dict]:
    runs = str(root / "runs")
    exe = rlsql_exe()
    results: list[dict] = []

    def add(label: str, cmd: list[str], env: dict | None = None) -> None:
        r = timed(cmd, env)
        r["what"] = label
        results.append(r)
        print(json.dumps(r), flush=True)

    def want(key: str) -> bool:
        return only is None or key in only

    nocache = {"RLSQL_CACHE_DIR": str(scratch / "no-cache")}
    if want("connect"):
        for sql in ("SELECT count(*) FROM runs", "SELECT * FROM run_overview", "SELECT count(*) FROM trials"):
            add(f"connect + `{sql}`", [sys.executable, "-c", CONNECT_SNIPPET, runs, sql], nocache)
    if want("queries"):
        for name in queries or query_names():
            add(
                f"query {name}",
                [exe, "query", name, "-r", runs, "-f", "csv", "-o", str(scratch / f"{name}.csv")],
                nocache,
            )
    if want("check"):
        add("check", [exe, "check", "-r", runs, "-f", "json"], nocache)
    if want("export"):
        add("export --all (unpartitioned)", [exe, "export", "--all", "-r", runs, "-o", str(scratch / "flat")], nocache)
        add(
            "export --all --partition-by run",
            [exe, "export", "--all", "-r", runs, "-o", str(scratch / "parts"), "--partition-by", "run"],
            nocache,
        )
        for label, folder in (("unpartitioned", "flat"), ("partitioned", "parts")):
            entries = [scratch / folder, *(scratch / folder).rglob("*")]
            files = [p.lstat() for p in entries if p.is_file()]
            folders = [p.lstat() for p in entries if p.is_dir()]
            # bytes: the files' sizes; du_sb: what `du -sb` adds up (folders' own sizes too, 4,096 B each on
            # ext4); allocated: the blocks on disk (`du -s --block-size=1`: a small file takes a whole block)
            results.append(
                {
                    "what": f"export size, {label}",
                    "bytes": sum(st.st_size for st in files),
                    "du_sb": sum(st.st_size for st in files + folders),
                    "allocated": sum(st.st_blocks * 512 for st in files + folders),
                    "files": len(files),
                    "folders": len(folders),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    if want("report"):
        ten = sorted(p for p in (root / "runs").iterdir() if p.is_dir())[:10]
        cmd = [exe, "report", "-o", str(scratch / "report")]
        for p in ten:
            cmd += ["-r", str(p)]
        add("report over 10 runs", cmd, nocache)
    if want("cache"):
        cache = {"RLSQL_CACHE_DIR": str(scratch / "cache")}
        add("cache build", [exe, "cache", "build", "-r", runs], cache)
        add(
            "query run_overview, cached",
            [exe, "query", "run_overview", "-r", runs, "-f", "csv", "-o", str(scratch / "cached.csv")],
            cache,
        )
    if want("pandas"):
        add(
            "pandas: turn_stats over the fleet",
            [sys.executable, str(REPO / "bench" / "fleet_baselines.py"), "pandas", runs],
        )
    if want("polars"):
        add(
            "polars: turn_stats over the fleet",
            [sys.executable, str(REPO / "bench" / "fleet_baselines.py"), "polars", runs],
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("n", type=int)
    g.add_argument("out", type=Path)
    r = sub.add_parser("run")
    r.add_argument("root", type=Path)
    r.add_argument("--only", help="comma-separated: connect,queries,check,export,report,cache,pandas,polars")
    r.add_argument("--json", type=Path, help="also write the results here")
    r.add_argument("--queries", help="comma-separated named queries for `queries` (default: every one)")
    args = parser.parse_args(argv)
    if args.command == "generate":
        generate(args.n, args.out)
        return
    only = set(args.only.split(",")) if args.only else None
    with tempfile.TemporaryDirectory(prefix="rlsql-fleet-") as scratch:
        print(f"load before: {os.getloadavg()}", flush=True)
        results = bench(args.root, only, Path(scratch), args.queries.split(",") if args.queries else None)
        print(f"load after: {os.getloadavg()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
