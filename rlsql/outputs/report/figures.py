"""The report's figures, drawn with matplotlib (Agg backend, no display needed) from gathered rows.

matplotlib is an optional extra (`pip install 'rlsql[report]'`): it is imported only here, when a
report is made. Figures are built on `matplotlib.figure.Figure` directly (no pyplot global state)
and returned as PNG bytes. Nothing here computes a statistic: each series is a column of a query
or view, drawn as it is.

Legends sit outside the axes (right of the plot), so they never cover data, and hold at most
LEGEND_CAP entries. With more than a handful of runs (render.COMPARE_AT) the best and the worst run
(ReportData.highlighted) are drawn in colour and every other run in grey under one legend entry.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from rlsql.core.errors import UsageError
from rlsql.outputs.report import human
from rlsql.outputs.report.data import ReportData, Rows

INSTALL_HINT = "pip install 'rlsql[report]'"
DPI = 100
#: at most this many runs get a colour and a legend entry each; above it, best / worst / the rest in grey
FEW_RUNS = 6
LEGEND_CAP = 14
#: a step whose total passes this many times the median step total is drawn clipped, its value written on it
OUTLIER_FACTOR = 4.0
GREY = "#9a9a9a"
BEST, WORST = "#1f77b4", "#d62728"


def require_matplotlib() -> None:
    """Fail with one clear line when the optional plotting dependency is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"rlsql report draws its figures with matplotlib, which is not installed: {INSTALL_HINT}") \
            from exc


def _figure(width: float, height: float):
    # a bare Figure renders with the Agg canvas; pyplot (and its backend selection) is never touched
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def png(fig) -> bytes:
    buffer = io.BytesIO()
    # no creation time or software version in the file: the same rows give the same bytes
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _colors(n: int) -> list:
    import matplotlib

    cycle = matplotlib.colormaps["tab10"]
    return [cycle(i % 10) for i in range(n)]


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _by(rows: Rows, key: str) -> dict[Any, Rows]:
    groups: dict[Any, Rows] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return groups


def _xy(rows: Rows, x: str, y: str) -> tuple[list, list]:
    points = [(r[x], r[y]) for r in rows if r[x] is not None and r[y] is not None]
    return [p[0] for p in points], [p[1] for p in points]


class RunStyles:
    """Colour, weight and legend label per run: one colour each for a few runs; else best, worst, grey."""

    def __init__(self, data: ReportData, runs: list[str]):
        self.runs = runs
        self.few = len(data.runs) <= FEW_RUNS
        self.best, self.worst = data.highlighted()
        self.colors = dict(zip(runs, _colors(len(runs)), strict=True))
        self._grey_labelled = False

    def order(self) -> list[str]:
        """Grey runs first, so the highlighted ones are drawn on top."""
        if self.few:
            return self.runs
        top = [r for r in (self.worst, self.best) if r in self.runs]
        return [r for r in self.runs if r not in top] + top

    def shown(self, run: str) -> bool:
        return self.few or run in (self.best, self.worst)

    def color(self, run: str):
        if self.few:
            return self.colors[run]
        return BEST if run == self.best else WORST if run == self.worst else GREY

    def label(self, run: str, what: str = "") -> str | None:
        """The legend label of this run's line (None: no legend entry)."""
        suffix = f" {what}" if what else ""
        if self.few:
            return f"{run}{suffix}" if len(self.runs) > 1 or what else None
        if run == self.best:
            return f"best: {run}{suffix}"
        if run == self.worst:
            return f"worst: {run}{suffix}"
        if not self._grey_labelled:
            self._grey_labelled = True
            others = len([r for r in self.runs if r not in (self.best, self.worst)])
            return f"other runs ({others}){suffix}"
        return None


def _legend(fig, ax=None, **kw) -> None:
    """A legend outside the plotting area (right of it), capped at LEGEND_CAP entries."""
    axes = [ax] if ax is not None else fig.axes
    handles, labels = [], []
    for a in axes:
        for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if not handles:
        return
    fig.legend(handles[:LEGEND_CAP], labels[:LEGEND_CAP], loc="outside right upper", fontsize=8, **kw)


