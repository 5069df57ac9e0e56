"""What each page shows: which named queries and views it reads, and its figures as chart specs.

Every number comes from a named query or view (Served.named) or from the pages' own SQL over the views
(rlsql/serve/sql/, Served.select), and a trial's transcript is `rlsql trial`'s (Served.transcript); this module
computes no statistic. It picks, orders, filters and groups rows, and turns them into the charts' series
(rlsql/serve/static/rlsql.js draws them with uPlot).
"""

from __future__ import annotations

import contextvars
import math
import shlex
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.params import Param
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import DataError, QueryError, UsageError
from rlsql.core.sqltext import identifier
from rlsql.engine.query import declared_params
from rlsql.outputs import transcript as transcripts
from rlsql.outputs.findings import worst_first
from rlsql.outputs.formats import display
from rlsql.runs.folders import Run
from rlsql.serve.memory import Answer
from rlsql.serve.state import NotFound, Served, known, per_run

#: the compare page overlays this many runs at most
COMPARE_MAX = 6
TRIALS_PAGE = 50
#: the compare page's task grid shows this many tasks, the changed ones first (task_diff has every one)
GRID_ROWS = 300
FLEET_PAGE = 100
#: named queries and views the run page reads, by section
RUN_SECTIONS = {
    "findings": ("findings",),  # first: what to look at
    "summary": ("run_summary", "best_checkpoint", "async_health", "run_overview"),
    "reward": ("reward_curve",),
    "signals": ("step_signals",),
    "timing": ("step_time_stack", "timing_breakdown"),
    "vllm": ("vllm_series", "vllm_summary"),
    "exceptions": ("exception_distribution", "exception_treatment"),
    "turns": ("turn_histogram", "turn_stats", "turns_by_outcome", "turns_by_exception"),
}
#: the run page's agent section, asked only of a run with agent trajectories (another has no such section)
AGENT_SECTION = ("tool_usage", "token_usage", "looping_trials")
SIGNALS = (
    ("entropy", "policy entropy"),
    ("grad_norm", "raw grad norm"),
    ("log_ratio_mean", "mean |log ratio|"),
    ("timeouts_per_batch", "agent timeouts per batch"),
    ("context_length_per_batch", "context-length failures per batch"),
)
#: trials page: the filters, each a bound parameter of sql/trials.sql
TRIAL_FILTERS = ("outcome", "exception", "turns_min", "turns_max", "task")
OUTCOMES = ("Success", "Failure", "No reward")


@cache
def page_sql(name: str) -> str:
    """One of the pages' SQL files (rlsql/serve/sql/NAME.sql), read once."""
    return resources.files("rlsql.serve").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Item:
    """A named query or view: what its page and the query list show."""

    name: str
    kind: str  # "query" or "view"
    description: str
    params: tuple[Param, ...]


def _item(f: SqlFile) -> Item:
    return Item(f.name, f.kind, " ".join(f.description.split()), tuple(declared_params(f.name)))


def items() -> list[Item]:
    """Every named query, then every view, each by name."""
    catalog = load_catalog()
    return [_item(f) for f in [*catalog.queries(), *catalog.views()]]


def item(name: str) -> Item:
    """The named query or view `name`; NotFound with a did-you-mean otherwise."""
    return _item(known(name))


def own_columns(name: str) -> set[str]:
    """The columns a query or view names in its header (not those it passes through, such as config keys)."""
    return set(load_catalog().files[name].column_docs) - {"*"}


def number(value: Any) -> float | None:
    """A cell as a chart value: numbers as floats, everything else (and NaN) as a gap."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) or math.isinf(value) else float(value)


def is_numeric(answer: Answer, column: str) -> bool:
    i = answer.columns.index(column)
    values = [r[i] for r in answer.rows if r[i] is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def params_for(served: Served, name: str, given: Mapping[str, str]) -> dict[str, str]:
    """The page's parameters that the query or view `name` declares."""
    declared = {p.name for p in item(name).params}
    return {k: v for k, v in given.items() if k in declared and v not in (None, "")}


