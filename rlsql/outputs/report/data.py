"""Gather the report's rows: every number comes from a named query or a view, on one DuckDB connection.

This module only fetches rows (and what `rlsql check` finds); it computes no statistic. The
figures (figures.py) and the tables (render.py) draw and print what it returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.params import Param
from rlsql.core.errors import QueryError, RlsqlWarning, UsageError, one_line
from rlsql.core.sqltext import identifier
from rlsql.duck.badcells import BadCells
from rlsql.duck.memorydb import Connection, DuckError
from rlsql.engine.copies import Copies
from rlsql.engine.query import set_variables
from rlsql.engine.statements import open_connection
from rlsql.runs.artifacts import ARTIFACT_ALTERNATIVES, ARTIFACT_LABELS
from rlsql.runs.folders import Run

#: named queries the report prints or draws
QUERIES = (
    "findings",  # the report's first section
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
    "run_summary",
    "log_summary",
    "metric_stats",
    "progression_rows",
    "checkpoint_ema",
    "step_time_stack",
    "step_signals",
    "timing_table",
    "turn_histogram",
    "config_diff",
    # the cross-run table, ranked, with its config keys in one MAP (the named query run_table spreads them
    # into columns fixed when the view is created; the report's `-p keys=` is a variable set afterwards)
    "run_ranking",
)
#: "Compared with the baseline": read only when `-p baseline=NAME` is given (their other parameter, alpha,
#: matters only then, and is not listed among the report's parameters otherwise)
BASELINE_QUERIES = ("run_diff", "task_diff")
#: what the comparison layout (many runs, no --per-run) reads: the cross-run table, the caveats and the figures
COMPARISON_SOURCES = (
    "findings",
    "run_ranking",
    "run_summary",
    "reward_curve",
    "best_checkpoint",
    "step_time_stack",
    "step_signals",
    "turn_histogram",
    "turns_by_exception",
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
#: run_ranking's ranked_by, as the report says it
RANKED_BY = {"final_ema": "final EMA", "success_rate": "success rate"}
#: runs checked per `rlsql check` pass (see gather)
CHECK_BATCH = 25
#: a warning naming the runs that lack an artifact lists at most this many names
NAMES_SHOWN = 10

Rows = list[dict[str, Any]]


@dataclass
class ReportData:
    runs: list[Run]
    #: query or view name -> its rows as dicts (column order kept)
    rows: dict[str, Rows] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    #: the parameter values the queries ran with (declared defaults included)
    params: dict[str, Any] = field(default_factory=dict)
    #: what `rlsql check` found (rlsql.inspection.check.RunReport per run)
    checks: list = field(default_factory=list)
    #: "What the agent did" (rlsql/report/agent.py), for runs with trajectories
    agent: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Rows:
        return self.rows[name]

    def has(self, artifact: str) -> list[Run]:
        """The runs that have `artifact` (metrics, trials, vllm, config); trials may be Harbor's result.json files."""
        return [r for r in self.runs if has_artifact(r, artifact)]

    def ranked(self) -> list[str]:
        """The ranked runs, best first (the run_ranking view: by final EMA of reward, else success rate)."""
        return [r["run"] for r in self.rows.get("run_ranking", []) if r["rank"] is not None]

    @property
    def ranked_by(self) -> str:
        """What the runs are ranked by, in words: 'final EMA' (of reward) or 'success rate'."""
        rows = self.rows.get("run_ranking", [])
        basis = str(rows[0]["ranked_by"]) if rows else "final_ema"
        return RANKED_BY.get(basis, basis)

    def highlighted(self, among: Collection[str] | None = None) -> tuple[str | None, str | None]:
        """(best, worst) of ranked(), or of the ranked runs in `among` (the runs a figure draws); worst is
        None with fewer than two."""
        order = [r for r in self.ranked() if among is None or r in among]
        if not order:
            return None, None
        return order[0], (order[-1] if len(order) > 1 else None)


def has_artifact(run: Run, artifact: str) -> bool:
    return any(run.artifact(kind) is not None for kind in ARTIFACT_ALTERNATIVES.get(artifact, (artifact,)))


def name_list(names: Sequence[str], cap: int = NAMES_SHOWN) -> str:
    """'a, b, c' capped at `cap` names, then 'and N more'."""
    shown = ", ".join(names[:cap])
    return shown + (f" and {len(names) - cap:,} more" if len(names) > cap else "")


def warn_missing_artifacts(runs: Sequence[Run]) -> None:
    """One warning per artifact that some runs lack, naming them (not one warning per run)."""
    for section, artifact in SECTION_ARTIFACTS.items():
        lacking = [r.name for r in runs if not has_artifact(r, artifact)]
        if not lacking:
            continue
        label = ARTIFACT_LABELS[artifact]
        if len(lacking) == 1:
            message = f"run {lacking[0]!r} has no {label}; the report's {section} section leaves it out"
        else:
            message = (
                f"{len(lacking)} runs have no {label}: {name_list(lacking)}; "
                f"the report's {section} section leaves them out"
            )
        warnings.warn(
            message,
            RlsqlWarning,
            stacklevel=3,
        )


