"""The report's figures and its HTML layout, held to what a reader needs: structural checks of the matplotlib
Figure objects of a 1-, a 3-, a 12- and a 40-run report (axis labels, legend entries, series per panel, colours,
the note saying which runs a figure draws and why), and of the 40-run HTML page (contents first, a ranked table of
at most 20 rows that fits the page, every run in a folded table that sorts in Chromium).

What each figure must show is worked out here from the fixture files through tests/oracle.py (which runs have
trainer metrics, which log a signal, which have vLLM stats, how the runs rank), never from rlsql's own code.
"""

from __future__ import annotations

import html
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from rlsql.outputs.report import build_report, figures
from rlsql.outputs.report import data as data_mod
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.conftest import ROOT, RUNS
from tests.test_report import CHROMIUM, REQUIRE_BROWSER_ENV, browser_required

sys.path.insert(0, str(ROOT / "bench"))
from make_fleet import make_fleet, scale_rewards

#: the signals figure's panels: y-axis label -> the trainer metrics it draws (data-contract.md, queries.md)
SIGNALS = {
    "policy entropy": ["policy/policy_entropy"],
    "grad norm (raw)": ["policy/raw_grad_norm"],
    "|log ratio| mean": ["policy/log_ratio_abs_mean"],
    "errors per rollout\nbatch (mean)": [
        "batch_errors/avg_AgentTimeoutError",
        "batch_errors/avg_ContextLengthExceededError",
    ],
}
BLUE, RED, GREY = (0.122, 0.467, 0.706), (0.839, 0.153, 0.157), (0.604, 0.604, 0.604)


# -- what the fixture files say (oracle) -------------------------------------------------------------------


def names(dirs: list[Path]) -> list[str]:
    return sorted(oracle.run_name(d) for d in dirs)


def with_metrics(dirs: list[Path]) -> list[str]:
    return sorted(oracle.run_name(d) for d in dirs if oracle.find_artifacts(d)["metrics"] is not None)


def with_vllm(dirs: list[Path]) -> list[str]:
    return sorted(oracle.run_name(d) for d in dirs if oracle.find_artifacts(d)["vllm"] is not None)


def logging(dirs: list[Path], metrics: list[str]) -> list[str]:
    """The runs whose deduplicated steps hold a value of any of `metrics`."""
    out = []
    for d in dirs:
        if oracle.find_artifacts(d)["metrics"] is None:
            continue
        steps = oracle.dedup_steps(oracle.read_metric_rows(d))
        if any(isinstance(row.get(m), float) for row in steps for m in metrics):
            out.append(oracle.run_name(d))
    return sorted(out)


def ranking(dirs: list[Path]) -> list[str]:
    """The ranked runs, best first (the oracle's run_ranking)."""
    return [r["run"] for r in oracle.expected_view("run_ranking", dirs) if r["rank"] is not None]


def step_spans(d: Path) -> set[str]:
    """The spans a run's step-time bars stack: the recorded direct children of step, and the unattributed rest."""
    return {
        r["span"]
        for r in oracle.q_timing_breakdown(oracle.run_name(d), d)
        if r["within"] == "step" and r["span"] != "overlap"
    }


def vllm_logs(d: Path) -> list[str]:
    return sorted({r["log_file"] for r in oracle.read_vllm_rows(d)})


# -- reading a Figure back -----------------------------------------------------------------------------------


def legend(fig) -> list[str]:
    """Every legend entry of the figure (figure legends and axes legends), in order."""
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    return [t.get_text() for lg in legends for t in lg.get_texts()]


def legend_title(fig) -> str:
    return fig.legends[0].get_title().get_text() if fig.legends else ""


def rgb(color: Any) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return tuple(round(c, 3) for c in to_rgb(color))  # type: ignore[return-value]


def lines_by_label(fig) -> dict[str, Any]:
    return {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}


def note_of(fig) -> str:
    """The note written under the figure (which runs it draws), its lines joined."""
    text = fig._supxlabel.get_text() if getattr(fig, "_supxlabel", None) else ""
    return " ".join(text.split())


