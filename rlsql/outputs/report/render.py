"""Lay the gathered rows out as the report: tables of display strings, rendered by a Jinja template.

Every number is printed for a person (rlsql.outputs.report.human): rates as percentages with one decimal,
seconds as h/m/s, counts with thousands separators, other figures rounded as Python's format
rounds. Each table carries the name of the query or view its rows come from (an HTML comment in
markdown, a data attribute in HTML), so a reader, or a test, can trace any printed figure back to
its SQL, where the raw figure is.
"""

from __future__ import annotations

import base64
import decimal
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
import markupsafe

from rlsql.core import settings
from rlsql.core.version import __version__
from rlsql.outputs.findings import worst_first
from rlsql.outputs.formats import code_span, fenced, markdown_cell
from rlsql.outputs.report import human
from rlsql.outputs.report.data import ReportData, Rows, has_artifact, name_list
from rlsql.outputs.report.figures import FEW_RUNS, FIGURES
from rlsql.runs.artifacts import ARTIFACT_ALTERNATIVES, ARTIFACT_LABELS

#: metric families in the order the report lists them (data-contract.md section 2); others follow by name
FAMILIES = ("async", "generate", "loss", "policy", "reward", "system", "timing", "trainer", "batch_errors")
#: indentation per level of the timing tree (an em space survives markdown and HTML alike)
INDENT = "\u2003\u2003"
#: a table longer than this folds away (HTML <details>) and, in markdown, moves to the appendix
LONG_TABLE = 25

#: columns holding a rate 0-1, printed as a percentage
RATE_COLUMNS = frozenset(
    {
        "success_rate",
        "timeout_rate",
        "context_length_rate",
        "mean_discard_rate",
        "share_of_within",
        "share_of_step",
        "share_of_trial",
        "slowest_span_share",
    }
)
#: columns holding seconds, printed as h/m/s
DURATION_COLUMNS = frozenset(
    {
        "mean_seconds",
        "step_seconds",
        "generation_wait_seconds",
        "total_time_s",
        "mean_step_time_s",
        "training_time_s",
        "slowest_span_mean_s",
        "mean_step_s",
        "mean_generation_wait_s",
        "median_s",
        "mean_s",
        "total_s",
    }
)
#: integer columns that name a step or a setting: printed without thousands separators
PLAIN_COLUMNS = frozenset(
    {
        "step",
        "first_step",
        "last_step",
        "best_ema_step",
        "best_checkpoint_step",
        "k",
        "save_every",
        "turns",
        "total_steps",
    }
)

#: the findings a report over several runs lists first (the worst; the rest counted, with the command that gives
#: them): a fleet's dozens would push its ranked table off the first screen
FLEET_FINDINGS = 5


def unit_of(column: str) -> str:
    """How a column's figures are printed: rate, pct (already 0-100), duration, plain or number."""
    if column in RATE_COLUMNS:
        return "rate"
    if column == "pct" or column.endswith("_pct"):
        return "pct"
    if column in DURATION_COLUMNS:
        return "duration"
    if column in PLAIN_COLUMNS:
        return "plain"
    return "number"


def human_cell(value: Any, unit: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        return human.number(value)
    if unit == "rate":
        return human.percent(float(value))
    if unit == "pct":
        return human.percent(float(value), scale=1)
    if unit == "duration":
        return human.duration(float(value))
    if unit == "plain":
        return str(value)
    return human.number(value)


@dataclass
class Table:
    """A printed table: the query or view it shows, optional row filters, and cells as display strings."""

    source: str
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]
    filters: dict[str, str] = field(default_factory=dict)
    title: str = ""
    #: rows of the source left out of the printed table (Settings.report_rows): said under it
    hidden: int = 0
    #: HTML: a click on a column's header sorts the rows by it; `keys` hold each cell's raw figure to sort by
    sortable: bool = False
    keys: list[list[str]] = field(default_factory=list)
    #: HTML: after this many rows a divider row saying `gap` (the ranked table's top and bottom)
    gap_after: int | None = None
    gap: str = ""

    @property
    def marker(self) -> str:
        return " ".join([self.source, *(f"{k}={v}" for k, v in self.filters.items())])

    @property
    def long(self) -> bool:
        return len(self.rows) > LONG_TABLE


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _text_of(column: str, empty: str = "") -> Callable[[dict], str]:
    """A table cell: the column's value as text, `empty` for NULL."""
    return lambda row: empty if row.get(column) is None else str(row[column])


