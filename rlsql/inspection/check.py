"""`rlsql check`: validate run folders and list every problem with its file and line.

A run is unusable when none of its CSV artifacts yields a readable row; `rlsql check` then exits 3.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rlsql.catalog.catalog import load_catalog
from rlsql.core import settings
from rlsql.core.errors import DataError
from rlsql.core.exactpaths import why_unnameable
from rlsql.duck.memorydb import Connection, DuckError
from rlsql.duck.rejects import last_scan, lost_after, rejected_lines
from rlsql.engine.copies import Copies
from rlsql.engine.csvprobe import PROBE_FILE, parser_failure, probe_sql
from rlsql.engine.failures import data_error_text
from rlsql.engine.rawlogs import metrics_origin, reads_logs, unread_stat_lines, vllm_origin
from rlsql.engine.statements import open_connection, query_connection
from rlsql.runs import csvfiles as csvread
from rlsql.runs import harbor, trajectories
from rlsql.runs.artifacts import ARTIFACT_LABELS, INTEGER_COLUMNS
from rlsql.runs.config import config_problems, read_yaml
from rlsql.runs.folders import CSV_ARTIFACTS, HeaderError, Run, csv_header

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
            "run": self.run,
            "path": self.path,
            "usable": self.usable,
            "readable_rows": self.readable_rows,
            **self.counts(),
            "issues": [asdict(i) for i in self.issues],
        }


class CsvProbes:
    """Each CSV's probe (row, cell and reject counts), for all runs in one scan per header.

    A probe per file is a DuckDB query per file (~15 ms each however small the file: 1,000 runs
    hold 3,000 CSVs); files that share a header and read buffer, as the runs of one parser
    version do, are scanned by one read_csv over the list and counted per file. A group whose
    scan fails (a file DuckDB cannot parse at all), or whose rejects name a file outside it, is
    probed file by file instead, exactly as a check of each run alone (_check_csv).
    """

    def __init__(self, con: Connection, runs: Sequence[Run]):
        self.results: dict[str, tuple[dict, list[tuple[str, int, str]]]] = {}
        groups: dict[tuple[str, tuple[str, ...], int | None], list[Path]] = {}
        for run in runs:
            for kind in CSV_ARTIFACTS:
                artifact = run.artifact(kind)
                if artifact is None or why_unnameable(artifact.path):
                    continue
                try:
                    header = csv_header(artifact.path).names
                    buffer = csvread.buffer_size([artifact.path]) if header else None
                except DataError:
                    continue  # _check_csv reports it
                if header and PROBE_FILE not in header:
                    groups.setdefault((kind, tuple(header), buffer), []).append(artifact.path)
        for (kind, names, buffer), paths in groups.items():
            if len(paths) > 1:
                self._probe(con, kind, list(names), buffer, paths)

    def _probe(self, con: Connection, kind: str, header: list[str], buffer: int | None, paths: list[Path]) -> None:
        before = last_scan(con)
        try:
            rows = con.execute(probe_sql(kind, None, header, buffer, paths)).fetchall()
        except DuckError:
            return  # each file alone, so the failure is the file's own
        columns = [d[0] for d in con.description]
        counted = {row[0]: dict(zip(columns[1:], row[1:], strict=True)) for row in rows}
        rejected = rejected_lines(con, before)
        wanted = {str(p) for p in paths}
        if not set(counted) <= wanted or not {r[0] for r in rejected} <= wanted:
            return
        empty = {name: 0 for name in columns[1:]}
        for path in wanted:
            mine = [r for r in rejected if r[0] == path]
            if not lost_after(path, (why for _, _, why in mine)):  # else checked alone, line-bounded
                self.results[path] = (counted.get(path, empty), mine)

    def get(self, path: Path) -> tuple[dict, list[tuple[str, int, str]]] | None:
        """(counts, rejected lines) of the CSV at `path`, when its group was probed together."""
        return self.results.get(str(path))


def _check_csv(con: Connection, report: RunReport, run: Run, kind: str, probes: CsvProbes | None = None) -> None:
    artifact = run.artifact(kind)
    if artifact is None:
        if reads_logs(run, kind):
            return  # read from the raw training logs: _check_logs
        prefixed, plain = CSV_ARTIFACTS[kind]
        report.add("info", run.path, f"no {ARTIFACT_LABELS[kind]} file (*_{prefixed} or {plain})")
        return
    unnameable = why_unnameable(artifact.path)
    if unnameable:
        skip_file(report, kind, artifact.path, unnameable)
        return
    try:
        read = csv_header(artifact.path)
    except HeaderError as exc:
        skip_file(report, kind, artifact.path, exc.problem, exc.line)
        return
    except DataError as exc:
        skip_file(report, kind, artifact.path, str(exc))
        return
    header = read.names
    notice = read.notice()
    if notice:
        report.add("warning", artifact.path, notice, 1)
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
        skip_file(report, kind, artifact.path, exc.problem, exc.line)
        return
    except DataError as exc:
        skip_file(report, kind, artifact.path, str(exc))
        return
    probed = probes.get(artifact.path) if probes is not None else None
    read_path: Path = artifact.path  # what DuckDB reads: the file, or its line-bounded copy
    if probed is not None:
        values, rejected = probed
    else:
        while True:  # the file, or its line-bounded copy when DuckDB cannot read it row by row (as queries do)
            before = last_scan(con)
            try:
                # fetchall: DuckDB stores the rejects once the scan has finished
                row = con.execute(probe_sql(kind, read_path, header, buffer)).fetchall()[0]
            except DuckError as exc:
                if read_path == artifact.path and (bounded := csvread.line_bounded_copy(artifact.path)) is not None:
                    read_path = Path(bounded)
                    continue
                line, problem = parser_failure(artifact.path, exc)
                report.add("error", artifact.path, problem, line)
                report.readable_rows[kind] = 0
                return
            columns = [d[0] for d in con.description]
            values = dict(zip(columns, row, strict=True))
            rejected = rejected_lines(con, before)
            if read_path == artifact.path and lost_after(read_path, (why for _, _, why in rejected)):
                read_path = Path(csvread.line_bounded_copy(artifact.path) or read_path)
                continue
            break
    report.readable_rows[kind] = values["rows"]
    for _, line, why in rejected:
        report.add("warning", artifact.path, f"row skipped: {why}", line)
    types = load_catalog().files[f"{kind}_src"].column_types(header)
    whole = INTEGER_COLUMNS[kind]
    cells = any(values.get(f"nonfinite_{i}", 0) or values.get(f"notwhole_{i}", 0) for i in range(len(header)))
    # the bytes DuckDB read: the file or its line-bounded copy (a line whose quote never closes is one record)
    scan = csvread.scan_records(read_path, [n for n in header if types[n] == "DOUBLE"], whole, cells)
    for index, name in enumerate(header):
        nonfinite = values.get(f"nonfinite_{index}", 0)
        if nonfinite:
            lines = [line for line, _ in scan.nonfinite.get(name, [])]
            report.add(
                "warning",
                artifact.path,
                f"{nonfinite} nan/inf cell(s) in column {name}: read as empty" + _lines_note(lines),
                lines[0] if lines else None,
            )
        if values.get(f"notwhole_{index}", 0) - (nonfinite or 0) > 0:
            for line, cell in scan.not_whole.get(name, []):
                report.add(
                    "warning",
                    artifact.path,
                    f"column {name}: {cell!r} is not a whole number up to 2**53: read as empty",
                    line,
                )
    # every data line must be a row DuckDB read or one it rejected (a line it dropped without a
    # word is what this catches); the count comes from Python's csv module, not from DuckDB
    if scan.failed is None and scan.records != values["rows"] + len(rejected):
        report.add(
            "warning",
            artifact.path,
            f"{scan.records} data rows in the file, DuckDB read {values['rows']} and rejected "
            f"{len(rejected)}: {scan.records - values['rows'] - len(rejected)} row(s) unaccounted for",
        )
    if values["rows"] == 0:
        report.add("info", artifact.path, "no readable data rows")


def skip_file(report: RunReport, kind: str, path: Path, problem: str, line: int | None = None) -> None:
    """A file no query reads: an error naming it (and the line), and no readable rows from it."""
    report.add("error", path, f"{problem}; file skipped, no rows read", line)
    report.readable_rows[kind] = 0


def _lines_note(lines: Sequence[int], shown: int = 5) -> str:
    if not lines:
        return ""
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:shown]))}{more})"


#: rows read from raw training logs (runs whose metrics or vLLM stats come from their logs)
LOG_ROWS = {
    "metric_rows": "SELECT run, count(*) FROM metric_rows {where} GROUP BY run",
    "vllm_seconds": "SELECT run, count(*) FROM vllm_seconds {where} GROUP BY run",
}


class ViewFindings:
    """The findings that need the typed views, for every run at once: one grouped query per finding.

    Asked per run (`WHERE run = ?`), each query re-read every run's files: a check over N runs
    read N x N files (300 runs: 100 s). Grouped by run, each is read once. When a grouped query
    fails (a damaged file DuckDB cannot read at all), that finding falls back to one query per
    run, so it is found, or fails, for the run it belongs to exactly as a check of that run alone.
    """

    HARBOR = (
        "SELECT run, source_file, problem, bad_values, nonfinite FROM harbor_trials_src {where} ORDER BY run, row_no"
    )
    # beside a trials CSV: the files that are no trial, and how the CSV's trials and result.json's meet
    FILL_PROBLEMS = (
        "SELECT run, source_file, problem FROM harbor_fill_src WHERE problem IS NOT NULL {also} ORDER BY run, row_no"
    )
    FILL = (
        "SELECT run, count(*) FILTER (WHERE in_csv AND in_json), count(*) FILTER (WHERE in_csv), "
        "count(*) FILTER (WHERE NOT in_csv) FROM (SELECT coalesce(c.run, j.run) AS run, "
        "c.run IS NOT NULL AS in_csv, j.run IS NOT NULL AS in_json "
        "FROM (SELECT DISTINCT run, trial_name FROM trials_src) AS c "
        "FULL JOIN trial_fill AS j ON j.run = c.run AND j.trial_name = c.trial_name) "
        "WHERE run IN (SELECT run FROM trial_fill) {also} GROUP BY run"
    )
    TWICE = (
        "SELECT run, step, list(DISTINCT log_file ORDER BY log_file) FROM metric_rows "
        "WHERE step IS NOT NULL {also} GROUP BY run, step HAVING count(*) > 1 ORDER BY run, step"
    )
    NO_STEP = "SELECT run, count(*) FROM metric_rows WHERE step IS NULL {also} GROUP BY run"
    # the first bad stamp in file order is the example, so the finding is the same however DuckDB
    # splits the scan among threads
    BAD_STAMPS = (
        "SELECT run, count(*), arg_min(datetime_str, row_no) FROM vllm_seconds WHERE ts IS NULL {also} GROUP BY run"
    )

    def __init__(self, con: Connection, runs: Sequence[Run]):
        self.con = con
        self.grouped: dict[str, dict[str, list[tuple]] | None] = {}
        wanted = {
            "harbor": any(r.artifact("harbor") and r.artifact("trials") is None for r in runs),
            "fill_problems": any(r.artifact("harbor") and r.artifact("trials") for r in runs),
            "fill": any(r.artifact("harbor") and r.artifact("trials") for r in runs),
            "twice": any(r.artifact("metrics") or r.artifact("logs") for r in runs),
            "no_step": any(r.artifact("metrics") or r.artifact("logs") for r in runs),
            "bad_stamps": any(r.artifact("vllm") or r.artifact("logs") for r in runs),
            "metric_rows": any(r.artifact("logs") for r in runs),
            "vllm_seconds": any(r.artifact("logs") for r in runs),
        }
        for key, needed in wanted.items():
            self.grouped[key] = self._all(key) if needed else {}

    def _sql(self, key: str, run: str | None) -> tuple[str, list]:
        template = {
            "harbor": self.HARBOR,
            "twice": self.TWICE,
            "no_step": self.NO_STEP,
            "bad_stamps": self.BAD_STAMPS,
            "fill": self.FILL,
            "fill_problems": self.FILL_PROBLEMS,
            **LOG_ROWS,
        }[key]
        if run is None:
            return template.format(where="", also=""), []
        return template.format(where="WHERE run = ?", also="AND run = ?"), [run]

    def _execute(self, key: str, run: str | None) -> list[tuple]:
        sql, params = self._sql(key, run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the rows skipped here are reported per line by _check_csv
            return self.con.execute(sql, params).fetchall()

    def _all(self, key: str) -> dict[str, list[tuple]] | None:
        try:
            rows = self._execute(key, None)
        except DuckError:
            return None  # asked run by run instead (rows_for)
        by_run: dict[str, list[tuple]] = {}
        for row in rows:
            by_run.setdefault(row[0], []).append(row[1:])
        return by_run

    def rows_for(self, key: str, run: str) -> list[tuple]:
        """The finding's rows for one run (without the run column)."""
        grouped = self.grouped[key]
        if grouped is not None:
            return grouped.get(run, [])
        return [row[1:] for row in self._execute(key, run)]


