"""What rlsql found in each run folder: files, row counts, steps, trials and the parser format."""

from __future__ import annotations

from collections.abc import Sequence

from rlsql.core.errors import DataError
from rlsql.engine.copies import Copies
from rlsql.engine.rawlogs import metrics_origin, vllm_origin
from rlsql.engine.statements import open_connection
from rlsql.runs.folders import Run, read_header

COLUMNS = [
    "run",
    "parser_format",
    "metrics_file",
    "metric_rows",
    "logs",
    "steps",
    "trials_file",
    "trials",
    "trajectories",
    "vllm_file",
    "vllm_seconds",
    "config_file",
    "ignored_files",
    "path",
]


def shown_path(run: Run) -> str:
    """The run's folder, or for a run given as a URL the URL (and the Hub commit) its copy came from."""
    return run.origin.shown() if run.origin is not None else str(run.path)


def parser_format(run: Run) -> str:
    """newest (metrics.csv, phase durations), mid-2026 (prefixed tables, agent_duration_sec), or older."""
    metrics, trials = run.artifact("metrics"), run.artifact("trials")
    try:
        trial_columns = set(read_header(trials.path)) if trials else set()
    except DataError:
        trial_columns = set()  # unreadable: the queries skip it with a warning; its format is not known
    if "trial_duration" in trial_columns or (metrics is not None and metrics.prefix is None):
        return "newest"
    if "agent_duration_sec" in trial_columns or metrics is not None:
        return "mid-2026"
    if trials is None and metrics is None and run.artifact("logs") is not None:
        return "raw logs"  # training logs (and maybe trace_jobs), no parser output
    if trials is None and run.artifact("harbor") is not None:
        return "harbor"  # Harbor's trace_jobs/*/result.json, no parser output
    return "older" if trials is not None else "unknown"


#: the views and sources `rlsql runs` reads (the copies `--cache` builds for it)
READS = ("steps", "trials_src", "harbor_trials_src", "vllm_src")


def inventory(runs: Sequence[Run], copies: Copies | None = None) -> tuple[list[str], list[tuple]]:
    """`rlsql runs`: a row per run, its files counted (from their fresh `copies` where the command hands some in)."""
    con = open_connection(runs, READS, copies=copies)

    def counts(sql: str) -> dict[str, tuple]:
        return {row[0]: row[1:] for row in con.execute(sql).fetchall()}

    metric = counts(
        "SELECT run, count(*), count(DISTINCT log_file), count(DISTINCT step) FROM metric_rows GROUP BY run"
    )
    trials = counts("SELECT run, count(*) FROM trials_src GROUP BY run")
    # a run without a trials CSV: its Harbor trial folders (trace_jobs/*/result.json)
    trials.update(counts("SELECT run, count(*) FROM harbor_trials_src WHERE problem IS NULL GROUP BY run"))
    vllm = counts("SELECT run, count(*) FROM vllm_src GROUP BY run")
    # trial folders with an agent trajectory (trace_jobs/<trial>/agent/trajectory.json), counted, none opened
    from rlsql.runs.trajectories import trajectory_counts

    agents = trajectory_counts(runs)
    rows = []
    for run in runs:

        def name(kind: str, run: Run = run) -> str | None:
            artifact = run.artifact(kind)
            if artifact is None and kind == "trials":
                artifact = run.artifact("harbor")  # shown as trace_jobs
            return artifact.path.name if artifact else None

        m = metric.get(run.name, (0, 0, 0))
        # trainer metrics and vLLM stats of a run without their CSV come from its raw logs
        metrics_file, vllm_file = metrics_origin(run, copies), vllm_origin(run)
        rows.append(
            (
                run.name,
                parser_format(run),
                metrics_file,
                m[0] if metrics_file else None,
                m[1] if metrics_file else None,
                m[2] if metrics_file else None,
                name("trials"),
                trials.get(run.name, (0,))[0] if name("trials") else None,
                agents[run.name][1] if run.name in agents else None,
                vllm_file,
                vllm.get(run.name, (0,))[0] if vllm_file else None,
                name("config"),
                len(run.ignored),
                shown_path(run),
            )
        )
    return COLUMNS, rows
