"""`rlsql mcp`: a real MCP client session (the SDK's own client) against `python -m rlsql mcp` over stdio and over
streamable HTTP. Expectations come from the CLI run as a separate process (`rlsql query -f json` and the like:
independent of the MCP layer) and from tests/oracle.py; hostile SQL must come back as tool errors while the
server goes on; the server must end with its input and write nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import ROOT, RUNS

pytestmark = pytest.mark.slow
SERVED = ["calendar", "harbor"]
TOOLS = {"list_queries", "describe", "query", "sql", "trial", "runs", "findings"}
#: generous: a condition waited for (a process ending, a port answering), never a measured time
WAIT_S = 60.0


def served_args(*extra: str) -> list[str]:
    return ["-m", "rlsql", "mcp", *[a for r in SERVED for a in ("--run", str(RUNS / r))], *extra]


def cli_json(*args: str) -> Any:
    """What the CLI prints with `-f json`, from a process of its own."""
    proc = subprocess.run(
        [sys.executable, "-m", "rlsql", *args, "-f", "json"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def cli_runs() -> list[str]:
    return [a for r in SERVED for a in ("--run", str(RUNS / r))]


def server_env(**more: str) -> dict[str, str]:
    """What the SDK's client adds to its small default environment: the tests' own cache folder (conftest.py),
    so no server reads a developer's ~/.cache."""
    return {"RLSQL_CACHE_DIR": os.environ["RLSQL_CACHE_DIR"], **more}


def session(work: Callable[[Client], Awaitable[None]], *extra: str, env: dict[str, str] | None = None) -> None:
    """`work` in one client session with `rlsql mcp` started over stdio by the SDK's client."""
    params = StdioServerParameters(
        command=sys.executable, args=served_args(*extra), cwd=str(ROOT), env=env or server_env()
    )

    async def main() -> None:
        async with Client(params) as client:
            await work(client)

    anyio.run(main)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # the text block holds the same JSON, for clients that read only text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    assert len(result.content) == 1
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


