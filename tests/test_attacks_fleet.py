"""One bad file never stops a fleet (issue 25, D9/D10, M3): over the same damaged fleet, query, sql,
export, check, runs and report each answer the runs that can be answered, say each problem as a
warning naming its file, and exit 0; a warning said about many files or runs is one line.

A file this process cannot open is what a user without permission meets; the suite runs as root, who
opens every file, so the check rlsql makes before handing a file to DuckDB (rlsql.runs.folders.unreadable)
is told which files to refuse. One test (below) makes a file truly unreadable as another user where the
machine allows it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlsql.runs import folders
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS, refused_by_mode
from tests.test_desk import run_main


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Four runs: `good` (a copy of calendar), `nolog` (raw logs, one of them unreadable), `nocsv` (tiny,
    its trials CSV unreadable), `badcfg` (newest, an rl_config.yaml that does not parse)."""
    runs = tmp_path / "runs"
    shutil.copytree(RUNS / "calendar", runs / "good")
    shutil.copytree(RUNS / "rawlogs", runs / "nolog")
    shutil.copytree(RUNS / "tiny", runs / "nocsv")
    shutil.copytree(RUNS / "newest", runs / "badcfg")
    (runs / "badcfg" / "rl_config.yaml").write_text("trainer: [unclosed\n")
    refused = {next((runs / "nolog" / "logs").glob("*554410.out")), next((runs / "nocsv").glob("*_trial_results.csv"))}
    real = folders.unreadable
    monkeypatch.setattr(
        folders, "unreadable", lambda path: "cannot read (Permission denied)" if Path(path) in refused else real(path)
    )
    real_first_line = folders._first_line

    def first_line(path):
        if Path(path) in refused:
            raise folders.DataError(f"{path}: cannot read (Permission denied)")
        return real_first_line(path)

    monkeypatch.setattr(folders, "_first_line", first_line)
    return {"root": runs, **{p.name: p for p in runs.iterdir()}}


