"""Measure what `rlsql serve` holds under issue 42's load cases (bench/RESULTS.md, "rlsql serve under load"):
the server's peak memory and each case's wall time, for a checkout given as --code (its `rlsql` package
is imported from there; the default is this one).

Usage (from the repository root)::

    python bench/make_run.py --preset 1m /tmp/bench-1m
    python bench/serve_limits.py --run /tmp/bench-1m [--code OTHER_CHECKOUT] [--cap-gb 6]

Cases, each on a fresh server (`python -m rlsql serve --port N`, default settings):
- `huge`: `GET /api/sql?q=SELECT repeat('x', 1000000) FROM range(100000)` (100 GB of text asked for);
- `trials x12`: 12 concurrent `GET /api/query/trials` (the run's 1M trials: the same answer asked 12 times);
- `compare x12`: 12 concurrent `GET /api/query/compare_runs`, each with another span (12 answers).
A server whose resident memory passes --cap-gb is killed and the case reported as "killed".
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def case_urls(name: str) -> list[str]:
    if name == "huge":
        return ["/api/sql?" + urllib.parse.urlencode({"q": "SELECT repeat('x', 1000000) AS s FROM range(100000)"})]
    if name == "trials x12":
        return ["/api/query/trials"] * 12
    if name == "compare x12":
        return [f"/api/query/compare_runs?span={i + 2}" for i in range(12)]
    raise SystemExit(f"no case {name}")


def run_case(name: str, run: Path, code: Path, cap_kb: int) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}
    with socket.socket() as probe:  # a free port (before issue 42, `--port 0` printed port 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsql", "serve", "-r", f"r={run}", "--port", str(port)],
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("rlsql serve did not start") from None
            time.sleep(0.05)
    statuses: list[str] = []

    def get(path: str) -> None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=600) as got:
                got.read()
                statuses.append(str(got.status))
        except urllib.error.HTTPError as exc:
            statuses.append(str(exc.code))
        except OSError as exc:
            statuses.append(type(exc).__name__)

    peak = rss_kb(proc.pid)
    start = time.monotonic()
    threads = [threading.Thread(target=get, args=(u,)) for u in case_urls(name)]
    for t in threads:
        t.start()
    killed = False
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_kb(proc.pid))
        if peak > cap_kb:
            proc.kill()
            killed = True
            break
        time.sleep(0.02)
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    if not killed:
        proc.terminate()
    proc.wait()
    return wall, peak, "killed" if killed else ",".join(sorted(set(statuses)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--cap-gb", type=float, default=6.0)
    parser.add_argument("--cases", nargs="*", default=["huge", "trials x12", "compare x12"])
    args = parser.parse_args()
    for name in args.cases:
        wall, peak, status = run_case(name, args.run.resolve(), args.code.resolve(), int(args.cap_gb * 2**20))
        print(f"{name}\t{wall:.1f} s\tpeak RSS {peak / 2**20:.2f} GB\t{status}", flush=True)


if __name__ == "__main__":
    main()