def report_params(catalog: Catalog | None = None) -> dict[str, Param]:
    """Every parameter the report's queries and views declare, by name."""
    catalog = catalog or load_catalog()
    declared: dict[str, Param] = {}
    for f in catalog.closure([*QUERIES, *VIEWS, *BASELINE_QUERIES]):
        for p in f.params:
            declared.setdefault(p.name, p)
    return declared


def _baseline_only(catalog: Catalog) -> set[str]:
    """The parameters only the baseline comparison declares (baseline, alpha)."""
    others = {p.name for f in catalog.closure([*QUERIES, *VIEWS]) for p in f.params}
    return {p.name for f in catalog.closure(list(BASELINE_QUERIES)) for p in f.params} - others


def bind_report_params(given: dict[str, str], catalog: Catalog | None = None) -> dict[str, Any]:
    """`-p key=value` for the report: each key must be a parameter of a query the report runs."""
    declared = report_params(catalog)
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise UsageError(
            f"the report's queries have no parameter {', '.join(unknown)} (accepted: {', '.join(sorted(declared))})"
        )
    bound = {
        name: (param.convert(given[name]) if name in given else param.default)
        for name, param in sorted(declared.items())
    }
    if bound.get("baseline") is None:
        for name in _baseline_only(catalog or load_catalog()):
            bound.pop(name, None)
    return bound


def _fetch(con: Connection, name: str, sql: str) -> tuple[list[str], Rows]:
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    except DuckError as exc:
        raise QueryError(f"report: {name}: {one_line(exc)}") from exc
    return columns, rows


def gather(
    runs: Sequence[Run],
    step: Callable[..., None] | None = None,
    params: dict[str, str] | None = None,
    check: bool = True,
    tables: bool = True,
    bad_cells: BadCells | Literal[False] | None = False,
    copies: Copies | None = None,
) -> ReportData:
    """Run every query and view the report needs over `runs` (one connection, views created once).
    `bad_cells` and `copies`: the answer's attempt's (rlsql/engine/answer.py; False and None outside one).

    `tables=False` (the comparison layout without per-run sections) runs only COMPARISON_SOURCES.
    """
    wanted = [n for n in (*QUERIES, *VIEWS) if tables or n in COMPARISON_SOURCES]
    step = step or (lambda _label, stage=False: None)
    catalog = load_catalog()
    data = ReportData(list(runs), params=bind_report_params(params or {}, catalog))
    warn_missing_artifacts(runs)
    if check:
        from rlsql.inspection.check import check_runs

        step("checking the data (rlsql check)", stage=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # check reports each problem itself, as data
            # in batches: each run's findings are its own, and check's per-run queries scan every run of
            # the connection (300 runs at once: ~65 s; in batches of CHECK_BATCH: a few seconds)
            for start in range(0, len(runs), CHECK_BATCH):
                data.checks += check_runs(runs[start : start + CHECK_BATCH], copies)
    step(f"running {len(wanted)} queries and views", stage=True)
    from rlsql.outputs.report import agent  # "What the agent did": runs with agents' trajectories only

    agents = agent.has_trajectories(runs) and tables
    against = list(BASELINE_QUERIES) if data.params.get("baseline") is not None and len(runs) > 1 else []
    if against and data.params["baseline"] not in {r.name for r in runs}:
        # the report says so in its section too; a script reading only the exit code and stderr hears it here
        warnings.warn(
            RlsqlWarning(
                f"baseline {data.params['baseline']!r} names none of the runs "
                f"({', '.join(sorted(r.name for r in runs))}): nothing to compare with"
            ),
            stacklevel=2,
        )
    con = open_connection(
        runs,
        [*wanted, *against, "vllm_series", *(agent.QUERIES + agent.VIEWS if agents else ())],
        catalog,
        bad_cells=bad_cells,
        copies=copies,
    )
    set_variables(con, {pname: value for pname, value in data.params.items() if value is not None})
    for name in wanted:
        step(name)
        data.columns[name], data.rows[name] = _fetch(con, name, f"SELECT * FROM {identifier(name)}")
    for name in against:  # the baseline's comparison: every run's line, and the tasks that changed
        where = " WHERE verdict <> 'same'" if name == "task_diff" else ""
        data.columns[name], data.rows[name] = _fetch(con, name, f"SELECT * FROM {identifier(name)}{where}")
    step("vllm_series")
    select = ", ".join(identifier(c) for c in VLLM_SERIES_COLUMNS)
    series = _fetch(con, "vllm_series", f"SELECT {select} FROM vllm_series")
    data.columns["vllm_series"], data.rows["vllm_series"] = series
    if agents:
        step("what the agent did")
        data.agent = agent.gather(con, runs, lambda name, sql: _fetch(con, name, sql))
        for name in agent.QUERIES:
            data.rows[name] = data.agent[name]
    con.close()
    return data


def stage_count(check: bool = True, tables: bool = True) -> int:
    """How many steps gather() reports (for a progress indicator)."""
    return 2 + (len(QUERIES) + len(VIEWS) if tables else len(COMPARISON_SOURCES)) + (1 if check else 0)
