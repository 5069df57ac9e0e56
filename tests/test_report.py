"""`rlsql report`: every number printed in report.md against independent expectations, the PNGs, the HTML page.

Expectations come from tests/oracle.py (the named queries) and, for the report's own views, from
plain-Python computations below over the oracle's CSV readers; nothing here imports rlsql's SQL,
formatting or report code to compute an expected value. The HTML report is opened in a real headless
Chromium (Debian's package), which this file starts.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from rlsql.cli import app as cli
from rlsql.outputs.report import build_report
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.conftest import RUNS

CHROMIUM = Path("/usr/bin/chromium")
FIGURES = ("reward.png", "signals.png", "step_time.png", "vllm.png", "turns.png")
FAMILY_ORDER = ["async", "generate", "loss", "policy", "reward", "system", "timing", "trainer", "batch_errors"]


# -- reading a printed figure back ----------------------------------------------------------------------
#
# The report prints for people: rates as percentages with one decimal, seconds as h/m/s, counts with
# thousands separators, other figures to 4 decimals. Which columns hold rates (0-1), percentages
# (0-100) and seconds is written out here from the spec (data-contract.md, queries.md), not taken from
# the code under test; each printed cell is parsed back and compared with the oracle's raw value
# within what its printed precision allows.

RATES = {
    "success_rate",
    "timeout_rate",
    "context_length_rate",
    "mean_discard_rate",
    "share_of_within",
    "share_of_step",
    "share_of_trial",
    "slowest_span_share",
}
PERCENTS = {"pct", "mean_kv_cache_pct", "mean_prefix_cache_hit_pct"}
SECONDS = {
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
PLAIN = {
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
DURATION = re.compile(r"^(-?)(?:(?P<h>[\d,]+) h (?P<hm>\d+) m|(?P<m>\d+) m (?P<ms>\d+) s|(?P<s>\d+\.\d+) s)$")
THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})*$")


def fmt(value: Any) -> str:
    """A figure below 1,000 as the report prints it (4 decimals, trailing zeros dropped; tiny values in 4 digits)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != 0 and abs(value) < 0.001:
            return format(value, ".4g")
        text = format(value, ".4f").rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    return str(value)


def readings(value: Any) -> set[str]:
    """fmt(value), and at a rounding tie also its neighbour: a mean of 4-decimal values can land on a tie
    (0.31335), where summing in another order moves the float by an ulp and format rounds the other way.
    Off a tie the set holds one string, so this accepts nothing else."""
    if not isinstance(value, float) or value == 0 or math.isnan(value):
        return {fmt(value)}
    nudge = abs(value) * 1e-12
    return {fmt(value), fmt(value - nudge), fmt(value + nudge)}


def parse_duration(cell: str) -> tuple[float, float]:
    """'14 h 20 m' / '2 m 20 s' / '45.3 s' / '0.52 s' -> (seconds, half the last printed unit)."""
    match = DURATION.match(cell)
    assert match, f"{cell!r} is not a duration as h/m/s"
    sign = -1 if match.group(1) else 1
    if match["h"] is not None:
        return sign * (int(match["h"].replace(",", "")) * 3600 + int(match["hm"]) * 60), 30.0
    if match["m"] is not None:
        assert int(match["ms"]) < 60, cell
        return sign * (int(match["m"]) * 60 + int(match["ms"])), 0.5
    decimals = len(match["s"].split(".")[1])
    return sign * float(match["s"]), 0.5 * 10**-decimals


def check_cell(cell: str, value: Any, column: str, unit: str | None = None, label: str = "") -> None:
    """Assert that `cell` is how the report must print the raw figure `value` of `column`."""
    where = f"{label} column {column}: printed {cell!r} for {value!r}"
    unit = unit or (
        "rate"
        if column in RATES
        else "pct"
        if column in PERCENTS
        else "seconds"
        if column in SECONDS
        else "plain"
        if column in PLAIN
        else None
    )
    if value is None or (isinstance(value, float) and math.isnan(value)):
        assert cell in ("", "nan"), where
        return
    if isinstance(value, (bool, str)):
        assert cell == fmt(value), where
        return
    if unit in ("rate", "pct"):
        assert re.fullmatch(r"-?\d+\.\d%", cell), where  # one decimal
        scale = 100 if unit == "rate" else 1
        assert abs(float(cell[:-1]) - value * scale) <= 0.05 + 1e-9 * abs(value * scale), where
        return
    if unit == "seconds":
        seconds, tolerance = parse_duration(cell)
        assert abs(seconds - value) <= tolerance + 1e-9 * abs(value), where
        return
    if unit == "plain" or isinstance(value, int):
        if unit == "plain":
            assert cell == str(value), where
        else:
            assert THOUSANDS.match(cell) and int(cell.replace(",", "")) == value, where
        return
    if abs(value) >= 1000:
        assert re.fullmatch(r"-?\d{1,3}(?:,\d{3})*\.\d", cell), where
        assert abs(float(cell.replace(",", "")) - value) <= 0.05 + 1e-9 * abs(value), where
        return
    assert cell in readings(value), where


# -- reading the report back ---------------------------------------------------------------------------

#: the most rows a report table prints (Settings.report_rows' default)
REPORT_ROWS = 100
MARKER = re.compile(r"^<!-- source: (?P<source>\w+)(?P<filters>(?: \w+=\S+)*) -->$")


def split_row(line: str) -> list[str]:
    """A markdown table row's cells as a reader shows them: `\\\\`, `\\|` and `\\`` unescaped (left to right, as
    CommonMark reads backslash escapes), entities decoded."""
    assert line.startswith("|") and line.endswith("|"), line
    cells = re.split(r"(?<!\\)\|", line[1:-1])
    return [html.unescape(re.sub(r"\\([\\|`])", r"\1", c.strip())) for c in cells]


