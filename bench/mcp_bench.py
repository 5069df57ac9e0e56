"""Measure `rlsql mcp` (bench/RESULTS.md, "rlsql mcp"): what an agent waits for per answer over a session
that stays open, against the CLI process it would otherwise run for the same answer.

Usage (from the repository root, with the mcp extra installed)::

    python bench/mcp_bench.py --run fixtures/runs/calendar [--rounds 7]

Per round, alternating which goes first: `python -m rlsql sql SQL --run RUN -f json` as a process (start-up
included, as an agent's shell tool pays it), and the `sql` tool with the same SQL in an open MCP session
(the SDK's client over stdio). Each round's SQL differs by a literal, so no answer comes from the server's
memory. Also: the session's start (spawn to the tool list), and the `query` tool's first call of a named
query against the same call again (answered from memory). Wall times from the bench process; medians.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
SQL = "SELECT outcome, count(*) + {i} AS n, avg(n_episodes) AS turns FROM trials GROUP BY ALL ORDER BY ALL"


def cli_answer(run: str, sql: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "rlsql", "sql", sql, "--run", run, "-f", "json"],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return time.perf_counter() - start


async def measure(run: str, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"start": [], "cli": [], "tool": [], "query first": [], "query again": []}
    params = StdioServerParameters(command=sys.executable, args=["-m", "rlsql", "mcp", "--run", run], cwd=str(ROOT))
    start = time.perf_counter()
    async with Client(params) as client:
        await client.list_tools()
        times["start"].append(time.perf_counter() - start)
        for i in range(rounds):
            sql = SQL.format(i=i)

            async def tool(sql: str = sql) -> float:
                t = time.perf_counter()
                result = await client.call_tool("sql", {"sql": sql})
                assert not result.is_error, result.content
                return time.perf_counter() - t

            if i % 2:
                times["cli"].append(await anyio.to_thread.run_sync(cli_answer, run, sql))
                times["tool"].append(await tool())
            else:
                times["tool"].append(await tool())
                times["cli"].append(await anyio.to_thread.run_sync(cli_answer, run, sql))
        for key in ("query first", "query again"):
            t = time.perf_counter()
            result = await client.call_tool("query", {"name": "turns_by_exception"})
            assert not result.is_error, result.content
            times[key].append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default=str(ROOT / "fixtures" / "runs" / "calendar"))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    times = anyio.run(measure, args.run, args.rounds)
    print(f"{dt.date.today()}, load average {os.getloadavg()[0]:.1f}, run {args.run}, rounds {args.rounds}")
    print("| what | median | min | max |\n|---|---:|---:|---:|")
    for key, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"| {key} | {statistics.median(ms):,.0f} ms | {min(ms):,.0f} ms | {max(ms):,.0f} ms |")


if __name__ == "__main__":
    main()
