"""Time the whole test suite as CI runs it, with the whole machine's CPU and each worker's test time.

    python bench/suite_time.py                 # CI's command, from the repository's root
    python bench/suite_time.py -- -m 'not spark'   # more pytest arguments after `--`

`/usr/bin/time` counts pytest and the children it waited for, not the Spark JVMs (reaped late), so
the CPU here is the first line of /proc/stat before and after: every process on the machine, split
into user, nice (a test worker that lowered its own priority),
system and idle. Run it on a quiet machine (it prints the load before and after) and compare runs
in pairs. The per-worker figures come from this same file loaded as a pytest plugin in each worker
(`-p suite_time`, bench/ on PYTHONPATH): wall time and CPU (self + waited-for children) of every test,
summed per worker and per file; the longest files are printed, for tests/conftest.py LONGEST_FIRST.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest  # the suite's own dependency: this file is also the plugin each worker loads

ROOT = Path(__file__).resolve().parent.parent
CI_COMMAND = ["pytest", "-q", "-p", "no:cacheprovider", "-n", "auto", "--dist", "loadfile"]
OUT_ENV = "RLSQL_SUITE_TIME_OUT"
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait")


def machine_cpu() -> dict[str, float]:
    """The first line of /proc/stat (every CPU, since boot), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat", encoding="ascii") as stat:
        values = stat.readline().split()[1 : 1 + len(STAT_FIELDS)]
    return {name: int(v) / ticks for name, v in zip(STAT_FIELDS, values, strict=True)}


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    out = Path(tempfile.mkdtemp(prefix="suite-time-"))
    env = {
        **os.environ,
        OUT_ENV: str(out),
        "RLSQL_REQUIRE_SPARK": "1",
        "RLSQL_REQUIRE_BROWSER": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")])),
    }
    load_before = os.getloadavg()
    before, started = machine_cpu(), time.monotonic()
    code = subprocess.run([*CI_COMMAND, "-p", "suite_time", *extra], cwd=ROOT, env=env).returncode
    wall, after = time.monotonic() - started, machine_cpu()
    used = {k: after[k] - before[k] for k in STAT_FIELDS}
    busy = used["user"] + used["nice"] + used["system"]
    print(f"\nexit {code}; wall {wall:.1f} s; load {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print("machine CPU-s: " + ", ".join(f"{k} {v:.1f}" for k, v in used.items()) + f"; busy {busy:.1f}")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for worker in sorted(out.glob("*.json")):
        tests = json.loads(worker.read_text())
        print(
            f"{worker.stem}: {sum(t[0] for t in tests.values()):.1f} s of tests, "
            f"{sum(t[1] for t in tests.values()):.1f} CPU-s (self + waited-for children)"
        )
        for nodeid, (seconds, cpu) in tests.items():
            entry = files[nodeid.split("::", 1)[0]]
            entry[0] += seconds
            entry[1] += cpu
    print("longest files (wall s, CPU-s):")
    for name, (seconds, cpu) in sorted(files.items(), key=lambda item: -item[1][0])[:20]:
        print(f"  {seconds:6.1f} {cpu:6.1f}  {name}")
    return code


# -- the plugin each worker loads ------------------------------------------------------------------
_tests: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, started = _cpu(), time.monotonic()
    yield
    entry = _tests[item.nodeid]
    entry[0] += time.monotonic() - started
    entry[1] += _cpu() - cpu


def pytest_sessionfinish(session) -> None:
    out, worker = os.environ.get(OUT_ENV), os.environ.get("PYTEST_XDIST_WORKER")
    if out and worker:  # each worker writes its own; the controller runs no test
        Path(out, f"{worker}.json").write_text(json.dumps(_tests))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