def _check_harbor(report: RunReport, run: Run, found: ViewFindings) -> None:
    """Harbor trial folders read in place: every result.json that is no trial or has values read as
    empty, each with its reason; the trials in flight (no result.json yet) as one count."""
    trace_jobs = run.artifact("harbor")
    if trace_jobs is None:
        return
    if run.artifact("trials") is not None:
        _check_fill(report, run, found)
        return
    try:
        rows = found.rows_for("harbor", run.name)
    except DuckError as exc:
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
        report.add(
            "info",
            trace_jobs.path,
            f"{in_flight} trial folder{'s' if in_flight != 1 else ''} without a result.json yet (in flight): not read",
        )


def _check_fill(report: RunReport, run: Run, found: ViewFindings) -> None:
    """trace_jobs beside a trials CSV: the CSV gives the trials, result.json the columns it lacks, by trial_name."""
    trace_jobs = run.artifact("harbor")
    assert trace_jobs is not None
    try:
        problems, counts = found.rows_for("fill_problems", run.name), found.rows_for("fill", run.name)
    except DuckError as exc:
        report.add("error", trace_jobs.path, data_error_text(exc))
        return
    for path, problem in problems:
        report.add("warning", path, f"{problem}: skipped, fills no trial")
    matched, listed, extra = counts[0] if counts else (0, 0, 0)
    report.add(
        "info",
        trace_jobs.path,
        f"the trials come from the CSV; result.json fills what it lacks (exception_message, started_at, "
        f"finished_at, durations it has no column for) for {matched:,} of its {listed:,} trials by "
        f"trial_name; {extra:,} result.json trial{'s are' if extra != 1 else ' is'} not in the CSV "
        "(not counted; --json-trials reads trace_jobs/ instead)",
    )