@dataclass
class Chart:
    """One figure: x values, series of y values aligned with them, and how to draw them (rlsql.js)."""

    id: str
    title: str
    x: list[Any]
    series: list[dict[str, Any]] = field(default_factory=list)
    kind: str = "line"  # line, bars, points
    xlabel: str = ""
    ylabel: str = ""
    xtime: bool = False
    ylog: bool = False
    xlog: bool = False
    #: per x index, a label shown on hover (the run of a fleet point)
    labels: list[str] | None = None
    #: a missing value breaks the line (else lines span it)
    gaps: bool = False

    def add(self, label: str, values: Sequence[Any], **style: Any) -> None:
        self.series.append({"label": label, "values": [number(v) for v in values], **style})

    def spec(self) -> dict[str, Any]:
        def positive(values: list[Any]) -> list[Any]:
            return [v if v is not None and v > 0 else None for v in values]

        series = [{**s, "values": positive(s["values"])} for s in self.series] if self.ylog else self.series
        return {
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "x": self.x,
            "series": series,
            "xlabel": self.xlabel,
            "ylabel": self.ylabel,
            "xtime": self.xtime,
            "ylog": self.ylog,
            "xlog": self.xlog,
            "labels": self.labels,
            "gaps": self.gaps,
        }

    @property
    def empty(self) -> bool:
        return not self.x or all(all(v is None for v in s["values"]) for s in self.series)


def by_run(answer: Answer, x: str, y: str, runs: Sequence[str]) -> tuple[list[Any], dict[str, list[Any]]]:
    """`y` by `x` for each run, aligned on the sorted union of x values (None where a run has none)."""
    xi, yi, ri = answer.columns.index(x), answer.columns.index(y), answer.columns.index("run")
    points: dict[str, dict[Any, Any]] = {r: {} for r in runs}
    for row in answer.rows:
        if row[ri] in points and row[xi] is not None:
            points[row[ri]].setdefault(row[xi], row[yi])
    xs = sorted({k for p in points.values() for k in p})
    return xs, {r: [points[r].get(k) for k in xs] for r in runs}


def epoch(value: Any) -> float | None:
    """A vLLM second (naive, node-local) as seconds since 1970 read as UTC: the chart shows it unshifted."""
    if value is None:
        return None
    import datetime as dt

    return value.replace(tzinfo=dt.UTC).timestamp()


# -- the fleet ------------------------------------------------------------------------------------
@dataclass
class Fleet:
    table: Answer
    figures: list[str]
    config_keys: list[str]
    numeric_keys: list[str]
    shown_keys: list[str]
    groups: list[tuple[str | None, list[tuple]]]
    chart: Chart | None
    state: dict[str, Any]
    total: int
    #: run -> config key -> value (text), for the columns of keys run_table does not have
    config: dict[str, dict[str, str | None]]
    page: int
    pages: int
    #: group -> its runs (on every page)
    group_sizes: dict[str | None, int]
    page_size: int = FLEET_PAGE
    #: group_curves for the `band` key, drawn as mean lines with their intervals
    bands: Chart | None = None


