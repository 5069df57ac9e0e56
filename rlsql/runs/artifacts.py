"""Artifact policy: what each artifact of a run is called, which artifacts stand in for one another,
where rlsql looked for one, and whether a query can be answered from the runs given.

It sits with the runs (README, "Architecture"): it knows run folders and artifact kinds, not SQL. The
files it is handed are the catalogue's (rlsql.catalog.catalog.SqlFile), described here by the three fields it reads.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Protocol

from rlsql.core.errors import DataError, RlsqlWarning
from rlsql.runs.folders import CONFIG_NAMES, CSV_ARTIFACTS, HARBOR_DIR, HARBOR_RESULT, Run

ARTIFACT_LABELS = {
    "metrics": "trainer metrics",
    "trials": "trial results",
    "vllm": "vLLM engine stats",
    "config": "rl_config.yaml",
    "harbor": "Harbor trial results",
    "logs": "raw training logs",
    "trajectories": "agent trajectories",
}
#: an artifact a source reads -> the artifacts that satisfy it (a run's trials come from its CSV, else
#: from Harbor's trace_jobs/*/result.json)
ARTIFACT_ALTERNATIVES = {"trials": ("trials", "harbor"), "harbor": ("trials", "harbor")}
#: ...and trainer metrics and vLLM stats come from the CSV, else from the raw training logs (rlsql/engine/rawlogs.py)
ARTIFACT_ALTERNATIVES.update({"metrics": ("metrics", "logs"), "vllm": ("vllm", "logs")})


#: columns that hold whole numbers (turns, tokens, steps, counts), read as DOUBLE so `3.0` parses and
#: handed on as BIGINT; a cell with a fraction or beyond 2**53 (where a DOUBLE stops holding every
#: integer) reads as empty instead of being rounded or failing a cast (`rlsql check` lists it)
INTEGER_COLUMNS = {
    "trials": ("n_episodes", "n_input_tokens", "n_output_tokens"),
    # counts: read as BIGINT by the sources (issue 16), through the same guard
    "metrics": (
        "trainer/global_step",
        "global_step",
        "async/discarded_count",
        "async/effective_batch_groups",
        "async/effective_batch_samples",
        "generate/min_num_tokens",
        "generate/max_num_tokens",
        "batch_errors/total_batches",
        "batch_errors/total_instances",
        "batch_errors/total_successful",
        "batch_errors/total_failed",
        "batch_errors/total_masked",
    ),
    "vllm": (
        "n_engines_reporting",
        "unique_ips",
        "total_running_requests",
        "total_waiting_requests",
        "min_running_requests",
        "max_running_requests",
    ),
}


class ReadsArtifact(Protocol):
    """What check_artifacts reads of a catalogue file (an rlsql.catalog.catalog.SqlFile)."""

    name: str
    kind: str
    artifact: str | None
    optional: bool


def where_looked(run: Run, kind: str) -> str:
    if kind == "config":
        return f"{run.path} for {' or '.join(CONFIG_NAMES)}"
    if kind == "harbor":
        return f"{run.path} for {HARBOR_DIR}/*/{HARBOR_RESULT}"
    if kind == "trajectories":
        return f"{run.path} for {HARBOR_DIR}/*/agent/trajectory.json"
    prefixed, plain = CSV_ARTIFACTS[kind]
    if kind == "trials":
        return f"{run.path} for *_{prefixed}, {plain} or {HARBOR_DIR}/*/{HARBOR_RESULT}"
    return f"{run.path} for *_{prefixed}, {plain} or training logs (*.out, *.log, logs/)"


class MissingArtifact(DataError):
    """No run has an artifact a query reads. `absent`: that said without the query's name (an export that
    skips several queries for it says it once)."""

    def __init__(self, message: str, absent: str):
        super().__init__(message)
        self.absent = absent


def check_artifacts(runs: Sequence[Run], files: Iterable[ReadsArtifact], query: str) -> None:
    """Fail when no run has an artifact the query reads; warn for the runs that lack it.

    A query or view whose header says `optional: true` reads every artifact as optional: findings (a run lacking
    one has no rows from the rules that read it), run_summary and run_table (one row per run, whatever it has:
    a Harbor evaluation run without trainer metrics has its trial figures, its training figures NULL). That is
    no news worth a warning."""
    files = list(files)
    if any(f.name == query and f.kind in ("query", "view") and f.optional for f in files):
        return
    for f in files:
        if f.kind != "source" or not f.artifact or f.optional:
            continue
        kinds = ARTIFACT_ALTERNATIVES.get(f.artifact, (f.artifact,))
        lacking = [r for r in runs if all(r.artifact(kind) is None for kind in kinds)]
        label = ARTIFACT_LABELS[f.artifact]
        if len(lacking) == len(runs):
            run = lacking[0]
            more = f" (nor do {len(lacking) - 1} other runs)" if len(lacking) > 1 else ""
            where = where_looked(run, f.artifact)
            raise MissingArtifact(
                f"{query} needs the {label} of run {run.name!r}, and there are none{more}: looked in {where}",
                f"no run has the {label} {'it reads' if len(runs) == 1 else f'they read ({len(runs):,} runs)'}: "
                f"looked in {where}",
            )
        for run in lacking:
            warnings.warn(
                f"run {run.name!r} has no {label} (looked in {where_looked(run, f.artifact)}); "
                f"{query} has nothing from it",
                RlsqlWarning,
                stacklevel=3,
            )
