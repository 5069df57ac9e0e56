"""Benchmark every named query over one run folder: cold CLI, warm connection, the pandas baseline.

Usage (from the repository root, with the dev venv)::

    python bench/make_run.py --preset real /work/bench-data/real
    python bench/run_bench.py /work/bench-data/real --label real --repeat 7 --profile --markdown-out bench/RESULTS.md
    python bench/run_bench.py /work/bench-data/10m --label 10m --repeat 3 --trials-only --explain 3 --skip-warm

What it measures (medians of --repeat runs, after one untimed run that warms the OS file cache):

- cold: ``rlsql query NAME --run DIR -f csv > /dev/null`` in a fresh process, as a user runs it;
  wall time and the child's peak RSS (``os.wait4`` rusage, per child).
- warm: one fresh Python process does ``con = rlsql.connect([DIR])`` and then times
  ``con.execute('SELECT * FROM NAME').fetchall()`` per query (the views read the CSVs again each time).
- pandas: ``python bench/pandas_baseline.py NAME DIR`` in a fresh process (read_csv + groupby).
- report: ``rlsql report --run DIR -o TMP`` cold (skipped with a note if the command is absent).
- --profile: ``python -X importtime`` of the CLI path and a start-up breakdown (imports, catalog
  load, run discovery, view creation, query) from rlsql internals, each in a fresh process.
- --explain N: ``EXPLAIN ANALYZE`` of the N slowest cold queries, written to bench/plans/LABEL_NAME.txt.

Prints markdown tables; --markdown-out FILE appends them, --json-out FILE writes the raw numbers.
Measured, never asserted: nothing here fails because something is slow.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
TIME = "/usr/bin/time"  # GNU time: peak RSS (%M) and CPU seconds of one child
TRIAL_QUERIES = [
    "turn_stats",
    "turn_percentiles",
    "turns_by_exception",
    "turns_by_outcome",
    "exception_distribution",
    "exception_treatment",
    "reward_summary",
    "trial_phases",
]
REAL_TARGET_S = 0.5
SPEEDUP_TARGET = 5.0
MEMORY_TARGET_MB = 2048.0


@dataclass
class Sample:
    """Medians over repeated runs of one command."""

    median_s: float
    min_s: float
    max_s: float
    peak_rss_mb: float
    runs: int
    cpu_s: float = float("nan")  # median user + system seconds of the child (less sensitive to load)
    ok: bool = True
    note: str = ""


@dataclass
class Row:
    name: str
    cold: Sample | None = None
    warm_s: float | None = None
    pandas: Sample | None = None


@dataclass
class Results:
    label: str
    run: str
    repeat: int
    rows: list[Row] = field(default_factory=list)
    warm_connect_s: float | None = None
    warm_peak_rss_mb: float | None = None
    report: Sample | None = None
    report_note: str = ""
    load_before: str = ""
    load_after: str = ""
    startup: dict[str, dict[str, float]] = field(default_factory=dict)
    importtime: list[tuple[str, int, int]] = field(default_factory=list)
    python_startup_s: float | None = None
    plans: list[str] = field(default_factory=list)
    scans: dict[str, dict[str, int]] = field(default_factory=dict)


def rlsql_exe() -> str:
    return shutil.which("rlsql", path=str(Path(PY).parent)) or shutil.which("rlsql") or "rlsql"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_child(cmd: list[str]) -> tuple[float, float, int, str, float]:
    """Run `cmd` with stdout to /dev/null: (wall s, peak RSS MB of that child, exit code, stderr tail, CPU s).

    The peak RSS comes from /usr/bin/time (GNU time, ``%M``), not from this process's rusage: a child's
    ``ru_maxrss`` starts at the RSS of the process that forked it, so it would report this script's size.
    """
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
        start = time.perf_counter()
        code = subprocess.run(
            [TIME, "-o", stats.name, "-f", "%M %U %S", *cmd], stdout=subprocess.DEVNULL, stderr=err, check=False
        ).returncode
        elapsed = time.perf_counter() - start
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
        fields = stats.read().split()[-3:]
    rss_kb, user, system = (float(x) for x in fields) if len(fields) == 3 else (float("nan"),) * 3
    return elapsed, rss_kb / 1024, code, tail[0], user + system


def measure(cmd: list[str], repeat: int, warmup: bool = True) -> Sample:
    """Median wall time and max peak RSS of `repeat` runs of `cmd` (after one untimed warm-up run)."""
    if warmup:
        _, _, code, tail, _ = run_child(cmd)
        if code != 0:
            nan = float("nan")
            return Sample(nan, nan, nan, nan, 0, ok=False, note=f"exit {code}: {tail}")
    samples = [run_child(cmd) for _ in range(repeat)]
    times = [s[0] for s in samples]
    bad = [s for s in samples if s[2] != 0]
    return Sample(
        statistics.median(times),
        min(times),
        max(times),
        max(s[1] for s in samples),
        repeat,
        cpu_s=statistics.median(s[4] for s in samples),
        ok=not bad,
        note=f"exit {bad[0][2]}: {bad[0][3]}" if bad else "",
    )


def query_names() -> list[str]:
    from rlsql.catalog.catalog import sql_root

    return sorted(p.stem for p in (sql_root() / "queries").glob("*.sql"))


def pandas_names() -> list[str]:
    sys.path.insert(0, str(BENCH))
    from pandas_baseline import STATISTICS  # type: ignore[import-not-found]

    return list(STATISTICS)


# ----------------------------------------------------------------------------------------------
# Work done inside fresh child processes (python bench/run_bench.py --child KIND ...)
# ----------------------------------------------------------------------------------------------


def child_warm(run: str, names: list[str], repeat: int) -> dict:
    """One process, one connection: time connect() and each query `repeat` times."""
    import resource

    start = time.perf_counter()
    import rlsql

    con = rlsql.connect([run])
    connect_s = time.perf_counter() - start
    out: dict[str, float] = {}
    for name in names:
        times = []
        for _ in range(repeat + 1):  # the first run is a warm-up
            t0 = time.perf_counter()
            con.execute(f'SELECT * FROM "{name}"').fetchall()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times[1:])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"connect_s": connect_s, "queries": out, "peak_rss_mb": rss}


def child_startup(run: str, name: str) -> dict:
    """Where the time of one `rlsql query NAME` goes, phase by phase, in a fresh process.

    View creation is split into rendering the SQL (Jinja, in Python) and executing the CREATE
    statements (DuckDB parses and binds each view, which also opens the CSVs it names).
    """
    t0 = time.perf_counter()
    import duckdb  # the biggest import, timed on its own

    t1 = time.perf_counter()
    from rlsql.catalog.catalog import load_catalog
    from rlsql.engine.statements import object_statements
    from rlsql.outputs.formats import render
    from rlsql.runs.artifacts import check_artifacts
    from rlsql.runs.folders import resolve_runs

    t2 = time.perf_counter()
    catalog = load_catalog()
    t3 = time.perf_counter()
    runs = resolve_runs([run])
    needed = catalog.closure([name])
    check_artifacts(runs, needed, name)
    t4 = time.perf_counter()
    statements = object_statements(runs, needed, catalog)
    t5 = time.perf_counter()
    con = duckdb.connect(":memory:")
    for _, statement in statements:
        con.execute(statement)
    t6 = time.perf_counter()
    cursor = con.execute(f'SELECT * FROM "{name}"')
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    t7 = time.perf_counter()
    render("csv", columns, rows)
    t8 = time.perf_counter()
    return {
        "import duckdb": t1 - t0,
        "import rlsql (+typer, jinja2, yaml)": t2 - t1,
        "load_catalog": t3 - t2,
        "resolve_runs + check": t4 - t3,
        "render view SQL (Jinja)": t5 - t4,
        "CREATE views (DuckDB bind)": t6 - t5,
        "execute + fetch": t7 - t6,
        "format csv": t8 - t7,
    }


def operators(node: dict, depth: int = 0) -> list[tuple[float, int, str, int, str]]:
    """Flatten a DuckDB JSON profile tree: (seconds, rows, name, depth, short detail) per operator."""
    info = node.get("extra_info") or {}
    detail = "; ".join(
        f"{k}: {v if isinstance(v, str) else ', '.join(map(str, v))}"[:110]
        for k, v in info.items()
        if k in ("Function", "Projections", "Aggregates", "Groups", "Conditions", "Join Type", "Order By")
    )
    seconds, rows = float(node.get("timing", 0.0)), int(node.get("intermediate_rows", 0))
    out = [(seconds, rows, str(node.get("name")), depth, detail)]
    for child in node.get("children", []):
        out.extend(operators(child, depth + 1))
    return out


def profile_summary(profile: dict) -> str:
    """The headline of a JSON profile: wall, CPU, binding, peak buffer memory and the costliest operators."""
    query, system = profile.get("query", {}), profile.get("system", {})
    ops = [op for root in profile.get("operator", []) for op in operators(root)]
    nan = float("nan")
    lines = [
        f"total {query.get('total_time', nan):.3f} s, operator CPU {query.get('cpu_time', nan):.3f} s, "
        f"binding {profile.get('planner', {}).get('binding_time', float('nan')):.3f} s, "
        f"optimizer {profile.get('optimizer', {}).get('total_time', float('nan')):.3f} s, "
        f"rows scanned {query.get('total_rows_scanned', 0):,}, "
        f"peak buffer memory {system.get('peak_buffer_memory', 0) / 2**20:.0f} MiB, "
        f"spilled {system.get('total_bytes_spilled', 0) / 2**20:.0f} MiB",
        "",
        "costliest operators (seconds summed over threads, output rows, depth in the tree):",
    ]
    for seconds, rows, name, depth, detail in sorted(ops, key=lambda o: -o[0])[:10]:
        lines.append(f"  {seconds:8.3f} s {rows:>12,} rows  d{depth:<3} {name:22} {detail}")
    scans = [o for o in ops if o[2] in ("READ_CSV", "TABLE_SCAN", "READ_CSV_AUTO")]
    lines.append(f"CSV/table scans in the plan: {len(scans)} (a file read twice shows up twice)")
    return "\n".join(lines)


def child_explain(run: str, names: list[str], out_dir: str, label: str) -> dict:
    """EXPLAIN ANALYZE each query on a connection holding only its own views; write the plans.

    Each file has a summary from DuckDB's JSON profile (costliest operators, peak buffer memory, scans)
    followed by the EXPLAIN ANALYZE tree.
    """
    from rlsql.catalog.catalog import load_catalog
    from rlsql.engine.statements import open_connection
    from rlsql.runs.folders import resolve_runs

    catalog = load_catalog()
    runs = resolve_runs([run])
    written = []
    for name in names:
        con = open_connection(runs, [name], catalog)
        with tempfile.TemporaryDirectory(prefix="rlsql-bench-profile-") as tmp:
            profile_path = Path(tmp) / "profile.json"
            con.execute("SET enable_profiling = 'json'")
            con.execute(f"SET profiling_output = '{profile_path}'")
            con.execute(f'SELECT * FROM "{name}"').fetchall()
            con.execute("SET enable_profiling = 'no_output'")
            summary = profile_summary(json.loads(profile_path.read_text(encoding="utf-8")))
        con.execute("PRAGMA disable_profiling")
        plan = con.execute(f'EXPLAIN ANALYZE SELECT * FROM "{name}"').fetchall()
        text = "\n".join(line.rstrip() for row in plan for line in str(row[-1]).splitlines())
        path = Path(out_dir) / f"{label}_{name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"-- SELECT * FROM {name}  (run {run}; DuckDB JSON profile, then EXPLAIN ANALYZE)\n{summary}\n\n{text}\n",
            encoding="utf-8",
        )
        written.append(str(path))
        con.close()
    return {"plans": written}


def scan_kind(projections: list[str]) -> str:
    """Which artifact a READ_CSV reads, guessed from its projected columns (EXPLAIN does not name the file)."""
    cols = set(projections)
    if cols & {"n_episodes", "exception_type", "reward", "trial_name", "task_name", "agent_duration_sec"}:
        return "trials"
    if cols & {"datetime_str", "n_engines_reporting", "avg_running_requests_per_engine"}:
        return "vllm"
    return "metrics"


def child_scans(run: str, names: list[str]) -> dict:
    """How many CSV scans each query's physical plan holds (EXPLAIN, not executed), per artifact."""
    from rlsql.catalog.catalog import load_catalog
    from rlsql.engine.statements import open_connection
    from rlsql.runs.folders import resolve_runs

    catalog = load_catalog()
    runs = resolve_runs([run])
    out: dict[str, dict[str, int]] = {}
    for name in names:
        con = open_connection(runs, [name], catalog)
        plan = json.loads(con.execute(f'EXPLAIN (FORMAT json) SELECT * FROM "{name}"').fetchall()[0][1])
        counts: dict[str, int] = {}
        stack = list(plan)
        while stack:
            node = stack.pop()
            info = node.get("extra_info") or {}
            if node.get("name") == "READ_CSV" or info.get("Function") == "READ_CSV":
                projections = info.get("Projections") or []
                kind = scan_kind([projections] if isinstance(projections, str) else projections)
                counts[kind] = counts.get(kind, 0) + 1
            stack.extend(node.get("children", []))
        out[name] = counts
        con.close()
    return out


