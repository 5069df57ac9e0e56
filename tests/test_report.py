"""`rlsql report`: every number printed in report.md against independent expectations, the PNGs, the HTML page.

Expectations come from tests/oracle.py (the named queries) and, for the report's own views, from
plain-Python computations below over the oracle's CSV readers; nothing here imports rlsql's SQL,
formatting or report code to compute an expected value. The HTML report is opened in a real headless
Chromium (Debian's package), which this file starts.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from rlsql import cli
from rlsql.report import build_report
from rlsql.runs import resolve_runs
from tests import oracle
from tests.conftest import RUNS

CHROMIUM = Path("/usr/bin/chromium")
FIGURES = ("reward.png", "step_time.png", "vllm.png", "turns.png")
FAMILY_ORDER = ["async", "generate", "loss", "policy", "reward", "system", "timing", "trainer", "batch_errors"]


# -- independent formatting: the report rounds as Python's format does, to 4 decimals ------------------

def fmt(value: Any) -> str:
    """How a figure must read in the report (4 decimals, trailing zeros dropped; tiny values in 4 digits)."""
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


# -- reading the report back ---------------------------------------------------------------------------

MARKER = re.compile(r"^<!-- source: (?P<source>\w+)(?P<filters>(?: \w+=\S+)*) -->$")


def split_row(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    cells = re.split(r"(?<!\\)\|", line[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


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
        tables.append({"source": match["source"], "filters": filters, "columns": header, "rows": rows})
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
                if "/" in column and isinstance(value, float):
                    values.setdefault(column, []).append(value)

        def order(metric: str) -> tuple:
            family = metric.split("/")[0]
            rank = FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)
            return rank, family, metric

        for metric in sorted(values, key=order):
            vs = values[metric]
            out.append({
                "run": oracle.run_name(run_dir), "family": metric.split("/")[0], "metric": metric,
                "mean": statistics.fmean(vs), "std": statistics.stdev(vs) if len(vs) > 1 else None,
                "min": min(vs), "max": max(vs), "count": len(vs),
            })
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
            out.append({
                **point,
                "kl_or_entropy": row.get(kl) if kl else None, "kl_or_entropy_metric": kl,
                "loss": row.get(loss) if loss else None, "loss_metric": loss,
                "step_seconds": row.get("timing/step"),
                "generation_wait_seconds": row.get("timing/wait_for_generation_buffer"),
            })
    return out


def expect_checkpoint_ema(run_dirs: list[Path]) -> list[dict]:
    out = []
    for run_dir in sorted(run_dirs, key=oracle.run_name):
        config = oracle.load_config(run_dir) or {}
        save_every = int((config.get("trainer") or {}).get("hf_save_interval") or 20)
        curve = oracle.q_reward_curve(oracle.run_name(run_dir), run_dir)
        eligible = [p for p in curve if p["ema"] is not None and p["step"] % save_every == 0
                    and p["step"] >= 2 * save_every]
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
    configs = {oracle.run_name(d): dict(_flatten(oracle.load_config(d)))
               for d in sorted(run_dirs, key=oracle.run_name) if oracle.find_artifacts(d)["config"] is not None}
    out = []
    for key in sorted({k for pairs in configs.values() for k in pairs}):
        values = {run: pairs.get(key, "<absent>") for run, pairs in configs.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            out.append({"key": key, **{run: "(absent)" if v == "<absent>" else "null" if v is None
                                       else _config_text(v) for run, v in values.items()}})
    return out


def expect_comparison(run_dirs: list[Path]) -> list[dict]:
    picks = {
        "best_checkpoint": ["step", "ema", "save_every"],
        "reward_summary": ["trials", "mean_reward", "success_rate"],
        "turn_stats": ["mean", "median"],
        "async_health": ["mean_staleness", "mean_discard_rate"],
    }
    by_run = {oracle.run_name(d): {"run": oracle.run_name(d)} for d in sorted(run_dirs, key=oracle.run_name)}
    for query, columns in picks.items():
        for row in oracle.expected(query, run_dirs):
            for column in columns:
                by_run[row["run"]][f"{query}.{column}"] = row[column]
    return list(by_run.values())


VIEW_EXPECTATIONS = {
    "metric_stats": expect_metric_stats,
    "training_progression": expect_training_progression,
    "checkpoint_ema": expect_checkpoint_ema,
    "config_diff": expect_config_diff,
    "comparison": expect_comparison,
}


def expected_rows(source: str, filters: dict[str, str], run_dirs: list[Path]) -> list[dict]:
    rows = VIEW_EXPECTATIONS[source](run_dirs) if source in VIEW_EXPECTATIONS else oracle.expected(source, run_dirs)
    return [r for r in rows if all(str(r.get(k)) == v for k, v in filters.items())]


# -- building reports ----------------------------------------------------------------------------------

def make_report(out: Path, names: list[str], fmt_: str = "md") -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs([RUNS / n for n in names]), out, fmt_)
    return out


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("reports")
    return {
        "tiny": make_report(base / "tiny", ["tiny"]),
        "calendar": make_report(base / "calendar", ["calendar"]),
        "tiny+calendar": make_report(base / "two", ["tiny", "calendar"]),
        "all": make_report(base / "all", ["tiny", "calendar", "newest"]),
    }


CASES = {"tiny": ["tiny"], "calendar": ["calendar"], "tiny+calendar": ["tiny", "calendar"],
         "all": ["tiny", "calendar", "newest"]}


@pytest.mark.parametrize("case", list(CASES))
def test_every_printed_figure_matches_expectations(case: str, reports: dict[str, Path]) -> None:
    run_dirs = [RUNS / n for n in CASES[case]]
    text = (reports[case] / "report.md").read_text(encoding="utf-8")
    tables = parse_tables(text)
    sources = {t["source"] for t in tables}
    assert {"run_overview", "training_progression", "best_checkpoint", "checkpoint_ema", "metric_stats",
            "timing_breakdown", "vllm_summary", "turn_stats", "exception_distribution", "exception_treatment",
            "turns_by_exception", "turns_by_outcome", "turn_percentiles", "reward_summary",
            "async_health"} <= sources
    if len(run_dirs) > 1:
        assert {"comparison", "config_diff"} <= sources
    else:
        assert "run" not in {c for t in tables for c in t["columns"]}
    checked = 0
    for table in tables:
        want = expected_rows(table["source"], table["filters"], run_dirs)
        label = f"{case}: {table['source']} {table['filters']}"
        assert len(table["rows"]) == len(want), f"{label}: {len(table['rows'])} rows printed, expected {len(want)}"
        for printed, row in zip(table["rows"], want, strict=True):
            for column, cell in zip(table["columns"], printed, strict=True):
                assert column in row, f"{label}: unexpected column {column!r}"
                if column == "reason":
                    continue  # free text (checked by hand in test_tiny_run.py)
                assert cell in readings(row[column]), f"{label} column {column}: printed {cell!r}, expected " \
                                                      f"{fmt(row[column])!r} ({row[column]!r})\nrow: {row}"
                checked += 1
    assert checked > 300


def test_metric_families_each_have_a_table(reports: dict[str, Path]) -> None:
    tables = parse_tables((reports["calendar"] / "report.md").read_text(encoding="utf-8"))
    families = [t["filters"]["family"] for t in tables if t["source"] == "metric_stats"]
    assert families == FAMILY_ORDER  # the calendar fixture logs every family, batch_errors included


def test_timing_breakdown_is_an_indented_tree(reports: dict[str, Path]) -> None:
    text = (reports["calendar"] / "report.md").read_text(encoding="utf-8")
    spans = {line.split("|")[1].strip(): line.split("|")[1] for line in text.splitlines()
             if line.startswith("| ") and "\u2003" in line}
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
    from rlsql.connection import open_connection

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
        want += [{"run": name, "turns": t, "trials": counts[t]} for t in sorted(counts)]
    assert view_rows("turn_histogram", names) == want


def test_step_time_stack_view() -> None:
    """Per deduplicated step: each recorded direct child of `step`, then the uncovered rest when positive."""
    names = ["tiny", "calendar", "newest"]
    want = []
    for name in sorted(names):
        children = [r["span"] for r in oracle.q_timing_breakdown(name, RUNS / name)
                    if r["within"] == "step" and r["span"] not in ("unattributed", "overlap")]
        for row in oracle.dedup_steps(oracle.read_metric_rows(RUNS / name)):
            total = row.get("timing/step")
            parts = sorted((c, row[f"timing/{c}"]) for c in children if row.get(f"timing/{c}") is not None)
            if total is not None and total - math.fsum(v for _, v in parts) > 0:
                parts.append(("unattributed", total - math.fsum(v for _, v in parts)))
            want += [{"run": name, "step": row["step"], "span": c, "seconds": v, "step_seconds": total}
                     for c, v in parts]
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
    assert sorted(linked) == sorted(FIGURES)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*FIGURES, "report.md"])  # no temporary files
    for name in FIGURES:
        width, height = png_size(folder / name)
        assert 800 <= width <= 2500 and 400 <= height <= 2500, f"{case}/{name}: {width}x{height}"
        assert (folder / name).stat().st_size > 10_000, f"{case}/{name} looks empty"


def test_figures_are_skipped_without_their_data(tmp_path: Path) -> None:
    make_report(tmp_path / "newest", ["newest"])
    names = sorted(p.name for p in (tmp_path / "newest").iterdir())
    assert names == ["report.md", "reward.png", "step_time.png", "turns.png"]  # the run has no vLLM stats
    assert "_No vLLM engine stats in any run._" in (tmp_path / "newest" / "report.md").read_text()


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
    assert err.strip().splitlines()[-1] == f"rlsql: wrote {out / 'report.md'} and 4 figures"
    assert (out / "report.md").is_file()


def test_cli_html_is_one_file(tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_main(["report", "-r", str(RUNS / "tiny"), "-o", str(tmp_path), "-f", "html"],
                            capsys, monkeypatch)
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


@pytest.mark.parametrize(("args", "code", "needle"), [
    (["report", "-f", "pdf"], 2, "md, html"),
    (["report", "-r", str(RUNS / "tiny"), "-o", str(RUNS / "tiny" / "rep")], 2, "run folder"),
    (["report", "-r", "/definitely/not/here"], 3, "/definitely/not/here"),
])
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


def test_progress_indicator_on_a_terminal() -> None:
    import io

    from rlsql.report import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream, enabled=True)
    progress("turn_stats")
    progress("drawing reward.png")
    progress.close()
    assert "\rrlsql: report [1/3]" in stream.getvalue() and "drawing reward.png" in stream.getvalue()
    assert stream.getvalue().endswith("\r")
    quiet = io.StringIO()
    Progress(3, stream=quiet)("x")  # a StringIO is no terminal: nothing written
    assert quiet.getvalue() == ""


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
        reason = (f"{CHROMIUM} is missing: the HTML report test needs Debian's chromium "
                  "(apt-get install -y chromium; .ci/run installs it)")
        if browser_required():
            pytest.fail(f"{reason}; {REQUIRE_BROWSER_ENV}=1 says it must run")
        pytest.skip(reason)
    return subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", "--window-size=1280,1000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.browser
@pytest.mark.slow
def test_html_report_opens_in_chromium_without_errors(tmp_path: Path) -> None:
    make_report(tmp_path / "html", ["tiny", "calendar", "newest"], "html")
    page = tmp_path / "html" / "report.html"
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


def test_every_number_in_html_equals_markdown(tmp_path: Path, reports: dict[str, Path]) -> None:
    """The two formats render the same Layout: the HTML cells equal the markdown cells, table by table."""
    make_report(tmp_path / "h", ["tiny", "calendar", "newest"], "html")
    html = (tmp_path / "h" / "report.html").read_text(encoding="utf-8")
    html_tables = re.findall(r'<table data-source="([^"]+)">(.*?)</table>', html, re.S)
    md_tables = [t for t in parse_tables((reports["all"] / "report.md").read_text(encoding="utf-8")) if t["rows"]]
    assert len(html_tables) == len(md_tables)
    import html as html_lib

    for (marker, body), md in zip(html_tables, md_tables, strict=True):
        assert marker.split()[0] == md["source"]
        cells = [[html_lib.unescape(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
                 for row in re.findall(r"<tr>(.*?)</tr>", body, re.S) if "<td" in row]
        assert cells == md["rows"], marker


def test_report_never_touches_run_folders(tmp_path: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in RUNS.rglob("*")}
    make_report(tmp_path / "r", ["calendar"])
    assert {p: p.stat().st_mtime_ns for p in RUNS.rglob("*")} == before
