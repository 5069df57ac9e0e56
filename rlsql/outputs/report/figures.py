"""The report's figures, drawn with matplotlib (Agg backend, no display needed) from gathered rows.

matplotlib is an optional extra (`pip install 'rlsql[report]'`): it is imported only here, when a
report is made. Figures are built on `matplotlib.figure.Figure` directly (no pyplot global state)
and returned as PNG bytes. Nothing here computes a statistic: each series is a column of a query
or view, drawn as it is.

Legends sit outside the axes (right of the plot), so they never cover data, and hold at most
LEGEND_CAP entries. With more than FEW_RUNS runs the best and the worst ranked run a figure draws
(ReportData.highlighted) are drawn in colour and every other run in grey under one legend entry. A
figure that some runs have no data for says under it which runs it draws and why (Drawn.note); the
report prints the same note as the figure's caption.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from rlsql.core.errors import UsageError
from rlsql.outputs.report import human
from rlsql.outputs.report.data import ReportData, Rows, has_artifact
from rlsql.runs.artifacts import ARTIFACT_LABELS

INSTALL_HINT = "pip install 'rlsql[report]'"
DPI = 100
#: at most this many runs get a colour and a legend entry each; above it, best / worst / the rest in grey
FEW_RUNS = 6
LEGEND_CAP = 14
#: a step whose total passes this many times the median step total is drawn clipped, its value written on it
OUTLIER_FACTOR = 4.0
GREY = "#9a9a9a"
#: a figure's note names at most this many runs, then "and N more"
NAMES_IN_NOTE = 3
BEST, WORST = "#1f77b4", "#d62728"


def require_matplotlib() -> None:
    """Fail with one clear line when the optional plotting dependency is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"rlsql report draws its figures with matplotlib, which is not installed: {INSTALL_HINT}"
        ) from exc


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
    """Colour, weight and legend label per run of one figure.

    A few runs (FEW_RUNS or fewer in the report) get one colour each, the same run the same colour in
    every figure (by its place among the report's runs). More runs: the best and the worst ranked run
    among those the figure draws (ReportData.highlighted) in blue and red, every other run grey under one
    legend entry; the legend says what best and worst mean ("best by final EMA: run_001") and, when the
    figure lacks the overall best or worst, which rank its highlighted runs have.
    """

    def __init__(self, data: ReportData, runs: list[str], among: str = "of those drawn"):
        self.runs = runs
        #: what the figure's runs are, for a highlighted run that is not the best or worst of all
        self.among = among
        self.few = len(data.runs) <= FEW_RUNS
        self.best, self.worst = data.highlighted(runs)
        names = [r.name for r in data.runs]
        self.colors = dict(zip(names, _colors(len(names)), strict=True))
        self.ranked = data.ranked()
        self.ranked_by = data.ranked_by
        self._grey_labelled = False

    def order(self) -> list[str]:
        """The order the runs are drawn and listed in the legend: best, worst, then the grey runs (zorder
        keeps the highlighted ones on top: zorder())."""
        if self.few:
            return self.runs
        top = [r for r in (self.best, self.worst) if r in self.runs]
        return top + [r for r in self.runs if r not in top]

    def zorder(self, run: str) -> int:
        """Grey runs at the bottom, the worst above them, the best on top."""
        return 3 if self.few else 4 if run == self.best else 3 if run == self.worst else 1

    def shown(self, run: str) -> bool:
        return self.few or run in (self.best, self.worst)

    def width(self, run: str, base: float) -> float:
        """A line's width: the worst run's wider than the best's, so that where their lines coincide the
        red shows around the blue drawn over it; a grey run's thin."""
        if self.few or run == self.best:
            return base
        return base * 1.6 if run == self.worst else 0.7

    def color(self, run: str):
        if self.few:
            return self.colors[run]
        return BEST if run == self.best else WORST if run == self.worst else GREY

    def who(self, run: str) -> str:
        """The run as its legend names it: 'best by final EMA: run_001', or just its name."""
        if self.few or run not in (self.best, self.worst):
            return run
        rank, count = self.ranked.index(run) + 1, len(self.ranked)
        which = "best" if run == self.best else "worst"
        if rank == (1 if run == self.best else count):
            return f"{which} by {self.ranked_by}: {run}"
        return f"{which} {self.among} by {self.ranked_by}: {run} (rank {rank} of {count})"

    def series(self, run: str, what: str) -> str:
        """The legend label of a second series of a drawn run ('reward per step'; 'tiny: pass@4')."""
        return what if len(self.colors) == 1 else f"{run}: {what}"

    def reset(self) -> None:
        """A new panel: its grey runs get their legend entry again (the legend merges equal labels)."""
        self._grey_labelled = False

    def label(self, run: str, what: str = "") -> str | None:
        """The legend label of this run's (main) line (None: no legend entry). A few runs: the run and
        `what` the line is; many runs: who the run is (`what` then goes in the legend's title)."""
        if self.few:
            if len(self.colors) == 1:
                return what or None
            return f"{run}: {what}" if what else run
        if run in (self.best, self.worst):
            return self.who(run)
        if not self._grey_labelled:
            self._grey_labelled = True
            others = len([r for r in self.runs if r not in (self.best, self.worst)])
            return f"other runs ({human.count(others)})"
        return None


