"""Measure `rlsql serve` against issue 28's targets (bench/RESULTS.md, "rlsql serve"): the run page's data at
the real run's size after its first load, the fleet page for 1,000 runs, page loads in headless Chromium, and
how soon an open page shows a metrics row appended to its run.

Usage (from the repository root, with the test extra installed and Debian's chromium)::

    python bench/make_run.py --preset real /work/bench-data/real
    python bench/make_fleet.py 1000 /work/bench-data/fleet-1000
    python bench/serve.py --run /work/bench-data/real --fleet /work/bench-data/fleet-1000 [--rounds 5]

Each server is `python -m rlsql serve` as a user starts it; requests are plain HTTP from this process
(wall time from request to the last byte). "cold" is the first request of a fresh server; "warm" the same
URL again (answered from the answers kept in memory). The live test serves a copy of the run in a temporary
folder and appends to the copy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, runs: list[Path]):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rlsql",
                "serve",
                "--port",
                str(self.port),
                *(a for r in runs for a in ("-r", str(r))),
            ],
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit("rlsql serve did not start") from None
                time.sleep(0.05)

    def get(self, path: str) -> float:
        start = time.perf_counter()
        with urllib.request.urlopen(self.url + path, timeout=600) as answer:
            answer.read()
        return time.perf_counter() - start

    def rss(self) -> tuple[int, int]:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        fields = {line.split(":")[0]: line.split()[1] for line in status.splitlines() if line.startswith("Vm")}
        return int(fields["VmRSS"]) // 1024, int(fields["VmHWM"]) // 1024

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def cold_warm(server: Server, path: str, rounds: int) -> tuple[float, float, float]:
    cold = server.get(path)
    warm = [server.get(path) for _ in range(rounds)]
    return cold, statistics.median(warm), max(warm)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def browser_loads(urls: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Seconds from navigation start to the page's charts drawn (body[data-ready]), per URL (warm server)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        for label, url in urls.items():
            page.goto(url)  # the first load fills the server's memory and the browser's cache of the scripts
            page.wait_for_selector("body[data-ready='1']", timeout=600_000)
            times = []
            for _ in range(rounds):
                start = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                times.append(time.perf_counter() - start)
            out[label] = times
        browser.close()
    return out


def live_latency(run: Path, rounds: int) -> list[float]:
    """Seconds from appending a metrics row to the copied run until its open page draws the new step."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / run.name
        shutil.copytree(run, copy)
        server = Server([copy])
        try:
            metrics = next(copy.glob("*_metrics_table.csv"))
            header = metrics.read_text().splitlines()[0].split(",")
            last = dict(zip(header, metrics.read_text().splitlines()[-1].split(","), strict=True))
            step = int(float(last["global_step"]))
            times = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page()
                page.goto(f"{server.url}/run?run={copy.name}")
                page.wait_for_selector("body[data-ready='1']", timeout=600_000)
                for _ in range(rounds):
                    step += 1
                    last.update({"global_step": str(step), "trainer/global_step": str(step)})
                    start = time.perf_counter()
                    with metrics.open("a") as fh:
                        fh.write(",".join(last[h] for h in header) + "\n")
                    page.wait_for_function(
                        "s => JSON.parse(document.querySelector(\"script.chart-spec[data-for='chart-reward']\")"
                        ".textContent).x.includes(s)",
                        arg=step,
                        timeout=60_000,
                    )
                    times.append(time.perf_counter() - start)
                browser.close()
        finally:
            server.stop()
    return times


def poll_cost(fleet: Path, rounds: int) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rlsql.serve.watch import Watcher

    watcher = Watcher({p.name: p for p in sorted(fleet.iterdir()) if p.is_dir()})
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        watcher.poll()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--run", type=Path, required=True, help="a run of the real run's size (make_run.py --preset real)"
    )
    parser.add_argument("--fleet", type=Path, required=True, help="a folder of 1,000 runs (make_fleet.py 1000)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str]] = []
    name = args.run.name

    server = Server([args.run])
    try:
        for label, path in [
            ("run page", f"/run?run={name}"),
            ("run page, new smoothing (span=9)", f"/run?run={name}&span=9"),
            (
                "trials page (45,711 trials), Failure, by turns",
                f"/trials?run={name}&outcome=Failure&sort=n_episodes&desc=1",
            ),
            ("API reward_curve", f"/api/query/reward_curve?run={name}"),
        ]:
            cold, warm, worst = cold_warm(server, path, args.rounds)
            rows.append((label, ms(cold), ms(warm), ms(worst)))
        # a smoothing value not asked before, with the rest of the page kept: what moving the slider costs
        fresh = [server.get(f"/run?run={name}&span={span}") for span in range(11, 11 + args.rounds)]
        rows.append(
            (
                "run page, each new smoothing value after the first load",
                "",
                ms(statistics.median(fresh)),
                ms(max(fresh)),
            )
        )
        loads = browser_loads({"run page in Chromium": f"{server.url}/run?run={name}"}, args.rounds)
        run_rss = server.rss()
    finally:
        server.stop()

    fleet = Server([args.fleet])
    try:
        runs = len([p for p in args.fleet.iterdir() if p.is_dir()])
        cold, warm, worst = cold_warm(fleet, "/", args.rounds)
        rows.append((f"fleet page, {runs:,} runs", ms(cold), ms(warm), ms(worst)))
        cold, warm, worst = cold_warm(fleet, "/?group=fleet.lr&sort=success_rate&desc=1", args.rounds)
        rows.append((f"fleet page, {runs:,} runs, grouped by fleet.lr, sorted", ms(cold), ms(warm), ms(worst)))
        loads.update(browser_loads({f"fleet page ({runs:,} runs) in Chromium": f"{fleet.url}/"}, args.rounds))
        fleet_rss = fleet.rss()
    finally:
        fleet.stop()

    for label, times in loads.items():
        rows.append((label, "", ms(statistics.median(times)), ms(max(times))))
    live = live_latency(args.run, args.rounds)
    rows.append(
        ("live: metrics row appended -> drawn on the open run page", "", ms(statistics.median(live)), ms(max(live)))
    )
    rows.append((f"watcher: one look at {runs:,} runs' files", "", ms(poll_cost(args.fleet, args.rounds)), ""))

    load = os.getloadavg()
    print(f"rlsql serve, {dt.date.today()}, {os.cpu_count()} cores, load {load[0]:.1f}, rounds {args.rounds}")
    print(
        f"server memory: run {run_rss[0]} MB (peak {run_rss[1]} MB); fleet {fleet_rss[0]} MB (peak {fleet_rss[1]} MB)\n"
    )
    print("| what | cold (first request) | after the first load: median | max |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
