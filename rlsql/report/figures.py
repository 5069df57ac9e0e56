"""The report's figures, drawn with matplotlib (Agg backend, no display needed) from gathered rows.

matplotlib is an optional extra (`pip install 'rlsql[report]'`): it is imported only here, when a
report is made. Figures are built on `matplotlib.figure.Figure` directly (no pyplot global state)
and returned as PNG bytes. Nothing here computes a statistic: each series is a column of a query
or view, drawn as it is.
"""

from __future__ import annotations

import io
from typing import Any

from rlsql.errors import UsageError
from rlsql.formats import display
from rlsql.report.data import ReportData, Rows

INSTALL_HINT = "pip install 'rlsql[report]'"
DPI = 100


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


def _png(fig) -> bytes:
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


def reward_figure(data: ReportData) -> bytes | None:
    """Reward per step with its EMA and pass@k, one colour per run, the best checkpoint marked."""
    curve = _by(data["reward_curve"], "run")
    if not any(r["reward"] is not None for rows in curve.values() for r in rows):
        return None
    best = {r["run"]: r for r in data["best_checkpoint"]}
    fig = _figure(10, 5.2)
    ax = fig.add_subplot()
    for color, (run, rows) in zip(_colors(len(curve)), curve.items(), strict=True):
        label = f"{run}: " if len(curve) > 1 else ""
        x, y = _xy(rows, "step", "reward")
        ax.plot(x, y, color=color, alpha=0.45, linewidth=1, marker="o", markersize=2.5, label=f"{label}reward")
        x, y = _xy(rows, "step", "ema")
        ax.plot(x, y, color=color, linewidth=2.2, label=f"{label}EMA of reward")
        x, y = _xy(rows, "step", "pass_at_k")
        if y:
            k = next((r["k"] for r in rows if r["k"] is not None), None)
            ax.plot(x, y, color=color, linewidth=1.3, linestyle="--", label=f"{label}pass@{k}")
        b = best.get(run)
        if b and b["step"] is not None:
            ax.plot([b["step"]], [b["ema"]], marker="*", markersize=16, color=color, markeredgecolor="black",
                    linestyle="none", label=f"{label}best checkpoint (step {b['step']})")
            ax.annotate(f"step {b['step']}\nEMA {display(b['ema'])}", (b["step"], b["ema"]),
                        textcoords="offset points", xytext=(-10, -32), ha="right", fontsize=9)
    ax.set_title("Reward per training step", fontsize=13)
    ax.set_xlabel("training step (deduplicated, first-seen row)")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("reward (0-1)")
    ax.set_ylim(-0.03, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, ncols=2 if len(curve) > 1 else 1)
    return _png(fig)


def turns_figure(data: ReportData) -> bytes | None:
    """Histogram of agent turns per trial (left) and mean turns per exception type (right)."""
    hist = _by(data["turn_histogram"], "run")
    by_exc = _by(data["turns_by_exception"], "run")
    if not hist:
        return None
    runs = list(hist)
    colors = _colors(len(runs))
    fig = _figure(12, 5.2)
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    width = 0.8 / len(runs)
    for i, (run, color) in enumerate(zip(runs, colors, strict=True)):
        x = [r["turns"] + (i - (len(runs) - 1) / 2) * width for r in hist[run]]
        left.bar(x, [r["trials"] for r in hist[run]], width=width, color=color, label=run)
    left.set_title("Agent turns per trial", fontsize=12)
    left.set_xlabel("agent turns (n_episodes)")
    left.xaxis.set_major_locator(_integer_ticks())
    left.set_ylabel("trials")
    left.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        left.legend(fontsize=8)
    types: list[str] = []
    for run in runs:
        for r in by_exc.get(run, []):
            if r["exception_type"] not in types:
                types.append(r["exception_type"])
    height = 0.8 / len(runs)
    for i, (run, color) in enumerate(zip(runs, colors, strict=True)):
        rows = {r["exception_type"]: r for r in by_exc.get(run, [])}
        ys, means, counts = [], [], []
        for j, exc in enumerate(types):
            if exc in rows:
                ys.append(j + (i - (len(runs) - 1) / 2) * height)
                means.append(rows[exc]["mean_turns"])
                counts.append(rows[exc]["trials"])
        bars = right.barh(ys, means, height=height, color=color, label=run)
        right.bar_label(bars, labels=[f"n={display(c)}" for c in counts], fontsize=7, padding=2)
    right.set_yticks(range(len(types)), types, fontsize=8)
    right.invert_yaxis()
    right.set_title("Mean agent turns by exception type", fontsize=12)
    right.set_xlabel("mean agent turns per trial (n = trials with turns)")
    right.grid(axis="x", alpha=0.3)
    right.margins(x=0.15)
    if len(runs) > 1:
        right.legend(fontsize=8)
    return _png(fig)