def _names(names: list[str], cap: int = NAMES_IN_NOTE) -> str:
    shown = ", ".join(names[:cap])
    return shown + (f" and {human.count(len(names) - cap)} more" if len(names) > cap else "")


def _runs_phrase(names: list[str]) -> str:
    """'tiny' / '75 runs (run_002, run_006, run_010 and 72 more)'."""
    if len(names) == 1:
        return names[0]
    return f"{human.count(len(names))} runs ({_names(names)})"


def drawn_note(data: ReportData, drawn: Collection[str], artifact: str, logged: str = "") -> str:
    """Which runs a figure draws and why the others are missing; '' when it draws every run.

    A run left out either has no `artifact` at all or has it without `logged` (what the figure reads).
    """
    missing = [r for r in data.runs if r.name not in drawn]
    if not missing:
        return ""
    without = [r.name for r in missing if not has_artifact(r, artifact)]
    silent = [r.name for r in missing if has_artifact(r, artifact)]
    reasons = []
    if without:
        reasons.append(f"{_runs_phrase(without)}: no {ARTIFACT_LABELS[artifact]}")
    if silent:
        reasons.append(f"{_runs_phrase(silent)}: {logged or ARTIFACT_LABELS[artifact]} not logged")
    shown = [r.name for r in data.runs if r.name in drawn]
    head = (
        f"Drawn: {_names(shown)}"
        if len(shown) <= NAMES_IN_NOTE
        else f"Drawn: {human.count(len(shown))} of {human.count(len(data.runs))} runs"
    )
    return f"{head}. Not drawn: {'; '.join(reasons)}."


def _note(fig, note: str) -> None:
    """The figure's note (which runs it draws) written under it, wrapped to the figure's width."""
    if note:
        width = int(fig.get_size_inches()[0] * 15)  # characters of 9-point text per line, about
        fig.supxlabel(textwrap.fill(note, width), fontsize=9, x=0.005, ha="left", color="#333333")


def _legend(fig, ax=None, extra: Sequence = (), **kw) -> None:
    """A legend outside the plotting area (right of it), capped at LEGEND_CAP entries; `extra` are
    handles drawn nowhere that explain a line style."""
    axes = [ax] if ax is not None else fig.axes
    handles, labels = [], []
    for a in axes:
        for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    for h in extra:
        handles.append(h)
        labels.append(h.get_label())
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
            ax.plot(
                [x], [limit], marker=(2, 0, 0), markersize=14, color="white", markeredgewidth=3, zorder=5, clip_on=False
            )
            ax.text(
                x,
                limit * 0.97,
                f"{human.duration(value)} (clipped)",
                rotation=90,
                ha="center",
                va="top",
                fontsize=8,
                zorder=6,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.85, "edgecolor": "none"},
            )


@dataclass
class Drawn:
    """A figure and its note: which runs it draws and why the others are missing ('' when it draws all)."""

    figure: Any
    note: str