def gather(dirs: list[Path]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data_mod.gather(resolve_runs(dirs), check=False)


@pytest.fixture(scope="module")
def one() -> tuple[list[Path], dict]:
    dirs = [RUNS / "calendar"]
    return dirs, figures.build_all(gather(dirs))


@pytest.fixture(scope="module")
def three() -> tuple[list[Path], dict]:
    dirs = [RUNS / "calendar", RUNS / "tiny", RUNS / "harbor_csv"]
    return dirs, figures.build_all(gather(dirs))


@pytest.fixture(scope="module")
def forty(tmp_path_factory) -> tuple[list[Path], dict, Path]:
    """40 runs (bench/make_fleet.py --vary: each copy's rewards scaled, so the runs rank apart), their figures
    and their HTML report."""
    root = tmp_path_factory.mktemp("forty")
    dirs = make_fleet(40, root / "runs", vary=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs(dirs), root / "html", "html")
    return dirs, figures.build_all(gather(dirs)), root / "html" / "report.html"


@pytest.fixture(scope="module")
def twelve(tmp_path_factory) -> tuple[list[Path], dict]:
    """12 runs whose best and worst (copies of `newest`, rewards scaled up and down) have no vLLM stats."""
    dirs = make_fleet(12, tmp_path_factory.mktemp("twelve") / "runs")
    scale_rewards(dirs[3], 1.3)
    scale_rewards(dirs[11], 0.3)
    return dirs, figures.build_all(gather(dirs))


# -- one run: the report that is good enough to show stays so ------------------------------------------------


def test_one_run_figures_label_every_axis_and_series(one) -> None:
    _dirs, built = one
    assert set(built) == {"reward.png", "signals.png", "step_time.png", "vllm.png", "turns.png"}
    assert all(d.note == "" for d in built.values())  # the one run is drawn everywhere: nothing to explain

    reward = built["reward.png"].figure
    (ax,) = reward.axes
    assert ax.get_ylabel() == "reward (0-1)" and ax.get_xlabel().startswith("training step")
    assert legend(reward) == ["EMA of reward (span 5)", "reward per step", "pass@8", "best checkpoint"]
    assert len(ax.get_lines()) == 4

    signals = built["signals.png"].figure
    assert [a.get_ylabel() for a in signals.axes] == list(SIGNALS)  # never a run's name (the overwrite bug)
    assert [len(a.get_lines()) for a in signals.axes] == [1, 1, 1, 2]
    assert signals.axes[-1].get_xlabel() == "training step"
    assert legend(signals) == ["agent timeouts per batch", "context-length errors per batch"]
    styles = [line.get_linestyle() for line in signals.axes[-1].get_lines()]
    assert styles == ["-", ":"]

    step = built["step_time.png"].figure
    (ax,) = step.axes
    assert ax.get_ylabel() == "time in the step (seconds)" and ax.get_xlabel() == "training step"
    assert {c.get_label() for c in ax.containers} == step_spans(RUNS / "calendar")
    assert legend_title(step) == "span"

    vllm = built["vllm.png"].figure
    assert len(vllm.axes) == 4 and all(a.get_ylabel() for a in vllm.axes)
    assert vllm.axes[-1].get_xlabel().startswith("time")
    assert legend(vllm) == vllm_logs(RUNS / "calendar")
    colours = [rgb(line.get_color()) for line in vllm.axes[0].get_lines()]
    assert len(set(colours)) == len(colours)

    turns = built["turns.png"].figure
    left, right = turns.axes
    assert (left.get_ylabel(), left.get_xlabel()) == ("trials", "agent turns (n_episodes)")
    assert right.get_ylabel() == "exception type" and right.get_xlabel().startswith("mean agent turns")
    counts: dict[int, int] = {}
    for trial in oracle.read_trials(RUNS / "calendar"):
        if trial["n_episodes"] is not None:
            counts[trial["n_episodes"]] = counts.get(trial["n_episodes"], 0) + 1
    bars = sorted((round(p.get_x() + p.get_width() / 2), p.get_height()) for p in left.patches)
    assert bars == sorted(counts.items())


# -- three runs: a colour per run, the same in every figure; the run without a figure's data named ------------


def test_three_runs_keep_one_colour_per_run_and_say_which_runs_are_drawn(three) -> None:
    dirs, built = three
    drawn = with_metrics(dirs)  # calendar, tiny: harbor_csv has no trainer metrics
    assert drawn == ["calendar", "tiny"]

    reward = built["reward.png"].figure
    lines = lines_by_label(reward)
    colour = {run: rgb(lines[f"{run}: EMA of reward (span 5)"].get_color()) for run in drawn}
    assert len(set(colour.values())) == len(drawn)
    assert not any(label.startswith("harbor_csv") for label in legend(reward))
    assert (
        built["reward.png"].note == note_of(reward) == "Drawn: calendar, tiny. Not drawn: harbor_csv: no "
        "trainer metrics."
    )

    # the same run, the same colour: in the turns figure (every run has trials) and the signals figure
    turns = built["turns.png"].figure
    left = turns.axes[0]
    assert left.get_ylabel() == "share of the run's trials (%)"
    bar_colour = {c.get_label(): rgb(c.patches[0].get_facecolor()) for c in left.containers}
    assert set(bar_colour) == set(names(dirs))
    assert all(bar_colour[run] == colour[run] for run in drawn)
    assert len(set(bar_colour.values())) == 3
    for container in left.containers:  # each run's bars are its shares of its trials: they sum to 100%
        assert sum(p.get_height() for p in container.patches) == pytest.approx(100)
    assert built["turns.png"].note == ""

    signals = built["signals.png"].figure
    assert [a.get_ylabel() for a in signals.axes] == list(SIGNALS)
    for ax, (label, metrics) in zip(signals.axes, SIGNALS.items(), strict=True):
        runs_drawn = logging(dirs, metrics)
        assert len(ax.get_lines()) == len(runs_drawn) * len(metrics), label
        assert {rgb(line.get_color()) for line in ax.get_lines()} == {colour[r] for r in runs_drawn}
    assert logging(dirs, [m for ms in SIGNALS.values() for m in ms]) == ["calendar"]
    note = built["signals.png"].note
    assert note.startswith("Drawn: calendar. Not drawn: ")
    assert (
        "harbor_csv: no trainer metrics" in note
        and "tiny: entropy, grad norm, log ratio or batch errors not logged" in note
    )

    # one colour per span over both panels (tiny lacks convert_to_training_input: its colours must not shift)
    step = built["step_time.png"].figure
    assert [a.get_title() for a in step.axes] == [f"Time per training step by span: {r}" for r in drawn]
    span_colour: dict[str, set] = {}
    for ax, run in zip(step.axes, drawn, strict=True):
        assert {c.get_label() for c in ax.containers} == step_spans(RUNS / run)
        for c in ax.containers:
            span_colour.setdefault(c.get_label(), set()).add(rgb(c.patches[0].get_facecolor()))
    assert all(len(c) == 1 for c in span_colour.values()), span_colour
    assert len({next(iter(c)) for c in span_colour.values()}) == len(span_colour)
    assert set(legend(step)) == set(span_colour) | {"timing/step (the step's total)"}

    # vLLM: a column per run with stats, every log its own colour across the whole figure
    vllm = built["vllm.png"].figure
    assert with_vllm(dirs) == ["calendar", "tiny"]
    assert [a.get_title() for a in vllm.axes if a.get_title()] == ["vLLM engines: calendar", "vLLM engines: tiny"]
    assert legend(vllm) == [f"{r}: {log}" for r in ["calendar", "tiny"] for log in vllm_logs(RUNS / r)]
    top = [line for ax in vllm.axes[:2] for line in ax.get_lines()]
    assert len(top) == 5 and len({rgb(line.get_color()) for line in top}) == 5
    assert built["vllm.png"].note == "Drawn: calendar, tiny. Not drawn: harbor_csv: no vLLM engine stats."


# -- many runs: best and worst named and coloured, every other run grey -----------------------------------------


def test_forty_runs_highlight_the_best_and_the_worst_by_final_ema(forty) -> None:
    dirs, built, _ = forty
    order = ranking(dirs)
    best, worst = order[0], order[-1]
    drawn = with_metrics(dirs)
    assert len(drawn) == 30 and order and set(order) == set(drawn)

    reward = built["reward.png"].figure
    assert legend_title(reward) == "thick lines: EMA of reward (span 5)"
    entries = legend(reward)
    # best first, then worst, then the grey runs under one entry
    assert entries[0] == f"best by final EMA: {best}" and entries[-1] == "other runs (28)"
    assert entries.index(f"worst by final EMA: {worst}") > entries.index(f"{best}: reward per step")
    assert {f"{best}: reward per step", f"{worst}: reward per step"} <= set(entries)
    assert len(entries) <= figures.LEGEND_CAP
    lines = lines_by_label(reward)
    assert rgb(lines[f"best by final EMA: {best}"].get_color()) == BLUE
    assert rgb(lines[f"worst by final EMA: {worst}"].get_color()) == RED
    grey = [line for line in reward.axes[0].get_lines() if rgb(line.get_color()) == GREY]
    assert len(grey) == 28  # one EMA line per other run with trainer metrics
    # where the two lines coincide the red must show around the blue
    assert lines[f"worst by final EMA: {worst}"].get_linewidth() > lines[f"best by final EMA: {best}"].get_linewidth()
    lacking = sorted(set(names(dirs)) - set(drawn))
    assert built["reward.png"].note == (
        f"Drawn: 30 of 40 runs. Not drawn: 10 runs ({', '.join(lacking[:3])} and 7 more): no trainer metrics."
    )

    for name in ("signals.png", "step_time.png"):
        fig = built[name].figure
        assert f"best by final EMA: {best}" in legend(fig), name
        assert len(legend(fig)) <= figures.LEGEND_CAP
        assert all(ax.get_ylabel() for ax in fig.axes) and fig.axes[-1].get_xlabel() == "training step"
    signals = built["signals.png"].figure
    assert [a.get_ylabel() for a in signals.axes] == list(SIGNALS)
    for ax, (label, metrics) in zip(signals.axes, SIGNALS.items(), strict=True):
        runs_drawn = logging(dirs, metrics)
        assert len(ax.get_lines()) == len(runs_drawn) * len(metrics), label
        silent = [r for r in logging(dirs, [m for ms in SIGNALS.values() for m in ms]) if r not in runs_drawn]
        if silent:
            assert (
                ax.get_title(loc="left") == f"not logged by {len(silent)} runs ({', '.join(silent[:3])} and "
                f"{len(silent) - 3} more)"
            ), label
        else:
            assert ax.get_title(loc="left") == "", label

    # vLLM: the best and the worst of the runs with stats, in blues and reds, the note saying so
    vllm = built["vllm.png"].figure
    have = [r for r in order if r in with_vllm(dirs)]
    titles = [a.get_title() for a in vllm.axes if a.get_title()]
    assert len(titles) == 2 and have[0] in titles[0] and have[-1] in titles[1]
    assert titles[0].startswith("vLLM engines, best") and titles[1].startswith("vLLM engines, worst")
    best_lines = [line for ax in vllm.axes[0::2] for line in ax.get_lines()]
    worst_lines = [line for ax in vllm.axes[1::2] for line in ax.get_lines()]
    assert not {rgb(line.get_color()) for line in best_lines} & {rgb(line.get_color()) for line in worst_lines}
    assert built["vllm.png"].note.startswith(
        f"{len(with_vllm(dirs))} of 40 runs have vLLM engine stats; drawn: the best and the worst of them by final EMA."
    )

    turns = built["turns.png"].figure
    left, right = turns.axes
    assert left.get_ylabel() == "share of the run's trials (%)" and right.get_ylabel() == "exception type"
    assert len(left.get_lines()) == 40  # every run has trials
    assert {rgb(c.patches[0].get_facecolor()) for c in right.containers} == {BLUE, RED}


def test_a_figure_whose_best_and_worst_runs_lack_its_data_says_whom_it_draws_instead(twelve) -> None:
    """The issue's vllm.png: the fleet's best and worst runs had no vLLM stats; the figure drew two other runs
    in one colour without saying why. Here run_003 and run_011 (copies of `newest`) are best and worst."""
    dirs, built = twelve
    order = ranking(dirs)
    assert (order[0], order[-1]) == ("run_003", "run_011")
    have = [r for r in order if r in with_vllm(dirs)]
    assert "run_003" not in have and "run_011" not in have
    vllm = built["vllm.png"].figure
    titles = [a.get_title() for a in vllm.axes if a.get_title()]
    assert titles == [
        f"vLLM engines, best with vLLM stats by final EMA: {have[0]} (rank {order.index(have[0]) + 1} of {len(order)})",
        f"vLLM engines, worst with vLLM stats by final EMA: {have[-1]} (rank {order.index(have[-1]) + 1} of "
        f"{len(order)})",
    ]
    colours = [{rgb(line.get_color()) for ax in vllm.axes[col::2] for line in ax.get_lines()} for col in (0, 1)]
    assert not colours[0] & colours[1]
    assert built["vllm.png"].note == (
        f"{len(with_vllm(dirs))} of 12 runs have vLLM engine stats; drawn: the best and the worst of them by final "
        "EMA. The best run overall (run_003) and the worst run overall (run_011) have none. The vLLM table (rlsql "
        "query vllm_summary) has every log."
    )
    assert note_of(vllm) == built["vllm.png"].note
    # the figures that have both draw them, named as what they are
    assert {"best by final EMA: run_003", "worst by final EMA: run_011"} <= set(legend(built["reward.png"].figure))


# -- the many-runs HTML page ------------------------------------------------------------------------------------


def table_rows(page: str, marker: str) -> list[list[str]]:
    body = re.search(rf'<table data-source="{re.escape(marker)}"[^>]*>(.*?)</table>', page, re.S)
    assert body, marker
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
        if "<td" in row
    ]