def step_time_figure(data: ReportData) -> bytes | None:
    """Per-step time stacked by the step's direct child spans, one panel per run; the step total as dots."""
    stack = _by(data["step_time_stack"], "run")
    if not stack:
        return None
    fig = _figure(11, 1.2 + 3.6 * len(stack))
    axes = fig.subplots(len(stack), 1, squeeze=False)[:, 0]
    for ax, (run, rows) in zip(axes, stack.items(), strict=True):
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
            ax.bar(xs, [seconds[s] for s in xs], bottom=[bottoms[s] for s in xs], color=color, label=span,
                   width=0.8)
            for s in xs:
                bottoms[s] += seconds[s]
        totals = {r["step"]: r["step_seconds"] for r in rows}
        ax.plot(steps, [totals[s] for s in steps], linestyle="none", marker="_", markersize=10, color="black",
                label="timing/step")
        ax.set_title(f"Time per training step by span: {run}", fontsize=12)
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(_integer_ticks())
        ax.set_ylabel("seconds")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    return _png(fig)


def vllm_figure(data: ReportData) -> bytes | None:
    """vLLM generation throughput, running and waiting requests (per engine) and prefix-cache hits over time.

    One column of panels per run (runs need not overlap in time), one line per log.
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
    fig = _figure(min(11 + 5 * (len(by_run) - 1), 24), 9)
    grid = fig.subplots(len(panels), len(by_run), sharex="col", squeeze=False)
    for col, (run, rows) in enumerate(by_run.items()):
        logs = _by(rows, "log_file")
        axes = grid[:, col]
        for ax, (column, label) in zip(axes, panels, strict=True):
            for color, (log, log_rows) in zip(_colors(len(logs)), logs.items(), strict=True):
                x, y = _xy(log_rows, "ts", column)
                ax.plot(x, y, color=color, linewidth=0.9, label=str(log))
            if col == 0:
                ax.set_ylabel(label, fontsize=9)
            ax.grid(alpha=0.3)
        axes[-1].set_ylim(0, 100)
        axes[0].set_title(f"vLLM engines over time: {run}" if len(by_run) > 1 else "vLLM engines over time",
                          fontsize=12)
        axes[0].legend(fontsize=8, loc="upper right", title="log", title_fontsize=8)
        locator = mdates.AutoDateLocator()
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axes[-1].set_xlabel("time (node-local clock of the engine logs)")
    return _png(fig)


#: file name -> (alt text, drawing function); the order the report shows them in
FIGURES = {
    "reward.png": ("Reward per step with its EMA and pass@k; the best checkpoint marked", reward_figure),
    "step_time.png": ("Time per training step stacked by span", step_time_figure),
    "vllm.png": ("vLLM throughput, running and waiting requests and prefix-cache hit rate over time", vllm_figure),
    "turns.png": ("Histogram of agent turns and mean turns per exception type", turns_figure),
}


def draw_all(data: ReportData, step=None) -> dict[str, bytes]:
    """File name -> PNG bytes, for every figure the data can draw."""
    out: dict[str, bytes] = {}
    for name, (_alt, draw) in FIGURES.items():
        if step:
            step(f"drawing {name}")
        png = draw(data)
        if png is not None:
            out[name] = png
    return out