def reward_figure(data: ReportData) -> Drawn | None:
    """Reward per step with its EMA and pass@k; the best checkpoint marked (one colour per run, or highlighted)."""
    curve = _by(data["reward_curve"], "run")
    drawn = [run for run, rows in curve.items() if any(r["reward"] is not None for r in rows)]
    if not drawn:
        return None
    best = {r["run"]: r for r in data["best_checkpoint"]}
    styles = RunStyles(data, drawn)
    span = data.params.get("span")
    ema = f"EMA of reward (span {span})" if span else "EMA of reward"
    fig = _figure(11, 5.2)
    ax = fig.add_subplot()
    for run in styles.order():
        rows, color = curve[run], styles.color(run)
        shown = styles.shown(run)
        x, y = _xy(rows, "step", "ema")
        ax.plot(
            x,
            y,
            color=color,
            linewidth=styles.width(run, 2.2),
            alpha=1 if shown else 0.5,
            label=styles.label(run, ema),
            zorder=styles.zorder(run),
        )
        if not shown:
            continue
        x, y = _xy(rows, "step", "reward")
        ax.plot(
            x,
            y,
            color=color,
            alpha=0.45,
            linewidth=1,
            marker="o",
            markersize=2.5,
            label=styles.series(run, "reward per step"),
        )
        x, y = _xy(rows, "step", "pass_at_k")
        if y and styles.few:
            k = next((r["k"] for r in rows if r["k"] is not None), None)
            ax.plot(x, y, color=color, linewidth=1.3, linestyle="--", label=styles.series(run, f"pass@{k}"))
        b = best.get(run)
        if b and b["step"] is not None:
            ax.plot(
                [b["step"]],
                [b["ema"]],
                marker="*",
                markersize=16,
                color=color,
                markeredgecolor="black",
                linestyle="none",
                zorder=5,
                label=styles.series(run, "best checkpoint"),
            )
            if len(data.runs) == 1:
                ax.annotate(
                    f"step {b['step']}\nEMA {human.number(b['ema'])}",
                    (b["step"], b["ema"]),
                    textcoords="offset points",
                    xytext=(-10, -32),
                    ha="right",
                    fontsize=9,
                )
    ax.set_title("Reward per training step", fontsize=13)
    ax.set_xlabel("training step (deduplicated, first-seen row)")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("reward (0-1)")
    ax.set_ylim(-0.03, 1.05)
    ax.grid(alpha=0.3)
    _legend(fig, ax, title=None if styles.few else f"thick lines: {ema}")
    note = drawn_note(data, drawn, "metrics", "reward/avg_raw_reward")
    _note(fig, note)
    return Drawn(fig, note)


def turns_figure(data: ReportData) -> Drawn | None:
    """Agent turns per trial (left: trials, or each run's share of its trials when runs are compared) and
    mean turns per exception type (right: every run, or the highlighted two)."""
    hist = _by(data["turn_histogram"], "run")
    by_exc = _by(data["turns_by_exception"], "run")
    if not hist:
        return None
    drawn = list(hist)
    styles = RunStyles(data, drawn)
    single = len(data.runs) == 1
    fig = _figure(13, 5.2)
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    if single:
        for run in drawn:
            left.bar(
                [r["turns"] for r in hist[run]], [r["trials"] for r in hist[run]], width=0.8, color=styles.color(run)
            )
        left.set_ylabel("trials")
    elif styles.few:
        # runs of different sizes compare by share: 12 trials beside 4,000 would be a flat line
        width = 0.8 / len(drawn)
        for i, run in enumerate(drawn):
            x = [r["turns"] + (i - (len(drawn) - 1) / 2) * width for r in hist[run]]
            left.bar(
                x, [100 * r["share"] for r in hist[run]], width=width, color=styles.color(run), label=styles.label(run)
            )
        left.set_ylabel("share of the run's trials (%)")
    else:
        # many runs: lines (bars of 40 runs side by side would be slivers)
        for run in styles.order():
            x, y = _xy(hist[run], "turns", "share")
            shown = styles.shown(run)
            left.plot(
                x,
                [100 * v for v in y],
                color=styles.color(run),
                linewidth=styles.width(run, 1.8),
                alpha=1 if shown else 0.5,
                label=styles.label(run),
                marker="o" if shown else None,
                markersize=3,
                zorder=styles.zorder(run),
            )
        left.set_ylabel("share of the run's trials (%)")
    left.set_title("Agent turns per trial", fontsize=12)
    left.set_xlabel("agent turns (n_episodes)")
    left.xaxis.set_major_locator(_integer_ticks())
    left.grid(axis="y", alpha=0.3)
    bars_of = drawn if styles.few else [r for r in (styles.best, styles.worst) if r is not None]
    types: list[str] = []
    for run in bars_of:
        for r in by_exc.get(run, []):
            if r["exception_type"] not in types:
                types.append(r["exception_type"])
    height = 0.8 / max(len(bars_of), 1)
    for i, run in enumerate(bars_of):
        rows = {r["exception_type"]: r for r in by_exc.get(run, [])}
        ys, means, counts = [], [], []
        for j, exc in enumerate(types):
            if exc in rows:
                ys.append(j + (i - (len(bars_of) - 1) / 2) * height)
                means.append(rows[exc]["mean_turns"])
                counts.append(rows[exc]["trials"])
        bars = right.barh(ys, means, height=height, color=styles.color(run))
        right.bar_label(bars, labels=[f"n={human.count(c)}" for c in counts], fontsize=7, padding=2)
    right.set_yticks(range(len(types)), types, fontsize=8)
    right.invert_yaxis()
    right.set_title("Mean agent turns by exception type", fontsize=12)
    right.set_xlabel("mean agent turns per trial (n = trials with turns)")
    right.set_ylabel("exception type")
    right.grid(axis="x", alpha=0.3)
    right.margins(x=0.15)
    if not single:
        _legend(fig, left)
    note = drawn_note(data, drawn, "trials", "n_episodes (agent turns)")
    _note(fig, note)
    return Drawn(fig, note)