def rlsql_children() -> list[int]:
    """This process's children that are `rlsql mcp` servers (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"mcp" in cmdline and b"rlsql" in cmdline:
            found.append(int(stat.parent.name))
    return found


# -- stdio: every tool against the CLI and the oracle ---------------------------------------------------------


def test_stdio_session_every_tool_answers_as_the_cli() -> None:
    expected_rows = {
        "turns_by_exception": cli_json("query", "turns_by_exception", *cli_runs()),
        "reward_curve": cli_json("query", "reward_curve", "--run", str(RUNS / "calendar"), "-p", "span=10"),
    }
    sql = "SELECT run, outcome, count(*) AS n FROM trials GROUP BY ALL ORDER BY ALL"
    expected_sql = cli_json("sql", sql, *cli_runs())
    expected_describe = cli_json("describe", "trials", *cli_runs())
    expected_list = cli_json("list") + cli_json("list", "--views")
    trial_name = "calendar-0001__xifuLj4"
    expected_trial = cli_json("trial", trial_name, "--run", str(RUNS / "harbor"))
    expected_markdown = subprocess.run(
        [sys.executable, "-m", "rlsql", "trial", trial_name, "--run", str(RUNS / "harbor"), "-f", "markdown"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    ).stdout
    lacking = subprocess.run(
        [sys.executable, "-m", "rlsql", "query", "reward_curve", *cli_runs(), "-f", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    expected_warnings = [line.removeprefix("rlsql: warning: ") for line in lacking.stderr.splitlines()]
    assert len(expected_warnings) == 1 and "'harbor' has no trainer metrics" in expected_warnings[0]
    has_findings = any(q["name"] == "findings" for q in expected_list)
    expected_findings = cli_json("query", "findings", *cli_runs()) if has_findings else None

    async def work(client: Client) -> None:
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        for tool in listed:  # what an agent acts on: a description, and one for every argument
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
            for name, prop in tool.input_schema.get("properties", {}).items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"
            assert tool.annotations is not None and tool.annotations.read_only_hint

        queries = structured(await client.call_tool("list_queries", {}))["queries"]
        assert [(q["name"], q["description"]) for q in queries] == [
            (q["name"], " ".join(q["description"].split())) for q in expected_list
        ]
        span = next(p for q in queries if q["name"] == "reward_curve" for p in q["params"] if p["name"] == "span")
        assert (span["type"], span["default"], span["minimum"]) == ("INTEGER", 5, 1)

        assert structured(await client.call_tool("describe", {"name": "trials"})) == expected_describe

        got = structured(await client.call_tool("query", {"name": "turns_by_exception"}))
        assert got["rows"] == expected_rows["turns_by_exception"]
        assert got["row_count"] == len(got["rows"]) and got["truncated"] is False and "note" not in got
        assert got["columns"] == list(got["rows"][0])
        assert_rows_match(
            got["rows"],
            oracle.expected("turns_by_exception", [RUNS / r for r in SERVED]),
            "turns_by_exception over MCP",
        )

        got = structured(
            await client.call_tool("query", {"name": "reward_curve", "runs": ["calendar"], "params": {"span": 10}})
        )
        assert got["rows"] == expected_rows["reward_curve"]
        assert_rows_match(
            got["rows"], oracle.expected("reward_curve", [RUNS / "calendar"], span=10), "reward_curve span=10 over MCP"
        )

        assert structured(await client.call_tool("sql", {"sql": sql}))["rows"] == expected_sql

        # rlsql's warnings reach the agent in the answer, as the CLI says them on stderr; again from memory
        for _ in range(2):
            got = structured(await client.call_tool("query", {"name": "reward_curve"}))
            assert got["warnings"] == expected_warnings
            assert got["rows"] == json.loads(lacking.stdout)

        got = structured(await client.call_tool("trial", {"trial": trial_name, "run": "harbor"}))
        markdown = got.pop("markdown")
        assert got == expected_trial
        assert markdown == expected_markdown
        assert structured(await client.call_tool("trial", {"trial": trial_name}))["run"] == "harbor"

        runs = structured(await client.call_tool("runs", {}))["runs"]
        assert [(r["run"], r["path"], r["changes"]) for r in runs] == [(r, str(RUNS / r), 0) for r in SERVED]
        harbor = next(r for r in runs if r["run"] == "harbor")
        assert harbor["artifacts"]["harbor"] == str(RUNS / "harbor" / "trace_jobs")

        found = await client.call_tool("findings", {})
        if has_findings:  # once the findings query is in the catalogue, its rows are the CLI's
            assert structured(found)["rows"] == expected_findings
        else:
            assert "no `findings` named query" in error_text(found)

    session(work)
    deadline = time.monotonic() + WAIT_S  # the client closed the session: no server is left behind
    while rlsql_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rlsql_children() == []


def test_stdio_errors_are_tool_errors_and_the_server_goes_on(tmp_path: Path) -> None:
    written = tmp_path / "out.csv"
    outside = tmp_path / "secret.csv"
    outside.write_text("a,b\n1,2\n")
    escape = f"{RUNS / 'calendar'}/../../../{outside.relative_to('/')}".replace("//", "/")
    hostile = {
        f"COPY trials TO '{written}'": "COPY statements are refused",
        f"COPY (SELECT 1) TO '{RUNS / 'calendar' / 'x.csv'}'": "COPY statements are refused",
        f"ATTACH '{tmp_path / 'x.duckdb'}' AS x": "ATTACH statements are refused",
        "INSTALL httpfs": "INSTALL and LOAD statements are refused",  # DuckDB parses INSTALL as a LOAD statement
        "LOAD httpfs": "LOAD statements are refused",
        "SET enable_external_access = true": "SET statements are refused",
        "SELECT 1; SELECT 2": "one statement at a time",
        "SELECT * FROM read_csv('/etc/passwd')": "Permission Error",
        f"SELECT * FROM read_csv('{outside}')": "Permission Error",
        f"SELECT * FROM read_csv('{escape}')": "Permission Error",
        "SELECT * FROM glob('/etc/*')": "Permission Error",
    }
    typo = "SELECT * FROM tirals"
    cli = subprocess.run(
        [sys.executable, "-m", "rlsql", "sql", typo, *cli_runs()], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert cli.returncode == 1 and cli.stderr.startswith("rlsql: error: ")

    async def work(client: Client) -> None:
        for sql, says in hostile.items():
            text = error_text(await client.call_tool("sql", {"sql": sql}))
            assert says in text, (sql, text)
            # the server goes on: the next call answers
            assert structured(await client.call_tool("sql", {"sql": "SELECT 42 AS x"}))["rows"] == [{"x": 42}]
        # an error is the CLI's one line, DuckDB's hint and all
        cli_line = cli.stderr.removeprefix("rlsql: error: ").strip()
        assert error_text(await client.call_tool("sql", {"sql": typo})) == cli_line
        assert "no run 'nope' is served" in error_text(
            await client.call_tool("query", {"name": "turn_stats", "runs": ["nope"]})
        )
        assert "no named query or view" in error_text(await client.call_tool("query", {"name": "turn_stat"}))
        assert "below the minimum" in error_text(
            await client.call_tool("query", {"name": "reward_curve", "params": {"span": 0}})
        )
        assert "no trial 'nope'" in error_text(await client.call_tool("trial", {"trial": "nope"}))

    before = sorted(p.relative_to(RUNS) for p in RUNS.rglob("*"))
    session(work)
    assert not written.exists() and not (tmp_path / "x.duckdb").exists()
    assert sorted(p.relative_to(RUNS) for p in RUNS.rglob("*")) == before  # nothing written into the runs


def test_sql_past_the_time_limit_is_stopped_and_the_server_goes_on() -> None:
    async def work(client: Client) -> None:
        slow = "SELECT count(*) FROM range(100000000000) a, range(100000) b"
        text = error_text(await client.call_tool("sql", {"sql": slow}))
        assert text == "SQL: stopped after the time limit of 0.5 s"
        assert structured(await client.call_tool("sql", {"sql": "SELECT 42 AS x"}))["rows"] == [{"x": 42}]

    session(work, env=server_env(RLSQL_SERVE_TIME_LIMIT="0.5"))


def test_large_answers_are_cut_saying_how_many_rows_there_were() -> None:
    all_trials = cli_json("query", "trials", *cli_runs())
    sql = "SELECT run, trial_name, reward FROM trials ORDER BY run, row_no"
    all_sql = cli_json("sql", sql, *cli_runs())
    assert len(all_trials) > 7

    async def work(client: Client) -> None:
        got = structured(await client.call_tool("query", {"name": "trials"}))
        assert got["rows"] == all_trials[:7]
        assert (got["row_count"], got["truncated"]) == (len(all_trials), True)
        assert f"{len(all_trials):,} rows; only the first 7" in got["note"] and "WHERE" in got["note"]
        got = structured(await client.call_tool("sql", {"sql": sql}))
        assert got["rows"] == all_sql[:7]
        assert (got["row_count"], got["truncated"]) == (len(all_sql), True)
        assert f"{len(all_sql):,} rows; only the first 7" in got["note"]
        # a text ending in its semicolon and a comment (an agent's habit as a person's) is counted all the same
        got = structured(await client.call_tool("sql", {"sql": sql + "; -- every trial"}))
        assert got["rows"] == all_sql[:7]
        assert (got["row_count"], got["truncated"]) == (len(all_sql), True)

    session(work, "--max-rows", "7")


def test_an_answer_cut_and_not_counted_says_more_than() -> None:
    """When DuckDB cannot count a cut answer (its count ran past the time limit), the note says "more than"."""
    from rlsql.serve.mcp_server import _rows
    from rlsql.serve.memory import Answer

    answer = Answer(["n"], [(i,) for i in range(7)], True, frozenset({"tiny"}), total=None)
    body = _rows(answer, 7, "add a WHERE")
    assert (body["row_count"], body["truncated"]) == (None, True)
    assert body["note"] == "more than 7 rows (not counted); only the first 7 are here. Narrow the question: add a WHERE"


def test_a_run_still_training_is_read_again(tmp_path: Path) -> None:
    """A trial appended to a served run's trials CSV: the next call sees it, and `runs` counts the change."""
    run = tmp_path / "live"
    shutil.copytree(RUNS / "tiny", run)
    trials_csv = next(run.glob("*_trial_results.csv"))
    before = cli_json("query", "trials", "--run", str(run))

    async def work(client: Client) -> None:
        got = structured(await client.call_tool("query", {"name": "trials"}))
        assert got["rows"] == before
        with trials_csv.open("a") as f:
            f.write("calendar-0004,calendar-0004__n3w7r1a,3.0,9000.0,700.0,,1.0,20.0\n")
        after = structured(await client.call_tool("query", {"name": "trials"}))["rows"]
        assert len(after) == len(before) + 1
        assert after == cli_json("query", "trials", "--run", str(run))
        assert [r["changes"] for r in structured(await client.call_tool("runs", {}))["runs"]] == [1]

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rlsql", "mcp", "--run", str(run)], cwd=str(ROOT), env=server_env()
    )

    async def main() -> None:
        async with Client(params) as client:
            await work(client)

    anyio.run(main)


