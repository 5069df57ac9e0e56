"""Lay the gathered rows out as the report: tables of display strings, rendered by a Jinja template.

Every number is printed with rlsql.formats.display (Python's format rounding). Each table carries
the name of the query or view its rows come from (an HTML comment in markdown, a data attribute in
HTML), so a reader, or a test, can trace any printed figure back to its SQL.
"""

from __future__ import annotations

import base64
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from rlsql import __version__
from rlsql.connection import ARTIFACT_ALTERNATIVES, ARTIFACT_LABELS
from rlsql.formats import display
from rlsql.report.data import ReportData, Rows
from rlsql.report.figures import FIGURES

#: metric families in the order the report lists them (data-contract.md section 2); others follow by name
FAMILIES = ("async", "generate", "loss", "policy", "reward", "system", "timing", "trainer", "batch_errors")
#: indentation per level of the timing tree (an em space survives markdown and HTML alike)
INDENT = "\u2003\u2003"


@dataclass
class Table:
    """A printed table: the query or view it shows, optional row filters, and cells as display strings."""

    source: str
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]
    filters: dict[str, str] = field(default_factory=dict)

    @property
    def marker(self) -> str:
        return " ".join([self.source, *(f"{k}={v}" for k, v in self.filters.items())])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def make_table(source: str, rows: Rows, columns: Sequence[str], filters: dict[str, str] | None = None,
               cells: dict[str, Any] | None = None) -> Table:
    """Rows (dicts) -> a Table of `columns`; `cells` maps a column to a function giving its text for a row."""
    cells = cells or {}
    printed = [[cells[c](r) if c in cells else display(r.get(c)) for c in columns] for r in rows]
    numeric = [bool(rows) and c not in cells and all(_is_number(r.get(c)) or r.get(c) is None for r in rows)
               for c in columns]
    return Table(source, list(columns), printed, numeric, dict(filters or {}))


