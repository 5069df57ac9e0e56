"""rlsql serve without a browser (issue 28): the JSON API against `rlsql query -f json` and tests/oracle.py,
the pages' tables against the oracle as the CLI's table prints them, the read-only sandbox against hostile
statements, the time, row and memory limits, the token, and the live update of a copied run.

Starlette's TestClient runs the app in this process; the browser test is tests/test_serve_browser.py.
"""

from __future__ import annotations

import html
import html.parser
import json
import math
import re
import shutil
import sys
from pathlib import Path

import duckdb
import pytest
from starlette.testclient import TestClient

from rlsql.cache.mirrors import resolve_runs
from rlsql.core.errors import UsageError
from rlsql.core.settings import Settings, parse_size
from rlsql.duck import memorydb
from rlsql.outputs.formats import display
from rlsql.serve import pages, state
from rlsql.serve.app import make_app
from rlsql.serve.memory import Answer, Memory
from rlsql.serve.state import Served
from rlsql.serve.watch import Watcher
from tests import oracle
from tests.conftest import RUNS
from tests.test_cli import run_main

SERVED = ["tiny", "calendar", "newest"]
BASE = "http://127.0.0.1"  # the app refuses any other Host when bound to the loopback


def client(runs: list[Path], token: str | None = None, **settings) -> TestClient:
    """An app over `runs`; `settings`: fields of rlsql's Settings (serve_time_limit=...)."""
    served = Served(resolve_runs([str(p) for p in runs]), Settings(**settings), token)
    return TestClient(make_app(served), base_url=BASE)


@pytest.fixture(scope="module")
def api() -> TestClient:
    with client([RUNS / n for n in SERVED]) as c:
        yield c


@pytest.fixture
def live_run(tmp_path: Path) -> Path:
    """A copy of the tiny run (a test appends to it; the fixtures stay as they are)."""
    target = tmp_path / "runs" / "tiny"
    shutil.copytree(RUNS / "tiny", target)
    return target


