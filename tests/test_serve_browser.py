"""rlsql serve in a real browser (issue 28, item 7): Debian's headless Chromium driven by Playwright against
`rlsql serve` started as a user starts it, over copies of fixture runs in a temporary folder.

The scenario: every page loads without a console error; fleet -> run -> trials -> one trial, and on the Harbor
run on to the trial's transcript (copied context unfolded by its link, folded again by the back button); the smoothing
moves and the back button brings the earlier state; hover and drag zoom on a chart; SQL runs and its CSV
downloads; a metrics row appended to a copied run shows on its open page; Ctrl-C stops the server with
nothing left behind. Every figure checked comes from tests/oracle.py, formatted as the CLI's table does.

Without /usr/bin/chromium the tests skip with the reason; RLSQL_REQUIRE_BROWSER=1 (CI) makes that a failure.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlsql.outputs.formats import display
from tests import oracle
from tests.conftest import RUNS
from tests.test_report import CHROMIUM, REQUIRE_BROWSER_ENV, browser_required
from tests.test_serve import expected_steps

pytestmark = [pytest.mark.browser, pytest.mark.slow]
COPIED = ["tiny", "calendar", "newest", "harbor"]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: generous: a condition waited for, never a measured time (bench/serve.py measures)
WAIT_MS = 60_000


def need_chromium() -> None:
    if not CHROMIUM.exists():
        reason = (
            f"{CHROMIUM} is missing: the rlsql serve browser test needs Debian's chromium "
            "(apt-get install -y chromium; .ci/run installs it)"
        )
        if browser_required():
            pytest.fail(f"{reason}; {REQUIRE_BROWSER_ENV}=1 says it must run")
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("serve-runs")
    for name in COPIED:
        shutil.copytree(RUNS / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def server(runs: Path, tmp_path_factory: pytest.TempPathFactory):
    need_chromium()
    yield from serving(runs, tmp_path_factory)


def serving(runs: Path, tmp_path_factory: pytest.TempPathFactory):
    """`rlsql serve -r RUNS` on a free port of 127.0.0.1, once it listens: {url, proc, log}; killed after."""
    port = free_port()
    env = {**os.environ, "RLSQL_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    log = tmp_path_factory.mktemp("log") / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rlsql", "serve", "-r", str(runs), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + 60
    while True:  # the port answers once uvicorn listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"rlsql serve did not start: {log.read_text()}")
            time.sleep(0.1)
    yield {"url": f"http://127.0.0.1:{port}", "proc": proc, "log": log}
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def need_playwright():
    """playwright.sync_api, or the test skips saying why (fails where RLSQL_REQUIRE_BROWSER=1, as in CI)."""
    try:
        import playwright.sync_api as playwright
    except ImportError:
        reason = "playwright is not installed (pip install '.[test]')"
        if browser_required():  # CI: a browser test that cannot drive the browser fails, as without Chromium
            pytest.fail(f"{reason}; {REQUIRE_BROWSER_ENV}=1 says it must run")
        pytest.skip(reason)
    return playwright


@pytest.fixture(scope="module")
def browser(server):
    playwright = need_playwright()
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server, tmp_path):
    context = browser.new_context(viewport={"width": 1300, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.problems = problems  # type: ignore[attr-defined]
    yield tab
    context.close()
    assert problems == []


def load(tab, url: str) -> None:
    tab.goto(url)
    tab.wait_for_selector("body[data-ready='1']")


def cells(tab, source: str) -> list[list[str]]:
    """The rows of the page's table with data-source=SOURCE as shown (header first)."""
    return tab.eval_on_selector(
        f"table[data-source='{source}']",
        "t => [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim().replace(/ [▲▼]$/, '')))",
    )


def spec(tab, chart: str) -> dict:
    return json.loads(tab.eval_on_selector(f"script.chart-spec[data-for='chart-{chart}']", "s => s.textContent"))


def test_every_page_loads_and_draws_without_console_errors(page, server) -> None:
    trial = oracle.read_trials(RUNS / "calendar")[0]["trial_name"]
    for path in [
        "/",
        "/run?run=calendar",
        "/run?run=newest",
        "/compare?run=calendar&run=tiny",
        "/trials?run=calendar",
        f"/trial?run=calendar&trial={trial}",
        "/run?run=harbor",
        "/trial?run=harbor&trial=calendar-0005__bu8dLSg",
        "/queries",
        "/query/reward_curve?run=tiny",
        "/sql?q=SELECT+1",
    ]:
        load(page, server["url"] + path)
        for chart in page.query_selector_all("div.chart"):
            assert chart.get_attribute("data-drawn") == "1", path
            assert chart.query_selector("canvas") is not None, path


