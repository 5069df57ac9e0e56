"""rlsql serve under load and attack (issue 42, items 11-17 and serve's minor items): answers bounded in
bytes as well as rows, every connection given the memory budget, work beyond a few requests queued, one
answer computed once for concurrent requests, cross-site requests refused, a request whose client went
away given up, Ctrl-C interrupting the statements under way, embedded JSON escaped, Unicode digits refused
in one line, a trajectory rewritten after its result.json noticed, a trials CSV linked from outside its
run folder read, and start-up lines that say where the server listens.

Starlette's TestClient where it can show the case; the real server (`python -m rlsql serve`, on 127.0.0.1)
for Ctrl-C and the port it prints. Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from starlette.testclient import TestClient

from rlsql.cache.mirrors import resolve_runs
from rlsql.core.settings import Settings
from rlsql.serve import bind_host, state
from rlsql.serve.app import make_app
from rlsql.serve.memory import Answer, Memory, fetch_bounded, rows_bytes, value_bytes
from rlsql.serve.state import Served
from rlsql.serve.watch import Watcher
from tests import oracle
from tests.conftest import RUNS
from tests.test_cli import run_main
from tests.test_serve import BASE, chart_specs

#: a statement that runs for minutes unless interrupted
SLOW = "SELECT count(*) FROM range(100000000000) a, range(100000) b"


def served(specs: list[str], **settings: Any) -> Served:
    return Served(resolve_runs(specs), Settings(**settings))


def wait_for(condition: Callable[[], bool], seconds: float = 30.0, what: str = "the condition") -> None:
    """Poll `condition` until it holds; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {seconds:g} s")
        time.sleep(0.02)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "tiny"
    shutil.copytree(RUNS / "tiny", target)
    return target


# -- 11: answers bounded in bytes, connections in memory, work queued, answers shared ------------------
def test_an_answer_is_cut_at_its_share_of_the_memory_budget(tiny) -> None:
    """8 MiB over 4 requests at once: an answer holds at most 2 MiB; 1,000 rows of 100,000 characters (100 MB)
    are cut after the rows that fit, and it says so."""
    budget = 8 * 2**20
    s = served([str(tiny)], serve_memory=budget, serve_concurrency=4)
    with TestClient(make_app(s), base_url=BASE) as c:
        got = c.get("/api/sql", params={"q": "SELECT repeat('x', 100000) AS s FROM range(1000)"}).json()
    assert got["truncated"] is True
    texts = [r["s"] for r in got["rows"]]
    assert 0 < len(texts) < 1000 and all(t == "x" * 100_000 for t in texts)
    assert sum(len(t) for t in texts) <= budget // 4  # the characters alone fit the share


def test_a_named_answer_is_cut_in_bytes_and_fetches_nothing_past_it(tiny, monkeypatch) -> None:
    """The trials view's rows, cut at a 5,000-byte share: the first rows of the CSV, as many as fit."""
    s = served([str(tiny)], serve_memory=20_000, serve_concurrency=4)
    answer = s.named("trials", list(s.runs.values()))
    want = [t["trial_name"] for t in oracle.read_trials(tiny)]
    names = [dict(zip(answer.columns, r, strict=True))["trial_name"] for r in answer.rows]
    assert answer.truncated and 0 < len(names) < len(want) and names == want[: len(names)]
    assert sum(value_bytes(r) for r in answer.rows) <= 5_000


class Counting:
    """A DuckDB result whose fetched rows are counted."""

    def __init__(self, result: Any) -> None:
        self.result, self.fetched = result, 0

    def fetchmany(self, n: int) -> list[tuple]:
        got = self.result.fetchmany(n)
        self.fetched += len(got)
        return got


def test_rows_past_the_row_or_byte_limit_are_not_fetched() -> None:
    con = duckdb.connect()
    many = Counting(con.execute("SELECT range AS i FROM range(1000000000)"))
    rows, cut, _ = fetch_bounded(many, 1000, 10**9)
    assert cut and [r[0] for r in rows] == list(range(1000)) and many.fetched == 1001
    wide = Counting(con.execute("SELECT repeat('x', 1000) AS s FROM range(1000000)"))
    rows, cut, nbytes = fetch_bounded(wide, 10**6, 100_000)
    assert cut and 0 < len(rows) < 100 and nbytes <= 100_000 and nbytes == sum(value_bytes(r) for r in rows) + 64
    assert wide.fetched <= len(rows) + 2  # the batches shrink as the limit nears


