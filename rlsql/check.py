"""`rlsql check`: validate run folders and list every problem with its file and line.

A run is unusable when none of its CSV artifacts yields a readable row; `rlsql check` then exits 3.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb

from rlsql import csvread, harbor
from rlsql.catalog import load_catalog
from rlsql.config import config_problems, read_yaml
from rlsql.connection import ARTIFACT_LABELS, INTEGER_COLUMNS, open_connection
from rlsql.duckdb_errors import data_error_text, has_reject_tables, parser_failure, rejected_lines
from rlsql.duckpaths import why_unnameable
from rlsql.errors import DataError
from rlsql.logfiles import from_logs_requested
from rlsql.rawlogs import metrics_origin, reads_logs, unread_stat_lines, vllm_origin
from rlsql.runs import CSV_ARTIFACTS, HeaderError, Run, csv_header, read_header

#: columns a query reads from each artifact; a file without them still loads, with NULLs
EXPECTED_COLUMNS = {
    "metrics": ("log_file", "reward/avg_raw_reward", "timing/step"),
    "trials": ("trial_name", "n_episodes", "exception_type", "reward"),
    "vllm": ("log_file", "datetime_str", "avg_running_requests_per_engine", "total_waiting_requests"),
}
STEP_COLUMNS = ("trainer/global_step", "global_step")


@dataclass
class Issue:
    run: str
    severity: str  # error, warning or info
    file: str
    line: int | None
    problem: str


@dataclass
class RunReport:
    run: str
    path: str
    usable: bool = True
    readable_rows: dict[str, int] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)

    def add(self, severity: str, file: Path | str, problem: str, line: int | None = None) -> None:
        self.issues.append(Issue(self.run, severity, str(file), line, problem))

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for i in self.issues if i.severity == s) for s in ("error", "warning", "info")}

    def as_dict(self) -> dict:
        return {
            "run": self.run, "path": self.path, "usable": self.usable, "readable_rows": self.readable_rows,
            **self.counts(), "issues": [asdict(i) for i in self.issues],
        }


def probe_sql(kind: str, path: Path, header: list[str], buffer: int | None = None) -> str:
    """SQL that reads every column of one CSV as its source declares them (sources/_check_csv.sql.j2)."""
    catalog = load_catalog()
    types = catalog.files[f"{kind}_src"].column_types(header)
    return catalog.env.get_template("sources/_check_csv.sql.j2").render(
        path=str(path), header=header, types=types, integers=INTEGER_COLUMNS[kind], buffer=buffer
    )


def locate_unparsable_csv(runs: Sequence[Run], kinds: Sequence[str]) -> DataError | None:
    """After DuckDB failed without naming a file: probe each CSV a query reads and name the first that fails."""
    con = duckdb.connect()
    for run in runs:
        for kind in kinds:
            artifact = run.artifact(kind)
            header = read_header(artifact.path) if artifact is not None else []
            if not header:
                continue
            try:
                con.execute(probe_sql(kind, artifact.path, header)).fetchall()
            except duckdb.Error as exc:
                line, problem = parser_failure(artifact.path, exc)
                return DataError(f"{artifact.path}{'' if line is None else f':{line}'}: {problem}")
    return None


def _last_reject_scan(con: duckdb.DuckDBPyConnection) -> int:
    """The newest scan id in reject_errors, so one file's rejects are told from the ones before it."""
    if not has_reject_tables(con):
        return -1
    return con.execute("SELECT coalesce(max(scan_id), -1) FROM reject_errors").fetchone()[0]