def _check_logs(report: RunReport, run: Run, found: ViewFindings, copies: Copies | None) -> None:
    """Raw training logs: which artifacts they give and how many rows (the metric logs' forms read from their
    entries among `copies`); or that the CSV wins."""
    logs = run.artifact("logs")
    if logs is None:
        return
    for kind, view in (("metrics", "metric_rows"), ("vllm", "vllm_seconds")):
        label = ARTIFACT_LABELS[kind]
        if not reads_logs(run, kind):
            report.add(
                "info",
                logs.path,
                f"{label} not read from the training logs: the run's CSV is used (rlsql --from-logs reads the logs)",
            )
            continue
        try:
            rows = sum(n for (n,) in found.rows_for(view, run.name))
        except DuckError as exc:
            report.readable_rows[kind] = 0
            report.add("error", logs.path, data_error_text(exc))
            continue
        report.readable_rows[kind] = rows
        origin = metrics_origin(run, copies) if kind == "metrics" else vllm_origin(run)
        report.add("info", logs.path, f"{label} read from the training logs: {origin}; {rows} row(s)")
        if kind == "vllm":
            for path, count, example in unread_stat_lines(run):
                report.add(
                    "info",
                    path,
                    f"{count} line(s) mention 'Avg prompt throughput' but are not vLLM stat lines "
                    f"rlsql reads (another actor, an unknown vLLM format, or a line still being written), "
                    f"e.g. {example[:120]!r}",
                )


