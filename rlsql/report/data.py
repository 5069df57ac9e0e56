"""Gather the report's rows: every number comes from a named query or a view, on one DuckDB connection.

This module only fetches rows; it computes no statistic. The figures (figures.py) and the tables
(render.py) draw and print what it returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from rlsql.catalog import load_catalog
from rlsql.connection import ARTIFACT_ALTERNATIVES, ARTIFACT_LABELS, open_connection, where_looked
from rlsql.duckdb_errors import one_line
from rlsql.errors import QueryError, RlsqlWarning
from rlsql.runs import Run
from rlsql.sqltext import identifier

#: named queries the report prints or draws
QUERIES = (
    "run_overview",
    "reward_curve",
    "best_checkpoint",
    "async_health",
    "timing_breakdown",
    "vllm_summary",
    "reward_summary",
    "turn_stats",
    "exception_distribution",
    "exception_treatment",
    "turns_by_exception",
    "turns_by_outcome",
    "turn_percentiles",
    "trial_phases",
)
#: views the report reads beyond the named queries (sql/views/)
VIEWS = (
    "metric_stats",
    "training_progression",
    "checkpoint_ema",
    "step_time_stack",
    "turn_histogram",
    "config_diff",
)
#: the vLLM series the vLLM figure draws (the vllm_series view: at most 2,000 points per log)
VLLM_SERIES_COLUMNS = (
    "run",
    "log_file",
    "ts",
    "avg_generation_throughput_per_engine",
    "avg_running_requests_per_engine",
    "avg_waiting_requests_per_engine",
    "avg_prefix_cache_hit_rate_pct",
)
#: which artifact each section of the report reads
SECTION_ARTIFACTS = {"training": "metrics", "trials": "trials", "vllm": "vllm"}

Rows = list[dict[str, Any]]


@dataclass
class ReportData:
    runs: list[Run]
    #: query or view name -> its rows as dicts (column order kept)
    rows: dict[str, Rows] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Rows:
        return self.rows[name]

    def has(self, artifact: str) -> list[Run]:
        """The runs that have `artifact` (metrics, trials, vllm, config); trials may be Harbor's result.json files."""
        kinds = ARTIFACT_ALTERNATIVES.get(artifact, (artifact,))
        return [r for r in self.runs if any(r.artifact(kind) is not None for kind in kinds)]


def _fetch(con: duckdb.DuckDBPyConnection, name: str, sql: str) -> tuple[list[str], Rows]:
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    except duckdb.Error as exc:
        raise QueryError(f"report: {name}: {one_line(exc)}") from exc
    return columns, rows


def gather(runs: Sequence[Run], step: Callable[[str], None] | None = None) -> ReportData:
    """Run every query and view the report needs over `runs` (one connection, views created once)."""
    step = step or (lambda _label: None)
    data = ReportData(list(runs))
    for section, artifact in SECTION_ARTIFACTS.items():
        for run in runs:
            if all(run.artifact(kind) is None for kind in ARTIFACT_ALTERNATIVES.get(artifact, (artifact,))):
                warnings.warn(
                    f"run {run.name!r} has no {ARTIFACT_LABELS[artifact]} (looked in {where_looked(run, artifact)}); "
                    f"the report's {section} section leaves it out",
                    RlsqlWarning,
                    stacklevel=2,
                )
    step("creating views")
    catalog = load_catalog()
    con = open_connection(runs, [*QUERIES, *VIEWS, "vllm_series"], catalog)
    for name in (*QUERIES, *VIEWS):
        step(name)
        data.columns[name], data.rows[name] = _fetch(con, name, f"SELECT * FROM {identifier(name)}")
    step("vllm_series")
    select = ", ".join(identifier(c) for c in VLLM_SERIES_COLUMNS)
    series = _fetch(con, "vllm_series", f"SELECT {select} FROM vllm_series")
    data.columns["vllm_series"], data.rows["vllm_series"] = series
    con.close()
    return data


def stage_count() -> int:
    """How many steps gather() reports (for a progress indicator)."""
    return 2 + len(QUERIES) + len(VIEWS)