COMMANDS = [
    ["query", "turn_stats"],
    ["query", "reward_curve"],
    ["query", "vllm_summary"],
    ["query", "run_table"],
    ["sql", "SELECT run, count(*) AS n FROM trials GROUP BY run ORDER BY run"],
    ["check"],
    ["runs"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_every_command_answers_the_other_runs_and_exits_0(args, fleet, capsys, monkeypatch) -> None:
    code, out, err = run_main([*args, "-r", str(fleet["root"] / "*"), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert "Traceback" not in err and "error:" not in err
    rows = json.loads(out)
    if args[0] == "query" and args[1] == "turn_stats":
        # the unreadable trials CSV costs its run its trials (a row of none); the oracle answers the others
        want = oracle.expected("turn_stats", [fleet[n] for n in ("badcfg", "good", "nolog")])
        assert_rows_match([r for r in rows if r["run"] != "nocsv"], want, "turn_stats over the damaged fleet")
        assert [r["trials"] for r in rows if r["run"] == "nocsv"] == [0]
        assert "nocsv" in err and "cannot read (Permission denied)" in err
    if args[1:2] == ["reward_curve"]:
        assert {r["run"] for r in rows} >= {"good", "nolog"}  # nolog's other logs still count
        assert "554410.out: cannot read (Permission denied); log skipped" in err
    warnings = [line for line in err.splitlines() if line.startswith("rlsql: warning:")]
    assert len(warnings) == len(set(warnings))  # the same warning is said once


def test_export_and_report_answer_the_other_runs_and_exit_0(fleet, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "bi"
    code, _, err = run_main(
        ["export", "turn_stats", "reward_curve", "-r", str(fleet["root"] / "*"), "-o", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    assert (out / "turn_stats.parquet").is_file() and (out / "reward_curve.parquet").is_file()
    # matplotlib comes with the test extra: the report half always runs
    code, _, err = run_main(
        ["report", "-r", str(fleet["root"] / "*"), "-o", str(tmp_path / "rep")], capsys, monkeypatch
    )
    assert code == 0, err
    assert (tmp_path / "rep" / "report.md").is_file()


def test_warnings_about_many_files_are_one_line_with_a_count(tmp_path, capsys, monkeypatch) -> None:
    """M3: a glob with 500 matches that are no runs (files here) is one warning line, not 500."""
    root = tmp_path / "g"
    shutil.copytree(RUNS / "tiny", root / "run")
    for i in range(500):
        (root / f"note{i:03d}.txt").write_text("x")
    code, _, err = run_main(["query", "turn_stats", "-r", str(root / "*")], capsys, monkeypatch)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "not a folder, skipped" in line]
    assert len(lines) == 1, err
    assert "(and 499 more like it:" in lines[0] and "and 496 more)" in lines[0]


def test_an_unreadable_log_is_one_warning_when_the_kernel_refuses_it(tmp_path: Path) -> None:
    """The real thing: a log of mode 000 that the kernel refuses this process (tests/conftest.py
    refused_by_mode: as root, without the capabilities that read anything), in a process of its own."""
    root = tmp_path / "runs"
    shutil.copytree(RUNS / "rawlogs", root / "r1")
    shutil.copytree(RUNS / "rawlogs", root / "r2")
    log = next((root / "r1" / "logs").glob("*554410.out"))
    log.chmod(0)
    done = subprocess.run(
        [
            *refused_by_mode(),
            sys.executable,
            "-m",
            "rlsql",
            "query",
            "reward_curve",
            "-r",
            str(root / "r1"),
            "-r",
            str(root / "r2"),
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "RLSQL_CACHE": "off"},
    )
    assert done.returncode == 0, done.stderr
    assert f"{log}: cannot read (Permission denied); log skipped" in done.stderr
    assert {r["run"] for r in json.loads(done.stdout)} == {"r1", "r2"}


def test_a_run_whose_every_log_is_unreadable_names_them(tmp_path: Path) -> None:
    """Issue 42 (minor): when no log of a folder can be read, nothing said the folder had logs: it read as a run
    without metrics (or no run), the logs never named. Each is one warning naming it and why; the other run
    answers."""
    root = tmp_path / "runs"
    shutil.copytree(RUNS / "rawlogs", root / "r1", ignore=shutil.ignore_patterns("trace_jobs"))
    shutil.copytree(RUNS / "rawlogs", root / "r2")
    logs = sorted((root / "r1" / "logs").iterdir())
    for log in logs:
        log.chmod(0)
    done = subprocess.run(
        [
            *refused_by_mode(),
            sys.executable,
            "-m",
            "rlsql",
            "query",
            "reward_curve",
            "-r",
            str(root / "*"),
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "RLSQL_CACHE": "off"},
    )
    assert done.returncode == 0, done.stderr
    # the three logs (`*.out`; the `.err` is no log) named once each, in one line (the CLI folds alike warnings)
    named = [line for line in done.stderr.splitlines() if "cannot read (Permission denied); log skipped" in line]
    assert len(named) == 1 and f"{logs[0]}: cannot read (Permission denied); log skipped" in named[0], done.stderr
    assert [done.stderr.count(str(log)) for log in logs] == [1, 1, 0, 1], done.stderr
    assert {r["run"] for r in json.loads(done.stdout)} == {"r2"}


def test_export_says_each_problem_once_for_all_its_queries(tmp_path, capsys, monkeypatch) -> None:
    """Issue 27: `export --all` over runs without vLLM stats printed a line per query and run. Two copies of
    tiny (vLLM stats, no trajectories) and three of newest (neither): one line says which three runs lack
    vLLM stats and which queries that leaves without them; one line says which queries are skipped because
    no run has agents' trajectories."""
    runs = tmp_path / "runs"
    for i in range(2):
        shutil.copytree(RUNS / "tiny", runs / f"tiny_{i}")
    for i in range(3):
        shutil.copytree(RUNS / "newest", runs / f"newest_{i}")
    code, _, err = run_main(
        ["export", "--all", "-r", str(runs / "*"), "-o", str(tmp_path / "out")], capsys, monkeypatch
    )
    assert code == 0, err
    warned = [line for line in err.splitlines() if line.startswith("rlsql: warning: ")]
    vllm = [line for line in warned if "has no vLLM engine stats" in line]
    assert len(vllm) == 1, err
    assert "vllm_summary" in vllm[0] and "(and 2 more like it: run 'newest_" in vllm[0]
    skipped = [line for line in warned if line.startswith("rlsql: warning: skipping ")]
    assert len(skipped) == 1, err
    assert skipped[0].startswith(
        "rlsql: warning: skipping looping_trials, token_usage and tool_usage: "
        "no run has the agent trajectories they read (5 runs)"
    )
    # every kind once: no two lines say the same once the queries they name are taken out
    assert len(warned) == len({line.split(";")[0] for line in warned}), err