def _check_config(report: RunReport, run: Run) -> None:
    config = run.artifact("config")
    if config is None:
        report.add("info", run.path, "no rl_config.yaml: the trainer's default exception routing applies")
        return
    tree, problem = read_yaml(config.path)
    if problem is not None:
        report.add("warning", config.path, f"{problem.problem}; the trainer's default routing applies", problem.line)
    if tree is not None:
        for text in config_problems(tree):
            report.add("warning", config.path, f"{text}; the trainer's default applies")


def _check_views(report: RunReport, run: Run, found: ViewFindings) -> None:
    """Findings that need the typed views: steps logged twice, vLLM stamps that do not parse."""
    metrics = run.artifact("metrics") or (run.artifact("logs") if reads_logs(run, "metrics") else None)
    if metrics is not None and report.readable_rows.get("metrics"):
        for step, logs in found.rows_for("twice", run.name):
            report.add(
                "info",
                metrics.path,
                f"step {step} logged {len(logs) if len(logs) > 1 else 'more than once'} times "
                f"({', '.join(logs)}): the first-seen row is used",
            )
        no_step = sum(n for (n,) in found.rows_for("no_step", run.name))
        if no_step:
            report.add("warning", metrics.path, f"{no_step} metric row(s) without a step number")
    vllm = run.artifact("vllm") or (run.artifact("logs") if reads_logs(run, "vllm") else None)
    if vllm is not None and report.readable_rows.get("vllm"):
        for count, example in found.rows_for("bad_stamps", run.name):
            if count:
                report.add(
                    "warning",
                    vllm.path,
                    f"{count} row(s) whose datetime_str is not MM-DD HH:MM:SS (e.g. {example!r}): no timestamp",
                )