class Layout:
    """Turns ReportData into the template's context."""

    def __init__(self, data: ReportData):
        self.data = data
        self.multi = len(data.runs) > 1

    def cols(self, name: str, columns: Sequence[str] | None = None) -> list[str]:
        """The columns to print: the given ones (or all of the query's), without `run` for a single run."""
        chosen = list(columns) if columns is not None else list(self.data.columns[name])
        return [c for c in chosen if self.multi or c != "run"]

    def table(self, name: str, columns: Sequence[str] | None = None, **kw: Any) -> Table:
        return make_table(name, self.data[name], self.cols(name, columns), **kw)

    # -- sections ------------------------------------------------------------------------------------
    def runs(self) -> list[dict]:
        out = []
        for run in self.data.runs:
            files = [f"{kind}: {a.path.name}" for kind, a in sorted(run.artifacts.items())]
            missing = [ARTIFACT_LABELS[k] for k in ("metrics", "trials", "vllm", "config")
                       if all(run.artifact(a) is None for a in ARTIFACT_ALTERNATIVES.get(k, (k,)))]
            out.append({"name": run.name, "path": str(run.path), "files": files, "missing": missing})
        return out

    def progression_notes(self) -> list[str]:
        seen: dict[str, tuple] = {}
        for r in self.data["training_progression"]:
            seen.setdefault(r["run"], (r["kl_or_entropy_metric"], r["loss_metric"], r["k"]))
        notes = []
        for run, (kl, loss, k) in seen.items():
            who = f"{run}: " if self.multi else ""
            notes.append(
                f"{who}pass_at_k is pass@{display(k) or '?'}; kl_or_entropy is {kl or 'not logged'}; "
                f"loss is {loss or 'not logged'}"
            )
        return notes

    def metric_tables(self) -> list[tuple[str, Table]]:
        rows = self.data["metric_stats"]
        families = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
        families += sorted({r["family"] for r in rows} - set(FAMILIES))
        columns = self.cols("metric_stats", ["run", "metric", "mean", "std", "min", "max", "count"])
        return [
            (family, make_table("metric_stats", [r for r in rows if r["family"] == family], columns,
                                filters={"family": family}))
            for family in families
        ]

    def timing_table(self) -> Table:
        rows = self.data["timing_breakdown"]
        depth: dict[tuple[str, str], int] = {}
        for r in rows:
            parent = depth.get((r["run"], r["within"]))
            depth[(r["run"], r["span"])] = 0 if parent is None else parent + 1

        def span_cell(r: dict) -> str:
            return INDENT * depth[(r["run"], r["span"])] + r["span"]

        return self.table("timing_breakdown", cells={"span": span_cell})

    def comparison(self) -> Table | None:
        if not self.multi:
            return None
        picks = [
            ("best_checkpoint", ["step", "ema", "save_every"]),
            ("reward_summary", ["trials", "mean_reward", "success_rate"]),
            ("turn_stats", ["mean", "median"]),
            ("async_health", ["mean_staleness", "mean_discard_rate"]),
        ]
        by_run: dict[str, dict[str, Any]] = {r.name: {"run": r.name} for r in self.data.runs}
        columns = ["run"]
        for query, names in picks:
            for row in self.data[query]:
                for name in names:
                    by_run[row["run"]][f"{query}.{name}"] = row[name]
            columns += [f"{query}.{name}" for name in names]
        return make_table("comparison", list(by_run.values()), columns)

    def config_diff(self) -> Table | None:
        if not self.multi:
            return None
        runs = [r.name for r in self.data.runs if r.artifact("config") is not None]
        keys: dict[str, dict[str, Any]] = {}
        for r in self.data["config_diff"]:
            keys.setdefault(r["key"], {"key": r["key"]})[r["run"]] = r["value"]
        absent = "(absent)"
        cells = {run: (lambda row, run=run: absent if row.get(run) is None else display(row[run])) for run in runs}
        return make_table("config_diff", list(keys.values()), ["key", *runs], cells=cells)

    def context(self, figure_src: dict[str, str]) -> dict[str, Any]:
        data = self.data
        figures = {name: {"src": src, "alt": FIGURES[name][0]} for name, src in figure_src.items()}
        return {
            "version": __version__,
            "multi": self.multi,
            "runs": self.runs(),
            "figures": figures,
            "has": {kind: bool(data.has(kind)) for kind in ("metrics", "trials", "vllm", "config")},
            "overview": self.table("run_overview"),
            "progression_notes": self.progression_notes(),
            "progression": self.table("training_progression", [
                "run", "step", "log_file", "reward", "pass_at_k", "kl_or_entropy", "loss", "step_seconds",
                "generation_wait_seconds",
            ]),
            "async_health": self.table("async_health"),
            "best": self.table("best_checkpoint"),
            "ema": self.table("checkpoint_ema", ["run", "step", "reward", "ema", "rolling_mean", "eligible",
                                                 "is_best"]),
            "metric_tables": self.metric_tables(),
            "timing": self.timing_table(),
            "vllm": self.table("vllm_summary"),
            "trial_tables": [
                ("Reward summary", self.table("reward_summary")),
                ("Turn statistics", self.table("turn_stats")),
                ("Exception distribution and treatment", self.table("exception_distribution")),
                ("Trials per effective treatment", self.table("exception_treatment")),
                ("Turns by exception type", self.table("turns_by_exception")),
                ("Turns by outcome", self.table("turns_by_outcome")),
                ("Turn percentiles", self.table("turn_percentiles")),
            ],
            "phases": self.table("trial_phases") if data["trial_phases"] else None,
            "comparison": self.comparison(),
            "config_diff": self.config_diff(),
        }


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rlsql", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md_cell"] = _md_cell
    return env


def render_markdown(data: ReportData, figure_names: Sequence[str]) -> str:
    context = Layout(data).context({name: name for name in figure_names})
    text = environment().get_template("report.md.j2").render(**context)
    return re.sub(r"\n{3,}", "\n\n", text)


def render_html(data: ReportData, figures: dict[str, bytes]) -> str:
    srcs = {name: "data:image/png;base64," + base64.b64encode(png).decode("ascii") for name, png in figures.items()}
    context = Layout(data).context(srcs)
    return environment().get_template("report.html.j2").render(**context)