def test_the_memory_budget_measures_every_row_of_an_answer() -> None:
    """200 small rows, then three of a million characters: 3 MB, not kept under a 2 MB budget (measuring the
    first 200 rows called it a few KB)."""
    rows = [("a",)] * 200 + [("x" * 10**6,)] * 3
    assert rows_bytes(rows) > 3 * 10**6
    memory = Memory(budget=2 * 10**6)
    memory.put("k", Answer(["s"], rows))
    assert memory.get("k") is None and memory.used == 0


def test_every_connection_a_request_opens_has_the_memory_budget(tiny, monkeypatch) -> None:
    """A named query's own connection (not only the sandboxed one) gets the budget as DuckDB's memory_limit."""
    s = served([str(tiny)], serve_memory=300 * 2**20)
    seen: list[str] = []
    real = state.run_query

    def recording(name, runs, params, consume, *more, **named):
        def consume_and_look(con, sql):
            seen.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
            return consume(con, sql)

        return real(name, runs, params, consume_and_look, *more, **named)

    monkeypatch.setattr(state, "run_query", recording)
    s.named("turn_stats", list(s.runs.values()))
    sandboxed = s._connection(list(s.runs.values())).execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert seen and seen[0] == sandboxed and sandboxed.startswith("300.0 MiB")