def fleet(served: Served, state: Mapping[str, Any]) -> Fleet:
    """Every run with run_table's figures; filtered (`f`: KEY=VALUE on a config key or a column), sorted,
    grouped by a config key, and a figure against a numeric config key."""
    runs = served.pick(None)
    table = served.named("run_table", runs, {"span": state.get("span") or ""} if state.get("span") else {})
    config = served.select(page_sql("config"), runs)
    values: dict[str, dict[str, str | None]] = {}
    for run, key, value in config.rows:
        values.setdefault(run, {})[key] = value
    all_keys = {k for v in values.values() for k in v}
    distinct: dict[str, set[str | None]] = {key: set() for key in all_keys}
    for run in table.rows:
        mine = values.get(run[0], {})
        for key in all_keys:
            distinct[key].add(mine.get(key))
    keys = sorted(distinct, key=lambda k: (len(distinct[k]) < 2, k))
    # a figure needs a key with two numbers or more among the runs
    numeric = [
        k
        for k in keys
        if len(distinct[k] - {None}) > 1 and all(_float(v) is not None for v in distinct[k] if v is not None)
    ]
    # run_table's own columns; its config columns are typed (a DOUBLE lr), but filters, groups and the x axis
    # go by a key's text, as the config view gives it and the links name it
    own = own_columns("run_table")
    figures = [c for c in table.columns if c != "run" and c in own and is_numeric(table, c)]
    columns = table.columns
    table_rows = list(table.rows)
    counts = finding_counts(served, runs)
    if counts is not None:  # each run's critical and warning findings: columns to sort and filter by
        columns = [columns[0], *FINDING_COUNTS, *columns[1:]]  # beside the run's name, where a reader looks
        own = own | set(FINDING_COUNTS)
        table_rows = [(r[0], *counts.get(r[0], (0, 0)), *r[1:]) for r in table_rows]

    def cell(row: tuple, name: str) -> Any:
        if name in columns and name in own:
            return row[columns.index(name)]
        return values.get(row[0], {}).get(name)

    rows = table_rows
    for f in state.get("f", []):
        key, _, wanted = f.partition("=")
        rows = [r for r in rows if display(cell(r, key)) == wanted]
    sort = state.get("sort") or "run"
    desc = bool(state.get("desc"))
    present = [r for r in rows if cell(r, sort) is not None]
    missing = [r for r in rows if cell(r, sort) is None]
    present.sort(key=lambda r: _sort_key(cell(r, sort)), reverse=desc)
    rows = present + missing  # no value last, either way
    group = state.get("group") or ""
    shown = [k for k in [group, *(f.partition("=")[0] for f in state.get("f", []))] if k and k not in columns]
    shown = list(dict.fromkeys(shown))
    ordered: list[tuple[str | None, tuple]] = [(None, r) for r in rows]
    if group:

        def label(r: tuple) -> str | None:
            return display(cell(r, group)) if cell(r, group) is not None else None

        ordered = sorted(((label(r), r) for r in rows), key=lambda gr: (gr[0] is None, _sort_key(gr[0])))
    sizes: dict[str | None, int] = {}
    for name, _ in ordered:
        sizes[name] = sizes.get(name, 0) + 1
    # the table is paged (a page of 1,000 runs' rows costs a browser seconds to lay out); the figure has every run
    pages = max(1, -(-len(ordered) // FLEET_PAGE))
    page = int(state["page"]) if whole_number(str(state.get("page") or "")) else 1
    if not 1 <= page <= pages:
        raise UsageError(f"page: {state.get('page')!r} is not a page of 1 to {pages}")
    groups: list[tuple[str | None, list[tuple]]] = []
    for name, r in ordered[(page - 1) * FLEET_PAGE : page * FLEET_PAGE]:
        if not groups or groups[-1][0] != name:
            groups.append((name, []))
        groups[-1][1].append(r)
    x = state.get("x") or (numeric[0] if numeric else "")
    y = state.get("y") or ("success_rate" if "success_rate" in figures else (figures[0] if figures else ""))
    chart = None
    if x and y and y in figures:
        chart = _fleet_chart(rows, x, y, group, cell)
    band = state.get("band") or ""
    bands = None
    if band:
        params = {"key": band, **({"span": state["span"]} if state.get("span") else {})}
        bands = band_chart(served.named("group_curves", runs, params), band)
    return Fleet(
        Answer(columns, rows, table.truncated),
        figures,
        keys,
        numeric,
        shown,
        groups,
        chart,
        {**state, "x": x, "y": y, "sort": sort},
        len(table.rows),
        values,
        page,
        pages,
        sizes,
        bands=bands,
    )


def band_chart(curves: Answer, key: str) -> Chart | None:
    """group_curves drawn: per value of the key, the mean reward EMA as a line and its 95% interval as two
    thin dashed lines of the same colour."""
    if not curves.rows:
        return None
    rows = curves.dicts()
    xs = sorted({r["step"] for r in rows})
    values = sorted({r["value"] for r in rows}, key=lambda v: (v is None, _sort_key(v)))
    chart = Chart(
        "fleet-bands",
        f"Reward EMA by {key}: mean and 95% interval over the runs",
        xs,
        xlabel="step",
        ylabel="reward EMA",
    )
    palette = ("#2f6fdf", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0b7285", "#e67700", "#5c940d")
    for i, value in enumerate(values):
        at = {r["step"]: r for r in rows if r["value"] == value}
        color = palette[i % len(palette)]
        label = f"{key} = {value if value is not None else '(no value)'}"
        runs = max(r["runs"] for r in at.values())
        chart.add(
            f"{label} ({runs} run{'s' if runs != 1 else ''})",
            [at[x]["mean_ema"] if x in at else None for x in xs],
            color=color,
            width=2,
        )
        for bound in ("ci_low", "ci_high"):
            chart.add(
                f"{label} {bound}", [at[x][bound] if x in at else None for x in xs], color=color, width=1, dash=[4, 3]
            )
    return chart


def _fleet_chart(rows: list[tuple], x: str, y: str, group: str, cell: Any) -> Chart | None:
    found = [(_float(display(cell(r, x))) if cell(r, x) is not None else None, number(cell(r, y)), r) for r in rows]
    points: list[tuple[float, float, tuple]] = sorted(
        ((px, py, r) for px, py, r in found if px is not None and py is not None), key=lambda p: (p[0], p[2][0])
    )
    if not points:
        return None
    xs = [p[0] for p in points]
    xlog = min(xs) > 0 and max(xs) / min(xs) >= 100
    chart = Chart(
        "fleet",
        f"{y} against {x}",
        [p[0] for p in points],
        kind="points",
        xlabel=x,
        ylabel=y,
        xlog=xlog,
        labels=[p[2][0] for p in points],
    )
    names = [display(cell(p[2], group)) if group and cell(p[2], group) is not None else None for p in points]
    for name in sorted(set(names), key=lambda n: (n is None, _sort_key(n))) if group else [None]:
        label = f"{group} = {name}" if group else y
        chart.add(label, [p[1] if not group or names[i] == name else None for i, p in enumerate(points)])
    return chart


#: the fleet table's findings columns: per run, its critical and its warning findings
FINDING_COUNTS = ("findings_critical", "findings_warning")


def finding_counts(served: Served, runs: Sequence[Run]) -> dict[str, tuple[int, int]] | None:
    """run -> (critical, warning) findings; None when the findings query has no answer."""
    try:
        answer = served.named("findings", runs, {})
    except (DataError, QueryError):
        return None
    ri, si = answer.columns.index("run"), answer.columns.index("severity")
    counts: dict[str, list[int]] = {}
    for row in answer.rows:
        pair = counts.setdefault(row[ri], [0, 0])
        if row[si] in ("critical", "warning"):
            pair[0 if row[si] == "critical" else 1] += 1
    return {run: (c, w) for run, (c, w) in counts.items()}


def _float(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def _sort_key(value: Any) -> tuple:
    """Numbers by value (text that reads as a number too), then text."""
    f = _float(value) if not isinstance(value, bool) else None
    return (0, f, "") if f is not None else (1, 0.0, str(value))


# -- a run ----------------------------------------------------------------------------------------
def run_page(served: Served, name: str, given: Mapping[str, str]) -> dict[str, Any]:
    """A run's answers (named queries and views) and its figures."""
    runs = served.pick([name])
    agent = AGENT_SECTION if runs[0].artifact("trajectories") is not None else ()
    answers = answer_all(served, [*(i for section in RUN_SECTIONS.values() for i in section), *agent], runs, given)
    charts = [
        c
        for c in (
            reward_chart("reward", answers["reward_curve"], answers["best_checkpoint"]),
            *signal_charts(answers["step_signals"], runs),
            step_time_chart(answers["step_time_stack"]),
            *vllm_charts(answers["vllm_series"]),
            turns_chart(answers["turn_histogram"], [r.name for r in runs]),
        )
        if c is not None and not c.empty
    ]
    return {
        "run": runs[0],
        "answers": answers,
        "charts": {c.id: c for c in charts},
        "findings": finding_items(answers["findings"]),
        "agent": bool(agent),
    }


def finding_items(answer: Answer | str) -> list[dict[str, Any]]:
    """The findings worst first, each with `link`: the page of the query its evidence command names (with the
    run and the parameters the command gives)."""
    if not isinstance(answer, Answer):
        return []
    items = worst_first([dict(zip(answer.columns, row, strict=True)) for row in answer.rows])
    for item in items:
        item["link"] = evidence_link(item["evidence"])
    return items


def evidence_link(command: str) -> str | None:
    """`rlsql query NAME --run RUN -p k=v` as `/query/NAME?run=RUN&k=v`, `rlsql check --run RUN` as
    `/check?run=RUN`; None for another command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 4 and words[:2] == ["rlsql", "check"] and words[2] in ("--run", "-r"):
        return f"/check?{urllib.parse.urlencode([('run', words[3])])}"
    if words[:2] != ["rlsql", "query"] or len(words) < 3:
        return None
    query: list[tuple[str, str]] = []
    rest = iter(words[3:])
    for word in rest:
        value = next(rest, None)
        if value is None:
            return None
        if word in ("--run", "-r"):
            query.append(("run", value))
        elif word in ("-p", "--param") and "=" in value:
            query.append(tuple(value.split("=", 1)))  # type: ignore[arg-type]
        else:
            return None
    return f"/query/{urllib.parse.quote(words[2])}?{urllib.parse.urlencode(query)}"


def answer_all(
    served: Served, items: Sequence[str], runs: Sequence[Run], given: Mapping[str, str]
) -> dict[str, Answer | str]:
    """Each item's answer: those not kept in memory asked two at a time (the machine's cores; DuckDB lets
    go of the GIL), in threads that end before this returns, each in this request's context (its client
    going away stops them: rlsql/serve/work.py). The per-run queries' missing rows are computed first, on one
    connection (Served.warm), beside the others."""
    batched = [i for i in items if per_run(i)]

    def ask(pool: ThreadPoolExecutor, item: str) -> Future[Answer | str]:
        return pool.submit(contextvars.copy_context().run, _maybe, served, item, runs, given)

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rlsql-page") as pool:
        warmed = pool.submit(
            contextvars.copy_context().run,
            served.warm,
            batched,
            runs,
            {i: params_for(served, i, given) for i in batched},
        )
        futures = {item: ask(pool, item) for item in items if item not in batched}
        warmed.result()
        futures.update({item: ask(pool, item) for item in batched})
        return {item: futures[item].result() for item in items}


def _maybe(served: Served, item: str, runs: Sequence[Run], given: Mapping[str, str]) -> Answer | str:
    """The answer, or the one-line reason there is none (a run without vLLM stats has no vLLM section)."""
    try:
        return served.named(item, runs, params_for(served, item, given))
    except (DataError, QueryError) as exc:
        return str(exc)


def reward_chart(cid: str, curve: Answer | str, best: Answer | str) -> Chart | None:
    if not isinstance(curve, Answer) or not curve.rows:
        return None
    rows = curve.dicts()
    chart = Chart(cid, "Reward per step", [r["step"] for r in rows], xlabel="step", ylabel="reward")
    chart.add("reward", [r["reward"] for r in rows], color="#9aa5b1", width=1, points=True)
    k = next((r["k"] for r in rows if r["k"] is not None), None)
    if any(r["pass_at_k"] is not None for r in rows):
        chart.add(f"pass@{k}", [r["pass_at_k"] for r in rows], color="#7fb77e", width=1, dash=[4, 3])
    chart.add("rolling mean", [r["rolling_mean"] for r in rows], color="#e8a33d", width=1.5)
    chart.add("EMA", [r["ema"] for r in rows], color="#2f6fdf", width=2.5)
    if isinstance(best, Answer) and best.rows and best.dicts()[0]["step"] is not None:
        b = best.dicts()[0]
        chart.add(
            f"best checkpoint (step {b['step']})",
            [b["ema"] if s == b["step"] else None for s in chart.x],
            color="#d6336c",
            width=0,
            points=True,
            size=11,
        )
    return chart


def signal_charts(signals: Answer | str, runs: Sequence[Run]) -> list[Chart]:
    if not isinstance(signals, Answer) or not signals.rows:
        return []
    names = [r.name for r in runs]
    charts = []
    for column, title in SIGNALS:
        xs, per = by_run(signals, "step", column, names)
        chart = Chart(f"signal-{column}", title, xs, xlabel="step", ylabel=column)
        for run in names:
            chart.add(run if len(names) > 1 else column, per[run])
        charts.append(chart)
    return charts


def step_time_chart(stack: Answer | str) -> Chart | None:
    if not isinstance(stack, Answer) or not stack.rows:
        return None
    rows = stack.dicts()
    steps = sorted({r["step"] for r in rows})
    spans = list(dict.fromkeys(r["span"] for r in rows))
    seconds = {(r["step"], r["span"]): r["seconds"] for r in rows}
    total = {r["step"]: r["step_seconds"] for r in rows}
    chart = Chart("step-time", "Step time by span (log scale)", steps, xlabel="step", ylabel="seconds", ylog=True)
    chart.add("step (timing/step)", [total.get(s) for s in steps], color="#222", width=2)
    for span in spans:
        chart.add(span, [seconds.get((s, span)) for s in steps])
    return chart


def vllm_charts(series: Answer | str) -> list[Chart]:
    if not isinstance(series, Answer) or not series.rows:
        return []
    rows: list[dict[str, Any]] = []
    for r in sorted(series.dicts(), key=lambda r: r["ts"]):
        if rows and rows[-1]["log_file"] != r["log_file"]:
            # a gap between two logs' seconds, not a line across it
            rows.append({**dict.fromkeys(r, None), "ts": r["ts"], "log_file": r["log_file"]})
        rows.append(r)
    xs = [epoch(r["ts"]) for r in rows]
    tps = Chart(
        "vllm-tps",
        "vLLM generation throughput per engine",
        xs,
        xlabel="time (node-local)",
        ylabel="tokens/s",
        xtime=True,
        gaps=True,
    )
    tps.add("generation tokens/s per engine", [r["avg_generation_throughput_per_engine"] for r in rows])
    load = Chart(
        "vllm-requests",
        "vLLM requests per engine",
        xs,
        xlabel="time (node-local)",
        ylabel="requests",
        xtime=True,
        gaps=True,
    )
    load.add("running", [r["avg_running_requests_per_engine"] for r in rows])
    load.add("waiting", [r["avg_waiting_requests_per_engine"] for r in rows])
    return [tps, load]


def turns_chart(hist: Answer | str, runs: Sequence[str]) -> Chart | None:
    if not isinstance(hist, Answer) or not hist.rows:
        return None
    xs, per = by_run(hist, "turns", "trials", runs)
    chart = Chart(
        "turns",
        "Trials by number of turns",
        xs,
        kind="bars" if len(runs) == 1 else "line",
        xlabel="turns",
        ylabel="trials",
    )
    for run in runs:
        chart.add(run if len(runs) > 1 else "trials", per[run])
    return chart


# -- compare --------------------------------------------------------------------------------------
def compare_page(served: Served, names: Sequence[str], given: Mapping[str, str]) -> dict[str, Any]:
    if not 2 <= len(set(names)) <= COMPARE_MAX:
        raise UsageError(
            f"compare takes 2 to {COMPARE_MAX} runs ({len(set(names))} given): tick them on the fleet page"
        )
    runs = served.pick(names)
    run_names = [r.name for r in runs]
    baseline = (given.get("baseline") or "").strip() or min(run_names)
    if baseline not in run_names:  # task_diff would answer no rows, which reads as "nothing changed"
        raise UsageError(f"baseline {baseline!r} is not among the runs compared ({', '.join(run_names)})")
    answers = answer_all(
        served,
        (
            "compare_runs",
            "reward_curve",
            "best_checkpoint",
            "step_time_stack",
            "step_signals",
            "turn_histogram",
            "exception_treatment",
            "run_diff",
            "task_diff",
            "task_rates",
        ),
        runs,
        given,
    )
    charts: list[Chart] = []
    curve = answers["reward_curve"]
    if isinstance(curve, Answer) and curve.rows:
        for column, title in (("ema", "Reward EMA per step"), ("reward", "Reward per step")):
            xs, per = by_run(curve, "step", column, run_names)
            chart = Chart(f"cmp-{column}", title, xs, xlabel="step", ylabel=column)
            for run in run_names:
                chart.add(run, per[run])
            charts.append(chart)
    stack = answers["step_time_stack"]
    if isinstance(stack, Answer) and stack.rows:
        xs, per = by_run(stack, "step", "step_seconds", run_names)
        chart = Chart(
            "cmp-step-time", "Step time (timing/step, log scale)", xs, xlabel="step", ylabel="seconds", ylog=True
        )
        for run in run_names:
            chart.add(run, per[run])
        charts.append(chart)
    charts.extend(signal_charts(answers["step_signals"], runs))
    turns = turns_chart(answers["turn_histogram"], run_names)
    if turns is not None:
        charts.append(turns)
    return {
        "runs": runs,
        "answers": answers,
        "charts": {c.id: c for c in charts if not c.empty},
        "grid": task_grid(answers["task_rates"], answers["task_diff"], run_names, baseline),
    }


@dataclass
class TaskGrid:
    """The compare page's tasks (rows) by runs (columns): each cell a run's rate of the task (task_rates) and,
    for a run other than the baseline, task_diff's verdict; the changed tasks first, by their lowest q_value."""

    runs: list[str]
    baseline: str | None
    #: (task, [(rate or None, verdict or None) per run]), in the order shown
    rows: list[tuple[str, list[tuple[Any, str | None]]]]
    changed: int
    total: int


def task_grid(rates: Answer | str, diff: Answer | str, runs: Sequence[str], baseline: str) -> TaskGrid | None:
    if not isinstance(rates, Answer) or not rates.rows:
        return None
    rate: dict[tuple[str, str], Any] = {(r["run"], r["task_name"]): r["rate"] for r in rates.dicts()}
    verdict: dict[tuple[str, str], str] = {}
    lowest_q: dict[str, float] = {}
    if isinstance(diff, Answer):
        for r in diff.dicts():
            verdict[(r["run"], r["task_name"])] = r["verdict"]
            if r["verdict"] != "same":
                lowest_q[r["task_name"]] = min(lowest_q.get(r["task_name"], 1.0), r["q_value"])
    tasks = sorted({task for _, task in rate}, key=lambda t: (t not in lowest_q, lowest_q.get(t, 1.0), t))
    rows = [(t, [(rate.get((run, t)), verdict.get((run, t))) for run in runs]) for t in tasks[:GRID_ROWS]]
    return TaskGrid(list(runs), baseline, rows, len(lowest_q), len(tasks))


# -- trials ---------------------------------------------------------------------------------------
def whole_number(text: str) -> bool:
    """`text` is written in ASCII digits (str.isdigit() also takes `²` and `①`, which int() refuses)."""
    return text.isascii() and text.isdigit()


def trial_filters(given: Mapping[str, str]) -> dict[str, Any]:
    """The trials page's filters as bound values (None: not filtered); UsageError for a bad number."""
    values: dict[str, Any] = {}
    for name in TRIAL_FILTERS:
        raw = (given.get(name) or "").strip()
        if name.startswith("turns_") and raw:
            if not whole_number(raw):
                raise UsageError(f"{name}: {raw!r} is not a whole number of turns")
            values[name] = int(raw)
        else:
            values[name] = raw or None
    return values


def check_page(served: Served, name: str) -> dict[str, Any]:
    """`rlsql check --run NAME` as a page: every problem of the run's files, with its file and line."""
    runs = served.pick([name])
    issues = served.check(runs[0])
    counts = {s: sum(1 for row in issues.rows if row[1] == s) for s in ("error", "warning", "info")}
    return {"run": runs[0], "issues": issues, "counts": counts}


def trials_page(served: Served, name: str, given: Mapping[str, str]) -> dict[str, Any]:
    """One page of a run's trials, filtered and sorted on the server."""
    runs = served.pick([name])
    filters = trial_filters(given)
    bound = {"run": runs[0].name, **filters}
    filtered = page_sql("trials")
    count = served.select(f"SELECT count(*) AS trials FROM (\n{filtered}\n)", runs, bound).rows[0][0]
    columns = served.select(f"SELECT * FROM (\n{filtered}\n) LIMIT 0", runs, bound).columns
    sort = given.get("sort") or "row_no"
    if sort not in columns:
        raise UsageError(f"sort: no column {sort!r} in trials (columns: {', '.join(columns)})")
    desc = given.get("desc") in ("1", "true", "on")
    pages = max(1, -(-count // TRIALS_PAGE))
    page = given.get("page") or "1"
    if not whole_number(page) or not 1 <= int(page) <= pages:
        raise UsageError(f"page: {page!r} is not a page of 1 to {pages}")
    order = f"{identifier(sort)} {'DESC' if desc else 'ASC'} NULLS LAST, row_no"
    rows = served.select(
        f"SELECT * FROM (\n{filtered}\n) ORDER BY {order} LIMIT {TRIALS_PAGE} OFFSET $offset",
        runs,
        {**bound, "offset": (int(page) - 1) * TRIALS_PAGE},
    )
    exceptions = _maybe(served, "exception_distribution", runs, {})
    return {
        "run": runs[0],
        "rows": rows,
        "count": count,
        "page": int(page),
        "pages": pages,
        "sort": sort,
        "desc": desc,
        "filters": {k: given.get(k, "") for k in TRIAL_FILTERS},
        "outcomes": OUTCOMES,
        "exceptions": [r["exception_type"] for r in exceptions.dicts()] if isinstance(exceptions, Answer) else [],
        "page_size": TRIALS_PAGE,
    }


def trial_page(served: Served, name: str, trial: str, full: bool) -> dict[str, Any]:
    """One trial's facts (its trials row) and its transcript as `rlsql trial` shows it; long texts cut and copied
    context folded unless `full`."""
    runs = served.pick([name])
    row = served.select(page_sql("trial"), runs, {"run": runs[0].name, "trial": trial})
    if not row.rows:
        raise NotFound(f"run {runs[0].name} has no trial {trial!r}")
    facts = dict(zip(row.columns, row.rows[0], strict=True))
    found: transcripts.Transcript | str
    try:
        found = served.transcript(runs[:1], trial)
        found = found.missing or found  # a trial folder without a trajectory: the CLI's line, saying what it lacks
    except (DataError, UsageError) as exc:
        found = str(exc)  # no trajectories in the run, or none for this trial: the CLI's line, saying where it looked
    return {
        "run": runs[0],
        "trial": trial,
        "row": row,
        "full": full,
        "cut_at": transcripts.CUT,
        "facts": {k: facts.get(k) for k in transcripts.TRIAL_FIELDS},
        # the trial's result.json's, whether or not it has a trajectory
        "traceback": transcripts.exception_traceback(runs[0], trial),
        "transcript": found,
        "segments": [] if isinstance(found, str) else list(transcripts.segments(found, full)),
    }