def _clip_limit(totals: list[float]) -> float | None:
    """The y limit that keeps the ordinary steps readable, or None when no step is an outlier."""
    values = sorted(v for v in totals if v is not None and v > 0)
    if len(values) < 3:
        return None
    median = values[len(values) // 2]
    ordinary = [v for v in values if v <= OUTLIER_FACTOR * median]
    if len(ordinary) == len(values):
        return None
    return max(ordinary) * 1.25


def _mark_clipped(ax, points: list[tuple[Any, float]], limit: float) -> None:
    """Write each clipped value inside its bar, upright, below a break mark: the bar runs on past the frame."""
    for x, value in points:
        if value is not None and value > limit:
            ax.plot([x], [limit], marker=(2, 0, 0), markersize=14, color="white", markeredgewidth=3, zorder=5,
                    clip_on=False)
            ax.text(x, limit * 0.97, f"{human.duration(value)} (clipped)", rotation=90, ha="center", va="top",
                    fontsize=8, zorder=6, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.85,
                                                "edgecolor": "none"})


def reward_figure(data: ReportData):
    """Reward per step with its EMA and pass@k; the best checkpoint marked (one colour per run, or highlighted)."""
    curve = _by(data["reward_curve"], "run")
    if not any(r["reward"] is not None for rows in curve.values() for r in rows):
        return None
    best = {r["run"]: r for r in data["best_checkpoint"]}
    styles = RunStyles(data, list(curve))
    fig = _figure(11, 5.2)
    ax = fig.add_subplot()
    for run in styles.order():
        rows, color = curve[run], styles.color(run)
        shown = styles.shown(run)
        x, y = _xy(rows, "step", "ema")
        ax.plot(x, y, color=color, linewidth=2.2 if shown else 0.8, alpha=1 if shown else 0.5,
                label=styles.label(run, "EMA of reward" if styles.few else "(EMA)"), zorder=3 if shown else 1)
        if not shown:
            continue
        x, y = _xy(rows, "step", "reward")
        ax.plot(x, y, color=color, alpha=0.45, linewidth=1, marker="o", markersize=2.5,
                label=f"{run} reward" if len(curve) > 1 else "reward")
        x, y = _xy(rows, "step", "pass_at_k")
        if y and styles.few:
            k = next((r["k"] for r in rows if r["k"] is not None), None)
            ax.plot(x, y, color=color, linewidth=1.3, linestyle="--",
                    label=f"{run} pass@{k}" if len(curve) > 1 else f"pass@{k}")
        b = best.get(run)
        if b and b["step"] is not None:
            ax.plot([b["step"]], [b["ema"]], marker="*", markersize=16, color=color, markeredgecolor="black",
                    linestyle="none", zorder=4,
                    label=f"{run} best checkpoint" if len(curve) > 1 else "best checkpoint")
            if len(curve) == 1:
                ax.annotate(f"step {b['step']}\nEMA {human.number(b['ema'])}", (b["step"], b["ema"]),
                            textcoords="offset points", xytext=(-10, -32), ha="right", fontsize=9)
    ax.set_title("Reward per training step", fontsize=13)
    ax.set_xlabel("training step (deduplicated, first-seen row)")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("reward (0-1)")
    ax.set_ylim(-0.03, 1.05)
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    return fig


def turns_figure(data: ReportData):
    """Histogram of agent turns per trial (left) and mean turns per exception type (right)."""
    hist = _by(data["turn_histogram"], "run")
    by_exc = _by(data["turns_by_exception"], "run")
    if not hist:
        return None
    styles = RunStyles(data, list(hist))
    fig = _figure(13, 5.2)
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    if styles.few:
        runs = list(hist)
        width = 0.8 / len(runs)
        for i, run in enumerate(runs):
            x = [r["turns"] + (i - (len(runs) - 1) / 2) * width for r in hist[run]]
            left.bar(x, [r["trials"] for r in hist[run]], width=width, color=styles.color(run),
                     label=run if len(runs) > 1 else "trials")
        left.set_ylabel("trials")
    else:
        # many runs: trials per turn count as lines (bars of 40 runs side by side would be slivers)
        for run in styles.order():
            x, y = _xy(hist[run], "turns", "trials")
            shown = styles.shown(run)
            left.plot(x, y, color=styles.color(run), linewidth=1.8 if shown else 0.7, alpha=1 if shown else 0.5,
                      label=styles.label(run), marker="o" if shown else None, markersize=3)
        left.set_ylabel("trials")
    left.set_title("Agent turns per trial", fontsize=12)
    left.set_xlabel("agent turns (n_episodes)")
    left.xaxis.set_major_locator(_integer_ticks())
    left.grid(axis="y", alpha=0.3)
    drawn = [r for r in hist if styles.shown(r)]
    types: list[str] = []
    for run in drawn:
        for r in by_exc.get(run, []):
            if r["exception_type"] not in types:
                types.append(r["exception_type"])
    height = 0.8 / max(len(drawn), 1)
    for i, run in enumerate(drawn):
        rows = {r["exception_type"]: r for r in by_exc.get(run, [])}
        ys, means, counts = [], [], []
        for j, exc in enumerate(types):
            if exc in rows:
                ys.append(j + (i - (len(drawn) - 1) / 2) * height)
                means.append(rows[exc]["mean_turns"])
                counts.append(rows[exc]["trials"])
        bars = right.barh(ys, means, height=height, color=styles.color(run))
        right.bar_label(bars, labels=[f"n={human.count(c)}" for c in counts], fontsize=7, padding=2)
    right.set_yticks(range(len(types)), types, fontsize=8)
    right.invert_yaxis()
    right.set_title("Mean agent turns by exception type" + ("" if styles.few else ": best, worst"),
                    fontsize=12)
    right.set_xlabel("mean agent turns per trial (n = trials with turns)")
    right.grid(axis="x", alpha=0.3)
    right.margins(x=0.15)
    if len(hist) > 1:
        _legend(fig, left)
    return fig