def parse_tables(text: str) -> list[dict]:
    """Every table of report.md: its source marker, filters, header and rows (cells as printed)."""
    lines = text.splitlines()
    tables = []
    claimed: set[int] = set()
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        filters = dict(f.split("=", 1) for f in match["filters"].split())
        j = i + 1
        if lines[j] == "_No rows._":
            tables.append({"source": match["source"], "filters": filters, "columns": [], "rows": []})
            continue
        header = split_row(lines[j])
        assert re.fullmatch(r"\|(?:-{3}:?\|)+", lines[j + 1]), lines[j + 1]
        rows = []
        k = j + 2
        while k < len(lines) and lines[k].startswith("|"):
            rows.append(split_row(lines[k]))
            k += 1
        claimed.update(range(j, k))
        more = re.fullmatch(
            r"_(?P<n>[\d,]+) more rows? not shown: `rlsql (?:query )?(?P<source>\w+)` gives them "
            r"all\._",
            lines[k + 1] if k + 1 < len(lines) else "",
        )
        if more:
            assert more["source"] == match["source"], lines[k + 1]
        tables.append(
            {
                "source": match["source"],
                "filters": filters,
                "columns": header,
                "rows": rows,
                "hidden": int(more["n"].replace(",", "")) if more else 0,
            }
        )
    stray = [n for n, line in enumerate(lines) if line.startswith("|") and n not in claimed]
    assert not stray, f"table lines without a source marker: {[lines[n] for n in stray]}"
    return tables


# -- expectations for the report's own views (plain Python over the oracle's readers) --------------------


def expect_metric_stats(run_dirs: list[Path]) -> list[dict]:
    out = []
    for run_dir in sorted(run_dirs, key=oracle.run_name):
        values: dict[str, list[float]] = {}
        for row in oracle.read_metric_rows(run_dir):
            for column, value in row.items():
                if column not in ("log_file", "step", "global_step") and isinstance(value, float):
                    values.setdefault(column, []).append(value)

        def family_of(metric: str) -> str:
            return metric.split("/")[0] if "/" in metric else "other"

        def order(metric: str) -> tuple:
            family = family_of(metric)
            rank = FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER) + (family == "other")
            return rank, family, metric

        for metric in sorted(values, key=order):
            vs = values[metric]
            out.append(
                {
                    "run": oracle.run_name(run_dir),
                    "family": family_of(metric),
                    "metric": metric,
                    "mean": statistics.fmean(vs),
                    "std": statistics.stdev(vs) if len(vs) > 1 else None,
                    "min": min(vs),
                    "max": max(vs),
                    "count": len(vs),
                }
            )
    return out


def _first_logged(rows: list[dict], candidates: list[str]) -> str | None:
    return next((c for c in candidates if any(isinstance(r.get(c), float) for r in rows)), None)


def expect_training_progression(run_dirs: list[Path]) -> list[dict]:
    out = []
    for run_dir in sorted(run_dirs, key=oracle.run_name):
        rows = oracle.read_metric_rows(run_dir)
        by_step = {r["step"]: r for r in oracle.dedup_steps(rows)}
        kl = _first_logged(rows, ["policy/policy_kl", "policy/policy_entropy"])
        loss = _first_logged(rows, ["loss/final_loss", "policy/final_loss", "policy/policy_loss"])
        for point in oracle.q_reward_curve(oracle.run_name(run_dir), run_dir):
            row = by_step[point["step"]]
            out.append(
                {
                    **point,
                    "kl_or_entropy": row.get(kl) if kl else None,
                    "kl_or_entropy_metric": kl,
                    "loss": row.get(loss) if loss else None,
                    "loss_metric": loss,
                    "step_seconds": row.get("timing/step"),
                    "generation_wait_seconds": row.get("timing/wait_for_generation_buffer"),
                }
            )
    return out


def expect_checkpoint_ema(run_dirs: list[Path]) -> list[dict]:
    out = []
    for run_dir in sorted(run_dirs, key=oracle.run_name):
        config = oracle.load_config(run_dir) or {}
        save_every = int((config.get("trainer") or {}).get("hf_save_interval") or 20)
        curve = oracle.q_reward_curve(oracle.run_name(run_dir), run_dir)
        eligible = [
            p for p in curve if p["ema"] is not None and p["step"] % save_every == 0 and p["step"] >= 2 * save_every
        ]
        best = max(eligible, key=lambda p: (p["ema"], -p["step"]), default=None)
        for p in curve:
            out.append({**p, "save_every": save_every, "eligible": p in eligible, "is_best": p is best})
    return out