def in_child(kind: str, *args: str) -> dict:
    """Run one of the child_* functions in a fresh interpreter and return its JSON."""
    cmd = [PY, str(Path(__file__).resolve()), "--child", kind, *args]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------
# Profiles
# ----------------------------------------------------------------------------------------------


def importtime(run: str, name: str) -> list[tuple[str, int, int]]:
    """`python -X importtime -m rlsql query NAME`: (top-level package, summed self us, modules), costliest first.

    Self times are summed per top-level package (``duckdb``, ``typer``, ``pydantic``, ``rlsql``, ...), so
    each microsecond is counted once, wherever in the import tree the package was pulled in.
    """
    cmd = [PY, "-X", "importtime", "-m", "rlsql", "query", name, "--run", run, "-f", "csv"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    totals: dict[str, list[int]] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, _, module = line.removeprefix("import time:").split("|")
        if module.strip() in ("rlsql.__main__", "__main__"):
            continue  # `-m rlsql` runs the whole command inside this "import"
        package = module.strip().split(".")[0]
        entry = totals.setdefault(package, [0, 0])
        entry[0] += int(self_us.strip())
        entry[1] += 1
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][0])
    return [(package, us, count) for package, (us, count) in ranked[:15]]


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------


def fmt_s(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def to_markdown(res: Results) -> str:
    lines = [
        f"### {res.label}: `{res.run}`",
        "",
        f"Medians of {res.repeat} runs after one untimed warm-up; load average before {res.load_before}, "
        f"after {res.load_after}. Speed-up = pandas median / rlsql cold median.",
        "",
        "| query | rlsql cold s (min-max) | cold CPU s | cold peak RSS MB | warm s | pandas s | pandas CPU s "
        "| pandas peak RSS MB | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in res.rows:
        cold = row.cold
        cold_cell = (
            "-"
            if cold is None
            else (
                f"{fmt_s(cold.median_s)} ({fmt_s(cold.min_s)}-{fmt_s(cold.max_s)})"
                if cold.ok
                else f"FAILED: {cold.note}"
            )
        )
        rss = "-" if cold is None or not cold.ok else f"{cold.peak_rss_mb:.0f}"
        pandas = row.pandas
        p_cell = "-" if pandas is None else (fmt_s(pandas.median_s) if pandas.ok else f"FAILED: {pandas.note}")
        p_rss = "-" if pandas is None or not pandas.ok else f"{pandas.peak_rss_mb:.0f}"
        speed = "-"
        if cold and pandas and cold.ok and pandas.ok:
            speed = f"{pandas.median_s / cold.median_s:.1f}x"
        cold_cpu = fmt_s(cold.cpu_s) if cold and cold.ok else "-"
        p_cpu = fmt_s(pandas.cpu_s) if pandas and pandas.ok else "-"
        lines.append(
            f"| {row.name} | {cold_cell} | {cold_cpu} | {rss} | {fmt_s(row.warm_s)} | {p_cell} | {p_cpu} "
            f"| {p_rss} | {speed} |"
        )
    if res.warm_connect_s is not None:
        lines += [
            "",
            f"Warm: `rlsql.connect()` (every view and macro) took {fmt_s(res.warm_connect_s)} s; "
            f"the warm process peaked at {res.warm_peak_rss_mb:.0f} MB.",
        ]
    if res.report is not None:
        lines += [
            "",
            f"`rlsql report` cold: {fmt_s(res.report.median_s)} s median "
            f"({fmt_s(res.report.min_s)}-{fmt_s(res.report.max_s)}), peak RSS {res.report.peak_rss_mb:.0f} MB"
            + ("" if res.report.ok else f" (FAILED: {res.report.note})")
            + ".",
        ]
    elif res.report_note:
        lines += ["", res.report_note]
    if res.python_startup_s is not None:
        lines += ["", f"Bare interpreter start (`python -c pass`): {fmt_s(res.python_startup_s)} s."]
    if res.startup:
        phases = list(next(iter(res.startup.values())))
        lines += [
            "",
            "Start-up breakdown (median seconds per phase, fresh process each):",
            "",
            "| query | " + " | ".join(phases) + " | total |",
            "|---|" + "---:|" * (len(phases) + 1),
        ]
        for name, parts in res.startup.items():
            total = sum(parts.values())
            lines.append(f"| {name} | " + " | ".join(f"{parts[p]:.3f}" for p in phases) + f" | {total:.3f} |")
    if res.importtime:
        total_ms = sum(us for _, us, _ in res.importtime) / 1000
        lines += [
            "",
            f"`python -X importtime -m rlsql query {next(iter(res.startup), '...')}`: self time summed per "
            f"top-level package (top 15 sum to {total_ms:.0f} ms):",
            "",
            "| package | modules | ms |",
            "|---|---:|---:|",
        ]
        lines += [f"| {m} | {n} | {us / 1000:.1f} |" for m, us, n in res.importtime]
    if res.scans:
        lines += [
            "",
            "CSV scans in each query's physical plan (EXPLAIN; a file read twice counts twice):",
            "",
            "| query | trials | metrics | vllm |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {q} | {c.get('trials', 0)} | {c.get('metrics', 0)} | {c.get('vllm', 0)} |" for q, c in res.scans.items()
        ]
    if res.plans:
        lines += ["", "EXPLAIN ANALYZE plans: " + ", ".join(f"`{Path(p).relative_to(ROOT)}`" for p in res.plans)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", help="a run folder (e.g. /work/bench-data/real)")
    parser.add_argument("--label", help="name of this size in the output (default: the folder name)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--queries", nargs="*", help="named queries to time (default: all)")
    parser.add_argument("--trials-only", action="store_true", help="only the queries over trial_results")
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--skip-warm", action="store_true")
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--profile", action="store_true", help="importtime and the start-up breakdown")
    parser.add_argument("--explain", type=int, default=0, metavar="N", help="EXPLAIN ANALYZE the N slowest queries")
    parser.add_argument("--markdown-out", type=Path, help="append the markdown tables to FILE")
    parser.add_argument("--json-out", type=Path, help="write the raw numbers as JSON to FILE")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        if kind == "warm":
            result = child_warm(rest[0], rest[2:], int(rest[1]))
        elif kind == "startup":
            result = child_startup(rest[0], rest[1])
        elif kind == "scans":
            result = child_scans(rest[0], rest[1:])
        elif kind == "explain":
            result = child_explain(rest[0], rest[3:], rest[1], rest[2])
        else:
            raise SystemExit(f"unknown child {kind}")
        print(json.dumps(result))
        return
    if not args.run:
        parser.error("a run folder is required")

    run = str(Path(args.run).resolve())
    label = args.label or Path(run).name
    names = args.queries or query_names()
    if args.trials_only:
        names = [n for n in names if n in TRIAL_QUERIES]
    baseline = set(pandas_names())
    exe = rlsql_exe()
    res = Results(label, run, args.repeat, load_before=loadavg())
    print(f"# {label}: {run} ({platform.node()}, load {res.load_before})", file=sys.stderr)

    for name in names:
        row = Row(name)
        if not args.skip_cold:
            row.cold = measure([exe, "query", name, "--run", run, "-f", "csv"], args.repeat)
            print(
                f"  cold   {name:24} {fmt_s(row.cold.median_s):>8} s {row.cold.peak_rss_mb:7.0f} MB {row.cold.note}",
                file=sys.stderr,
            )
        if not args.skip_pandas and name in baseline:
            row.pandas = measure([PY, str(BENCH / "pandas_baseline.py"), name, run], args.repeat)
            print(
                f"  pandas {name:24} {fmt_s(row.pandas.median_s):>8} s {row.pandas.peak_rss_mb:7.0f} MB "
                f"{row.pandas.note}",
                file=sys.stderr,
            )
        res.rows.append(row)

    if not args.skip_warm:
        warm = in_child("warm", run, str(args.repeat), *names)
        res.warm_connect_s = warm["connect_s"]
        res.warm_peak_rss_mb = warm["peak_rss_mb"]
        for row in res.rows:
            row.warm_s = warm["queries"].get(row.name)
        print(f"  warm   connect {fmt_s(res.warm_connect_s)} s, peak {res.warm_peak_rss_mb:.0f} MB", file=sys.stderr)

    if not args.skip_report:
        exe_help = subprocess.run([exe, "report", "--help"], capture_output=True, text=True, check=False)
        if exe_help.returncode != 0:
            res.report_note = "`rlsql report` is absent in this build: not timed."
            print(f"  note: {res.report_note}", file=sys.stderr)
        else:
            with tempfile.TemporaryDirectory(prefix="rlsql-bench-report-") as tmp:
                res.report = measure(
                    [exe, "report", "--run", run, "-o", str(Path(tmp) / "out")], max(1, min(args.repeat, 3))
                )
            print(
                f"  report {fmt_s(res.report.median_s)} s {res.report.peak_rss_mb:.0f} MB {res.report.note}",
                file=sys.stderr,
            )

    if args.profile:
        res.python_startup_s = measure([PY, "-c", "pass"], args.repeat).median_s
        for name in names:
            samples = [in_child("startup", run, name) for _ in range(args.repeat)]
            res.startup[name] = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        res.importtime = importtime(run, names[0])

    if args.explain:
        timed = [r for r in res.rows if r.cold and r.cold.ok]
        slowest = [r.name for r in sorted(timed, key=lambda r: -r.cold.median_s)][: args.explain]  # type: ignore[union-attr]
        if slowest:
            res.plans = in_child("explain", run, str(BENCH / "plans"), label, *slowest)["plans"]
        res.scans = in_child("scans", run, *names)

    res.load_after = loadavg()
    text = to_markdown(res)
    print(text)
    if args.markdown_out:
        with args.markdown_out.open("a", encoding="utf-8") as handle:
            handle.write("\n" + text)
    if args.json_out:
        args.json_out.write_text(json.dumps(asdict(res), indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