def _step_panel(ax, run: str, rows: Rows) -> None:
    spans: list[str] = []
    for r in rows:
        if r["span"] not in spans and r["span"] != "unattributed":
            spans.append(r["span"])
    if any(r["span"] == "unattributed" for r in rows):
        spans.append("unattributed")
    steps = sorted({r["step"] for r in rows})
    bottoms = dict.fromkeys(steps, 0.0)
    for span, color in zip(spans, _colors(len(spans)), strict=True):
        seconds = {r["step"]: r["seconds"] for r in rows if r["span"] == span}
        xs = [s for s in steps if s in seconds]
        ax.bar(xs, [seconds[s] for s in xs], bottom=[bottoms[s] for s in xs], color=color, label=span, width=0.8)
        for s in xs:
            bottoms[s] += seconds[s]
    totals = {r["step"]: r["step_seconds"] for r in rows}
    ax.plot(steps, [totals[s] for s in steps], linestyle="none", marker="_", markersize=10, color="black",
            label="timing/step")
    limit = _clip_limit(list(totals.values()))
    if limit is not None:
        ax.set_ylim(0, limit)
        _mark_clipped(ax, sorted(totals.items()), limit)
    ax.set_title(f"Time per training step by span: {run}", fontsize=12)
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("seconds")
    ax.grid(axis="y", alpha=0.3)


def step_time_figure(data: ReportData):
    """Per-step time stacked by the step's direct child spans, one panel per run (a few runs) or the
    step totals of every run in one panel (many runs); an outlier step (step 1 of an async run) is
    clipped with its value written on it."""
    stack = _by(data["step_time_stack"], "run")
    if not stack:
        return None
    styles = RunStyles(data, list(stack))
    if styles.few:
        fig = _figure(12, 1.2 + 3.6 * len(stack))
        axes = fig.subplots(len(stack), 1, squeeze=False)[:, 0]
        for ax, (run, rows) in zip(axes, stack.items(), strict=True):
            _step_panel(ax, run, rows)
        _legend(fig)
        return fig
    fig = _figure(12, 5)
    ax = fig.add_subplot()
    every: list[float] = []
    for run in styles.order():
        totals = sorted({r["step"]: r["step_seconds"] for r in stack[run]}.items())
        shown = styles.shown(run)
        ax.plot([t[0] for t in totals], [t[1] for t in totals], color=styles.color(run),
                linewidth=1.8 if shown else 0.7, alpha=1 if shown else 0.5, label=styles.label(run))
        every += [t[1] for t in totals if t[1] is not None]
    limit = _clip_limit(every)
    if limit is not None:
        ax.set_ylim(0, limit)
        ax.text(0.01, 0.98, f"clipped at {human.duration(limit)}: longer steps run off the top",
                transform=ax.transAxes, va="top", fontsize=8)
    ax.set_title("Time per training step (timing/step), every run", fontsize=12)
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("seconds")
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    return fig