def _check_csv(con: duckdb.DuckDBPyConnection, report: RunReport, run: Run, kind: str) -> None:
    artifact = run.artifact(kind)
    if artifact is None:
        if reads_logs(run, kind):
            return  # read from the raw training logs: _check_logs
        prefixed, plain = CSV_ARTIFACTS[kind]
        report.add("info", run.path, f"no {ARTIFACT_LABELS[kind]} file (*_{prefixed} or {plain})")
        return
    unnameable = why_unnameable(artifact.path)
    if unnameable:
        report.add("error", artifact.path, f"{unnameable}; file skipped, no rows read")
        report.readable_rows[kind] = 0
        return
    try:
        read = csv_header(artifact.path)
    except HeaderError as exc:
        report.add("error", artifact.path, f"{exc.problem}; file skipped, no rows read", exc.line)
        report.readable_rows[kind] = 0
        return
    except DataError as exc:
        report.add("error", artifact.path, f"{exc}; file skipped, no rows read")
        report.readable_rows[kind] = 0
        return
    header = read.names
    if read.notice():
        report.add("warning", artifact.path, read.notice(), 1)
    if not header:
        report.add("warning", artifact.path, "empty file (not even a header)", 1)
        report.readable_rows[kind] = 0
        return
    missing = [c for c in EXPECTED_COLUMNS[kind] if c not in header]
    if kind == "metrics" and not any(c in header for c in STEP_COLUMNS):
        missing.append("trainer/global_step or global_step")
    if missing:
        report.add("warning", artifact.path, f"no column {', '.join(missing)}: queries read it as empty", 1)
    try:
        buffer = csvread.buffer_size([artifact.path])
    except csvread.LongLineError as exc:
        report.add("error", artifact.path, f"{exc.problem}; file skipped, no rows read", exc.line)
        report.readable_rows[kind] = 0
        return
    except DataError as exc:
        report.add("error", artifact.path, f"{exc}; file skipped, no rows read")
        report.readable_rows[kind] = 0
        return
    before = _last_reject_scan(con)
    try:
        # fetchall: DuckDB stores the rejects once the scan has finished
        row = con.execute(probe_sql(kind, artifact.path, header, buffer)).fetchall()[0]
    except duckdb.Error as exc:
        line, problem = parser_failure(artifact.path, exc)
        report.add("error", artifact.path, problem, line)
        report.readable_rows[kind] = 0
        return
    columns = [d[0] for d in con.description]
    values = dict(zip(columns, row, strict=True))
    report.readable_rows[kind] = values["rows"]
    rejected = rejected_lines(con, before)
    for _, line, why in rejected:
        report.add("warning", artifact.path, f"row skipped: {why}", line)
    types = load_catalog().files[f"{kind}_src"].column_types(header)
    whole = INTEGER_COLUMNS[kind]
    cells = any(values.get(f"nonfinite_{i}", 0) or values.get(f"notwhole_{i}", 0) for i in range(len(header)))
    scan = csvread.scan_records(artifact.path, [n for n in header if types[n] == "DOUBLE"], whole, cells)
    for index, name in enumerate(header):
        nonfinite = values.get(f"nonfinite_{index}", 0)
        if nonfinite:
            lines = [line for line, _ in scan.nonfinite.get(name, [])]
            report.add("warning", artifact.path, f"{nonfinite} nan/inf cell(s) in column {name}: read as empty"
                       + _lines_note(lines), lines[0] if lines else None)
        if values.get(f"notwhole_{index}", 0) - (nonfinite or 0) > 0:
            for line, cell in scan.not_whole.get(name, []):
                report.add("warning", artifact.path,
                           f"column {name}: {cell!r} is not a whole number up to 2**53: read as empty", line)
    # every data line must be a row DuckDB read or one it rejected (a line it dropped without a
    # word is what this catches); the count comes from Python's csv module, not from DuckDB
    if scan.failed is None and scan.records != values["rows"] + len(rejected):
        report.add("warning", artifact.path,
                   f"{scan.records} data rows in the file, DuckDB read {values['rows']} and rejected "
                   f"{len(rejected)}: {scan.records - values['rows'] - len(rejected)} row(s) unaccounted for")
    if values["rows"] == 0:
        report.add("info", artifact.path, "no readable data rows")


def _lines_note(lines: Sequence[int], shown: int = 5) -> str:
    if not lines:
        return ""
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:shown]))}{more})"


def _check_harbor(con: duckdb.DuckDBPyConnection, report: RunReport, run: Run) -> None:
    """Harbor trial folders read in place: every result.json that is no trial or has values read as
    empty, each with its reason; the trials in flight (no result.json yet) as one count."""
    trace_jobs = run.artifact("harbor")
    if trace_jobs is None:
        return
    if run.artifact("trials") is not None:
        report.add("info", trace_jobs.path, "trace_jobs not read: the run's trials CSV is used instead")
        return
    try:
        rows = con.execute(
            "SELECT source_file, problem, bad_values, nonfinite FROM harbor_trials_src WHERE run = ? ORDER BY row_no",
            [run.name],
        ).fetchall()
    except duckdb.Error as exc:
        report.readable_rows["harbor"] = 0
        report.add("error", trace_jobs.path, data_error_text(exc))
        return
    report.readable_rows["harbor"] = sum(1 for _, problem, _, _ in rows if problem is None)
    for path, problem, bad, nonfinite in rows:
        if problem is not None:
            report.add("warning", path, f"{problem}: skipped, not a trial")
            continue
        if bad is not None:
            report.add("warning", path, f"{bad}: read as empty")
        if nonfinite is not None:
            report.add("warning", path, f"NaN or Infinity in {nonfinite}: read as empty")
    in_flight = harbor.list_trials(trace_jobs.path).in_flight
    if in_flight:
        report.add("info", trace_jobs.path,
                   f"{in_flight} trial folder{'s' if in_flight != 1 else ''} without a result.json yet (in flight): "
                   "not read")