def test_fleet_to_run_to_trials_to_a_trial(page, server) -> None:
    load(page, server["url"] + "/")
    fleet = cells(page, "run_table")
    header = fleet[0]
    row = next(r for r in fleet[1:] if r[1] == "calendar")
    want = oracle.q_run_summary("calendar", RUNS / "calendar")[0]
    for column in ("trials", "success_rate", "mean_reward", "final_ema", "best_ema_step"):
        assert row[header.index(column)] == display(want[column]), column
    page.click("table[data-source='run_table'] a:text-is('calendar')")
    page.wait_for_url("**/run?run=calendar")
    page.wait_for_selector("body[data-ready='1']")
    summary = dict(cells(page, "run_summary"))
    assert summary == {k: display(v) for k, v in want.items()}
    page.click("a:text-is('trials')")
    page.wait_for_url("**/trials?run=calendar")
    page.select_option("select[name=outcome]", "Failure")
    page.click("button:text-is('filter')")
    page.wait_for_url("**outcome=Failure**")
    trials = oracle.read_trials(RUNS / "calendar")
    failures = [t for t in trials if t["reward"] == 0]
    assert page.inner_text("#trial-count") == f"{len(failures):,} trials"
    first = failures[0]
    page.click(f"table#trials a:text-is('{first['trial_name']}')")
    page.wait_for_url("**/trial?**")
    assert page.inner_text("h1 .trial-name") == first["trial_name"]
    facts = dict(
        page.eval_on_selector_all(
            "#facts div", "ds => ds.map(d => [d.querySelector('dt').innerText, d.querySelector('dd').innerText])"
        )
    )
    assert facts["outcome"] == "Failure" and facts["n_episodes"] == display(first["n_episodes"])
    page.click("details.row summary")  # every column of the trials row, folded away until asked for
    assert dict(cells(page, "trials"))["trial_name"] == first["trial_name"]
    assert page.inner_text("#no-transcript") == (
        "no agent trajectories in 'calendar' (looked for trace_jobs/*/agent/trajectory.json)"
    )


#: each step of a trial page's transcript as shown: its id, who, and texts (a label or a "show it whole" link aside)
STEPS_JS = """() => [...document.querySelectorAll('article.step')].map(a => {
  const text = e => { const c = e.cloneNode(true); c.querySelectorAll('.label, .whole').forEach(x => x.remove());
                      return c.textContent; };
  const all = sel => [...a.querySelectorAll(sel)].map(text);
  return {id: a.id, who: a.dataset.who, message: all('.message'), reasoning: all('.reasoning'),
          calls: [...a.querySelectorAll('.call')].map(c => [text(c.querySelector('.function')),
                                                            JSON.parse(text(c.querySelector('.arguments')))]),
          observation: all('.observation pre')};
})"""


def shown_transcript(tab) -> list[dict]:
    return tab.evaluate(STEPS_JS)


def test_fleet_to_run_to_trials_to_a_trials_transcript(page, server, runs) -> None:
    trial = "calendar-0005__bu8dLSg"  # three segments, copied context, reasoning and tool calls
    load(page, server["url"] + "/")
    page.click("table[data-source='run_table'] a:text-is('harbor')")
    page.wait_for_url("**/run?run=harbor")
    page.wait_for_selector("body[data-ready='1']")
    page.click("a:text-is('trials')")
    page.wait_for_url("**/trials?run=harbor")
    page.click(f"table#trials a:text-is('{trial}')")
    page.wait_for_url("**/trial?**")
    page.wait_for_selector("body[data-ready='1']")
    assert page.is_visible("#transcript article.step")
    keys = ("id", "who", "message", "reasoning", "calls", "observation")
    folded, _ = expected_steps(runs / "harbor", trial, full=False)
    assert shown_transcript(page) == [{k: s[k] for k in keys} for s in folded]
    # the folded copied context opens from its link (the state is in the URL), and the back button folds it again
    page.click("p.folded a")
    page.wait_for_url("**full=1**")
    page.wait_for_selector("body[data-ready='1']")
    whole, _ = expected_steps(runs / "harbor", trial, full=True)
    assert len(whole) > len(folded)
    assert shown_transcript(page) == [{k: s[k] for k in keys} for s in whole]
    page.go_back()
    page.wait_for_function("!location.search.includes('full=1')")
    assert len(shown_transcript(page)) == len(folded)