def test_the_documented_client_configuration_starts_the_server(rlsql_exe: str) -> None:
    """docs/mcp.md's `mcpServers` snippet, its run path pointed at a fixture run, with the installed console script."""
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    snippet = text.split('```text\n{\n  "mcpServers"', 1)[1].split("```", 1)[0]
    config = json.loads('{\n  "mcpServers"' + snippet)["mcpServers"]["rlsql"]
    assert config["command"] == "rlsql"
    args = [str(RUNS / "tiny") if a == "/abs/path/to/runs" else a for a in config["args"]]
    assert args != config["args"]  # the placeholder was there to replace

    async def main() -> None:
        async with Client(StdioServerParameters(command=rlsql_exe, args=args, env=server_env())) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            runs = structured(await client.call_tool("runs", {}))["runs"]
            assert [r["path"] for r in runs] == [str(RUNS / "tiny")]

    anyio.run(main)


def test_the_server_ends_when_its_input_closes() -> None:
    """No client library in between: the protocol's first request by hand, then stdin closed."""
    proc = subprocess.Popen(
        [sys.executable, *served_args()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
    }
    proc.stdin.write((json.dumps(hello) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "rlsql"
    proc.stdin.close()
    try:
        code = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert proc.stdout.read() == b""  # stdout carries the protocol only


def test_without_the_sdk_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from tests.test_cli import one_error_line, run_main

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as when the SDK is not installed
    code, out, err = run_main(["mcp", "--run", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert "pip install 'rlsql[mcp]'" in one_error_line(err)


# -- streamable HTTP: serve's Host check and token -------------------------------------------------------------


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_http(tmp_path: Path, host: str) -> tuple[subprocess.Popen, int, Path]:
    port = free_port(host)
    log = tmp_path / f"mcp-{host}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, *served_args("--http", "--host", host, "--port", str(port))],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=out,
            cwd=ROOT,
        )
    deadline = time.monotonic() + WAIT_S
    while True:  # the port answers once uvicorn listens
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return proc, port, log
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"rlsql mcp --http did not start: {log.read_text()}")
            time.sleep(0.05)


def stop_http(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        return proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def status(url: str, headers: dict[str, str] | None = None) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT_S) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def http_query(url: str) -> list[dict]:
    async with Client(url) as client:
        return structured(await client.call_tool("query", {"name": "turns_by_exception"}))["rows"]


def test_http_on_the_loopback_checks_the_host(tmp_path: Path) -> None:
    expected = cli_json("query", "turns_by_exception", *cli_runs())
    proc, port, log = start_http(tmp_path, "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert anyio.run(http_query, url) == expected
        # a page elsewhere that rebinds its DNS name to 127.0.0.1 is refused (serve's TrustedHostMiddleware)
        assert status(url, {"host": f"attacker.example:{port}"}) == 400
        assert "token" not in log.read_text()  # on the loopback no token is asked for
    finally:
        code = stop_http(proc)
    assert code == 0, log.read_text()
    assert f"at {url} " in log.read_text() and "Traceback" not in log.read_text()


def test_http_beyond_the_loopback_needs_the_token(tmp_path: Path) -> None:
    expected = cli_json("query", "turns_by_exception", *cli_runs())
    host = "127.0.0.2"  # a loopback address all the same, but not one of serve's loopback names: the token rule
    proc, port, log = start_http(tmp_path, host)
    try:
        printed = [w for w in log.read_text().split() if w.startswith(f"http://{host}:{port}/mcp?token=")]
        assert len(printed) == 1, log.read_text()
        url = printed[0]
        assert status(f"http://{host}:{port}/mcp") == 403
        assert status(f"http://{host}:{port}/mcp?token=wrong") == 403
        assert anyio.run(http_query, url) == expected
    finally:
        code = stop_http(proc)
    assert code == 0, log.read_text()
    assert "warning: serving on 127.0.0.2" in log.read_text()