def _check_logs(con: duckdb.DuckDBPyConnection, report: RunReport, run: Run) -> None:
    """Raw training logs: which artifacts they give and how many rows; or that the CSV wins."""
    logs = run.artifact("logs")
    if logs is None:
        return
    for kind, view, origin in (("metrics", "metric_rows", metrics_origin), ("vllm", "vllm_seconds", vllm_origin)):
        label = ARTIFACT_LABELS[kind]
        if not reads_logs(run, kind):
            report.add("info", logs.path, f"{label} not read from the training logs: the run's CSV is used "
                       "(rlsql --from-logs reads the logs)")
            continue
        try:
            rows = con.execute(f"SELECT count(*) FROM {view} WHERE run = ?", [run.name]).fetchone()[0]
        except duckdb.Error as exc:
            report.readable_rows[kind] = 0
            report.add("error", logs.path, data_error_text(exc))
            continue
        report.readable_rows[kind] = rows
        report.add("info", logs.path, f"{label} read from the training logs: {origin(run)}; {rows} row(s)")
        if kind == "vllm":
            for path, count, example in unread_stat_lines(run):
                report.add("info", path, f"{count} line(s) mention 'Avg prompt throughput' but are not vLLM stat lines "
                           f"rlsql reads (another actor, an unknown vLLM format, or a line still being written), "
                           f"e.g. {example[:120]!r}")


def _check_config(report: RunReport, run: Run) -> None:
    config = run.artifact("config")
    if config is None:
        report.add("info", run.path, "no rl_config.yaml: the trainer's default exception routing applies")
        return
    tree, problem = read_yaml(config.path)
    if problem is not None:
        report.add("warning", config.path, f"{problem.problem}; the trainer's default routing applies", problem.line)
    if tree is not None:
        for problem in config_problems(tree):
            report.add("warning", config.path, f"{problem}; the trainer's default applies")


def _check_views(con: duckdb.DuckDBPyConnection, report: RunReport, run: Run) -> None:
    """Findings that need the typed views: steps logged twice, vLLM stamps that do not parse."""
    metrics = run.artifact("metrics") or (run.artifact("logs") if reads_logs(run, "metrics") else None)
    if metrics is not None and report.readable_rows.get("metrics"):
        twice = con.execute(
            "SELECT step, list(DISTINCT log_file ORDER BY log_file) FROM metric_rows "
            "WHERE run = ? AND step IS NOT NULL GROUP BY step HAVING count(*) > 1 ORDER BY step",
            [run.name],
        ).fetchall()
        for step, logs in twice:
            report.add("info", metrics.path,
                       f"step {step} logged {len(logs) if len(logs) > 1 else 'more than once'} times "
                       f"({', '.join(logs)}): the first-seen row is used")
        no_step = con.execute(
            "SELECT count(*) FROM metric_rows WHERE run = ? AND step IS NULL", [run.name]
        ).fetchone()[0]
        if no_step:
            report.add("warning", metrics.path, f"{no_step} metric row(s) without a step number")
    vllm = run.artifact("vllm") or (run.artifact("logs") if reads_logs(run, "vllm") else None)
    if vllm is not None and report.readable_rows.get("vllm"):
        bad = con.execute(
            "SELECT count(*), any_value(datetime_str) FROM vllm_seconds WHERE run = ? AND ts IS NULL", [run.name]
        ).fetchone()
        if bad[0]:
            report.add("warning", vllm.path,
                       f"{bad[0]} row(s) whose datetime_str is not MM-DD HH:MM:SS (e.g. {bad[1]!r}): no timestamp")


def check_runs(runs: Sequence[Run]) -> list[RunReport]:
    reports = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", harbor.HarborFilesWarning)  # each file is listed as an issue below
        con = open_connection(runs, ["metric_rows", "vllm_seconds", "harbor_trials_src"])
    for run in runs:
        report = RunReport(run.name, str(run.path))
        for ignored in run.ignored:
            if from_logs_requested() and "logs" in run.artifacts and ignored.name.endswith(
                CSV_ARTIFACTS["metrics"] + CSV_ARTIFACTS["vllm"]
            ):
                report.add("info", ignored, "not read: --from-logs reads the run's training logs instead")
                continue
            report.add("info", ignored, "older parse (or unprefixed copy) not read: a newer file wins")
        for kind in CSV_ARTIFACTS:
            _check_csv(con, report, run, kind)
        _check_harbor(con, report, run)
        _check_logs(con, report, run)
        _check_config(report, run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the rows skipped here were reported per line above
            _check_views(con, report, run)
        if not any(report.readable_rows.values()):
            report.usable = False
            report.add("error", run.path, "no readable rows in any artifact: no query can use this run")
        reports.append(report)
    return reports


ISSUE_COLUMNS = ["run", "severity", "file", "line", "problem"]
SUMMARY_COLUMNS = [
    "run", "usable", "errors", "warnings", "infos", "metric_rows", "trials", "vllm_seconds", "harbor_trials",
]


def summary_rows(reports: Sequence[RunReport]) -> list[tuple]:
    return [
        (r.run, r.usable, *r.counts().values(),
         r.readable_rows.get("metrics"), r.readable_rows.get("trials"), r.readable_rows.get("vllm"),
         r.readable_rows.get("harbor"))
        for r in reports
    ]