def test_smoothing_hover_zoom_and_back(page, server) -> None:
    run_dir = RUNS / "calendar"
    load(page, server["url"] + "/run?run=calendar")
    page.fill("#span", "10")  # a range input: sets the value and fires input and change
    page.wait_for_url("**span=10**")
    page.wait_for_function("document.body.dataset.refreshed === '1'")
    curve = oracle.q_reward_curve("calendar", run_dir, span=10)
    ema = next(s for s in spec(page, "reward")["series"] if s["label"] == "EMA")["values"]
    assert [display(v) for v in ema] == [display(r["ema"]) for r in curve]
    best = oracle.q_best_checkpoint("calendar", run_dir, span=10)[0]
    shown = cells(page, "best_checkpoint")
    assert shown[1][:3] == [display(best["run"]), display(best["step"]), display(best["ema"])]
    # hover: the legend shows the step under the cursor and its EMA as the CLI prints it
    page.locator("#chart-reward").scroll_into_view_if_needed()
    box = page.locator("#chart-reward .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.5)
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5, steps=4)
    legend = page.locator("#chart-reward .u-legend .u-series")
    page.wait_for_function(
        "document.querySelector('#chart-reward .u-legend .u-series .u-value').innerText !== '\\u2013'"
    )  # an en dash: no value under the cursor yet
    step = int(legend.nth(0).locator(".u-value").inner_text())
    ema_at = next(r["ema"] for r in curve if r["step"] == step)
    ema_index = [s["label"] for s in spec(page, "reward")["series"]].index("EMA") + 1
    assert legend.nth(ema_index).locator(".u-value").inner_text() == display(ema_at)
    # drag zoom: the x scale narrows to the dragged steps
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 20, steps=5)
    page.mouse.up()
    low, high = page.evaluate(
        "(() => { const u = window.rlsqlCharts.get('chart-reward').u; return [u.scales.x.min, u.scales.x.max]; })()"
    )
    steps = [r["step"] for r in curve]
    assert min(steps) < low < high < max(steps)
    page.go_back()
    page.wait_for_function("!location.search.includes('span=10')")
    page.wait_for_function("document.querySelector('#span').value === '5'")
    ema5 = next(s for s in spec(page, "reward")["series"] if s["label"] == "EMA")["values"]
    assert [display(v) for v in ema5] == [display(r["ema"]) for r in oracle.q_reward_curve("calendar", run_dir)]


def test_sql_runs_and_downloads_a_csv(page, server, tmp_path) -> None:
    load(page, server["url"] + "/sql")
    statement = (
        "SELECT exception_type, count(*) AS n FROM trials WHERE run = 'calendar' GROUP BY ALL ORDER BY n DESC, 1"
    )
    page.fill("textarea#q", statement)
    page.click("#run-sql")
    page.wait_for_selector("#download-csv")
    counts: dict[str, int] = {}
    for t in oracle.read_trials(RUNS / "calendar"):
        counts[t["exception_type"]] = counts.get(t["exception_type"], 0) + 1
    want = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = page.eval_on_selector(
        "main table", "t => [...t.rows].slice(1).map(r => [...r.cells].map(c => c.innerText))"
    )
    assert shown == [[k, display(v)] for k, v in want]
    with page.expect_download() as download:
        page.click("#download-csv")
    path = tmp_path / "sql.csv"
    download.value.save_as(path)
    assert list(csv.reader(io.StringIO(path.read_text()))) == [["exception_type", "n"], *[[k, str(v)] for k, v in want]]
    # an error is the CLI's one line with DuckDB's hint
    page.fill("textarea#q", "SELECT * FROM trails")
    page.click("#run-sql")
    page.wait_for_selector("#error")
    error = page.inner_text("#error")
    assert "\n" not in error and "Did you mean" in error and "trials" in error


def test_live_update_of_a_copied_run(page, server, runs) -> None:
    load(page, server["url"] + "/run?run=tiny")
    steps = spec(page, "reward")["x"]
    metrics = next((runs / "tiny").glob("*_metrics_table.csv"))
    lines = metrics.read_text().splitlines()
    header = lines[0].split(",")
    cells_ = dict(zip(header, lines[-1].split(","), strict=True))
    new_step = int(float(cells_["global_step"])) + 1
    cells_.update({"global_step": str(new_step), "trainer/global_step": str(new_step), "reward/avg_raw_reward": "0.5"})
    with metrics.open("a") as fh:
        fh.write(",".join(cells_[h] for h in header) + "\n")
    page.wait_for_function(
        "s => JSON.parse(document.querySelector(\"script.chart-spec[data-for='chart-reward']\").textContent)"
        ".x.includes(s)",
        arg=new_step,
    )
    assert spec(page, "reward")["x"] == [*steps, new_step]
    curve = oracle.q_reward_curve("tiny", runs / "tiny")
    ema = next(s for s in spec(page, "reward")["series"] if s["label"] == "EMA")["values"]
    assert [display(v) for v in ema] == [display(r["ema"]) for r in curve]
    assert page.inner_text("#live").startswith("updated ")


def test_hover_values_are_formatted_as_the_cli_prints_them(page, server) -> None:
    load(page, server["url"] + "/queries")
    values = [
        0.0,
        1.0,
        -0.5,
        0.12345678,
        12.34567,
        1234567.0,
        1e-06,
        0.0005,
        0.00012345,
        -3.2e-07,
        0.000999,
        2.5e-05,
        0.9101,
        43290.9425,
        3.0,
        0.33333333,
    ]
    shown = page.evaluate("vs => vs.map(v => window.rlsqlFormat(v))", values)
    assert shown == [display(v) for v in values]


def test_ctrl_c_stops_the_server_and_leaves_nothing_behind(browser, server) -> None:
    """Last in this file: it stops the module's server."""
    # an open page holds an event stream: the server must still stop at once, and start nothing that stays
    context = browser.new_context()
    tab = context.new_page()
    load(tab, server["url"] + "/run?run=calendar")
    proc = server["proc"]
    assert children(proc.pid) == []
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0, server["log"].read_text()
    context.close()
    assert "Traceback" not in server["log"].read_text()