def signals_figure(data: ReportData):
    """Entropy, grad norm, log-ratio and batch errors per step: the signals of a run going wrong."""
    rows = data["step_signals"]
    panels = [
        ("entropy", "policy entropy"),
        ("grad_norm", "grad norm (raw)"),
        ("log_ratio_mean", "|log ratio| mean"),
        ("timeouts_per_batch", "errors per batch"),
    ]
    present = [(c, label) for c, label in panels if any(r[c] is not None for r in rows)]
    if any(r["context_length_per_batch"] is not None for r in rows) and not any(c == "timeouts_per_batch"
                                                                               for c, _ in present):
        present.append(("timeouts_per_batch", "errors per batch"))
    if not present:
        return None
    by_run = _by(rows, "run")
    styles = RunStyles(data, list(by_run))
    fig = _figure(12, 1 + 2.4 * len(present))
    axes = fig.subplots(len(present), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (column, label) in zip(axes, present, strict=True):
        styles._grey_labelled = False
        for run in styles.order():
            shown = styles.shown(run)
            width, alpha = (1.5 if shown else 0.7), (1 if shown else 0.5)
            series = [(column, "", "-")] if column != "timeouts_per_batch" else [
                ("timeouts_per_batch", "agent timeouts", "-"), ("context_length_per_batch", "context length", ":")]
            for name, what, style in series:
                x, y = _xy(by_run[run], "step", name)
                if not x:
                    continue  # a run that does not log it gets no line and no legend entry
                legend = styles.label(run, what) if shown or name != "context_length_per_batch" else None
                ax.plot(x, y, color=styles.color(run), linewidth=width, alpha=alpha, linestyle=style, label=legend)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_title("Training signals per step (deduplicated)", fontsize=12)
    axes[-1].set_xlabel("training step")
    axes[-1].xaxis.set_major_locator(_integer_ticks())
    _legend(fig)
    return fig


def vllm_figure(data: ReportData):
    """vLLM generation throughput, running and waiting requests (per engine) and prefix-cache hits over time.

    One column of panels per run (runs need not overlap in time), one line per log; with many runs
    only the best and the worst run are drawn (the vLLM table lists every log).
    """
    series = data["vllm_series"]
    if not series:
        return None
    import matplotlib.dates as mdates

    panels = [
        ("avg_generation_throughput_per_engine", "generation\n(tokens/s per engine)"),
        ("avg_running_requests_per_engine", "running requests\n(per engine)"),
        ("avg_waiting_requests_per_engine", "waiting requests\n(per engine)"),
        ("avg_prefix_cache_hit_rate_pct", "prefix-cache\nhit rate (%)"),
    ]
    by_run = _by(series, "run")
    styles = RunStyles(data, list(by_run))
    if not styles.few:
        chosen = [r for r in (styles.best, styles.worst) if r in by_run] or list(by_run)[:2]
        by_run = {r: by_run[r] for r in chosen}
    fig = _figure(min(12 + 5 * (len(by_run) - 1), 30), 9)
    grid = fig.subplots(len(panels), len(by_run), sharex="col", squeeze=False)
    for col, (run, rows) in enumerate(by_run.items()):
        logs = _by(rows, "log_file")
        axes = grid[:, col]
        for ax, (column, label) in zip(axes, panels, strict=True):
            for color, (log, log_rows) in zip(_colors(len(logs)), logs.items(), strict=True):
                x, y = _xy(log_rows, "ts", column)
                ax.plot(x, y, color=color, linewidth=0.9, label=f"{run}: {log}" if len(by_run) > 1 else str(log))
            if col == 0:
                ax.set_ylabel(label, fontsize=9)
            ax.grid(alpha=0.3)
        axes[-1].set_ylim(0, 100)
        axes[0].set_title(f"vLLM engines: {run}" if len(by_run) > 1 else "vLLM engines over time", fontsize=12)
        locator = mdates.AutoDateLocator(minticks=2, maxticks=5 if len(by_run) > 1 else 8)
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axes[-1].set_xlabel("time (node-local clock of the engine logs)")
    _legend(fig, title="log", title_fontsize=8)
    return fig


#: file name -> (alt text, drawing function); the order the report shows them in
FIGURES: dict[str, tuple[str, Callable[[ReportData], Any]]] = {
    "reward.png": ("Reward per step with its EMA and pass@k; the best checkpoint marked", reward_figure),
    "signals.png": ("Entropy, grad norm, log-ratio and batch errors per step", signals_figure),
    "step_time.png": ("Time per training step stacked by span", step_time_figure),
    "vllm.png": ("vLLM throughput, running and waiting requests and prefix-cache hit rate over time", vllm_figure),
    "turns.png": ("Histogram of agent turns and mean turns per exception type", turns_figure),
}


def build_all(data: ReportData, step=None) -> dict[str, Any]:
    """File name -> matplotlib Figure, for every figure the data can draw."""
    out: dict[str, Any] = {}
    for name, (_alt, draw) in FIGURES.items():
        if step:
            step(f"drawing {name}", stage=True)
        fig = draw(data)
        if fig is not None:
            out[name] = fig
    return out


def draw_all(data: ReportData, step=None) -> dict[str, bytes]:
    """File name -> PNG bytes, for every figure the data can draw."""
    return {name: png(fig) for name, fig in build_all(data, step).items()}