@dataclass
class Findings:
    """What `rlsql check` says of a run's trajectories: the damaged files, the bad token counts, the counts, and
    the defects that cost no file but make a figure empty or unmatched (one line each)."""

    damaged: list[tuple[str, str]] = field(default_factory=list)
    bad_counts: list[tuple[str, str, float]] = field(default_factory=list)
    trials: int = 0
    with_trajectory: int = 0
    files: int = 0
    #: per file: (path, steps whose timestamp is no ISO 8601, the first of them)
    bad_stamps: list[tuple[str, int, str]] = field(default_factory=list)
    #: per file: (path, observation results whose source_call_id names no call of their step, the first id)
    orphans: list[tuple[str, int, str]] = field(default_factory=list)
    #: per trial: (trial folder, the continuation numbers missing before its last)
    gaps: list[tuple[str, list[int]]] = field(default_factory=list)
    #: per file: (path, the object, the first key written twice there): DuckDB reads the first, json the last
    repeated: list[tuple[str, str, str]] = field(default_factory=list)
    #: trial folders with a trajectory and no result.json (in flight), and those without agent/
    in_flight: list[str] = field(default_factory=list)
    no_agent: list[str] = field(default_factory=list)


#: per trajectory file, over trajectory_steps_src: its steps whose timestamp is written but is no ISO 8601 (the
#: first in the file as the example); the token counts are read so that their bad cells are recorded
_STAMPS = (
    'SELECT source_file, count(*) FILTER (WHERE bad), arg_min("timestamp", step_index) FILTER (WHERE bad), '
    "count(prompt_tokens) + count(completion_tokens) + count(cached_tokens) "
    'FROM (SELECT *, problem IS NULL AND "timestamp" IS NOT NULL AND ts IS NULL AS bad FROM ({sql})) '
    "GROUP BY source_file"
)
#: per trajectory file, over trajectory_texts_src: observation results whose source_call_id names no tool call of
#: their step (ATIF: the id of the call the result answers)
_ORPHANS = (
    "SELECT source_file, sum(len(orphans)), arg_min(orphans[1], step_index) FILTER (WHERE len(orphans) > 0) "
    "FROM (SELECT source_file, step_index, list_filter("
    'list_transform(from_json(observations, \'[{{"source_call_id": "VARCHAR"}}]\'), '
    "lambda o: o.source_call_id), "
    "lambda i: i IS NOT NULL AND NOT list_contains(coalesce(list_transform("
    'from_json(calls, \'[{{"tool_call_id": "VARCHAR"}}]\'), lambda c: c.tool_call_id), []), i)) AS orphans '
    "FROM ({sql}) WHERE problem IS NULL) GROUP BY source_file HAVING sum(len(orphans)) > 0"
)