def _flatten(tree: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(tree, dict):
        return [pair for k, v in tree.items() for pair in _flatten(v, f"{prefix}.{k}" if prefix else str(k))]
    return [(prefix, tree)]


def _config_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def expect_config_diff(run_dirs: list[Path]) -> list[dict]:
    """One dict per differing key, by key: key, then each run with a config -> its value text or '(absent)'."""
    configs = {
        oracle.run_name(d): dict(_flatten(oracle.load_config(d)))
        for d in sorted(run_dirs, key=oracle.run_name)
        if oracle.find_artifacts(d)["config"] is not None
    }
    out = []
    for key in sorted({k for pairs in configs.values() for k in pairs}):
        values = {run: pairs.get(key, "<absent>") for run, pairs in configs.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            out.append(
                {
                    "key": key,
                    **{
                        run: "(absent)" if v == "<absent>" else "null" if v is None else _config_text(v)
                        for run, v in values.items()
                    },
                }
            )
    return out


#: the summary block: printed label -> run_summary column (what each line of the block must show)
SUMMARY_LABELS = {
    "Success rate (trials with a reward above 0)": "success_rate",
    "Mean reward": "mean_reward",
    "Trials": "trials",
    "Trials with a reward": "trials_with_reward",
    "Best checkpoint: step": "best_checkpoint_step",
    "Best checkpoint: EMA of reward": "best_checkpoint_ema",
    "Final EMA of reward": "final_ema",
    "Steps (deduplicated)": "steps",
    "Training time (timing/step, every row)": "training_time_s",
    "Mean step time": "mean_step_time_s",
    "Agent timeouts (share of trials)": "timeout_rate",
    "Context-length errors (share of trials)": "context_length_rate",
    "Mean staleness (steps)": "mean_staleness",
    "Slowest span in a step": "slowest_span",
    "Slowest span: mean time": "slowest_span_mean_s",
    "Slowest span: share of step": "slowest_span_share",
}


def check_summary(table: dict, run_dirs: list[Path], label: str) -> int:
    """The summary block: one line per figure, one column per run, each cell the run_summary figure."""
    want = {r["run"]: r for r in oracle.expected_view("run_summary", run_dirs)}
    assert table["columns"] == ["figure", *sorted(want)], label
    assert [row[0] for row in table["rows"]] == list(SUMMARY_LABELS), label
    checked = 0
    for row in table["rows"]:
        column = SUMMARY_LABELS[row[0]]
        for run, cell in zip(table["columns"][1:], row[1:], strict=True):
            check_cell(cell, want[run][column], column, label=f"{label} {run}")
            checked += 1
    return checked


def expect_run_ranking(run_dirs: list[Path]) -> list[dict]:
    """run_ranking (the oracle's ranking of run_table_map) with each config key as its own `config.KEY`
    column (value text, '' where absent), best first."""
    rows = oracle.expected_view("run_ranking", run_dirs)
    return [{**r, **{f"config.{k}": ("" if v is None else v) for k, v in r["config"].items()}} for r in rows]


#: the ranked table (many runs) shows this many of the best and as many of the worst ranked runs
RANKED_ENDS = 10


def ranked_selection(rows: list[dict]) -> list[dict]:
    """The rows the ranked table must show: every ranked run, or the 10 best and the 10 worst."""
    ranked = [r for r in rows if r["rank"] is not None]
    return ranked if len(ranked) <= 2 * RANKED_ENDS else ranked[:RANKED_ENDS] + ranked[-RANKED_ENDS:]


def finding_counts(run: str, run_dirs: list[Path]) -> dict[str, str]:
    """The ranked table's findings column: the run's critical / warning findings (the oracle's)."""
    run_dir = next(d for d in run_dirs if oracle.run_name(d) == run)
    severities = [f["severity"] for f in oracle.q_findings(run, run_dir)]
    return {"findings": f"{severities.count('critical')} / {severities.count('warning')}"}


def expect_config_long(run_dirs: list[Path]) -> list[dict]:
    wide = expect_config_diff(run_dirs)
    return [
        {"run": run, "key": row["key"], "value": "" if v == "(absent)" else v}
        for row in wide
        for run, v in sorted(row.items())
        if run != "key"
    ]


VIEW_EXPECTATIONS = {
    "metric_stats": expect_metric_stats,
    "checkpoint_ema": expect_checkpoint_ema,
    "config_diff": expect_config_diff,
    "run_ranking": expect_run_ranking,
    "log_summary": lambda dirs: oracle.expected_view("log_summary", dirs),
    "progression_rows": lambda dirs: oracle.expected_view("progression_rows", dirs),
    "timing_table": lambda dirs: oracle.expected_view("timing_table", dirs),
}


def expected_rows(source: str, filters: dict[str, str], run_dirs: list[Path]) -> list[dict]:
    if source == "config_diff" and filters.get("layout") == "long":
        return expect_config_long(run_dirs)
    rows = VIEW_EXPECTATIONS[source](run_dirs) if source in VIEW_EXPECTATIONS else oracle.expected(source, run_dirs)
    if source == "run_ranking" and filters.get("layout") == "ranked":
        rows = [{**r, **finding_counts(r["run"], run_dirs)} for r in ranked_selection(rows)]
    return [r for r in rows if all(str(r.get(k)) == v for k, v in filters.items() if k != "layout")]


def check_tables(text: str, run_dirs: list[Path], label: str) -> tuple[set[str], int]:
    """Every table of a report.md against the oracle, cell by cell; returns the sources seen and cells checked."""
    tables = parse_tables(text)
    checked = 0
    for table in tables:
        source, filters = table["source"], table["filters"]
        where = f"{label}: {source} {filters}"
        if source == "check":
            continue  # free text, checked against a damaged run below
        if source == "run_summary":
            checked += check_summary(table, run_dirs, where)
            continue
        want = expected_rows(source, filters, run_dirs)
        # a table holds at most Settings.report_rows rows (100) and says how many more there were; a table
        # of runs (run_ranking) holds every run it selects
        cap = len(want) if source == "run_ranking" else REPORT_ROWS
        assert len(table["rows"]) + table["hidden"] == len(want), (
            f"{where}: {len(table['rows'])} rows printed and {table['hidden']} said left out, expected {len(want)}"
        )
        assert len(table["rows"]) == min(len(want), cap), where
        want = want[:cap]
        for printed, row in zip(table["rows"], want, strict=True):
            for column, cell in zip(table["columns"], printed, strict=True):
                if column in ("reason", "span") or column.startswith("config.") or source == "config_diff":
                    if column.startswith("config.") or source == "config_diff":
                        assert cell == str(row[column] if column in row else row.get(column, "")), (where, column)
                    continue  # reason: free text (test_tiny_run.py); span: indented (its own test)
                if column == "rerun":
                    assert cell == (
                        "" if not row["rerun"] else "re-run: used" if row["used"] else "re-run: not used"
                    ), (where, row)
                    continue
                assert column in row, f"{where}: unexpected column {column!r}"
                unit = (
                    "seconds"
                    if source == "metric_stats"
                    and filters.get("family") == "timing"
                    and column in ("mean", "std", "min", "max")
                    else None
                )
                check_cell(cell, row[column], column, unit, where)
                checked += 1
    return {t["source"] for t in tables}, checked


# -- building reports ----------------------------------------------------------------------------------


def make_report(out: Path, names: list[str], fmt_: str = "md") -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs([RUNS / n for n in names]), out, fmt_)
    return out


def mtimes() -> dict[Path, int]:
    """Every file and folder of the fixture runs, with its modification time (ns)."""
    return {p: p.stat().st_mtime_ns for p in RUNS.rglob("*")}


#: the fixture runs' mtimes before and after `reports` wrote its reports (test_report_never_touches_run_folders)
RUN_MTIMES: dict[str, dict[Path, int]] = {}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, tiny_report: Path) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("reports")
    RUN_MTIMES["before"] = mtimes()
    built = {
        "tiny": tiny_report,  # conftest: written once per session (test_golden compares it too)
        "calendar": make_report(base / "calendar", ["calendar"]),
        "tiny+calendar": make_report(base / "two", ["tiny", "calendar"]),
        "all": make_report(base / "all", ["tiny", "calendar", "newest"]),
    }
    RUN_MTIMES["after"] = mtimes()
    return built