class Tables(html.parser.HTMLParser):
    """Every <table data-source=NAME> of a page: NAME -> rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._current: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "data-source" in attrs:
            self._current = self.tables.setdefault(attrs["data-source"], [])
        elif tag == "tr" and self._current is not None:
            self._current.append([])
        elif tag in ("td", "th") and self._current is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._current is not None:
            self._current[-1].append("".join(self._cell).strip().removesuffix(" ▲").removesuffix(" ▼"))
            self._cell = None
        elif tag == "table":
            self._current = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(page)
    return parser.tables


def chart_specs(page: str) -> dict[str, dict]:
    out = {}
    for chunk in page.split('<script type="application/json" class="chart-spec"')[1:]:
        body = chunk[chunk.index(">") + 1 : chunk.index("</script>")]
        spec = json.loads(body)
        out[spec["id"]] = spec
    return out


def close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def same_rows(got: list[dict], want: list[dict]) -> bool:
    return len(got) == len(want) and all(
        g.keys() >= w.keys() and all(close(g[k], w[k]) for k in w) for g, w in zip(got, want, strict=True)
    )


# -- the JSON API ----------------------------------------------------------------------------------
NAMES = [i.name for i in pages.items() if i.kind == "query"] + [
    "trials",
    "run_summary",
    "step_signals",
    "config",
    "vllm_series",
    "turn_histogram",
    "step_time_stack",
]


@pytest.mark.parametrize("name", NAMES)
def test_api_rows_are_the_clis_json(api, name, monkeypatch, capsys, tmp_path) -> None:
    args = ["query", name, "-f", "json", *(a for n in SERVED for a in ("-r", str(RUNS / n)))]
    code, out, err = run_main(args, capsys, monkeypatch)
    got = api.get(f"/api/query/{name}", params=[("run", n) for n in SERVED])
    if code != 0:  # the same refusal, as one line
        assert got.status_code >= 400 and got.json()["error"] in err
        return
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rows"] == json.loads(out)
    assert body["columns"] == (list(json.loads(out)[0]) if body["rows"] else body["columns"])


def test_api_answers_equal_the_oracle_with_parameters(api) -> None:
    run_dir = RUNS / "calendar"
    stats = api.get("/api/query/turn_stats", params={"run": "calendar"}).json()["rows"]
    assert same_rows(stats, oracle.q_turn_stats("calendar", run_dir))
    curve = api.get("/api/query/reward_curve", params={"run": "calendar", "span": "10"}).json()["rows"]
    assert same_rows(curve, oracle.q_reward_curve("calendar", run_dir, span=10))
    best = api.get("/api/query/best_checkpoint", params={"run": "calendar", "span": "2", "save_every": "4"}).json()
    want = oracle.q_best_checkpoint("calendar", run_dir, span=2, save_every=4)
    assert same_rows(best["rows"], [{k: v for k, v in w.items() if k != "reason"} for w in want])  # text: not modelled


def test_api_sql_runs_and_lists_runs(api) -> None:
    trials = sum(len(oracle.read_trials(RUNS / n)) for n in SERVED)
    body = api.get("/api/sql", params={"q": "SELECT count(*) AS n FROM trials"}).json()
    assert body == {"columns": ["n"], "rows": [{"n": trials}]}
    failures = sum(1 for t in oracle.read_trials(RUNS / "tiny") if t["reward"] == 0)
    text = api.get(
        "/api/sql.csv", params={"q": "SELECT count(*) AS n FROM trials WHERE outcome = 'Failure'", "run": "tiny"}
    ).text
    assert text == f"n\n{failures}\n"
    runs = api.get("/api/runs").json()["runs"]
    assert [r["run"] for r in runs] == sorted(SERVED)
    assert runs[0]["path"] == str((RUNS / "calendar").resolve())


def test_api_downloads(api, tmp_path) -> None:
    csv = api.get("/api/query/turn_stats.csv", params={"run": "tiny"})
    assert csv.headers["content-disposition"] == 'attachment; filename="turn_stats.csv"'
    want = oracle.q_turn_stats("tiny", RUNS / "tiny")[0]
    assert csv.text.splitlines()[1].split(",")[:2] == ["tiny", str(want["trials"])]
    parquet = api.get("/api/query/turn_stats.parquet", params={"run": "tiny"})
    assert parquet.content[:4] == b"PAR1"
    (tmp_path / "t.parquet").write_bytes(parquet.content)
    row = duckdb.sql(f"SELECT * FROM '{tmp_path / 't.parquet'}'").fetchall()[0]
    assert row[0] == "tiny" and row[1] == want["trials"] and close(row[2], want["mean"])
    as_json = api.get("/api/query/turn_stats.json", params={"run": "tiny"}).json()
    assert same_rows(as_json, [want])


def test_api_errors_are_one_line_with_a_status(api) -> None:
    unknown = api.get("/api/query/turn_stat")
    assert unknown.status_code == 404 and "did you mean turn_stats" in unknown.json()["error"]
    assert api.get("/api/query/turn_stats", params={"run": "nope"}).status_code == 404
    bad = api.get("/api/query/reward_curve", params={"span": "zero"})
    assert bad.status_code == 400 and "span" in bad.json()["error"]
    typo = api.get("/api/sql", params={"q": "SELECT * FROM trails"}).json()["error"]
    assert "\n" not in typo and "trails" in typo and "Did you mean" in typo and "trials" in typo


def test_each_error_has_its_status_as_json_on_the_api_and_as_a_page_elsewhere(api) -> None:
    """docs/serve.md's statuses, one request each: the API answers `{"error": line}`, a page the error page
    with the line (escaped) in it."""
    cases = {
        "/api/query/turn_stat.parquet": (404, "no named query or view 'turn_stat'"),
        "/api/sql.xml?q=SELECT+1": (404, "/api/sql.xml: ad hoc SQL comes as /api/sql"),
        "/api/sql?q=DROP+TABLE+x": (403, "read-only: DROP statements are refused"),
        "/api/sql?q=+": (400, "no SQL given"),
        "/api/query/vllm_summary?run=newest": (422, "vllm_summary needs the vLLM engine stats of run 'newest'"),
    }
    for url, (status, line) in cases.items():
        got = api.get(url)
        assert (got.status_code, got.headers["content-type"]) == (status, "application/json"), url
        assert list(got.json()) == ["error"] and got.json()["error"].startswith(line), url
    page = api.get("/query/turn_stat")
    assert page.status_code == 404 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<p class="error" id="error">no named query or view &#39;turn_stat&#39;' in page.text


def test_a_stopping_server_answers_503(live_run) -> None:
    """Once the server is stopping (Ctrl-C), work not yet started is interrupted before it runs."""
    with client([live_run]) as c:
        c.app.state.served.stop()
        got = c.get("/api/query/turn_stats")
        assert got.status_code == 503 and got.json() == {"error": "turn_stats: interrupted, the server is stopping"}
        page = c.get("/run", params={"run": "tiny"})
        assert page.status_code == 503 and "interrupted, the server is stopping" in page.text


# -- read-only ------------------------------------------------------------------------------------
def hostile(target: Path) -> list[tuple[str, int, str]]:
    """(statement, HTTP status, what the answer says) for statements that must not run."""
    inside = target / "written.csv"
    return [
        (f"COPY (SELECT 1) TO '{inside}'", 403, "COPY statements are refused"),
        ("COPY (SELECT 1) TO '/tmp/rlsql-serve-escape.csv'", 403, "COPY statements are refused"),
        ("SELECT * FROM read_csv('/etc/passwd')", 400, "file system operations are disabled"),
        ("SELECT * FROM read_text('/etc/hostname')", 400, "file system operations are disabled"),
        (f"SELECT * FROM read_text('{target}/../../../../etc/passwd')", 400, "file system operations are disabled"),
        ("SELECT * FROM glob('/etc/*')", 400, "file system operations are disabled"),
        ("ATTACH '/tmp/rlsql-serve-escape.duckdb' AS x", 403, "ATTACH statements are refused"),
        ("INSTALL httpfs", 403, "INSTALL and LOAD statements are refused"),
        ("LOAD httpfs", 403, "LOAD statements are refused"),
        ("SET enable_external_access = true", 403, "SET statements are refused"),
        ("RESET lock_configuration", 403, "statements are refused"),
        ("PRAGMA threads=1", 403, "SET statements are refused"),
        ("CALL pragma_version()", 403, "CALL statements are refused"),
        ("CREATE TABLE t AS SELECT 1", 403, "CREATE statements are refused"),
        ("EXPORT DATABASE '/tmp/rlsql-serve-export'", 403, "statements are refused"),
        (f"SELECT 1; COPY (SELECT 1) TO '{inside}'", 403, "one statement at a time"),
        ("SELECT 1; SELECT 2", 403, "one statement at a time"),
        ("SELECT * FROM query('COPY (SELECT 1) TO ''/tmp/rlsql-serve-escape.csv''')", 400, "single SELECT"),
    ]


def test_sql_cannot_write_read_outside_attach_install_or_set(live_run) -> None:
    with client([live_run]) as c:
        for statement, status, says in hostile(live_run):
            got = c.get("/api/sql", params={"q": statement})
            assert (got.status_code, says in got.json().get("error", "")) == (status, True), (statement, got.text)
            page = c.get("/sql", params={"q": statement})
            assert says in page.text
        # the configuration is as locked after them as before, and nothing was written
        settings = c.get(
            "/api/sql",
            params={
                "q": "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('enable_external_access', 'lock_configuration')"
            },
        ).json()
        assert {r["name"]: r["value"] for r in settings["rows"]} == {
            "enable_external_access": "false",
            "lock_configuration": "true",
        }
        # a run's own files may be read
        metrics = next(live_run.glob("*_metrics_table.csv"))
        own = c.get("/api/sql", params={"q": f"SELECT count(*) AS n FROM read_csv('{metrics}')"}).json()
        assert own["rows"] == [{"n": len(oracle.read_metric_rows(live_run))}]
    assert sorted(p.name for p in live_run.iterdir()) == sorted(p.name for p in (RUNS / "tiny").iterdir())
    assert not Path("/tmp/rlsql-serve-escape.csv").exists()
    assert not Path("/tmp/rlsql-serve-escape.duckdb").exists()


def test_time_and_row_limits(live_run) -> None:
    with client([live_run], serve_time_limit=0.5, serve_row_limit=5) as c:
        slow = c.get("/api/sql", params={"q": "SELECT count(*) FROM range(100000000000) a, range(100000) b"})
        assert slow.status_code == 504 and "time limit of 0.5 s" in slow.json()["error"]
        trials = c.get("/api/query/trials").json()
        assert len(trials["rows"]) == 5 and trials["truncated"] is True
        assert [r["trial_name"] for r in trials["rows"]] == [t["trial_name"] for t in oracle.read_trials(live_run)][:5]
        assert "truncated" not in c.get("/api/query/turn_stats").json()


def test_sql_ending_in_a_semicolon_and_a_comment_is_cut_and_counted(live_run) -> None:
    """An answer past the row limit is counted by running its text as a subquery: a closing `;` and a comment
    after it (a user's habit) once made the count unknown."""
    served = Served(resolve_runs([str(live_run)]), Settings(serve_row_limit=2))
    answer = served.select("SELECT trial_name FROM trials ORDER BY row_no; -- every trial", served.pick(None))
    trials = oracle.read_trials(live_run)
    assert [r[0] for r in answer.rows] == [t["trial_name"] for t in trials][:2]
    assert answer.truncated and answer.total == len(trials) > 2


def test_a_named_query_is_interrupted_at_the_time_limit(live_run, monkeypatch) -> None:
    """A named query's own connection is handed to the request's deadline (rlsql.duck.memorydb.opened)."""
    served = Served(resolve_runs([str(live_run)]), Settings(serve_time_limit=0.3))
    slow = state.run_query

    def slower(name, runs, params, consume, *more, **named):
        con = memorydb.memory_connection()  # as run_query opens its own: watched
        con.execute("SELECT count(*) FROM range(100000000000) a, range(100000) b").fetchall()
        return slow(name, runs, params, consume, *more, **named)

    monkeypatch.setattr(state, "run_query", slower)
    with TestClient(make_app(served), base_url=BASE) as c:
        got = c.get("/api/query/turn_stats")
    assert got.status_code == 504 and "turn_stats: stopped after the time limit" in got.json()["error"]


def test_token_when_bound_beyond_the_loopback(live_run) -> None:
    with client([live_run], "s3cret", serve_host="0.0.0.0") as c:
        assert c.get("/api/runs").status_code == 403
        assert c.get("/api/runs", params={"token": "wrong"}).status_code == 403
        first = c.get("/", params={"token": "s3cret"})
        assert first.status_code == 200 and "rlsql_token=s3cret" in first.headers["set-cookie"]
        assert c.get("/api/runs").status_code == 200  # the cookie now


def test_loopback_refuses_other_host_names(live_run) -> None:
    with client([live_run]) as c:
        assert c.get("/api/runs", headers={"host": "attacker.example"}).status_code == 400
        assert c.get("/api/runs", headers={"host": "localhost:8765"}).status_code == 200


# -- memory and live updates ----------------------------------------------------------------------
def test_answers_come_from_memory_until_a_file_changes(live_run) -> None:
    served = Served(resolve_runs([str(live_run)]), Settings())
    with TestClient(make_app(served), base_url=BASE) as c:
        before = c.get("/api/query/reward_curve").json()["rows"]
        hits = served.memory.hits
        assert c.get("/api/query/reward_curve").json()["rows"] == before
        assert served.memory.hits == hits + 1
        metrics = next(live_run.glob("*_metrics_table.csv"))
        header, last = metrics.read_text().splitlines()[0], metrics.read_text().splitlines()[-1]
        cells = dict(zip(header.split(","), last.split(","), strict=True))
        new_step = int(float(cells["global_step"])) + 1
        cells.update(
            {"global_step": str(new_step), "trainer/global_step": str(new_step), "reward/avg_raw_reward": "0.125"}
        )
        with metrics.open("a") as fh:
            fh.write(",".join(cells[h] for h in header.split(",")) + "\n")
        assert served.refresh() == ["tiny"]  # what the server's watcher task does every second
        assert served.changed_since(0) == ["tiny"]
        after = c.get("/api/query/reward_curve").json()["rows"]
    assert same_rows(after, oracle.q_reward_curve("tiny", live_run))
    assert after[-1]["step"] == new_step and after[-1]["reward"] == 0.125 and len(after) == len(before) + 1


def test_watcher_sees_new_files_and_harbor_trials(tmp_path) -> None:
    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    watcher = Watcher({"harbor": run})
    assert watcher.poll() == []
    pending = run / "trace_jobs" / "calendar-9999__newtrial"
    pending.mkdir()
    assert watcher.poll() == ["harbor"]  # a trial folder appeared
    assert watcher.poll() == []
    shutil.copy(next((run / "trace_jobs").glob("*/result.json")), pending / "result.json")
    assert watcher.poll() == ["harbor"]  # its result.json appeared
    (run / "20260101_000000_vllm_metrics_table.csv").write_text("log_file\n")
    assert watcher.poll() == ["harbor"]  # a new artifact
    assert watcher.poll() == []


def test_memory_budget_drops_the_least_recently_used() -> None:
    memory = Memory(budget=1000)
    for i in range(3):
        memory.put(i, Answer(["x"], [(i,)], nbytes=400, runs=frozenset({f"r{i}"})))
    assert memory.get(0) is None and memory.get(1) is not None and memory.used == 800
    memory.put("big", Answer(["x"], [], nbytes=2000))
    assert memory.get("big") is None  # larger than the budget: not kept
    assert memory.forget_runs({"r2"}) == 1 and memory.used == 400


def test_memory_budget_setting() -> None:
    assert parse_size("512MB") == 512 * 10**6 and parse_size("2GiB") == 2 * 2**30 and parse_size("300m") == 300 * 2**20
    assert Settings.from_env({"RLSQL_SERVE_MEMORY": "1GiB"}).serve_memory == 2**30
    assert Settings.from_env({}).serve_memory == 512 * 2**20
    with pytest.raises(UsageError, match="give a size such as 512MB"):
        parse_size("lots")


# -- pages ----------------------------------------------------------------------------------------
def cli_cells(rows: list[dict]) -> list[list[str]]:
    """Rows as the CLI's table prints each cell (rlsql.outputs.formats.display)."""
    return [[display(v) for v in r.values()] for r in rows]


def test_run_page_numbers_are_the_oracles_as_the_cli_prints_them(api) -> None:
    page = api.get("/run", params={"run": "calendar", "span": "7"})
    assert page.status_code == 200
    found = tables(page.text)
    run_dir = RUNS / "calendar"
    for name, want in [
        ("turn_stats", oracle.q_turn_stats("calendar", run_dir)),
        ("best_checkpoint", oracle.q_best_checkpoint("calendar", run_dir, span=7)),
        ("exception_distribution", oracle.q_exception_distribution("calendar", run_dir)),
        ("timing_breakdown", oracle.q_timing_breakdown("calendar", run_dir)),
    ]:
        assert found[name][0][: len(want[0])] == list(want[0]), name
        modelled = [i for i, c in enumerate(want[0]) if c != "reason"]  # the oracle does not write the reason text
        assert [[r[i] for i in modelled] for r in found[name][1:]] == [
            [c[i] for i in modelled] for c in cli_cells(want)
        ], name
    summary = dict(found["run_summary"])  # one row shown as (column, value) pairs
    want = oracle.q_run_summary("calendar", run_dir, span=7)[0]
    assert summary == {k: display(v) for k, v in want.items()}
    reward = chart_specs(page.text)["reward"]
    curve = oracle.q_reward_curve("calendar", run_dir, span=7)
    assert reward["x"] == [r["step"] for r in curve]
    ema = next(s for s in reward["series"] if s["label"] == "EMA")["values"]
    assert all(close(a, r["ema"]) for a, r in zip(ema, curve, strict=True))
    best = oracle.q_best_checkpoint("calendar", run_dir, span=7)[0]
    marked = next(s for s in reward["series"] if s["label"].startswith("best checkpoint"))
    assert marked["label"] == f"best checkpoint (step {best['step']})"
    assert [x for x, v in zip(reward["x"], marked["values"], strict=True) if v is not None] == [best["step"]]


def test_every_page_answers(api) -> None:
    trial = oracle.read_trials(RUNS / "calendar")[0]["trial_name"]
    for url in [
        "/",
        "/?group=trainer.policy.optimizer_config.lr&sort=success_rate&desc=1",
        "/run?run=tiny",
        "/run?run=newest",
        "/compare?run=tiny&run=calendar",
        "/trials?run=calendar",
        f"/trial?run=calendar&trial={trial}",
        "/queries",
        "/query/run_table",
        "/query/reward_curve?span=3",
        "/sql",
        "/sql?q=SELECT+1",
        "/static/uPlot.iife.min.js",
        "/static/rlsql.js",
    ]:
        assert api.get(url).status_code == 200, url
    assert api.get("/compare?run=tiny").status_code == 400
    assert "compare takes 2 to 6 runs" in api.get("/compare?run=tiny").text
    assert api.get("/run?run=nope").status_code == 404
    assert api.get("/trial?run=calendar&trial=nope").status_code == 404


def test_trials_page_filters_sorts_and_pages_on_the_server(api) -> None:
    trials = oracle.read_trials(RUNS / "calendar")
    failures = [t for t in trials if t["reward"] == 0]
    page = api.get("/trials", params={"run": "calendar", "outcome": "Failure", "sort": "n_episodes", "desc": "1"})
    assert f"{len(failures):,} trials" in page.text
    shown = tables(page.text)["trials"]
    header = shown[0]
    turns = [row[header.index("n_episodes")] for row in shown[1:]]
    want = sorted((t["n_episodes"] for t in failures if t["n_episodes"] is not None), reverse=True)[:50]
    assert turns == [display(t) for t in want]
    timeouts = [
        t
        for t in trials
        if t["exception_type"] == "AgentTimeoutError" and t["n_episodes"] is not None and 2 <= t["n_episodes"] <= 3
    ]
    page = api.get(
        "/trials", params={"run": "calendar", "exception": "AgentTimeoutError", "turns_min": "2", "turns_max": "3"}
    )
    assert f"{len(timeouts):,} trials" in page.text
    task = trials[5]["task_name"]
    on_task = [t for t in trials if task in t["task_name"]]
    second = api.get("/trials", params={"run": "calendar", "task": task, "page": "1"})
    assert f"{len(on_task):,} trials" in second.text
    paged = tables(api.get("/trials", params={"run": "calendar", "page": "2"}).text)["trials"]
    names = [row[paged[0].index("trial_name")] for row in paged[1:]]
    assert names == [t["trial_name"] for t in trials[50:100]]
    assert api.get("/trials", params={"run": "calendar", "page": "999"}).status_code == 400
    assert api.get("/trials", params={"run": "calendar", "sort": "nope"}).status_code == 400


def test_trial_page_of_a_run_without_trajectories_says_so_in_one_line(api) -> None:
    trial = oracle.read_trials(RUNS / "calendar")[3]
    page = api.get("/trial", params={"run": "calendar", "trial": trial["trial_name"]})
    row = dict(tables(page.text)["trials"])
    assert row["trial_name"] == trial["trial_name"] and row["n_episodes"] == display(trial["n_episodes"])
    assert row["exception_type"] == trial["exception_type"]
    assert not (RUNS / "calendar" / "trace_jobs").exists()
    reason = page.text.split('id="no-transcript">', 1)[1].split("</p>", 1)[0]
    assert reason == (
        "no agent trajectories in &#39;calendar&#39; (looked for trace_jobs/*/agent/trajectory.json)"
    )  # `rlsql trial`'s words, escaped
    assert "<article" not in page.text and "arriving" not in page.text


class Steps(html.parser.HTMLParser):
    """Each <article class="step"> of a trial page: its id, who (data-who), title (h4) and texts, by the class
    of the element holding them (a label or a link to the whole text is no part of a text)."""

    FIELDS = ("message", "reasoning", "function", "arguments", "observation")

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[dict] = []
        self.damaged: list[str] = []
        self._open: list[tuple[str, str | None, bool]] = []  # (tag, field, skipped)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "article" and "step" in classes:
            self.steps.append({"id": attrs["id"], "who": attrs["data-who"], "h4": [], **{f: [] for f in self.FIELDS}})
        field = "h4" if tag == "h4" and self.steps else next((c for c in classes if c in self.FIELDS), None)
        if "damaged" in classes:
            field = "damaged"
            self.damaged.append("")
        elif field is not None:
            self.steps[-1][field].append("")
        self._open.append((tag, field, "label" in classes or "whole" in classes))

    def handle_endtag(self, tag):
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if any(skipped for _, _, skipped in self._open):
            return
        field = next((f for _, f, _ in reversed(self._open) if f is not None), None)
        if field == "damaged":
            self.damaged[-1] += data
        elif field is not None:
            self.steps[-1][field][-1] += data


def shown_steps(page: str) -> Steps:
    parser = Steps()
    parser.feed(page)
    return parser


def words(value) -> str:
    """A message or content as text (docs/trajectories.md): a string, or its parts joined, a part that is no text
    as [type: path]."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p["text"] if p["type"] == "text" else f"[{p['type']}: {p['source']['path']}]" for p in value)
    return ""


def expected_steps(run_dir: Path, trial: str, full: bool) -> tuple[list[dict], list[Path]]:
    """The trial's steps as its trajectory files hold them (plain json), in order (segment, then step_id, then
    place in the file); copied context left out unless `full`; and the files that cannot be read."""
    steps, damaged = [], []
    for name, segment, path in oracle.trajectory_files(run_dir)[0]:
        doc = oracle.read_trajectory(path) if name == trial else {"steps": []}
        if doc is None:
            damaged.append(path)
            continue
        for index, step in sorted(enumerate(doc["steps"]), key=lambda p: (p[1]["step_id"], p[0])):
            if step.get("is_copied_context") is True and not full:
                continue
            results = (step.get("observation") or {}).get("results") or []
            steps.append(
                {
                    "id": f"step-{segment}-{index + 1}",
                    "who": step["source"],
                    "step_id": step["step_id"],
                    "message": [words(step["message"])] if words(step.get("message")) else [],
                    "reasoning": [step["reasoning_content"]] if step.get("reasoning_content") else [],
                    "calls": [[c["function_name"], c["arguments"]] for c in step.get("tool_calls") or []],
                    "observation": [words(r.get("content")) for r in results],
                }
            )
    return steps, damaged


@pytest.fixture(scope="module")
def harbor() -> TestClient:
    with client([RUNS / "harbor"]) as c:
        yield c


HARBOR_TRIALS = sorted(
    {name for name, _, _ in oracle.trajectory_files(RUNS / "harbor")[0]}
    & {t["trial_name"] for t in oracle.read_trials(RUNS / "harbor")}
)


def test_trial_page_of_a_trial_without_a_trajectory_says_what_it_lacks(harbor) -> None:
    """Issue 42: as `rlsql trial`, a trial folder without agent/ is its row and one line, not a "did you mean"."""
    trace_jobs = RUNS / "harbor" / "trace_jobs"
    trial = sorted(
        t.name
        for t in trace_jobs.iterdir()
        if t.is_dir() and not (t / "agent").exists() and (t / "result.json").is_file()
    )[0]
    page = harbor.get("/trial", params={"run": "harbor", "trial": trial})
    reason = page.text.split('id="no-transcript">', 1)[1].split("</p>", 1)[0]
    assert page.status_code == 200 and reason == f"{trace_jobs / trial}: no agent/ folder, so no trajectory to show"


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("trial", HARBOR_TRIALS)
def test_trial_page_shows_every_step_of_the_transcript_in_order(harbor, trial: str, full: bool) -> None:
    page = harbor.get("/trial", params={"run": "harbor", "trial": trial, **({"full": "1"} if full else {})})
    assert page.status_code == 200
    shown = shown_steps(page.text)
    want, damaged = expected_steps(RUNS / "harbor", trial, full)
    assert [s["id"] for s in shown.steps] == [s["id"] for s in want]
    for got, w in zip(shown.steps, want, strict=True):
        assert got["who"] == w["who"] and got["h4"][0].startswith(f"step {w['step_id']} · {w['who']}")
        assert got["message"] == w["message"] and got["reasoning"] == w["reasoning"]
        assert [[f, json.loads(a)] for f, a in zip(got["function"], got["arguments"], strict=True)] == w["calls"]
        assert got["observation"] == w["observation"]
    # copied context is folded into a count per segment, unless full
    docs = [
        oracle.read_trajectory(path) or {"steps": []}
        for name, _, path in oracle.trajectory_files(RUNS / "harbor")[0]
        if name == trial
    ]
    copied = [sum(1 for s in doc["steps"] if s.get("is_copied_context") is True) for doc in docs]
    folded = [int(n) for n in re.findall(r'<p class="note folded">(\d+) steps? of context copied', page.text)]
    assert folded == ([] if full else [n for n in copied if n])
    # a damaged file is named as `rlsql trial` names it, and the others still read
    assert [d.split(": ", 2)[1] for d in shown.damaged] == [str(p) for p in damaged]
    facts = next(t for t in oracle.read_trials(RUNS / "harbor") if t["trial_name"] == trial)
    header = page.text.split('id="facts">', 1)[1].split("</dl>", 1)[0]
    assert f"<dt>exception_type</dt><dd>{facts['exception_type']}</dd>" in header
    assert f"<dt>n_episodes</dt><dd>{display(facts['n_episodes'])}</dd>" in header or facts["n_episodes"] is None
    assert 'id="no-transcript"' not in page.text
    # the exception's traceback, from the trial's result.json read here with plain json
    info = json.loads((RUNS / "harbor" / "trace_jobs" / trial / "result.json").read_text())["exception_info"]
    traceback = re.findall(r'<pre class="traceback">(.*?)</pre>', page.text, re.S)
    assert traceback == ([html.escape(info["exception_traceback"], quote=False)] if info else [])


def test_run_page_of_a_run_with_trajectories_has_an_agent_section(harbor, api) -> None:
    page = harbor.get("/run", params={"run": "harbor"})
    assert page.status_code == 200 and 'id="agent"' in page.text
    found = tables(page.text)
    for name in ("tool_usage", "token_usage", "looping_trials"):
        want = oracle.expected(name, [RUNS / "harbor"])
        assert want, name
        assert found[name][0] == list(want[0]), name
        assert found[name][1:] == cli_cells(want), name
    # each looping trial links to its transcript (and its exception type to the trials filtered to it)
    loops = [r["trial_name"] for r in oracle.expected("looping_trials", [RUNS / "harbor"])]
    section = page.text.split('id="agent"', 1)[1]
    links = re.findall(r'<a href="/trial\?([^"]+)">([^<]+)</a>', section)
    assert [(html.unescape(q), t) for q, t in links] == [(f"run=harbor&trial={t}", t) for t in loops]
    for trial in loops:
        assert harbor.get("/trial", params={"run": "harbor", "trial": trial}).status_code == 200
    # a run without trajectories has no such section (and its queries are not asked)
    plain = api.get("/run", params={"run": "calendar"})
    assert plain.status_code == 200 and 'id="agent"' not in plain.text
    assert not {"tool_usage", "token_usage", "looping_trials"} & set(tables(plain.text))


def test_trial_page_marks_repeated_calls(harbor) -> None:
    """`cat notes.txt` is made at step 2 of segment 0, again at step 3, then in segments 1 and 2; `ls` at step 3
    and in a later segment (read by hand from the fixture's files; tests/test_trajectories.py checks the same
    against the oracle)."""
    page = harbor.get("/trial", params={"run": "harbor", "trial": "calendar-0005__bu8dLSg", "full": "1"})
    assert re.findall(r'<span class="repeat">(.*?)</span>', page.text) == [
        "same call as step 2, x4",
        "same call as step 2 of segment 0, x4",
        "same call as step 2 of segment 0, x4",
        "same call as step 3 of segment 0, x2",
    ]


def test_trial_page_cuts_long_texts_and_escapes_what_a_trajectory_holds(tmp_path: Path) -> None:
    trial = "calendar-0001__G7Xfn9r"
    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor" / "trace_jobs" / trial, run / "trace_jobs" / trial)
    path = run / "trace_jobs" / trial / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    hostile = "<script>alert('message')</script>"
    doc["steps"][0]["message"] = hostile + "x" * 5000
    doc["steps"][1]["reasoning_content"] = "</div><b>bold</b>"
    doc["steps"][1]["tool_calls"][0]["function_name"] = "<img src=x onerror=alert(1)>"
    doc["steps"][1]["observation"]["results"][0]["content"] = "</pre><script>alert('observed')</script>"
    path.write_text(json.dumps(doc))
    with client([run]) as c:
        page = c.get("/trial", params={"run": "harbor", "trial": trial}).text
        whole = c.get("/trial", params={"run": "harbor", "trial": trial, "full": "1"}).text
    # nothing written in a trajectory reaches the page as markup
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(&#39;message&#39;)&lt;/script&gt;" in page
    first, second = shown_steps(page).steps[:2]
    assert first["message"] == [(hostile + "x" * 5000)[:600] + "… [4,433 more characters]"]
    link = f'href="/trial?run=harbor&amp;trial={trial}&amp;full=1#{first["id"]}"'
    assert f'<a class="whole" {link}>' in page and 'class="whole"' not in whole
    assert second["reasoning"] == ["</div><b>bold</b>"] and second["function"][0] == "<img src=x onerror=alert(1)>"
    assert second["observation"] == ["</pre><script>alert('observed')</script>"]
    assert shown_steps(whole).steps[0]["message"] == [hostile + "x" * 5000]


def fleet_copies(tmp_path: Path, count: int) -> tuple[Path, dict[str, str]]:
    """`count` copies of the calendar run, each config with its own learning rate (3 values in turn)."""
    lrs = {}
    for i in range(count):
        target = tmp_path / "fleet" / f"run_{i:02d}"
        shutil.copytree(RUNS / "calendar", target)
        lr = f"{(1 + i % 3)}e-06"
        with (target / "rl_config.yaml").open("a") as fh:
            fh.write(f"\nfleet:\n  lr: {lr}\n")
        lrs[target.name] = lr
    return tmp_path / "fleet", lrs


def test_fleet_groups_filters_sorts_and_draws_against_a_config_key(tmp_path) -> None:
    folder, lrs = fleet_copies(tmp_path, 5)
    shutil.copytree(RUNS / "tiny", folder / "tiny")
    with client([folder]) as c:
        page = c.get("/", params={"group": "fleet.lr", "sort": "success_rate", "desc": "1", "y": "success_rate"})
        assert page.status_code == 200
        groups = page.text.count('<h2 class="group">fleet.lr = ')
        assert groups == len(set(lrs.values())) + 1  # tiny has no such key: "(no value)"
        spec = chart_specs(page.text)["fleet"]
        assert spec["xlabel"] == "fleet.lr"
        assert sorted(spec["labels"]) == sorted(lrs)  # every run with the key, tiny left out
        assert spec["x"] == sorted(float(v) for v in lrs.values())
        filtered = c.get("/", params=[("f", "fleet.lr=2e-06")])
        rows = tables(filtered.text)["run_table"][1:]
        assert sorted(r[1] for r in rows) == sorted(n for n, lr in lrs.items() if lr == "2e-06")
        ordered = tables(c.get("/", params={"sort": "trials", "desc": "1"}).text)["run_table"]
        trial_counts = [r[ordered[0].index("trials")] for r in ordered[1:]]
        want = sorted(
            [len(oracle.read_trials(RUNS / "calendar"))] * 5 + [len(oracle.read_trials(RUNS / "tiny"))], reverse=True
        )
        assert trial_counts == [display(n) for n in want]


def test_fleet_filters_and_groups_a_typed_config_key_by_its_text(tmp_path) -> None:
    """run_table types fleet.lr DOUBLE (issue 27); the fleet page filters, groups and links by the key's text, so a
    value the table would print rounded (1.23457e-06) still selects its runs."""
    lrs = {"run_a": "1.23456789e-06", "run_b": "2.5e-06", "run_c": "1.23456789e-06"}
    for name, lr in lrs.items():
        shutil.copytree(RUNS / "tiny", tmp_path / "fleet" / name)
        with (tmp_path / "fleet" / name / "rl_config.yaml").open("a") as fh:
            fh.write(f"\nfleet:\n  lr: {lr}\n")
    with client([tmp_path / "fleet"]) as c:
        rows = tables(c.get("/", params=[("f", "fleet.lr=1.23456789e-06")]).text)["run_table"][1:]
        assert sorted(r[1] for r in rows) == ["run_a", "run_c"]
        page = c.get("/", params={"group": "fleet.lr"}).text
        assert '<h2 class="group">fleet.lr = 1.23456789e-06' in page and '<h2 class="group">fleet.lr = 2.5e-06' in page
        assert chart_specs(c.get("/", params={"x": "fleet.lr", "y": "trials"}).text)["fleet"]["x"] == sorted(
            float(v) for v in lrs.values()
        )


def test_query_page_has_a_form_and_downloads(api) -> None:
    page = api.get("/query/reward_curve", params={"run": "tiny", "span": "3"})
    assert 'name="span"' in page.text and 'value="3"' in page.text
    for fmt in ("csv", "json", "parquet"):
        assert f"/api/query/reward_curve.{fmt}?run=tiny&amp;span=3" in page.text
    shown = tables(page.text)["reward_curve"]
    assert shown[1:] == cli_cells(oracle.q_reward_curve("tiny", RUNS / "tiny", span=3))


def test_serve_without_the_extra_says_how_to_install(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn fails as when it is not installed
    code, _, err = run_main(["serve", "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 2
    assert err.strip().splitlines() == [
        "rlsql: error: rlsql serve needs Starlette and uvicorn, which are not installed: pip install 'rlsql[serve]'"
    ]


def test_a_fleet_of_runs_without_trainer_metrics_opens_on_its_table() -> None:
    """A Harbor evaluation run (trials and trajectories, no trainer metrics): the fleet page opened on an error
    ("run_table needs the trainer metrics"). It lists the run with its trial figures, its training ones empty."""
    with client([RUNS / "harbor"]) as c:
        page = c.get("/")
        assert page.status_code == 200, page.text
        assert 'class="error"' not in page.text
        (row,) = c.get("/api/query/run_table", params={"run": "harbor"}).json()["rows"]
    trials = oracle.read_trials(RUNS / "harbor")
    assert (row["run"], row["trials"], row["steps"], row["final_ema"]) == ("harbor", len(trials), None, None)