def trajectory_findings(runs: Sequence[Run], copies: Copies | None = None) -> dict[str, Findings]:
    """run -> Findings, for the runs with trajectories: two reads of every file (over trajectory_steps_src, the
    damaged files and bad counts recorded as its warnings name them, and the bad timestamps; over
    trajectory_texts_src, the observations answering no call), and the listing's gaps, trials in flight and trial
    folders without agent/."""
    from rlsql.duck.badcells import BadCells
    from rlsql.duck.damagedfiles import forget, recorded
    from rlsql.runs.trajectories import list_trajectories, trace_jobs_of

    found = {run.name: Findings() for run in runs if trace_jobs_of(run) is not None}
    if not found:
        return found
    with_files = [r for r in runs if r.name in found]
    by_path = {f"{trace_jobs_of(r)}/": r.name for r in with_files}

    def owner(path: str) -> str | None:
        return next((name for prefix, name in by_path.items() if path.startswith(prefix)), None)

    bad = BadCells()
    con, sql = query_connection(with_files, "trajectory_steps_src", bad_cells=bad, copies=copies)
    for path, count, example, _ in con.execute(_STAMPS.format(sql=sql)).fetchall():
        if count and (holder := owner(path)) is not None:
            found[holder].bad_stamps.append((path, count, example))
    for path, (holder, problem) in sorted(recorded(con).items()):
        found[holder].damaged.append((path, problem))
    forget(con)
    con.close()
    con, sql = query_connection(with_files, "trajectory_texts_src")
    for path, count, example in con.execute(_ORPHANS.format(sql=sql)).fetchall():
        if (holder := owner(path)) is not None:
            found[holder].orphans.append((path, int(count), example))
    forget(con)
    con.close()
    for path, where, key in _repeated_keys(with_files):
        if (holder := owner(path)) is not None:
            found[holder].repeated.append((path, where, key))
    for (path, _, column), value in sorted(bad.cells.items()):
        if (holder := owner(path)) is not None:
            found[holder].bad_counts.append((path, column, value))
    for run in with_files:
        trace_jobs = trace_jobs_of(run)
        assert trace_jobs is not None
        listing = list_trajectories(trace_jobs)
        mine = found[run.name]
        mine.trials, mine.files = listing.trials, len(listing.files)
        mine.with_trajectory = listing.trials - listing.without
        mine.no_agent = listing.no_agent
        segments: dict[str, list[int]] = {}
        for f in listing.files:
            segments.setdefault(f.trial, []).append(f.segment)
        for trial, numbers in segments.items():
            missing = sorted(set(range(max(numbers))) - set(numbers))
            if missing:
                mine.gaps.append((trial, missing))
            if not os.path.lexists(trace_jobs / trial / "result.json"):
                mine.in_flight.append(trial)
    for findings in found.values():
        findings.bad_stamps.sort()
        findings.orphans.sort()
    return found


