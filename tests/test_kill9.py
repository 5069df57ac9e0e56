"""kill -9 at random points of a real `rlsql report`: the report folder is always the old report or
the new one, whole, and what the killed process left is swept by the next report beside it."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from rlsql import writes
from rlsql.report import build_report
from rlsql.runs import resolve_runs
from tests.conftest import RUNS


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def test_kill_9_during_report_leaves_the_old_or_the_new_report_whole(tmp_path: Path, rlsql_exe: str) -> None:
    pytest.importorskip("matplotlib", reason="rlsql report needs the report extra (matplotlib)")
    old_run, new_run = tmp_path / "runs" / "tiny", tmp_path / "runs2" / "tiny"
    shutil.copytree(RUNS / "tiny", old_run)
    shutil.copytree(RUNS / "tiny", new_run)
    trials = next(new_run.glob("*_trial_results.csv"))
    trials.write_text(trials.read_text().replace(",0.0,", ",1.0,"))  # another report: other rewards
    env = {**os.environ, "RLSQL_CACHE": "0"}

    def report(run: Path, out: Path) -> subprocess.Popen:
        return subprocess.Popen([rlsql_exe, "report", "-r", str(run), "-o", str(out)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def report_here(run: Path, out: Path) -> None:
        """The same report written in this process (the reports that are not killed need no process)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build_report(resolve_runs([run]), out)

    out = tmp_path / "out"
    out.mkdir()
    started = time.monotonic()
    assert report(new_run, out / "new").wait() == 0  # a process: how long one takes, for the kill moments
    took = time.monotonic() - started
    report_here(old_run, out / "rep")
    old, new = files(out / "rep"), files(out / "new")
    assert old != new and "report.md" in old
    shutil.rmtree(out / "new")

    rng = random.Random(9)
    for _ in range(3):
        proc = report(new_run, out / "rep")
        time.sleep(rng.uniform(0.3, took))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert files(out / "rep") in (old, new)
        stray = [p.name for p in out.iterdir() if p.name != "rep"]
        assert all(writes.parse_temp_name(name) is not None for name in stray), stray
    report_here(new_run, out / "rep")
    assert files(out / "rep") == new
    assert sorted(p.name for p in out.iterdir()) == ["rep"]  # the killed reports' staging folders swept
