"""The CLI, in-process (argv through main()) and through the installed console script."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlsql.cli import app as cli
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS


def run_main(args: list[str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def run_exe(exe: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one stderr line, got: {err!r}"
    assert "Traceback" not in err
    return lines[0]


# -- the installed console script, from a folder that is not the checkout ---------------------------


def test_console_script_default_runs_sample(rlsql_exe: str, tmp_path: Path) -> None:
    proc = run_exe(rlsql_exe, ["query", "turns_by_exception", "-f", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sample run" in proc.stderr
    want = oracle.expected("turns_by_exception", [RUNS / "calendar"])
    assert_rows_match(json.loads(proc.stdout), want, "console script on the sample run")


def test_console_script_table_output(rlsql_exe: str, tmp_path: Path) -> None:
    proc = run_exe(rlsql_exe, ["query", "turns_by_exception", "--run", str(RUNS / "tiny")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0].split()
    assert header == ["run", "exception_type", "trials", "mean_turns", "median_turns"]
    assert proc.stderr == ""


def test_python_dash_m(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "rlsql", "query", "reward_summary", "-r", str(RUNS / "newest"), "-f", "csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    want = oracle.expected("reward_summary", [RUNS / "newest"])
    assert int(rows[0]["trials"]) == want[0]["trials"]
    assert float(rows[0]["mean_reward"]) == pytest.approx(want[0]["mean_reward"])


def test_console_script_unknown_query(rlsql_exe: str, tmp_path: Path) -> None:
    proc = run_exe(rlsql_exe, ["query", "turns_by_exceptoin"], tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "turns_by_exception" in line  # the closest name is suggested
    assert proc.stdout == ""


# -- in-process --------------------------------------------------------------------------------------


def test_formats_agree(capsys, monkeypatch) -> None:
    base = ["query", "exception_distribution", "-r", str(RUNS / "tiny")]
    want = oracle.expected("exception_distribution", [RUNS / "tiny"])
    code, out, _ = run_main([*base, "-f", "json"], capsys, monkeypatch)
    assert code == 0
    assert_rows_match(json.loads(out), want, "json")
    code, out, _ = run_main([*base, "-f", "jsonl"], capsys, monkeypatch)
    assert_rows_match([json.loads(line) for line in out.splitlines()], want, "jsonl")
    code, out, _ = run_main([*base, "-f", "csv"], capsys, monkeypatch)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["exception_type"] for r in rows] == [w["exception_type"] for w in want]
    assert [int(r["trials"]) for r in rows] == [w["trials"] for w in want]
    code, out, _ = run_main([*base, "-f", "markdown"], capsys, monkeypatch)
    lines = out.splitlines()
    assert lines[0] == "| run | exception_type | trials | pct | treatment |"
    assert len(lines) == 2 + len(want)


def test_limit(capsys, monkeypatch) -> None:
    code, out, _ = run_main(
        ["query", "step_timing", "-r", str(RUNS / "calendar"), "-n", "3", "-f", "jsonl"], capsys, monkeypatch
    )
    assert code == 0
    want = oracle.expected("step_timing", [RUNS / "calendar"])[:3]
    assert_rows_match([json.loads(line) for line in out.splitlines()], want, "limit 3")


def test_param_is_bound(capsys, monkeypatch) -> None:
    code, out, _ = run_main(
        ["query", "reward_curve", "-r", str(RUNS / "tiny"), "-p", "span=2", "-f", "json"], capsys, monkeypatch
    )
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("reward_curve", [RUNS / "tiny"], span=2), "span=2")


def test_params_are_validated_once_per_query(capsys, monkeypatch) -> None:
    """The CLI checks -p before any file is read and hands the bound values down: span=2 is converted
    once, not again by the engine (a catalogue loaded meanwhile converts only the default, 5)."""
    from rlsql.catalog.params import Param

    converted: list[tuple[str, str]] = []
    convert = Param.convert

    def counting(self: Param, raw: str):
        converted.append((self.name, raw))
        return convert(self, raw)

    monkeypatch.setattr(Param, "convert", counting)
    code, out, _ = run_main(
        ["query", "reward_curve", "-r", str(RUNS / "tiny"), "-p", "span=2", "-f", "json"], capsys, monkeypatch
    )
    assert code == 0
    assert converted.count(("span", "2")) == 1, converted
    assert_rows_match(json.loads(out), oracle.expected("reward_curve", [RUNS / "tiny"], span=2), "span=2")


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["query", "reward_curve", "-p", "span=1; DROP TABLE x"], 2, "span"),
        (["query", "reward_curve", "-p", "span=0"], 2, "minimum"),
        (["query", "reward_curve", "-p", "nope=3"], 2, "nope"),
        (["query", "reward_curve", "-p", "span"], 2, "key=value"),
        (["query", "reward_curve", "-f", "xml"], 2, "xml"),
        (["query", "xyzzy"], 2, "rlsql list"),
        (["show", "nothing_like_this"], 2, "nothing_like_this"),
        (["query", "turn_stats", "-r", "/definitely/not/here"], 3, "/definitely/not/here"),
        (["query", "turn_stats", "-r", "/definitely/not/*"], 3, "no folder matches"),
        # click's own usage errors: one line too, not its box of five
        (["quer", "turn_stats"], 2, "No such command 'quer'. Did you mean 'query'? (rlsql -h for help)"),
        (["query", "turn_stats", "--bogus"], 2, "No such option: --bogus"),
        (["query"], 2, "Missing argument 'NAME'. (rlsql query -h for help)"),
    ],
)
def test_bad_input_is_one_line(args, code, needle, capsys, monkeypatch) -> None:
    got, out, err = run_main(args, capsys, monkeypatch)
    assert got == code
    assert needle in one_error_line(err)
    assert out == ""


def test_missing_artifact_names_artifact_run_and_place(capsys, monkeypatch) -> None:
    code, out, err = run_main(["query", "vllm_summary", "-r", str(RUNS / "newest")], capsys, monkeypatch)
    assert code == 3
    line = one_error_line(err)
    assert "vLLM" in line and "'newest'" in line and str(RUNS / "newest") in line
    assert out == ""


def test_folder_without_runs(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run_main(["query", "turn_stats", "-r", str(tmp_path / "empty")], capsys, monkeypatch)
    assert code == 3
    assert "no run artifacts" in one_error_line(err)


def test_output_file_is_written_and_run_folder_refused(tmp_path, capsys, monkeypatch) -> None:
    target = tmp_path / "out" / "dist.json"
    code, out, err = run_main(
        ["query", "exception_distribution", "-r", str(RUNS / "tiny"), "-f", "json", "-o", str(target)],
        capsys,
        monkeypatch,
    )
    assert code == 0 and out == ""
    assert_rows_match(
        json.loads(target.read_text()), oracle.expected("exception_distribution", [RUNS / "tiny"]), "-o file"
    )
    assert [p.name for p in target.parent.iterdir()] == ["dist.json"]  # no temporary file left
    code, _, err = run_main(
        ["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(RUNS / "tiny" / "x.txt")], capsys, monkeypatch
    )
    assert code == 2 and "run folder" in one_error_line(err)
    assert not (RUNS / "tiny" / "x.txt").exists()


def test_list_and_show(capsys, monkeypatch) -> None:
    code, out, _ = run_main(["list", "-f", "json"], capsys, monkeypatch)
    assert code == 0
    listed = {q["name"]: q for q in json.loads(out)}
    assert len(listed) == 24
    assert listed["best_checkpoint"]["params"].startswith("span INTEGER = 5")
    # version 2 added honestly named columns to these two, and gave run_table a column per config key; version 3
    # types run_table's config columns; trial_phases 2 reads the phases an older CSV lacks from result.json
    # (docs/queries.md, "Versions")
    versions = {name: "2" if name in ("run_overview", "vllm_summary", "trial_phases") else "1" for name in listed}
    versions["run_table"] = "3"
    assert all(q["description"] and q["version"] == versions[q["name"]] for q in listed.values())
    code, out, _ = run_main(["show", "turn_stats"], capsys, monkeypatch)
    assert code == 0
    assert out.startswith("-- name: turn_stats")
    assert "quantile_cont" in out


def test_runs_command(capsys, monkeypatch) -> None:
    code, out, _ = run_main(["runs", "-r", str(RUNS), "-f", "json"], capsys, monkeypatch)
    assert code == 0
    found = {r["run"]: r for r in json.loads(out)}
    assert sorted(found) == ["calendar", "harbor", "harbor_csv", "newest", "rawlogs", "rawlogs_csv", "tiny"]
    for name, info in found.items():
        # the oracle reads CSVs only: the raw-log run has its twin's rows
        source = RUNS / ("rawlogs_csv" if name == "rawlogs" else name)
        metrics = oracle.read_metric_rows(source)
        assert (info["metric_rows"] or 0) == len(metrics)  # None: no metrics file (the Harbor runs)
        assert info["trials"] == len(oracle.read_trials(source))
    assert found["newest"]["parser_format"] == "newest"
    assert found["calendar"]["parser_format"] == "mid-2026"
    assert found["newest"]["vllm_file"] is None
    assert found["calendar"]["ignored_files"] >= 1


def test_version(capsys, monkeypatch) -> None:
    code, out, _ = run_main(["--version"], capsys, monkeypatch)
    assert code == 0 and out.startswith("rlsql ")