def test_html_opens_on_contents_then_a_ranked_table_and_folds_every_run_sortable(forty) -> None:
    dirs, _, page_path = forty
    page = page_path.read_text(encoding="utf-8")
    assert page.index('<nav class="toc">') < page.index("<table")
    tables = re.findall(r'<table data-source="([^"]+)"', page)
    assert tables[0] == "run_ranking layout=ranked"
    want = oracle.expected_view("run_ranking", dirs)
    ranked = [r for r in want if r["rank"] is not None]
    shown = table_rows(page, "run_ranking layout=ranked")
    assert len(shown) <= 20
    assert [row[1] for row in shown] == [r["run"] for r in ranked[:10] + ranked[-10:]]
    assert '<tr class="gap"><th colspan=' in page and "ranks 11-20" in page

    # every run: folded, sortable, each figure's raw value beside its printed text
    start = page.index('<table data-source="run_ranking" class="sortable">')
    assert page.rfind("<details>", 0, start) > page.rfind("</details>", 0, start)
    every = table_rows(page, "run_ranking")
    assert [row[0] for row in every] == [r["run"] for r in want] and len(every) == 40
    body = page[start : page.index("</table>", start)]
    header = re.findall(r"<th[^>]*>(.*?)</th>", body, re.S)
    column = [re.sub(r"<wbr>", "", h) for h in header].index("final_ema")
    cells = [re.findall(r"<td([^>]*)>", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S) if "<td" in row]
    raw = [re.search(r'data-v="([^"]*)"', row[column]) for row in cells]
    assert [float(v[1]) if v else None for v in raw] == pytest.approx([r["final_ema"] for r in want])
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ["<script>"] and "src=" not in scripts[0] and "http" not in page.split("<script>")[1]