def _span_colors(rows: Rows) -> dict[str, Any]:
    """One colour per span over every run of the figure (unattributed last), so a colour means one span."""
    spans: list[str] = []
    for r in rows:
        if r["span"] not in spans and r["span"] != "unattributed":
            spans.append(r["span"])
    if any(r["span"] == "unattributed" for r in rows):
        spans.append("unattributed")
    return dict(zip(spans, _colors(len(spans)), strict=True))


def _step_panel(ax, run: str, rows: Rows, colors: dict[str, Any]) -> None:
    steps = sorted({r["step"] for r in rows})
    bottoms = dict.fromkeys(steps, 0.0)
    for span, color in colors.items():
        seconds = {r["step"]: r["seconds"] for r in rows if r["span"] == span}
        xs = [s for s in steps if s in seconds]
        if not xs:
            continue
        ax.bar(xs, [seconds[s] for s in xs], bottom=[bottoms[s] for s in xs], color=color, label=span, width=0.8)
        for s in xs:
            bottoms[s] += seconds[s]
    totals = {r["step"]: r["step_seconds"] for r in rows}
    ax.plot(
        steps,
        [totals[s] for s in steps],
        linestyle="none",
        marker="_",
        markersize=10,
        color="black",
        label="timing/step (the step's total)",
    )
    limit = _clip_limit(list(totals.values()))
    if limit is not None:
        ax.set_ylim(0, limit)
        _mark_clipped(ax, sorted(totals.items()), limit)
    ax.set_title(f"Time per training step by span: {run}", fontsize=12)
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("time in the step (seconds)")
    ax.grid(axis="y", alpha=0.3)


def step_time_figure(data: ReportData) -> Drawn | None:
    """Per-step time stacked by the step's direct child spans, one panel per run (a few runs) or the
    step totals of every run in one panel (many runs); an outlier step (step 1 of an async run) is
    clipped with its value written on it."""
    stack = _by(data["step_time_stack"], "run")
    if not stack:
        return None
    drawn = list(stack)
    styles = RunStyles(data, drawn)
    note = drawn_note(data, drawn, "metrics", "timing/step")
    if styles.few:
        fig = _figure(12, 1.2 + 3.6 * len(stack))
        axes = fig.subplots(len(stack), 1, squeeze=False)[:, 0]
        colors = _span_colors(data["step_time_stack"])
        for ax, (run, rows) in zip(axes, stack.items(), strict=True):
            _step_panel(ax, run, rows, colors)
        _legend(fig, title="span")
        _note(fig, note)
        return Drawn(fig, note)
    fig = _figure(12, 5)
    ax = fig.add_subplot()
    every: list[float] = []
    for run in styles.order():
        totals = sorted({r["step"]: r["step_seconds"] for r in stack[run]}.items())
        shown = styles.shown(run)
        ax.plot(
            [t[0] for t in totals],
            [t[1] for t in totals],
            color=styles.color(run),
            linewidth=styles.width(run, 1.8),
            alpha=1 if shown else 0.5,
            label=styles.label(run),
            zorder=styles.zorder(run),
        )
        every += [t[1] for t in totals if t[1] is not None]
    limit = _clip_limit(every)
    if limit is not None:
        ax.set_ylim(0, limit)
        ax.text(
            0.01,
            0.98,
            f"clipped at {human.duration(limit)}: longer steps run off the top",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
        )
    ax.set_title("Time per training step (timing/step), every run", fontsize=12)
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("time per step (seconds)")
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    _note(fig, note)
    return Drawn(fig, note)