@pytest.fixture(scope="module")
def html_all(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of the "all" case, written once (the browser test and the HTML-equals-markdown test read it)."""
    return make_report(tmp_path_factory.mktemp("html") / "html", ["tiny", "calendar", "newest"], "html") / "report.html"


CASES = {
    "tiny": ["tiny"],
    "calendar": ["calendar"],
    "tiny+calendar": ["tiny", "calendar"],
    "all": ["tiny", "calendar", "newest"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_printed_figure_matches_expectations(case: str, reports: dict[str, Path]) -> None:
    run_dirs = [RUNS / n for n in CASES[case]]
    text = (reports[case] / "report.md").read_text(encoding="utf-8")
    sources, checked = check_tables(text, run_dirs, case)
    assert {
        "run_summary",
        "check",
        "run_overview",
        "log_summary",
        "progression_rows",
        "best_checkpoint",
        "checkpoint_ema",
        "metric_stats",
        "timing_table",
        "vllm_summary",
        "turn_stats",
        "exception_distribution",
        "exception_treatment",
        "turns_by_exception",
        "turns_by_outcome",
        "turn_percentiles",
        "reward_summary",
        "async_health",
    } <= sources
    if len(run_dirs) > 1:
        assert {"run_ranking", "config_diff"} <= sources
    else:
        assert "| run |" not in text
    assert checked > 300


def test_summary_comes_first_in_human_units(reports: dict[str, Path]) -> None:
    """The first table of the page is the summary; its figures read as a person reads them."""
    text = (reports["calendar"] / "report.md").read_text(encoding="utf-8")
    first = parse_tables(text)[0]
    assert first["source"] == "run_summary"
    cells = {row[0]: row[1] for row in first["rows"]}
    assert cells["Success rate (trials with a reward above 0)"] == "91.0%"  # 3,556 of 3,908 (fixture)
    assert cells["Trials"] == "4,000"
    assert re.fullmatch(r"\d+ h \d+ m", cells["Training time (timing/step, every row)"])
    assert cells["Agent timeouts (share of trials)"] == "3.1%" and cells["Best checkpoint: step"] == "20"
    assert (
        text.index("## Contents") < text.index("## Summary") < text.index("## Data caveats") < text.index("## Training")
    )


def test_metric_families_each_have_a_table(reports: dict[str, Path]) -> None:
    tables = parse_tables((reports["calendar"] / "report.md").read_text(encoding="utf-8"))
    families = [t["filters"]["family"] for t in tables if t["source"] == "metric_stats"]
    assert families == FAMILY_ORDER  # the calendar fixture logs every family, batch_errors included


def test_timing_breakdown_is_an_indented_tree(reports: dict[str, Path]) -> None:
    text = (reports["calendar"] / "report.md").read_text(encoding="utf-8")
    spans = {
        line.split("|")[1].strip(): line.split("|")[1]
        for line in text.splitlines()
        if line.startswith("| ") and "\u2003" in line
    }
    assert "policy_train" in spans
    # step > run_training > train_critic_and_policy > policy_train: three levels in
    assert spans["policy_train"].strip(" ").startswith("\u2003" * 6 + "policy_train")


def test_config_diff_lists_only_differing_keys(reports: dict[str, Path]) -> None:
    tables = parse_tables((reports["tiny+calendar"] / "report.md").read_text(encoding="utf-8"))
    diff = next(t for t in tables if t["source"] == "config_diff")
    assert diff["columns"] == ["key", "calendar", "tiny"]
    keys = {row[0]: row[1:] for row in diff["rows"]}
    assert keys["trainer.hf_save_interval"] == ["5", "2"]
    assert keys["data.train_data"] == ['["/data/calendar/train.parquet"]', "(absent)"]
    assert "trainer.strategy" not in keys  # fsdp2 in both
    assert "trainer.policy.optimizer_config.lr" not in keys  # 1e-06 in both


# -- the rows the figures draw -------------------------------------------------------------------------


def view_rows(view: str, names: list[str]) -> list[dict]:
    from rlsql.engine.statements import open_connection

    con = open_connection(resolve_runs([RUNS / n for n in names]), [view])
    cursor = con.execute(f"SELECT * FROM {view}")
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def test_turn_histogram_view() -> None:
    names = ["tiny", "calendar", "newest"]
    want = []
    for name in sorted(names):
        counts: dict[int, int] = {}
        for trial in oracle.read_trials(RUNS / name):
            if trial["n_episodes"] is not None:
                counts[trial["n_episodes"]] = counts.get(trial["n_episodes"], 0) + 1
        total = sum(counts.values())
        want += [{"run": name, "turns": t, "trials": counts[t], "share": counts[t] / total} for t in sorted(counts)]
    got = view_rows("turn_histogram", names)
    assert [{k: v for k, v in r.items() if k != "share"} for r in got] == [
        {k: v for k, v in r.items() if k != "share"} for r in want
    ]
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g["share"], w["share"], rel_tol=1e-12), (g, w)


def test_step_time_stack_view() -> None:
    """Per deduplicated step: each recorded direct child of `step`, then the uncovered rest when positive."""
    names = ["tiny", "calendar", "newest"]
    want = []
    for name in sorted(names):
        children = [
            r["span"]
            for r in oracle.q_timing_breakdown(name, RUNS / name)
            if r["within"] == "step" and r["span"] not in ("unattributed", "overlap")
        ]
        for row in oracle.dedup_steps(oracle.read_metric_rows(RUNS / name)):
            total = row.get("timing/step")
            parts = sorted((c, row[f"timing/{c}"]) for c in children if row.get(f"timing/{c}") is not None)
            if total is not None and total - math.fsum(v for _, v in parts) > 0:
                parts.append(("unattributed", total - math.fsum(v for _, v in parts)))
            want += [
                {"run": name, "step": row["step"], "span": c, "seconds": v, "step_seconds": total} for c, v in parts
            ]
    got = view_rows("step_time_stack", names)
    assert [(r["run"], r["step"], r["span"]) for r in got] == [(r["run"], r["step"], r["span"]) for r in want]
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g["seconds"], w["seconds"], rel_tol=1e-9, abs_tol=1e-9), (g, w)
        assert g["step_seconds"] == w["step_seconds"]


# -- figures -------------------------------------------------------------------------------------------


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:33]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name}: not a PNG"
    length, kind = struct.unpack(">I4s", head[8:16])
    assert kind == b"IHDR" and length == 13, f"{path.name}: no IHDR chunk first"
    width, height, depth, color = struct.unpack(">IIBB", head[16:26])
    assert depth == 8 and color in (2, 6), f"{path.name}: unexpected bit depth {depth} / colour type {color}"
    return width, height


@pytest.mark.parametrize("case", list(CASES))
def test_figures_are_valid_pngs_of_sensible_size(case: str, reports: dict[str, Path]) -> None:
    folder = reports[case]
    text = (folder / "report.md").read_text(encoding="utf-8")
    linked = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    signals = oracle.expected_view("step_signals", [RUNS / n for n in CASES[case]])
    drawn = [
        f
        for f in FIGURES
        if f != "signals.png" or any(v is not None for r in signals for k, v in r.items() if k not in ("run", "step"))
    ]
    assert sorted(linked) == sorted(drawn)
    # no temporary files; the marker that lets a later report replace this folder
    assert sorted(p.name for p in folder.iterdir()) == sorted([*drawn, "report.md", ".rlsql-export.json"])
    for name in drawn:
        width, height = png_size(folder / name)
        assert 800 <= width <= 2500 and 400 <= height <= 2500, f"{case}/{name}: {width}x{height}"
        assert (folder / name).stat().st_size > 10_000, f"{case}/{name} looks empty"


def test_figures_are_skipped_without_their_data(tmp_path: Path) -> None:
    make_report(tmp_path / "newest", ["newest"])
    names = sorted(p.name for p in (tmp_path / "newest").iterdir())
    # the run has no vLLM stats: no figure, no section
    assert names == [".rlsql-export.json", "report.md", "reward.png", "signals.png", "step_time.png", "turns.png"]
    assert "## vLLM engines" not in (tmp_path / "newest" / "report.md").read_text()


# -- command line --------------------------------------------------------------------------------------


def run_main(args: list[str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def test_cli_writes_the_folder_and_nothing_on_stdout(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "new" / "folder"
    code, stdout, err = run_main(["report", "-r", str(RUNS / "tiny"), "-o", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert stdout == ""
    lines = err.strip().splitlines()
    # tiny logs no entropy, grad norm, log-ratio or batch errors: no signals figure
    assert lines[-1] == f"rlsql: wrote {out / 'report.md'} and 4 figures"
    assert lines[-2] == "rlsql: data caveats: none in 1 run (1 note)"  # step 3 logged twice
    stages = [line for line in lines if line.startswith("rlsql: report: ")]  # stderr is no terminal here
    assert [re.sub(r" \(\d+\.\d s\)$", "", line) for line in stages] == [
        "rlsql: report: checking the data (rlsql check)",
        "rlsql: report: running 26 queries and views",
        *(f"rlsql: report: drawing {f}" for f in FIGURES),
        "rlsql: report: writing",
    ]
    assert (out / "report.md").is_file()


def test_cli_html_is_one_file(tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_main(
        ["report", "-r", str(RUNS / "tiny"), "-o", str(tmp_path), "-f", "html"], capsys, monkeypatch
    )
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rlsql-export.json", "report.html"]


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["report", "-f", "pdf"], 2, "md, html"),
        (["report", "-r", str(RUNS / "tiny"), "-o", str(RUNS / "tiny" / "rep")], 2, "run folder"),
        (["report", "-r", "/definitely/not/here"], 3, "/definitely/not/here"),
    ],
)
def test_cli_errors_are_one_line(args, code, needle, capsys, monkeypatch) -> None:
    got, out, err = run_main(args, capsys, monkeypatch)
    assert got == code
    lines = [line for line in err.splitlines() if line.strip() and "sample run" not in line]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err
    assert out == ""
    assert not (RUNS / "tiny" / "rep").exists()


def test_missing_matplotlib_is_one_clear_line(tmp_path, capsys, monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, _, err = run_main(["report", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "r")], capsys, monkeypatch)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'rlsql[report]'" in lines[0], err
    assert not (tmp_path / "r").exists()


def test_progress_indicator_on_a_terminal_and_in_a_log() -> None:
    import io

    from rlsql.outputs.report import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream, enabled=True)
    progress("turn_stats")
    progress("drawing reward.png", stage=True)
    progress.close()
    assert "\rrlsql: report [1/3]" in stream.getvalue() and "drawing reward.png" in stream.getvalue()
    assert stream.getvalue().endswith("\r")
    log = io.StringIO()  # a StringIO is no terminal: one line per stage, none per step
    quiet = Progress(3, stream=log)
    quiet("turn_stats")
    quiet("drawing reward.png", stage=True)
    quiet.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and re.fullmatch(r"rlsql: report: drawing reward\.png \(\d+\.\d s\)", lines[0]), lines


# -- the HTML report in a real browser -----------------------------------------------------------------

PROBE = """<script>
window.__problems = [];
window.addEventListener('error', e => window.__problems.push(String(e.message || ('failed to load ' +
  (e.target && e.target.tagName)))), true);
for (const level of ['error', 'warn']) {
  const original = console[level];
  console[level] = (...args) => {
    window.__problems.push(level + ': ' + args.join(' '));
    original.apply(console, args);
  };
}
window.addEventListener('load', () => {
  const images = Array.from(document.images).map(i => ({
    embedded: i.src.startsWith('data:image/png;base64,'), complete: i.complete,
    width: i.naturalWidth, height: i.naturalHeight, shown: i.getBoundingClientRect().width }));
  const out = document.createElement('pre');
  out.id = 'rlsql-probe';
  const tables = document.querySelectorAll('table').length;
  out.textContent = JSON.stringify({images, problems: window.__problems, tables});
  document.body.appendChild(out);
});
</script>"""


#: CI sets it (.ci/run): there a missing browser fails the test instead of skipping it
REQUIRE_BROWSER_ENV = "RLSQL_REQUIRE_BROWSER"


def browser_required() -> bool:
    return os.environ.get(REQUIRE_BROWSER_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def chromium(page: Path, profile: Path) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        reason = (
            f"{CHROMIUM} is missing: the HTML report test needs Debian's chromium "
            "(apt-get install -y chromium; .ci/run installs it)"
        )
        if browser_required():
            pytest.fail(f"{reason}; {REQUIRE_BROWSER_ENV}=1 says it must run")
        pytest.skip(reason)
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.browser
@pytest.mark.slow
def test_html_report_opens_in_chromium_without_errors(tmp_path: Path, html_all: Path) -> None:
    page = html_all
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    assert len(re.findall(r'<img src="data:image/png;base64,', html)) == len(FIGURES)

    # the page as written: no console message at all (it has no script), the figures in the DOM
    plain = chromium(page, tmp_path / "profile1")
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert console_lines(plain.stderr) == [], console_lines(plain.stderr)
    assert plain.stdout.count('src="data:image/png;base64,') == len(FIGURES)
    assert "Cross-run comparison" in plain.stdout

    # a copy with a probe script first in <head>: every image decoded at its PNG size, no error event
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("<head>", "<head>\n" + PROBE, 1), encoding="utf-8")
    result = chromium(probed, tmp_path / "profile2")
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="rlsql-probe">(.*?)</pre>', result.stdout, re.S)
    assert found, f"the probe did not run: {result.stdout[-1000:]}\n{result.stderr[-2000:]}"
    report = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert report["problems"] == [] and console_lines(result.stderr) == [], (report, console_lines(result.stderr))
    assert len(report["images"]) == len(FIGURES)
    for image in report["images"]:
        assert image["embedded"] and image["complete"], image
        assert image["width"] >= 800 and image["height"] >= 400 and image["shown"] > 300, image
    assert report["tables"] > 20


def test_chromium_helper_fails_loudly_when_required_and_missing(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setenv(REQUIRE_BROWSER_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install -y chromium.*RLSQL_REQUIRE_BROWSER=1"):
        chromium(tmp_path / "x.html", tmp_path)


def test_chromium_helper_skips_with_its_reason_when_missing(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv(REQUIRE_BROWSER_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no-chromium is missing.*apt-get install -y chromium"):
        chromium(tmp_path / "x.html", tmp_path)


def test_ci_requires_the_browser() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert f"export {REQUIRE_BROWSER_ENV}=1" in ci


def test_every_number_in_html_equals_markdown(html_all: Path, reports: dict[str, Path]) -> None:
    """The two formats render the same Layout: the HTML cells equal the markdown cells, table by table."""
    html = html_all.read_text(encoding="utf-8")
    html_tables = re.findall(r'<table data-source="([^"]+)">(.*?)</table>', html, re.S)
    md_tables = [t for t in parse_tables((reports["all"] / "report.md").read_text(encoding="utf-8")) if t["rows"]]
    assert len(html_tables) == len(md_tables)
    import html as html_lib

    for (marker, body), md in zip(html_tables, md_tables, strict=True):
        assert marker.split()[0] == md["source"]
        cells = [
            [html_lib.unescape(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
            if "<td" in row
        ]
        assert cells == md["rows"], marker


def test_report_never_touches_run_folders(reports: dict[str, Path]) -> None:
    # around the three reports `reports` wrote over the tiny, calendar and newest runs
    assert RUN_MTIMES["before"] and RUN_MTIMES["after"] == RUN_MTIMES["before"]


# -- the report's views, straight against the oracle ------------------------------------------------------


@pytest.mark.parametrize(
    "view", ["log_summary", "progression_rows", "timing_table", "step_signals", "run_summary", "run_ranking"]
)
def test_report_views_match_oracle(view: str) -> None:
    from tests.compare import assert_rows_match

    names = ["tiny", "calendar", "newest", "harbor_csv"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = view_rows(view, names)
    want = oracle.expected_view(view, [RUNS / n for n in names])
    if view == "timing_table":  # the view has no order of its own: the report orders it as timing_breakdown
        got.sort(key=lambda r: (r["run"], r["span"]))
        want.sort(key=lambda r: (r["run"], r["span"]))
    if view == "progression_rows":
        for row in got:
            row.pop("row_no")
    assert_rows_match(got, want, view)


def test_training_progression_view_matches_oracle() -> None:
    from tests.compare import assert_rows_match

    names = ["tiny", "calendar", "newest"]
    want = [
        {k: v for k, v in r.items() if k not in ("ema", "rolling_mean")}
        for r in expect_training_progression([RUNS / n for n in names])
    ]
    assert_rows_match(view_rows("training_progression", names), want, "training_progression")


def test_rerun_rows_are_marked_beside_the_deduplicated_curve(reports: dict[str, Path]) -> None:
    """calendar: step 3 logged by job_554408 and job_554409, step 15 by job_554409 and job_554410."""
    tables = parse_tables((reports["calendar"] / "report.md").read_text(encoding="utf-8"))
    rows = next(t for t in tables if t["source"] == "progression_rows")
    col = rows["columns"].index
    marked = [(r[col("step")], r[col("log_file")], r[col("rerun")]) for r in rows["rows"] if r[col("rerun")]]
    assert marked == [
        ("3", "job_554408", "re-run: used"),
        ("3", "job_554409", "re-run: not used"),
        ("15", "job_554409", "re-run: used"),
        ("15", "job_554410", "re-run: not used"),
    ]
    # the newest progression columns the calendar fixture logs
    assert {"epoch", "grad_norm", "ppo_clip_ratio", "policy_loss", "log_ratio_mean"} <= set(rows["columns"])


def test_keys_without_a_family_go_under_other(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(RUNS / "tiny", run)
    metrics = run / "20260105_120000_metrics_table.csv"
    lines = metrics.read_text(encoding="utf-8").splitlines()
    lines = [lines[0] + ",custom_score"] + [line + f",{i}.5" for i, line in enumerate(lines[1:])]
    metrics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs([run]), tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    other = next(t for t in parse_tables(text) if t["source"] == "metric_stats" and t["filters"]["family"] == "other")
    assert [r[0] for r in other["rows"]] == ["custom_score"]
    assert other["rows"][0][1:] == ["3", "1.8708", "0.5", "5.5", "6"]  # 0.5, 1.5, ..., 5.5: mean 3, sample sd 1.8708
    assert "### Metrics: Other (keys without a family)" in text


def test_parameters_reach_the_queries(tmp_path: Path, capsys, monkeypatch) -> None:
    code, _, err = run_main(
        ["report", "-r", str(RUNS / "calendar"), "-o", str(tmp_path / "r"), "-p", "span=10", "-p", "save_every=4"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    best = next(t for t in parse_tables(text) if t["source"] == "best_checkpoint")
    want = oracle.expected("best_checkpoint", [RUNS / "calendar"], span=10, save_every=4)[0]
    row = dict(zip(best["columns"], best["rows"][0], strict=True))
    assert row["save_every"] == "4" and row["step"] == str(want["step"])
    check_cell(row["ema"], want["ema"], "ema")
    assert want["ema"] != oracle.expected("best_checkpoint", [RUNS / "calendar"])[0]["ema"]  # the span mattered
    assert "span=10" in text and "save_every=4" in text


@pytest.mark.parametrize(
    ("param", "needle"),
    [("spam=3", "no parameter spam"), ("span=0", "below the minimum"), ("span=ten", "not a valid INTEGER")],
)
def test_bad_parameters_are_usage_errors(param, needle, tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_main(
        ["report", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "r"), "-p", param], capsys, monkeypatch
    )
    assert code == 2 and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()


# -- writing: a staging folder swapped in whole; only rlsql's folders replaced ------------------------------


def test_a_report_folder_is_replaced_whole(tmp_path: Path, reports: dict[str, Path]) -> None:
    out = tmp_path / "rep"
    # the calendar report the module wrote, copied (its mark with it): rlsql tells its folders by the mark
    shutil.copytree(reports["calendar"], out)
    assert (out / "vllm.png").exists()
    make_report(out, ["newest"])  # no vLLM stats: the old vllm.png must not linger beside the new report
    assert sorted(p.name for p in out.iterdir()) == [
        ".rlsql-export.json",
        "report.md",
        "reward.png",
        "signals.png",
        "step_time.png",
        "turns.png",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no staging or old copy left


def test_a_folder_rlsql_did_not_write_is_never_replaced(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me", encoding="utf-8")
    code, _, err = run_main(["report", "-r", str(RUNS / "tiny"), "-o", str(out)], capsys, monkeypatch)
    assert code == 2 and "did not write" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_a_full_disk_leaves_the_previous_report_as_it_was(
    tmp_path: Path, capsys, monkeypatch, tiny_report: Path
) -> None:
    import errno

    import rlsql.outputs.report as report_mod

    out = tmp_path / "rep"
    shutil.copytree(tiny_report, out)  # the session's tiny report, its mark with it (a report rlsql wrote)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls = []
    real = report_mod._write_bytes

    def full_disk(target: Path, payload: bytes) -> None:
        calls.append(target.name)
        if len(calls) > 2:  # two PNGs written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        real(target, payload)

    monkeypatch.setattr(report_mod, "_write_bytes", full_disk)
    code, _, err = run_main(["report", "-r", str(RUNS / "calendar"), "-o", str(out)], capsys, monkeypatch)
    assert code == 4 and "No space left on device" in err and str(out) in err and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


# -- data caveats -----------------------------------------------------------------------------------------


def test_caveats_list_every_defect_of_a_damaged_run(tmp_path: Path, capsys, monkeypatch) -> None:
    import shutil

    run = tmp_path / "damaged"
    shutil.copytree(RUNS / "tiny", run)
    metrics = run / "20260105_120000_metrics_table.csv"
    lines = metrics.read_text(encoding="utf-8").splitlines()
    lines.append("job_2,1,2")  # line 8: too few fields
    bad = lines[2].split(",")
    bad[1] = "nan"  # line 3: a nan cell
    lines[2] = ",".join(bad)
    metrics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run / "20260105_120000_vllm_metrics_table.csv").write_text("", encoding="utf-8")  # empty file
    (run / "rl_config.yaml").write_text("trainer: [unclosed\n", encoding="utf-8")  # YAML that does not parse
    code, _, err = run_main(["report", "-r", str(run), "-o", str(tmp_path / "r")], capsys, monkeypatch)
    assert code == 0, err
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    problems = next(t for t in parse_tables(text) if t["source"] == "check" and "warning" in t["filters"]["severity"])
    found = [(row[1], row[2]) for row in problems["rows"]]  # (where, problem)
    metrics_name = metrics.name
    assert any(w == f"{metrics_name}:8" and "skipped" in p for w, p in found), found
    assert any(w.startswith(metrics_name) and "nan" in p for w, p in found), found
    assert any(w.startswith("20260105_120000_vllm_metrics_table.csv") and "empty" in p for w, p in found), found
    assert any(w.startswith("rl_config.yaml") for w, p in found), found
    notes = next(t for t in parse_tables(text) if t["source"] == "check" and t["filters"]["severity"] == "info")
    assert any("step 3 logged 2 times" in row[2] for row in notes["rows"]), notes  # the re-run step
    line = next(x for x in err.splitlines() if "data caveats" in x)
    assert re.fullmatch(
        r"rlsql: data caveats: \d+ warnings? in 1 run \(listed in the report's Data caveats "
        r"section; `rlsql check` shows the same\)",
        line,
    ), line


# -- many runs: the comparison layout ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path, list[str]]:
    """40 runs from the fixture runs (bench/make_fleet.py) and their report."""
    sys.path.insert(0, str(RUNS.parent.parent / "bench"))
    from make_fleet import make_fleet

    root = tmp_path_factory.mktemp("fleet")
    dirs = make_fleet(40, root / "runs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_report(resolve_runs([root / "runs"]), root / "report")
    return dirs, root / "report", [str(w.message) for w in caught]


def test_many_runs_open_with_contents_then_the_ranked_table(fleet) -> None:
    dirs, out, _ = fleet
    text = (out / "report.md").read_text(encoding="utf-8")
    tables = parse_tables(text)
    # contents first, then the ranked table: 30 of the 40 runs have trainer metrics (a final EMA), so the 10
    # best and the 10 worst of them, the ranking's figure beside the name, then the differing config keys
    assert text.index("## Contents") < text.index("## Ranked runs") < text.index("<!-- source:")
    ranked = tables[0]
    assert ranked["source"] == "run_ranking" and ranked["filters"] == {"layout": "ranked"}
    assert len(ranked["rows"]) == 2 * RANKED_ENDS
    assert ranked["columns"][:4] == ["rank", "run", "final_ema", "findings"]
    assert [row[0] for row in ranked["rows"]] == [str(n) for n in [*range(1, 11), *range(21, 31)]]
    assert any(c.startswith("config.fleet.") for c in ranked["columns"])
    assert "the 10 runs without trainer metrics have no rank (run_002, run_006, run_010 and 7 more)" in text
    # every run in the appendix, best first, unranked runs last
    every = next(t for t in tables if t["source"] == "run_ranking" and not t["filters"])
    assert len(every["rows"]) == 40 and text.index("## Appendix") < text.index("### All runs")
    assert "## Summary" not in text and "--per-run" in text
    sources, checked = check_tables(text, dirs, "40 runs")
    assert checked > 40 * 10
    # no per-run tables without --per-run
    assert not sources & {"turn_stats", "progression_rows", "vllm_summary", "timing_table", "metric_stats"}


def test_the_table_of_every_run_is_never_cut(tmp_path: Path, fleet, monkeypatch) -> None:
    """RLSQL_REPORT_ROWS caps every report table but the tables of runs: the ranked table and every run."""
    dirs, _, _ = fleet
    monkeypatch.setenv("RLSQL_REPORT_ROWS", "3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs(dirs[:24]), tmp_path / "r")
    tables = parse_tables((tmp_path / "r" / "report.md").read_text(encoding="utf-8"))
    every = next(t for t in tables if t["source"] == "run_ranking" and not t["filters"])
    assert len(every["rows"]) == 24 and every["hidden"] == 0
    ranked = next(t for t in tables if t["filters"].get("layout") == "ranked")
    assert len(ranked["rows"]) == 18  # 18 of the 24 runs have a final EMA: all of them
    diff = next(t for t in tables if t["source"] == "config_diff")
    assert len(diff["rows"]) == 3 and diff["hidden"] > 0


def test_many_runs_warn_once_per_missing_artifact(fleet) -> None:
    _, _, messages = fleet
    vllm = [m for m in messages if "vLLM" in m]
    assert len(vllm) == 1, vllm
    # every 4th run is newest (no vLLM) and every 4th harbor_csv (no metrics, no vLLM): 20 of 40
    assert vllm[0].startswith("20 runs have no vLLM engine stats: run_002, run_003, run_006") and "10 more" in vllm[0]


def test_many_runs_figures_have_legends_that_cover_no_data(fleet) -> None:
    from rlsql.outputs.report import data as data_mod
    from rlsql.outputs.report import figures

    dirs, _, _ = fleet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = data_mod.gather(resolve_runs(dirs), check=False)
    built = figures.build_all(data)
    assert set(built) == set(FIGURES)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for name, drawn in built.items():
        fig = drawn.figure
        canvas = FigureCanvasAgg(fig)  # lay the figure out as savefig does
        canvas.draw()
        renderer = canvas.get_renderer()
        legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
        assert legends, f"{name}: no legend"
        for legend in legends:
            entries = len(legend.get_texts())
            assert entries <= 14, f"{name}: {entries} legend entries"
            box = legend.get_window_extent(renderer)
            for ax in fig.axes:
                plot = ax.get_window_extent(renderer)  # the plotting area: where the data is drawn
                overlap = box.x0 < plot.x1 and plot.x0 < box.x1 and box.y0 < plot.y1 and plot.y0 < box.y1
                assert not overlap, f"{name}: the legend {box} covers the axes {plot}"
        assert fig.get_size_inches()[0] * figures.DPI <= 3000


def test_per_run_adds_the_sections(tmp_path: Path, fleet) -> None:
    dirs, _, _ = fleet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs(dirs[:8]), tmp_path / "r", per_run=True)
    sources, _ = check_tables((tmp_path / "r" / "report.md").read_text(encoding="utf-8"), dirs[:8], "8 runs")
    assert {"run_ranking", "turn_stats", "progression_rows", "timing_table", "vllm_summary"} <= sources


def test_html_has_a_table_of_contents_and_folds_long_tables(html_all: Path) -> None:
    # the three-run page: it has tables over 25 rows (folded) and shorter ones (the calendar run's alone had
    # no table long enough to fold)
    html = html_all.read_text(encoding="utf-8")
    toc = re.search(r'<nav class="toc">(.*?)</nav>', html, re.S)
    assert toc, "no table of contents"
    links = re.findall(r'href="#([^"]+)"', toc.group(1))
    ids = re.findall(r'<h[23] id="([^"]+)"', html)
    assert set(links) <= set(ids) and {
        "summary",
        "data-caveats",
        "training",
        "timing",
        "appendix",
        "cross-run-comparison",
    } <= set(links)
    assert html.index('<nav class="toc">') < html.index("<table")  # the contents first
    seen = set()
    for marker, body in re.findall(r'<table data-source="([^"]+)">(.*?)</table>', html, re.S):
        rows = body.count("<tr>") - 1
        start = html.index(f'<table data-source="{marker}">')
        folded = html.rfind("<details>", 0, start) > html.rfind("</details>", 0, start)
        assert folded == (rows > 25), f"{marker}: {rows} rows, folded={folded}"
        seen.add(folded)
    assert seen == {True, False}  # both kinds were checked


def test_an_outlier_step_is_clipped_with_its_time_written_on_it() -> None:
    """calendar: steps 1-3 (the buffer fill and a job interruption) pass 4x the median step; the figure
    clips them and writes each one's timing/step on its bar."""
    from rlsql.outputs.report import data as data_mod
    from rlsql.outputs.report import figures

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = data_mod.gather(resolve_runs([RUNS / "calendar"]), check=False)
    fig = figures.step_time_figure(data).figure
    ax = fig.axes[0]
    totals = {r["step"]: r["timing/step"] for r in oracle.dedup_steps(oracle.read_metric_rows(RUNS / "calendar"))}
    ordered = sorted(totals.values())
    median = ordered[len(ordered) // 2]
    outliers = {s: v for s, v in totals.items() if v > 4 * median}
    assert sorted(outliers) == [1, 2, 3]
    assert ax.get_ylim()[1] == pytest.approx(1.25 * max(v for v in totals.values() if v <= 4 * median))
    written = [t.get_text() for t in ax.texts if t.get_text().endswith("(clipped)")]
    assert len(written) == len(outliers)
    for text, (_, seconds) in zip(written, sorted(outliers.items()), strict=True):
        parsed, tolerance = parse_duration(text.removesuffix(" (clipped)"))
        assert abs(parsed - seconds) <= tolerance, (text, seconds)


def test_a_killed_reports_staging_folder_is_swept(tmp_path: Path) -> None:
    """What a SIGKILLed report leaves (its staging folder, under one of rlsql's temporary names of a
    process that is gone) is removed by the next report written beside it."""
    from rlsql.runs import writes

    host, pid, nonce = writes._host(), "4194303", "0badf00d"  # a pid above Linux's pid_max: never alive
    leftover = tmp_path / f".rep.{host}-{pid}-{nonce}-{writes._check('rep', host, pid, nonce, False)}.rlsql-tmp"
    leftover.mkdir()
    (leftover / "reward.png").write_bytes(b"half a figure")
    assert writes.parse_temp_name(leftover.name) is not None
    make_report(tmp_path / "rep", ["tiny"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