@pytest.mark.browser
@pytest.mark.slow
def test_html_fits_the_page_and_sorts_in_chromium(forty) -> None:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: the HTML report test needs Debian's chromium (apt-get install -y chromium)"
        if browser_required():
            pytest.fail(f"{reason}; {REQUIRE_BROWSER_ENV}=1 says it must run")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    dirs, _, page_path = forty
    want = oracle.expected_view("run_ranking", dirs)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.goto(page_path.as_uri())
            width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert width[0] <= width[1], f"the page is wider than the window: {width}"
            ranked = page.locator('table[data-source="run_ranking layout=ranked"]')
            fits = ranked.evaluate("t => [t.scrollWidth, t.clientWidth, t.getBoundingClientRect().top]")
            assert fits[0] <= fits[1] + 1, f"the ranked table scrolls sideways: {fits}"
            assert fits[2] < 900, "the ranked table is not on the first screen"

            page.locator("details:has(table.sortable) > summary").click()
            every = page.locator("table.sortable")
            header = every.locator("th", has_text=re.compile(r"^final_ema$"))

            def column(name: str) -> list[str]:
                return every.evaluate(
                    "(t, name) => { const i = Array.from(t.tHead.rows[0].cells).findIndex("
                    "c => c.textContent === name); return Array.from(t.tBodies[0].rows, "
                    "r => r.cells[i].textContent); }",
                    name,
                )

            finals = {r["run"]: r["final_ema"] for r in want}
            scored = [r for r in finals if finals[r] is not None]
            for direction in ("ascending", "descending"):
                header.click()
                assert header.get_attribute("aria-sort") == direction
                runs = column("run")
                values = [finals[r] for r in runs[: len(scored)]]
                assert values == sorted(values, reverse=direction == "descending"), direction
                assert all(finals[r] is None for r in runs[len(scored) :]), direction  # empty cells stay last
            # text sorts by its words: the run names, from the top
            every.locator("th", has_text=re.compile(r"^run$")).click()
            assert column("run") == sorted(finals)
            assert problems == []
        finally:
            browser.close()
