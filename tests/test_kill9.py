"""kill -9 at several points of a real `rlsql report` (each seen happening: its staging folder made, a
figure in it, every figure in it; the process seen alive just before): the report folder is always the
old report or the new one, whole, and what the killed process left is swept by the next report beside it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import warnings
from pathlib import Path

from rlsql.outputs.report import build_report
from rlsql.runs import writes
from rlsql.runs.folders import resolve_runs
from tests.conftest import RUNS


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def test_kill_9_during_report_leaves_the_old_or_the_new_report_whole(tmp_path: Path, rlsql_exe: str) -> None:
    old_run, new_run = tmp_path / "runs" / "tiny", tmp_path / "runs2" / "tiny"
    shutil.copytree(RUNS / "tiny", old_run)
    shutil.copytree(RUNS / "tiny", new_run)
    trials = next(new_run.glob("*_trial_results.csv"))
    trials.write_text(trials.read_text().replace(",0.0,", ",1.0,"))  # another report: other rewards
    env = {**os.environ, "RLSQL_CACHE": "off"}

    def report(run: Path, out: Path) -> subprocess.Popen:
        return subprocess.Popen(
            [rlsql_exe, "report", "-r", str(run), "-o", str(out)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def report_here(run: Path, out: Path) -> None:
        """The same report written in this process (the reports that are not killed need no process)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build_report(resolve_runs([run]), out)

    out = tmp_path / "out"
    out.mkdir()
    assert report(new_run, out / "new").wait() == 0
    report_here(old_run, out / "rep")
    old, new = files(out / "rep"), files(out / "new")
    assert old != new and "report.md" in old
    shutil.rmtree(out / "new")
    figures = sum(1 for name in new if name.endswith(".png"))

    def staged() -> list[Path]:
        return [
            p
            for p in out.iterdir()
            if p.is_dir() and writes.parse_temp_name(p.name) is not None and not writes.parse_temp_name(p.name).old
        ]

    def pngs_in(folder: Path) -> int:
        """Figures in a staging folder; -1 once it is gone (renamed into place between the listing and now)."""
        try:
            return sum(1 for f in os.scandir(folder) if f.name.endswith(".png"))
        except FileNotFoundError:
            return -1

    killed = 0
    for pngs in (0, 1, figures):  # its staging folder made; one figure written; every figure written
        proc = report(new_run, out / "rep")
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if any(pngs_in(folder) >= pngs for folder in staged()):
                break
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        assert files(out / "rep") in (old, new)
        stray = [p.name for p in out.iterdir() if p.name != "rep"]
        assert all(writes.parse_temp_name(name) is not None for name in stray), stray
    assert killed >= 2, "the report finished before it could be killed"
    report_here(new_run, out / "rep")
    assert files(out / "rep") == new
    assert sorted(p.name for p in out.iterdir()) == ["rep"]  # the killed reports' staging folders swept