#: the signals figure's panels: y-axis label, then the step_signals columns drawn in it (column, line style, what)
SIGNAL_PANELS = (
    ("policy entropy", (("entropy", "-", ""),)),
    ("grad norm (raw)", (("grad_norm", "-", ""),)),
    ("|log ratio| mean", (("log_ratio_mean", "-", ""),)),
    (
        "errors per rollout\nbatch (mean)",
        (
            ("timeouts_per_batch", "-", "agent timeouts per batch"),
            ("context_length_per_batch", ":", "context-length errors per batch"),
        ),
    ),
)


def signals_figure(data: ReportData) -> Drawn | None:
    """Entropy, grad norm, log-ratio and batch errors per step: the signals of a run going wrong. A panel
    for each signal some run logs; a panel that lacks some of the figure's runs says which."""
    rows = data["step_signals"]
    by_run = _by(rows, "run")
    logged = {
        label: [run for run, rs in by_run.items() if any(r[c] is not None for r in rs for c, _, _ in series)]
        for label, series in SIGNAL_PANELS
    }
    panels = [(label, series) for label, series in SIGNAL_PANELS if logged[label]]
    if not panels:
        return None
    drawn = [run for run in by_run if any(run in logged[label] for label, _ in panels)]
    styles = RunStyles(data, drawn)
    fig = _figure(12, 1.2 + 2.4 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    styled: list[tuple[Any, str]] = []  # line styles that tell two series of one run apart: in the legend
    for ax, (label, series) in zip(axes, panels, strict=True):
        styles.reset()
        for run in styles.order():
            shown = styles.shown(run)
            width, alpha = styles.width(run, 1.5), (1 if shown else 0.5)
            for i, (column, style, what) in enumerate(series):
                x, y = _xy(by_run[run], "step", column)
                if not x:
                    continue  # a run that does not log it gets no line
                ax.plot(
                    x,
                    y,
                    color=styles.color(run),
                    linewidth=width,
                    alpha=alpha,
                    linestyle=style,
                    label=styles.label(run) if i == 0 else None,
                    zorder=styles.zorder(run),
                )
                if what and (style, what) not in styled:
                    styled.append((style, what))
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
        missing = [run for run in drawn if run not in logged[label]]
        if missing:
            ax.set_title(f"not logged by {_runs_phrase(missing)}", fontsize=8, loc="left", color="#555555")
    fig.suptitle("Training signals per step (deduplicated)", fontsize=12)
    axes[-1].set_xlabel("training step")
    axes[-1].xaxis.set_major_locator(_integer_ticks())
    from matplotlib.lines import Line2D

    extra = [Line2D([], [], color="black", linestyle=style, linewidth=1.2, label=what) for style, what in styled]
    _legend(fig, extra=extra)
    note = drawn_note(data, drawn, "metrics", "entropy, grad norm, log ratio or batch errors")
    _note(fig, note)
    return Drawn(fig, note)


def _shades(base: str, n: int) -> list:
    """n shades of one colour, from itself toward white: the logs of one highlighted run."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(base)
    steps = [0.6 * i / max(n - 1, 1) for i in range(n)]
    return [(r + (1 - r) * t, g + (1 - g) * t, b + (1 - b) * t) for t in steps]


def vllm_figure(data: ReportData) -> Drawn | None:
    """vLLM generation throughput, running and waiting requests (per engine) and prefix-cache hits over time.

    One column of panels per run (runs need not overlap in time), one line per log, every line its own
    colour; with many runs only the best and the worst run among those with vLLM stats are drawn (the
    vLLM table lists every log), and the note says so.
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
    with_stats = [r.name for r in data.runs if r.name in by_run]
    styles = RunStyles(data, with_stats, among="with vLLM stats")
    if styles.few:
        chosen = with_stats
        note = drawn_note(data, with_stats, "vllm")
    else:
        chosen = [r for r in (styles.best, styles.worst) if r is not None] or with_stats[:2]
        note = vllm_choice_note(data, with_stats, chosen, styles)
    logs = {run: _by(by_run[run], "log_file") for run in chosen}
    if styles.few:
        total = sum(len(v) for v in logs.values())
        palette = iter(_colors(total) if total <= 10 else [_tab20(i) for i in range(total)])
        colors = {run: [next(palette) for _ in logs[run]] for run in chosen}
    else:
        # the best run's logs in blues, the worst's in reds (as in every figure); runs chosen by name: tab10
        colors = {
            run: _shades(styles.color(run), len(logs[run]))
            if run in (styles.best, styles.worst)
            else _colors(len(logs[run]))
            for run in chosen
        }
    fig = _figure(min(12 + 5 * (len(chosen) - 1), 30), 9)
    grid = fig.subplots(len(panels), len(chosen), sharex="col", squeeze=False)
    for col, run in enumerate(chosen):
        axes = grid[:, col]
        for ax, (column, label) in zip(axes, panels, strict=True):
            for color, (log, log_rows) in zip(colors[run], logs[run].items(), strict=True):
                x, y = _xy(log_rows, "ts", column)
                ax.plot(x, y, color=color, linewidth=0.9, label=f"{run}: {log}" if len(data.runs) > 1 else str(log))
            if col == 0:
                ax.set_ylabel(label, fontsize=9)
            ax.grid(alpha=0.3)
        axes[-1].set_ylim(0, 100)
        title = (
            "vLLM engines over time"
            if len(data.runs) == 1
            else f"vLLM engines: {run}"
            if styles.few
            else f"vLLM engines, {styles.who(run)}"
        )
        axes[0].set_title(title, fontsize=12 if len(title) < 60 else 10)
        locator = mdates.AutoDateLocator(minticks=2, maxticks=5 if len(chosen) > 1 else 8)
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axes[-1].set_xlabel("time (node-local clock of the engine logs)")
    _legend(fig, title="log", title_fontsize=8)
    _note(fig, note)
    return Drawn(fig, note)


def vllm_choice_note(data: ReportData, with_stats: list[str], chosen: list[str], styles: RunStyles) -> str:
    """Why the many-runs vLLM figure draws the runs it draws."""
    count = f"{human.count(len(with_stats))} of {human.count(len(data.runs))} runs have vLLM engine stats"
    ranked = [r for r in chosen if r in (styles.best, styles.worst)]
    if not ranked:
        return (
            f"{count}; none of them is ranked (no {styles.ranked_by}), so the first "
            f"{'two' if len(chosen) > 1 else 'one'} by name: {', '.join(chosen)}."
        )
    text = f"{count}; drawn: the best and the worst of them by {styles.ranked_by}."
    best, worst = data.highlighted()
    lacking = [
        f"the {which} run overall ({run})"
        for which, run in (("best", best), ("worst", worst))
        if run is not None and run not in with_stats
    ]
    if lacking:
        text += f" {' and '.join(lacking).capitalize()} {'has' if len(lacking) == 1 else 'have'} none."
    return text + " The vLLM table (rlsql query vllm_summary) has every log."


def _tab20(i: int):
    import matplotlib

    return matplotlib.colormaps["tab20"](i % 20)


#: file name -> (alt text, drawing function); the order the report shows them in
FIGURES: dict[str, tuple[str, Callable[[ReportData], Drawn | None]]] = {
    "reward.png": ("Reward per step with its EMA and pass@k; the best checkpoint marked", reward_figure),
    "signals.png": ("Entropy, grad norm, log-ratio and batch errors per step", signals_figure),
    "step_time.png": ("Time per training step stacked by span", step_time_figure),
    "vllm.png": ("vLLM throughput, running and waiting requests and prefix-cache hit rate over time", vllm_figure),
    "turns.png": ("Agent turns per trial and mean turns per exception type", turns_figure),
}


def build_all(data: ReportData, step=None) -> dict[str, Drawn]:
    """File name -> the drawn figure and its note, for every figure the data can draw."""
    out: dict[str, Drawn] = {}
    for name, (_alt, draw) in FIGURES.items():
        if step:
            step(f"drawing {name}", stage=True)
        drawn = draw(data)
        if drawn is not None:
            out[name] = drawn
    return out


def draw_all(data: ReportData, step=None) -> dict[str, tuple[bytes, str]]:
    """File name -> (PNG bytes, note), for every figure the data can draw."""
    return {name: (png(d.figure), d.note) for name, d in build_all(data, step).items()}