def _human_in(column: str) -> Callable[[dict], str]:
    """A cell of the summary grid: the run's figure as a person reads it, in the unit of the grid's row."""
    return lambda row: human_cell(row[column], unit_of(row["column"]))


def _sort_key(value: Any) -> str:
    """A cell's raw figure for the HTML sort: numbers as JavaScript reads them, '' for none (sorted last)."""
    if value is None or not _is_number(value):
        return ""
    return repr(float(value))


def make_table(
    source: str,
    rows: Rows,
    columns: Sequence[str],
    filters: dict[str, str] | None = None,
    cells: dict[str, Callable[[dict], str]] | None = None,
    units: dict[str, str] | None = None,
    title: str = "",
    every_row: bool = False,
    sortable: bool = False,
) -> Table:
    """Rows (dicts) -> a Table of `columns`; `cells` maps a column to a function giving its text for a row,
    `units` overrides a column's unit (see unit_of). At most Settings.report_rows rows are printed unless
    `every_row` (the table of every run: one row per run the user named, and sorting needs them all)."""
    cells = cells or {}
    units = units or {}
    shown = len(rows) if every_row else settings.current().report_rows
    hidden = max(len(rows) - shown, 0)
    rows = rows[:shown]
    printed = [
        [cells[c](r) if c in cells else human_cell(r.get(c), units.get(c) or unit_of(c)) for c in columns] for r in rows
    ]
    numeric = [
        bool(rows) and c not in cells and all(_is_number(r.get(c)) or r.get(c) is None for r in rows) for c in columns
    ]
    keys = (
        [[_sort_key(r.get(c)) if n else "" for c, n in zip(columns, numeric, strict=True)] for r in rows]
        if sortable
        else []
    )
    return Table(source, list(columns), printed, numeric, dict(filters or {}), title, hidden, sortable, keys)


#: the summary block: label -> run_summary column, in the order a reader asks
SUMMARY_FIGURES = (
    ("Success rate (trials with a reward above 0)", "success_rate"),
    ("Mean reward", "mean_reward"),
    ("Trials", "trials"),
    ("Trials with a reward", "trials_with_reward"),
    ("Best checkpoint: step", "best_checkpoint_step"),
    ("Best checkpoint: EMA of reward", "best_checkpoint_ema"),
    ("Final EMA of reward", "final_ema"),
    ("Steps (deduplicated)", "steps"),
    ("Training time (timing/step, every row)", "training_time_s"),
    ("Mean step time", "mean_step_time_s"),
    ("Agent timeouts (share of trials)", "timeout_rate"),
    ("Context-length errors (share of trials)", "context_length_rate"),
    ("Mean staleness (steps)", "mean_staleness"),
    ("Slowest span in a step", "slowest_span"),
    ("Slowest span: mean time", "slowest_span_mean_s"),
    ("Slowest span: share of step", "slowest_span_share"),
)
#: the cross-run table's headline columns (run_ranking), before the config keys
CROSS_RUN_COLUMNS = (
    "run",
    "rank",
    "steps",
    "trials",
    "success_rate",
    "mean_reward",
    "final_ema",
    "best_ema",
    "best_checkpoint_step",
    "mean_step_time_s",
    "timeout_rate",
    "context_length_rate",
    "mean_staleness",
)
#: the ranked table's columns (many runs): what a reader compares runs by; the ranking's own column moves
#: to the front, after rank and run
RANKED_COLUMNS = (
    "rank",
    "run",
    "final_ema",
    "best_checkpoint_step",
    "best_checkpoint_ema",
    "success_rate",
    "timeout_rate",
    "steps",
    "trials",
    "mean_step_time_s",
)
#: the ranked table shows this many of the best and as many of the worst runs
RANKED_ENDS = 10
#: the text above it names at most this many of the runs it leaves out
NAMES_IN_TEXT = 3
#: the cross-run tables show at most this many config keys (the appendix lists them all); the ranked
#: table, which must fit the page beside its figures, RANKED_CONFIG
CONFIG_COLUMNS = 8
RANKED_CONFIG = 4
#: the progression table's columns (progression_rows); a column no row has a value in is left out
PROGRESSION_COLUMNS = (
    "run",
    "step",
    "log_file",
    "rerun",
    "reward",
    "pass_at_k",
    "kl_or_entropy",
    "loss",
    "epoch",
    "grad_norm",
    "ppo_clip_ratio",
    "policy_loss",
    "log_ratio_mean",
    "step_seconds",
    "generation_wait_seconds",
)