def _repeated_keys(runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(file, object, key) of each trajectory file with an object that writes a key rlsql may read twice
    (sql/sources/_repeated_keys.sql.j2): one more parse of every file, for `rlsql check` alone."""
    from rlsql.duck.memorydb import memory_connection
    from rlsql.runs.trajectories import render_context

    context = render_context(runs, record=False)
    if not context["files"]:
        return []
    sql = load_catalog().env.get_template("sources/_repeated_keys.sql.j2").render(**context)
    con = memory_connection()
    try:
        return [(str(path), where, key) for path, where, key in con.execute(sql).fetchall()]
    finally:
        con.close()


def _check_trajectories(report: RunReport, run: Run, found: dict) -> None:
    """Agents' trajectories: how many trial folders have none, each damaged file, each bad token count, each
    defect that leaves a figure empty or unmatched."""
    mine = found.get(run.name)
    if mine is None:
        return
    artifact = run.artifact("trajectories")
    if artifact is None:
        return
    trace_jobs = artifact.path
    report.readable_rows["trajectories"] = mine.files - len(mine.damaged)
    report.add(
        "info",
        trace_jobs,
        f"{mine.with_trajectory} of {mine.trials} trial folders have a trajectory "
        f"({mine.files} files); {mine.trials - mine.with_trajectory} have none (no agent/ or no "
        "agent/trajectory.json)",
    )
    for trial in mine.no_agent[: trajectories.SHOWN_FILES]:
        report.add("info", trace_jobs / trial, "no agent/ folder: the trial has no trajectory")
    if len(mine.no_agent) > trajectories.SHOWN_FILES:
        report.add(
            "info",
            trace_jobs,
            f"{len(mine.no_agent) - trajectories.SHOWN_FILES} more trial folders have no agent/ folder",
        )
    for trial in mine.in_flight:
        report.add(
            "info",
            trace_jobs / trial,
            "a trajectory and no result.json (a trial in flight): its steps are read, it has no trials row yet",
        )
    for trial, missing in mine.gaps:
        names = ", ".join(f"trajectory.cont-{n}.json" for n in missing[:3]) + (" ..." if len(missing) > 3 else "")
        report.add(
            "warning",
            trace_jobs / trial / trajectories.AGENT_DIR,
            f"continuation gap: no {names}; the segments there are read in order",
        )
    for path, problem in mine.damaged:
        report.add("warning", path, f"{problem}: {trajectories.SKIPPED}")
    for path, column, value in mine.bad_counts:
        shown = int(value) if value == value and abs(value) != float("inf") and value.is_integer() else value
        report.add("warning", path, f"{column}: {shown} is not a whole number from 0 to 2**53: read as empty")
    for path, count, example in mine.bad_stamps:
        report.add("warning", path, f"{count} step(s) whose timestamp is not ISO 8601 (e.g. {example!r}): ts is empty")
    for path, where, key in mine.repeated:
        report.add(
            "warning",
            path,
            f"{where} writes key {key!r} twice: rlsql reads the first value, Python's json "
            "and Harbor the last (the file is read; its value may differ from theirs)",
        )
    for path, count, example in mine.orphans:
        report.add(
            "warning",
            path,
            f"{count} observation result(s) whose source_call_id names no tool call of "
            f"their step (e.g. {example!r}): counted for no call",
        )


#: the views and sources of the connection `rlsql check` opens
VIEWS_READ = ("metric_rows", "vllm_seconds", "harbor_trials_src", "trial_fill", "trials_src")
#: everything it reads through copies (the copies `--cache` builds for it): those, and the trajectory steps
READS = (*VIEWS_READ, "trajectory_steps_src")


def check_runs(runs: Sequence[Run], copies: Copies | None = None) -> list[RunReport]:
    """`rlsql check` of `runs`, reading their fresh `copies` where the command hands some in."""
    reports = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", harbor.HarborFilesWarning)  # each file is listed as an issue below
        con = open_connection(runs, VIEWS_READ, copies=copies)
    found = ViewFindings(con, runs)
    probes = CsvProbes(con, runs)
    agents = trajectory_findings(runs, copies)  # one read of every trajectory file
    for run in runs:
        report = RunReport(run.name, str(run.path))
        for ignored in run.ignored:
            if (
                settings.current().from_logs
                and "logs" in run.artifacts
                and ignored.name.endswith(CSV_ARTIFACTS["metrics"] + CSV_ARTIFACTS["vllm"])
            ):
                report.add("info", ignored, "not read: --from-logs reads the run's training logs instead")
                continue
            if (
                "harbor" in run.artifacts
                and "trials" not in run.artifacts
                and ignored.name.endswith(CSV_ARTIFACTS["trials"])
            ):
                report.add("info", ignored, "not read: --json-trials reads the run's trace_jobs/ instead")
                continue
            report.add("info", ignored, "older parse (or unprefixed copy) not read: a newer file wins")
        for kind in CSV_ARTIFACTS:
            _check_csv(con, report, run, kind, probes)
        _check_harbor(report, run, found)
        _check_trajectories(report, run, agents)
        _check_logs(report, run, found, copies)
        _check_config(report, run)
        _check_views(report, run, found)
        if not any(report.readable_rows.values()):
            report.usable = False
            report.add("error", run.path, "no readable rows in any artifact: no query can use this run")
        reports.append(report)
    return reports


ISSUE_COLUMNS = ["run", "severity", "file", "line", "problem"]
SUMMARY_COLUMNS = [
    "run",
    "usable",
    "errors",
    "warnings",
    "infos",
    "metric_rows",
    "trials",
    "vllm_seconds",
    "harbor_trials",
    "trajectory_files",
]


def summary_rows(reports: Sequence[RunReport]) -> list[tuple]:
    return [
        (
            r.run,
            r.usable,
            *r.counts().values(),
            r.readable_rows.get("metrics"),
            r.readable_rows.get("trials"),
            r.readable_rows.get("vllm"),
            r.readable_rows.get("harbor"),
            r.readable_rows.get("trajectories"),
        )
        for r in reports
    ]