class Gate:
    """A stand-in for a named query that holds each caller until released, counting callers at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = self.calls = 0
        self.release = threading.Event()

    def __call__(self, name, runs, params, consume, *more, **named):
        with self.lock:
            self.calls += 1
            self.now += 1
            self.most = max(self.most, self.now)
        self.release.wait(60)
        with self.lock:
            self.now -= 1
        return Answer(["x"], [(1,)], runs=frozenset(r.name for r in runs))


def test_requests_beyond_the_concurrency_wait_their_turn(tiny, monkeypatch) -> None:
    """Six requests for six different answers, two slots: two work at once, the others wait, all answer."""
    gate = Gate()
    monkeypatch.setattr(state, "run_query", gate)
    s = served([str(tiny)], serve_concurrency=2)
    codes: list[int] = []
    with TestClient(make_app(s), base_url=BASE) as c:
        threads = [
            threading.Thread(
                target=lambda n=n: codes.append(
                    c.get("/api/query/reward_curve", params={"span": str(n + 2)}).status_code
                )
            )
            for n in range(6)
        ]
        for t in threads:
            t.start()
        wait_for(lambda: gate.now == 2, what="two requests working")
        assert gate.most == 2
        gate.release.set()
        for t in threads:
            t.join(60)
    assert codes == [200] * 6 and gate.calls == 6 and gate.most == 2


def test_concurrent_requests_for_one_answer_compute_it_once(tiny, monkeypatch) -> None:
    gate = Gate()
    monkeypatch.setattr(state, "run_query", gate)
    s = served([str(tiny)])
    runs = list(s.runs.values())
    answers: list[Answer] = []
    threads = [threading.Thread(target=lambda: answers.append(s.named("turn_stats", runs))) for _ in range(3)]
    threads[0].start()
    wait_for(lambda: gate.calls == 1, what="the first request computing")
    for t in threads[1:]:
        t.start()
    wait_for(lambda: s.memory.misses == 3, what="the other two asking memory")  # and finding nothing there
    gate.release.set()
    for t in threads:
        t.join(60)
    assert gate.calls == 1 and len(answers) == 3 and answers[1] is answers[0] and answers[2] is answers[0]


# -- 12: cross-site requests ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},  # another port of localhost
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1:9999"},
        {"origin": "null"},
    ],
)
def test_cross_site_requests_are_refused_on_every_route_but_static_files(tiny, headers) -> None:
    s = served([str(tiny)])
    with TestClient(make_app(s), base_url=BASE) as c:
        for path in (
            "/api/sql?q=SELECT+1",
            "/api/query/turn_stats",
            "/api/runs",
            "/",
            "/sql?q=SELECT+1",
            "/api/events",
        ):
            got = c.get(path, headers=headers)
            assert got.status_code == 403 and got.text.startswith("refused: "), path
        assert c.get("/static/rlsql.js", headers=headers).status_code == 200


def test_same_origin_requests_and_typed_urls_are_answered(tiny) -> None:
    s = served([str(tiny)])
    with TestClient(make_app(s), base_url=BASE) as c:
        for headers in (
            {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1"},
            {"sec-fetch-site": "none"},
            {},
        ):
            assert c.get("/api/sql", params={"q": "SELECT 1 AS one"}, headers=headers).json()["rows"] == [{"one": 1}]


# -- 13: a client that went away -------------------------------------------------------------------
def test_a_request_whose_client_went_away_is_interrupted(tiny) -> None:
    """The app itself, called as uvicorn calls it: once the statement runs, the client disconnects; the
    request ends at once (the time limit is a minute), its statement interrupted, its slot free again."""
    s = served([str(tiny)], serve_time_limit=60, serve_concurrency=1)
    app = make_app(s)
    sent: list[dict] = []

    async def main() -> None:
        gone = asyncio.Event()

        async def receive() -> dict:
            if not sent:
                sent.append({"type": "http.request"})
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "GET",
            "path": "/api/sql",
            "raw_path": b"/api/sql",
            "query_string": f"q={SLOW}".encode(),
            "headers": [(b"host", b"127.0.0.1")],
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 5),
            "root_path": "",
            "http_version": "1.1",
            "asgi": {"version": "3.0"},
        }
        request = asyncio.ensure_future(app(scope, receive, send))
        waited = time.monotonic() + 30
        while not s._active:  # the statement is running under its deadline
            assert time.monotonic() < waited and not request.done(), "the statement never started"
            await asyncio.sleep(0.02)
        gone.set()
        await asyncio.wait_for(request, 30)

    asyncio.run(main())
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 503 and not s._active
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert json.loads(body) == {"error": "SQL: given up, its client went away"}


# -- 14, 15 and the comment: what the pages and the API answer --------------------------------------
def test_embedded_json_escapes_what_would_end_its_script(tmp_path) -> None:
    """Runs in folders named `<!--<script>` and `&<b>`: every chart spec of the compare page parses as JSON,
    holds no `<`, `>` or `&`, and gives the names back."""
    hostile = "<!--<script>"
    other = "&<b>"
    shutil.copytree(RUNS / "tiny", tmp_path / hostile)
    shutil.copytree(RUNS / "calendar", tmp_path / other)
    s = served([str(tmp_path / hostile), str(tmp_path / other)])
    with TestClient(make_app(s), base_url=BASE) as c:
        page = c.get("/compare", params=[("run", hostile), ("run", other)])
    assert page.status_code == 200
    bodies = [
        chunk[chunk.index(">") + 1 : chunk.index("</script>")]
        for chunk in page.text.split('<script type="application/json" class="chart-spec"')[1:]
    ]
    assert bodies and not any(ch in body for body in bodies for ch in "<>&")
    labels = {series["label"] for spec in chart_specs(page.text).values() for series in spec["series"]}
    assert {hostile, other} <= labels


@pytest.mark.parametrize(
    "query",
    [
        {"run": "tiny", "page": "²"},
        {"run": "tiny", "page": "①"},
        {"run": "tiny", "turns_min": "²"},
        {"run": "tiny", "turns_max": "٣"},
    ],
)
def test_unicode_digits_are_a_400_in_one_line(query) -> None:
    s = served([str(RUNS / "tiny")])
    with TestClient(make_app(s), base_url=BASE) as c:
        page = c.get("/trials", params=query)
        fleet = c.get("/", params={"page": query.get("page", "²")})
    assert page.status_code == 400 and "Traceback" not in page.text
    assert "is not a page of" in page.text or "is not a whole number of turns" in page.text
    assert fleet.status_code == 200  # the fleet page takes a page it cannot read as the first


def test_sql_of_only_a_comment_is_a_400(tiny) -> None:
    s = served([str(tiny)])
    with TestClient(make_app(s), base_url=BASE) as c:
        got = c.get("/api/sql", params={"q": "-- nothing here\n/* nor here */"})
    assert got.status_code == 400 and got.json() == {"error": "SQL: no statement given (only comments or blanks)"}


# -- 17: staleness and the sandbox's files ----------------------------------------------------------
def test_a_trajectory_rewritten_after_its_result_json_is_noticed(tmp_path) -> None:
    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    watcher = Watcher({"harbor": run})
    trajectory = next((run / "trace_jobs").glob("*/agent/trajectory.json"))
    assert (trajectory.parent.parent / "result.json").exists()
    assert watcher.poll() == []
    trajectory.write_text(trajectory.read_text() + "\n")
    assert watcher.poll() == ["harbor"]
    assert watcher.poll() == []
    (trajectory.parent / "trajectory.cont-1.json").write_text("{}")
    assert watcher.poll() == ["harbor"]


def test_a_rewritten_trajectory_drops_the_answers_that_read_it(tmp_path) -> None:
    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    s = served([str(run)])
    runs = list(s.runs.values())
    first = s.select("SELECT count(*) FROM trajectory_steps", runs)
    trajectory = next((run / "trace_jobs").glob("*/agent/trajectory.json"))
    doc = json.loads(trajectory.read_text())
    doc["steps"] = doc["steps"][:1]
    trajectory.write_text(json.dumps(doc))
    assert s.refresh() == ["harbor"]
    again = s.select("SELECT count(*) FROM trajectory_steps", list(s.runs.values()))
    assert again is not first and again.rows[0][0] < first.rows[0][0]


def test_a_trials_csv_linked_from_outside_the_run_is_read_and_nothing_else_there(tmp_path) -> None:
    run = tmp_path / "runs" / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    csv = next(run.glob("*_trial_results.csv"))
    shutil.move(csv, elsewhere / csv.name)
    csv.symlink_to(elsewhere / csv.name)
    (elsewhere / "secret.csv").write_text("a\n1\n")
    s = served([str(run)])
    with TestClient(make_app(s), base_url=BASE) as c:
        got = c.get("/api/sql", params={"q": "SELECT count(*) AS n FROM trials"})
        assert got.status_code == 200 and got.json()["rows"] == [{"n": len(oracle.read_trials(run))}]
        for q in (f"SELECT * FROM read_csv('{elsewhere / 'secret.csv'}')", f"SELECT * FROM glob('{elsewhere}/*')"):
            refused = c.get("/api/sql", params={"q": q})
            assert refused.status_code == 400 and "ermission" in refused.json()["error"], q


# -- 16 and the start-up lines: the real server --------------------------------------------------------
def start_server(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    """`rlsql serve ARGS --port 0` in its own process, and the port its start-up line names."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsql", "serve", *args, "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # blocks until the line is written (or the process ends: "")
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0]) if "http://127.0.0.1:" in line else 0
    if not line.startswith("rlsql: serving 1 run(s) at http://127.0.0.1:") or port == 0:
        proc.kill()  # no server outlives its test, even one that printed the wrong line
        proc.wait()
        pytest.fail(f"the start-up line does not name the port listened on: {line!r}")
    return proc, port


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads a process's CPU time from /proc")
def test_ctrl_c_interrupts_the_statement_under_way_and_exits_cleanly(tiny) -> None:
    proc, port = start_server(["-r", str(tiny)], {"RLSQL_SERVE_TIME_LIMIT": "600"})
    try:
        answer: dict[str, Any] = {}

        def ask() -> None:
            con = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            con.request("GET", "/api/sql?q=" + SLOW.replace(" ", "+"))
            got = con.getresponse()
            answer.update(status=got.status, body=got.read().decode())

        asker = threading.Thread(target=ask)
        asker.start()
        idle = cpu_seconds(proc.pid)
        wait_for(lambda: cpu_seconds(proc.pid) > idle + 1.0, what="the statement running")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        asker.join(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err.strip().splitlines() == ["rlsql: stopped"]  # no traceback
    assert answer["status"] == 503
    assert json.loads(answer["body"]) == {"error": "SQL: interrupted, the server is stopping"}


def test_a_port_in_use_is_one_line_and_a_non_zero_exit(monkeypatch, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, _, err = run_main(["serve", "-r", str(RUNS / "tiny"), "--port", str(port)], capsys, monkeypatch)
    assert code == 2
    assert err.strip().splitlines() == [f"rlsql: error: cannot listen on 127.0.0.1 port {port}: Address already in use"]


def test_the_host_as_given_is_the_address_bound(monkeypatch, capsys) -> None:
    assert bind_host("[::1]") == "::1" and bind_host(" 127.0.0.1 ") == "127.0.0.1"
    code, _, err = run_main(["serve", "-r", str(RUNS / "tiny"), "--host", ""], capsys, monkeypatch)
    assert code == 2 and err.strip().splitlines() == [
        "rlsql: error: --host '': give an address (127.0.0.1, ::1, or 0.0.0.0 for every interface)"
    ]