class Layout:
    """Turns ReportData into the template's context."""

    def __init__(self, data: ReportData, per_run: bool = False):
        self.data = data
        self.multi = len(data.runs) > 1
        self.compare = len(data.runs) > FEW_RUNS
        self.per_run = per_run or not self.compare

    def cols(self, name: str, columns: Sequence[str] | None = None) -> list[str]:
        """The columns to print: the given ones (or all of the query's), without `run` for a single run."""
        chosen = list(columns) if columns is not None else list(self.data.columns[name])
        return [c for c in chosen if self.multi or c != "run"]

    def table(self, name: str, columns: Sequence[str] | None = None, **kw: Any) -> Table:
        return make_table(name, self.data[name], self.cols(name, columns), **kw)

    # -- the first screen ----------------------------------------------------------------------------
    def summary(self) -> Table:
        """The headline figures: one column per run (a few runs)."""
        rows = self.data["run_summary"]
        runs = [r["run"] for r in rows]
        by_run = {r["run"]: r for r in rows}
        grid = [
            {"figure": label, "column": column, **{run: by_run[run][column] for run in runs}}
            for label, column in SUMMARY_FIGURES
        ]
        cells = {run: _human_in(run) for run in runs}
        table = make_table("run_summary", grid, ["figure", *runs], cells=cells, filters={"layout": "columns"})
        table.numeric = [False, *([True] * len(runs))]
        return table

    def config_keys(self, scalars_first: bool = False) -> list[str]:
        """The config keys run_ranking's `config` holds (the keys that differ, or -p keys=), those most runs
        have first, then by name: a cross-run table gives the first few a column each (the appendix's
        config_diff table lists every differing key). `scalars_first`: keys whose values are all scalars
        (no YAML list or mapping, which would not fit a narrow column) before the others."""
        present: dict[str, int] = {}
        nested: set[str] = set()
        for r in self.data["run_ranking"]:
            for key, value in (r["config"] or {}).items():
                present[key] = present.get(key, 0) + (value is not None)
                if value is not None and value[:1] in ("[", "{"):
                    nested.add(key)
        return sorted(present, key=lambda k: (scalars_first and k in nested, -present[k], k))

    def run_table(
        self,
        rows: Rows,
        columns: Sequence[str],
        filters: dict[str, str] | None = None,
        keys: int = CONFIG_COLUMNS,
        **kw: Any,
    ) -> Table:
        """run_ranking's rows with a `config.KEY` column for each of the first `keys` config keys (scalar
        keys first when that is fewer than every key). A table of runs holds every row it is given, whatever
        Settings.report_rows: its rows are the runs the user named (the ranked table picks 20 of them)."""
        chosen = self.config_keys(scalars_first=keys < CONFIG_COLUMNS)[:keys]
        flat = [{**r, **{f"config.{k}": (r["config"] or {}).get(k) for k in chosen}} for r in rows]
        cells = {f"config.{k}": _text_of(f"config.{k}") for k in chosen}
        return make_table("run_ranking", flat, [*columns, *cells], filters=filters, cells=cells, every_row=True, **kw)

    def against_baseline(self) -> dict[str, Any] | None:
        """`-p baseline=NAME` over several runs: run_diff's line per run, then task_diff's changed tasks."""
        if "run_diff" not in self.data.rows:
            return None
        baseline = self.data.params["baseline"]
        changed = self.data["task_diff"]
        columns = [
            "run",
            "task_name",
            "verdict",
            "rate_base",
            "rate_run",
            "delta",
            "trials_base",
            "trials_run",
            "p_value",
            "q_value",
        ]
        return {
            "baseline": baseline,
            "alpha": self.data.params.get("alpha"),
            "found": any(r["baseline"] == baseline for r in self.data["run_diff"]),
            "runs": make_table("run_diff", self.data["run_diff"], self.data.columns["run_diff"]),
            "tasks": make_table("task_diff", changed, columns) if changed else None,
        }

    def cross_run(self) -> Table:
        """A few runs: one row per run, best first, a column per config key that differs (or -p keys=)."""
        return self.run_table(self.data["run_ranking"], CROSS_RUN_COLUMNS)

    def ranked(self) -> Table:
        """Many runs: the RANKED_ENDS best and as many worst ranked runs (all of them when that is every
        ranked run), the ranking's own figure after the run's name, RANKED_CONFIG config keys."""
        rows = [r for r in self.data["run_ranking"] if r["rank"] is not None]
        cut = len(rows) > 2 * RANKED_ENDS
        if cut:
            rows = rows[:RANKED_ENDS] + rows[-RANKED_ENDS:]
        by = next((r["ranked_by"] for r in rows), "final_ema")
        columns = [c for c in RANKED_COLUMNS if c != by]
        columns.insert(2, by)
        counts = self.finding_counts()
        if counts is not None:  # what to look at in a run, beside the figure it is ranked by; one narrow column
            columns.insert(3, "findings")  # (two would push the table past the page's width)
            rows = [{**r, "findings": "{} / {}".format(*counts.get(r["run"], (0, 0)))} for r in rows]
        table = self.run_table(rows, columns, filters={"layout": "ranked"}, keys=RANKED_CONFIG)
        if cut:
            count = len([r for r in self.data["run_ranking"] if r["rank"] is not None])
            table.gap_after = RANKED_ENDS
            table.gap = f"ranks {RANKED_ENDS + 1}-{count - RANKED_ENDS}: in the table of every run (appendix)"
        return table

    def finding_counts(self) -> dict[str, tuple[int, int]] | None:
        """run -> (critical, warning) findings, as the fleet page counts them; None without a findings answer."""
        if "findings" not in self.data.rows:
            return None
        counts: dict[str, tuple[int, int]] = {}
        for f in self.data["findings"]:
            critical, warning = counts.get(f["run"], (0, 0))
            counts[f["run"]] = (critical + (f["severity"] == "critical"), warning + (f["severity"] == "warning"))
        return counts

    def ranked_note(self) -> str:
        """What the ranked table shows, which runs it leaves out and why."""
        ranked = self.data.ranked()
        unranked = [r for r in self.data.runs if r.name not in ranked]
        by = self.data.ranked_by
        what = "final EMA of reward" if by == "final EMA" else "success rate (no run has a final EMA of reward)"
        if len(ranked) > 2 * RANKED_ENDS:
            text = (
                f"The {RANKED_ENDS} best and the {RANKED_ENDS} worst of the {human.count(len(ranked))} runs "
                f"ranked by {what} (rank 1 is the best, ties by name)"
            )
        else:
            text = f"The {human.count(len(ranked))} runs ranked by {what} (rank 1 is the best, ties by name)"
        if unranked:
            artifact = "metrics" if by == "final EMA" else "trials"
            names = [r.name for r in unranked]
            who = (f"the {human.count(len(names))} runs" if len(names) > 1 else "the run") + (
                f" without {ARTIFACT_LABELS[artifact]}"
                if not any(has_artifact(r, artifact) for r in unranked)
                else f" without a {by}"
            )
            text += f"; {who} {'have' if len(names) > 1 else 'has'} no rank ({name_list(names, NAMES_IN_TEXT)})"
        text += (
            ". Success rate is the share of the trials with a reward whose reward is above 0, timeout rate the "
            "share of all trials"
        )
        if self.finding_counts() is not None:
            text += "; findings counts each run's critical / warning findings (the Findings section above)"
        keys = len(self.config_keys())
        if keys:
            text += (
                f"; the config columns are {min(keys, RANKED_CONFIG)} of the {keys} rl_config.yaml keys that "
                "differ between the runs (-p keys=a,b picks others; the appendix lists them all)"
            )
        return text + "."

    def all_runs(self) -> Table:
        """Many runs: every run (whatever Settings.report_rows), every run_ranking figure, in rank order."""
        columns = [c for c in self.data.columns["run_ranking"] if c not in ("ranked_by", "config")]
        return self.run_table(self.data["run_ranking"], columns, sortable=True)

    def highlight_note(self) -> str:
        if self.data.highlighted()[0] is None:
            return ""
        return (
            f"In the figures blue is the best and red the worst by {self.data.ranked_by} of the runs a "
            "figure draws, every other run grey; each legend names them."
        )

    def caveats(self) -> dict[str, Any]:
        """What `rlsql check` found: problems (errors, warnings) for the first screen, notes (info) for the
        appendix, each as run, severity, where (file:line, relative to the run folder), problem."""
        runs = {r.name: r for r in self.data.runs}

        def where(issue) -> str:
            run = runs.get(issue.run)
            path = issue.file
            if run is not None and path.startswith(str(run.path)):
                path = path[len(str(run.path)) :].lstrip("/") or "."
            return f"{path}:{issue.line}" if issue.line is not None else path

        def table(severities: tuple[str, ...]) -> Table:
            rows = [
                {"run": i.run, "severity": i.severity, "where": where(i), "problem": i.problem}
                for report in self.data.checks
                for i in report.issues
                if i.severity in severities
            ]
            columns = ["run", "severity", "where", "problem"] if self.multi else ["severity", "where", "problem"]
            return make_table(
                "check",
                rows,
                columns,
                cells={c: _text_of(c, empty="None") for c in columns},
                filters={"severity": "+".join(severities)},
            )

        return {"problems": table(("error", "warning")), "notes": table(("info",)), "line": caveat_line(self.data)}

    # -- sections ------------------------------------------------------------------------------------
    def runs(self) -> list[dict]:
        out = []
        for run in self.data.runs:
            files = [f"{kind}: {a.path.name}" for kind, a in sorted(run.artifacts.items())]
            missing = [
                ARTIFACT_LABELS[k]
                for k in ("metrics", "trials", "vllm", "config")
                if all(run.artifact(a) is None for a in ARTIFACT_ALTERNATIVES.get(k, (k,)))
            ]
            out.append({"name": run.name, "path": str(run.path), "files": files, "missing": missing})
        return out

    def progression_notes(self) -> list[str]:
        seen: dict[str, tuple] = {}
        k_of = {r["run"]: r["k"] for r in self.data["reward_curve"] if r["k"] is not None}
        for r in self.data["progression_rows"]:
            seen.setdefault(r["run"], (r["kl_or_entropy_metric"], r["loss_metric"]))
        notes = []
        for run, (kl, loss) in seen.items():
            who = f"{run}: " if self.multi else ""
            notes.append(
                f"{who}pass_at_k is pass@{k_of.get(run, '?')}; kl_or_entropy is {kl or 'not logged'}; "
                f"loss is {loss or 'not logged'}"
            )
        return notes

    def progression(self) -> Table:
        rows = self.data["progression_rows"]
        columns = [
            c
            for c in self.cols("progression_rows", PROGRESSION_COLUMNS)
            if c in ("run", "step", "log_file", "rerun") or any(r.get(c) is not None for r in rows)
        ]
        if not any(r["rerun"] for r in rows):
            columns.remove("rerun")

        def rerun(r: dict) -> str:
            if not r["rerun"]:
                return ""
            return "re-run: used" if r["used"] else "re-run: not used"

        return make_table("progression_rows", rows, columns, cells={"rerun": rerun})

    def metric_tables(self) -> list[tuple[str, Table]]:
        rows = self.data["metric_stats"]
        families = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
        families += sorted({r["family"] for r in rows} - set(FAMILIES) - {"other"})
        if any(r["family"] == "other" for r in rows):
            families.append("other")
        columns = self.cols("metric_stats", ["run", "metric", "mean", "std", "min", "max", "count"])
        out = []
        for family in families:
            units = {c: "duration" for c in ("mean", "std", "min", "max")} if family == "timing" else {}
            title = "Other (keys without a family)" if family == "other" else family
            out.append(
                (
                    title,
                    make_table(
                        "metric_stats",
                        [r for r in rows if r["family"] == family],
                        columns,
                        filters={"family": family},
                        units=units,
                    ),
                )
            )
        return out

    def timing_table(self) -> Table:
        """timing_table in timing_breakdown's order (depth first from step), the spans indented by depth."""
        order = {(r["run"], r["span"]): i for i, r in enumerate(self.data["timing_breakdown"])}
        rows = sorted(self.data["timing_table"], key=lambda r: order.get((r["run"], r["span"]), len(order)))
        depth: dict[tuple[str, str], int] = {}
        for r in rows:
            parent = depth.get((r["run"], r["within"]))
            depth[(r["run"], r["span"])] = 0 if parent is None else parent + 1

        def span_cell(r: dict) -> str:
            return INDENT * depth[(r["run"], r["span"])] + r["span"]

        return make_table("timing_table", rows, self.cols("timing_table"), cells={"span": span_cell})

    def config_diff(self) -> Table | None:
        if not self.multi or self.compare:
            return None
        runs = [r.name for r in self.data.runs if r.artifact("config") is not None]
        keys: dict[str, dict[str, Any]] = {}
        for r in self.data["config_diff"]:
            keys.setdefault(r["key"], {"key": r["key"]})[r["run"]] = r["value"]
        absent = "(absent)"
        cells = {run: _text_of(run, empty=absent) for run in runs}
        cells["key"] = _text_of("key")
        return make_table("config_diff", list(keys.values()), ["key", *runs], cells=cells)

    def agent(self) -> dict[str, Any] | None:
        """ "What the agent did": tool usage, token usage by outcome, the most repeated calls, a few transcripts."""
        found = self.data.agent
        if not found:
            return None
        multi = self.multi

        def cols(names: list[str]) -> list[str]:
            return names if multi else [c for c in names if c != "run"]

        return {
            "tools": make_table(
                "tool_usage",
                found["tool_usage"],
                cols(
                    [
                        "run",
                        "function_name",
                        "calls",
                        "trials",
                        "success_trials",
                        "failure_trials",
                        "mean_calls_per_trial",
                    ]
                ),
            ),
            "tokens": make_table(
                "token_usage",
                found["token_usage"],
                cols(
                    [
                        "run",
                        "outcome",
                        "trials",
                        "agent_steps",
                        "mean_prompt_tokens",
                        "mean_completion_tokens",
                        "cached_share",
                        "p50_completion_tokens",
                        "p90_completion_tokens",
                        "max_step_prompt_tokens",
                    ]
                ),
            ),
            "loops": make_table(
                "looping_trials",
                found["looping_trials"],
                cols(
                    [
                        "run",
                        "trial_name",
                        "outcome",
                        "exception_type",
                        "function_name",
                        "arguments",
                        "repeats",
                        "first_turn",
                        "last_turn",
                    ]
                ),
            ),
            "worst": found["worst"],
        }

    def per_run_tables(self) -> dict[str, Any]:
        """The tables of each run's own sections (left out with many runs unless --per-run)."""
        return {
            "overview": self.table("run_overview"),
            "logs": self.table("log_summary"),
            "progression_notes": self.progression_notes(),
            "async_health": self.table("async_health"),
            "best": self.table("best_checkpoint"),
            "timing": self.timing_table(),
            "vllm": self.table("vllm_summary"),
        }

    def findings(self) -> dict[str, Any]:
        """The findings, worst first, at most Settings.report_rows of them (`rlsql findings` gives them all); of a
        report over several runs, the FLEET_FINDINGS worst, so that the ranked table stays on the first screen."""
        rows = worst_first(self.data["findings"])
        shown = settings.current().report_rows if len(self.data.runs) == 1 else FLEET_FINDINGS
        runs = self.data.runs
        parents = {r.path.parent for r in runs}
        # the runs as --run names them: their one parent folder when there are many (a bare `rlsql findings`
        # would answer for the sample run)
        given = [f"{p}/" for p in parents] if len(runs) > 6 and len(parents) == 1 else [str(r.path) for r in runs]
        return {
            "rows": rows[:shown],
            "hidden": max(0, len(rows) - shown),
            "command": "rlsql findings" + "".join(f" --run {shlex.quote(g)}" for g in given),
        }

    def context(self, figure_src: dict[str, tuple[str, str]]) -> dict[str, Any]:
        """`figure_src`: figure name -> (where the image is, its note: which runs it draws)."""
        data = self.data
        figures = {
            name: {"src": src, "alt": FIGURES[name][0], "note": note} for name, (src, note) in figure_src.items()
        }
        trial_tables = []
        if self.per_run:
            trial_tables = [
                ("Reward summary", self.table("reward_summary")),
                ("Turn statistics", self.table("turn_stats")),
                ("Exception distribution and treatment", self.table("exception_distribution")),
                ("Trials per effective treatment", self.table("exception_treatment")),
                ("Turns by exception type", self.table("turns_by_exception")),
                ("Turns by outcome", self.table("turns_by_outcome")),
                ("Turn percentiles", self.table("turn_percentiles")),
            ]
            if data["trial_phases"]:
                trial_tables.append(("Phase durations", self.table("trial_phases")))
        cross_run = self.cross_run() if self.multi and not self.compare else None
        ranked = self.ranked() if self.compare else None
        caveats = self.caveats()
        appendix = []
        if self.compare:
            appendix.append(
                (
                    "All runs",
                    self.all_runs(),
                    "Every run with every figure of the cross-run table, best first (unranked runs "
                    "last, by name); in the HTML report a click on a column's header sorts by it.",
                )
            )
        if self.compare and self.data["config_diff"]:
            appendix.append(
                (
                    "Config keys that differ between runs",
                    self.table(
                        "config_diff",
                        filters={"layout": "long"},
                        cells={c: (lambda r, c=c: "" if r[c] is None else str(r[c])) for c in ("run", "key", "value")},
                    ),
                    "Every rl_config.yaml key whose value differs between the runs, one row per run "
                    "and key (empty: the run lacks the key).",
                )
            )
        if caveats["notes"].rows:
            appendix.append(
                (
                    "Notes from rlsql check",
                    caveats["notes"],
                    "What `rlsql check` notes without calling it a problem: files not read, steps "
                    "logged twice, artifacts a run lacks.",
                )
            )
        if self.per_run:
            appendix.append(
                (
                    "Training progression per logged row",
                    self.progression(),
                    "Every metric row with a step. A resumed job re-runs the step it resumed from: "
                    "both rows are listed, and the deduplicated curve (the figures, the EMA) uses the "
                    "first-seen one (`re-run: used`).",
                )
            )
            appendix.append(
                (
                    "EMA per step and checkpoint eligibility",
                    self.table(
                        "checkpoint_ema", ["run", "step", "reward", "ema", "rolling_mean", "eligible", "is_best"]
                    ),
                    "Eligible steps are multiples of save_every from 2 x save_every on (the first save "
                    "is skipped); the best is the eligible step with the highest EMA, ties to the "
                    "earliest.",
                )
            )
            for title, t in self.metric_tables():
                appendix.append(
                    (
                        f"Metrics: {title}",
                        t,
                        "Mean, sample standard deviation, min, max and count over every metric row.",
                    )
                )
        return {
            "version": __version__,
            "multi": self.multi,
            "compare": self.compare,
            "per_run": self.per_run,
            "run_count": len(data.runs),
            "runs": self.runs(),
            "figures": figures,
            "params": {k: v for k, v in data.params.items() if v is not None},
            "has": {kind: bool(data.has(kind)) for kind in ("metrics", "trials", "vllm", "config")},
            "summary": None if self.compare else self.summary(),
            "cross_run": cross_run,
            "against": self.against_baseline(),
            "ranked": ranked,
            "ranked_by": data.ranked_by,
            "ranked_note": self.ranked_note() if self.compare else "",
            "highlight": self.highlight_note() if self.compare else "",
            "caveats": caveats,
            "findings": self.findings(),
            **(self.per_run_tables() if self.per_run else {}),
            "trial_tables": trial_tables,
            "agent": self.agent(),
            "config_diff": self.config_diff(),
            "appendix": appendix,
        }


def caveat_line(data: ReportData) -> str:
    """One line saying what `rlsql check` found over the report's runs."""
    counts = {s: 0 for s in ("error", "warning", "info")}
    runs: set[str] = set()
    for report in data.checks:
        for issue in report.issues:
            counts[issue.severity] = counts.get(issue.severity, 0) + 1
            if issue.severity != "info":
                runs.add(issue.run)
    if not counts["error"] and not counts["warning"]:
        return f"data caveats: none in {human.count(len(data.runs))} run{'s' if len(data.runs) != 1 else ''}" + (
            f" ({human.count(counts['info'])} note{'s' if counts['info'] != 1 else ''})" if counts["info"] else ""
        )
    parts = [f"{human.count(counts[s])} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning") if counts[s]]
    return (
        f"data caveats: {', '.join(parts)} in {human.count(len(runs))} run{'s' if len(runs) != 1 else ''} "
        "(listed in the report's Data caveats section; `rlsql check` shows the same)"
    )


def _anchor(text: str) -> str:
    """A heading's anchor as GitHub makes it (lower case, punctuation but - and _ dropped, spaces to -), so
    the markdown's contents links work where it is read; the HTML gives its headings the same ids."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _breakable(text: str) -> markupsafe.Markup:
    """A column name (HTML-escaped) that may wrap after a `.` or `_`: a header as narrow as its figures."""
    parts = re.split(r"(?<=[._])(?=.)", str(text))
    return markupsafe.Markup("<wbr>").join(markupsafe.escape(part) for part in parts)


def _code(text: str) -> markupsafe.Markup:
    """Text (HTML-escaped) with each `span` in backticks as <code>, as markdown shows it."""
    escaped = str(markupsafe.escape(text))
    return markupsafe.Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rlsql", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md_cell"] = lambda text: markdown_cell(str(text))
    env.filters["md_fenced"] = lambda text, info="": fenced(str(text), info)
    env.filters["md_code"] = lambda text: code_span(str(text))
    env.filters["anchor"] = _anchor
    env.filters["breakable"] = _breakable
    env.filters["code"] = _code
    return env


def render_markdown(data: ReportData, notes: dict[str, str], per_run: bool = False) -> str:
    """`notes`: the figure files beside report.md -> each one's note."""
    context = Layout(data, per_run).context({name: (name, note) for name, note in notes.items()})
    text = environment().get_template("report.md.j2").render(**context)
    return re.sub(r"\n{3,}", "\n\n", text)


def render_html(data: ReportData, figures: dict[str, tuple[bytes, str]], per_run: bool = False) -> str:
    """`figures`: name -> (PNG bytes, note), embedded as data: URIs."""
    srcs = {
        name: ("data:image/png;base64," + base64.b64encode(png).decode("ascii"), note)
        for name, (png, note) in figures.items()
    }
    context = Layout(data, per_run).context(srcs)
    return environment().get_template("report.html.j2").render(**context)
