"""Harbor trial folders as a running job and a hostile file system leave them.

Every expectation is computed here by hand (or in plain Python over the files the test wrote)
and, for the trial queries, also by tests/oracle.py, which reads result.json files by the same
rules (docs/semantics.md, "Harbor trial folders").
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.core.errors import RlsqlWarning
from rlsql.inspection.check import check_runs
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS, refused_by_mode

sys.path.insert(0, str(RUNS.parent))
try:
    from harbor_runs import DAMAGE_REASONS, IN_FLIGHT, small_trial, write_damaged_trace_jobs, write_trial
finally:
    sys.path.remove(str(RUNS.parent))

TRIAL_QUERIES = [
    "turn_stats", "turn_percentiles", "turns_by_exception", "turns_by_outcome", "exception_distribution",
    "exception_treatment", "reward_summary", "trial_phases",
]  # fmt: skip


def matches_oracle(run: Path, what: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RlsqlWarning)  # the tests above assert the warnings
        for name in TRIAL_QUERIES:
            assert_rows_match(rlsql.query(name, [run]).to_dicts(), oracle.expected(name, [run]), f"{name} {what}")


def query_with_warnings(name: str, runs: list[Path]) -> tuple[list[dict], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = rlsql.query(name, runs).to_dicts()
    return rows, [str(w.message) for w in caught if issubclass(w.category, RlsqlWarning)]


# ---------------------------------------------------------------------------------------------
# Item 3: every file read is exactly a file listed
# ---------------------------------------------------------------------------------------------

#: run folder -> the rewards of its trials; siblings whose names a glob would confuse
HOSTILE_RUNS = {
    "tr[1]": [1.0], "tr1": [0.0, 0.0, 0.0],
    "a*b": [1.0, 1.0], "ab": [0.0], "axb": [0.0, 0.0, 0.0, 0.0],
    "q?": [1.0, 0.0], "qx": [0.0, 0.0, 0.0, 0.0, 0.0],
    "it's": [1.0, 1.0, 0.0], 'say "hi"': [0.5], "semi;colon": [1.0, 0.25], "with space": [0.75],
    "new\nline": [1.0, 1.0, 1.0, 0.0],
}  # fmt: skip


def test_hostile_run_folder_names_read_only_their_own_files(tmp_path: Path) -> None:
    for name, rewards in HOSTILE_RUNS.items():
        for i, reward in enumerate(rewards):
            write_trial(tmp_path / name / "trace_jobs", f"task__{i}", small_trial(f"task__{i}", reward=reward))
    rows, caught = query_with_warnings("reward_summary", [tmp_path])
    assert caught == []
    got = {r["run"]: (r["trials"], r["mean_reward"], r["success_rate"]) for r in rows}
    want = {
        name: (
            len(rewards),
            pytest.approx(sum(rewards) / len(rewards)),
            pytest.approx(sum(1 for r in rewards if r > 0) / len(rewards)),
        )
        for name, rewards in HOSTILE_RUNS.items()
    }
    assert got == want
    con = rlsql.connect([tmp_path])
    files = dict(
        con.execute("SELECT run, list(source_file ORDER BY row_no) FROM harbor_trials_src GROUP BY run").fetchall()
    )
    for name, rewards in HOSTILE_RUNS.items():
        assert files[name] == [
            str(tmp_path / name / "trace_jobs" / f"task__{i}" / "result.json") for i in range(len(rewards))
        ]


def test_hostile_trial_folder_names_inside_one_run(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "run" / "trace_jobs"
    folders = {
        "t[1]": 1.0,
        "t1": 0.0,
        "t*": 0.5,
        "tx": 0.0,
        "t?": 0.25,
        "t!": 0.0,
        "o'k": 1.0,
        'q"q': 1.0,
        "s;s": 0.0,
        "s s": 1.0,
        "n\nn": 0.0,
        "[": 1.0,
        "]": 0.0,
        "**": 1.0,
    }
    for folder, reward in folders.items():
        write_trial(trace_jobs, folder, small_trial(folder, reward=reward))
    con = rlsql.connect([tmp_path / "run"])
    got = con.execute("SELECT trial_name, reward, row_no FROM trials ORDER BY row_no").fetchall()
    assert got == [(f, folders[f], i) for i, f in enumerate(sorted(folders), start=1)]


def test_a_path_with_a_backslash_and_a_glob_character_is_skipped_not_misread(tmp_path: Path) -> None:
    # DuckDB's file globbing takes `\` for a path separator: `b\x[1]` would read `b/x1`
    write_trial(tmp_path / "run" / "trace_jobs", "b\\x[1]", small_trial("b\\x[1]", reward=1.0))
    write_trial(tmp_path / "run" / "trace_jobs", "ok", small_trial("ok", reward=0.0))
    write_trial(tmp_path / "run" / "trace_jobs" / "b", "x1", small_trial("decoy", reward=1.0))
    rows, caught = query_with_warnings("reward_summary", [tmp_path / "run"])
    assert (rows[0]["trials"], rows[0]["mean_reward"]) == (1, 0.0)
    (message,) = caught
    assert "b\\x[1]" in message and "backslash" in message


def test_a_scanned_file_that_was_not_listed_is_an_error(tmp_path: Path, monkeypatch) -> None:
    for name, reward in (("tr[1]", 1.0), ("tr1", 0.0)):
        write_trial(tmp_path / name / "trace_jobs", "t__1", small_trial("t__1", reward=reward))
    from rlsql.runs import harbor

    # without the escaping, DuckDB would read tr1's file for tr[1]'s: rlsql must notice, not answer
    monkeypatch.setattr(harbor, "reader_path", lambda path: path)
    with pytest.raises(rlsql.DataError, match=r"tr1/trace_jobs/t__1/result\.json.*not one rlsql listed"):
        rlsql.query("reward_summary", [tmp_path])


# ---------------------------------------------------------------------------------------------
# Item 4: NaN, Infinity and values of the wrong type
# ---------------------------------------------------------------------------------------------


def test_nan_and_infinity_read_as_empty(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "run" / "trace_jobs"
    rewards = [1.0] * 7 + [0.0, math.nan, math.inf]
    for i, reward in enumerate(rewards):
        write_trial(trace_jobs, f"t__{i}", small_trial(f"t__{i}", reward=reward, n_episodes=i + 1))
    write_trial(
        trace_jobs,
        "u__nan",
        small_trial("u__nan", reward=1.0, n_episodes=math.nan, n_input_tokens=math.inf, n_output_tokens=-math.inf),
    )
    assert "NaN" in (trace_jobs / "t__8" / "result.json").read_text()  # as Python's json.dump writes it
    rows, caught = query_with_warnings("reward_summary", [tmp_path / "run"])
    assert caught == []  # as a `nan` CSV cell: empty, no warning (`rlsql check` counts them)
    (row,) = rows
    # 11 trials; rewards: seven 1.0, one 0.0, u__nan's 1.0 -> 9 with a reward, 8 successes
    assert (row["trials"], row["trials_with_reward"], row["trials_with_turns"]) == (11, 9, 10)
    assert row["success_rate"] == pytest.approx(8 / 9) and row["mean_reward"] == pytest.approx(8 / 9)
    con = rlsql.connect([tmp_path / "run"])
    assert con.execute(
        "SELECT n_episodes, n_input_tokens, n_output_tokens FROM trials WHERE trial_name = 'u__nan'"
    ).fetchall() == [(None, None, None)]
    matches_oracle(tmp_path / "run", "with NaN and Infinity")
    (report,) = check_runs(resolve_runs([tmp_path / "run"]))
    listed = {Path(i.file).parent.name: i.problem for i in report.issues if i.severity == "warning"}
    assert listed == {
        "t__8": "NaN or Infinity in verifier_result.rewards.reward: read as empty",
        "t__9": "NaN or Infinity in verifier_result.rewards.reward: read as empty",
        "u__nan": "NaN or Infinity in agent_result.metadata.n_episodes, agent_result.n_input_tokens, "
        "agent_result.n_output_tokens: read as empty",
    }


WRONG_TYPES = {
    "w1__bool": ({"reward": True}, "verifier_result.rewards.reward"),
    "w2__text": ({"reward": "1.0"}, "verifier_result.rewards.reward"),
    "w3__list": ({"reward": [1.0]}, "verifier_result.rewards.reward"),
    "w4__turns": ({"n_episodes": "3"}, "agent_result.metadata.n_episodes"),
    "w5__half": ({"n_episodes": 2.5}, "agent_result.metadata.n_episodes"),
    "w6__huge": ({"n_episodes": 99999999999999999999}, "agent_result.metadata.n_episodes"),
    "w7__tokens": ({"n_input_tokens": False}, "agent_result.n_input_tokens"),
    "w8__outtok": ({"n_output_tokens": {"n": 1}}, "agent_result.n_output_tokens"),
}


def test_values_of_the_wrong_type_are_empty_with_one_warning_naming_the_files(tmp_path: Path) -> None:
    trace_jobs = tmp_path / "run" / "trace_jobs"
    write_trial(trace_jobs, "ok__1", small_trial("ok__1", reward=0.0, n_episodes=3.0))  # 3.0 is the integer 3
    write_trial(trace_jobs, "ok__2", small_trial("ok__2", reward=1, n_episodes=4))
    for folder, (fields, _) in WRONG_TYPES.items():
        write_trial(trace_jobs, folder, small_trial(folder, **fields))
    rows, caught = query_with_warnings("reward_summary", [tmp_path / "run"])
    (row,) = rows
    # rewards: ok__1 0.0, ok__2 1, and w4..w8 keep small_trial's 1.0; w1-w3 have none
    assert (row["trials"], row["trials_with_reward"], row["trials_with_turns"]) == (10, 7, 7)
    assert row["success_rate"] == pytest.approx(6 / 7)
    (message,) = caught
    assert "run 'run'" in message and "8 result.json files" in message and "and 5 more" in message
    for folder in sorted(WRONG_TYPES)[:3]:
        assert str(trace_jobs / folder / "result.json") in message
    assert "verifier_result.rewards.reward: true" in message
    con = rlsql.connect([tmp_path / "run"])
    got = dict(con.execute("SELECT trial_name, n_episodes FROM trials").fetchall())
    assert got == {
        "ok__1": 3,
        "ok__2": 4,
        "w1__bool": 3,
        "w2__text": 3,
        "w3__list": 3,
        "w4__turns": None,
        "w5__half": None,
        "w6__huge": None,
        "w7__tokens": 3,
        "w8__outtok": 3,
    }  # 2.5 is not rounded
    report = check_runs(resolve_runs([tmp_path / "run"]))[0]
    listed = {(Path(i.file).parent.name, i.problem.split(":")[0]) for i in report.issues if i.severity == "warning"}
    assert listed == {(folder, field) for folder, (_, field) in WRONG_TYPES.items()}
    matches_oracle(tmp_path / "run", "with values of the wrong type")


# ---------------------------------------------------------------------------------------------
# Item 7 and 15: runs in progress, damaged files
# ---------------------------------------------------------------------------------------------

GOOD = {"g1__a": (1.0, 3), "g2__b": (0.0, 5), "g3__c": (1.0, 2), "g4__d": (None, 7)}


def damaged_run(root: Path) -> Path:
    run = root / "live"
    for folder, (reward, turns) in GOOD.items():
        write_trial(run / "trace_jobs", folder, small_trial(folder, reward=reward, n_episodes=turns))
    write_damaged_trace_jobs(run / "trace_jobs")
    return run


def test_damaged_result_files_are_skipped_with_one_warning_per_run(tmp_path: Path) -> None:
    run = damaged_run(tmp_path)
    rows, caught = query_with_warnings("reward_summary", [run])
    (row,) = rows
    assert (row["trials"], row["trials_with_reward"], row["success_rate"]) == (4, 3, pytest.approx(2 / 3))
    (message,) = caught  # the in-flight folders are not worth a warning
    assert message.startswith("run 'live': skipped 10 result.json files that are not trial results: ")
    assert message.endswith(", and 7 more") and "\n" not in message
    for folder in sorted(DAMAGE_REASONS)[:3]:
        assert f"{run / 'trace_jobs' / folder / 'result.json'} ({DAMAGE_REASONS[folder]}" in message
    matches_oracle(run, "on a damaged run")


def test_check_lists_every_bad_result_file_and_the_trials_in_flight(tmp_path: Path) -> None:
    run = damaged_run(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check reports; it does not warn as well
        (report,) = check_runs(resolve_runs([run]))
    bad = {Path(i.file).parent.name: i.problem for i in report.issues if i.severity == "warning"}
    assert set(bad) == set(DAMAGE_REASONS)
    for folder, reason in DAMAGE_REASONS.items():
        assert bad[folder].startswith(reason), (folder, bad[folder])
    infos = [i.problem for i in report.issues if i.severity == "info"]
    assert f"{len(IN_FLIGHT)} trial folders without a result.json yet (in flight): not read" in infos
    assert report.readable_rows["harbor"] == len(GOOD) and report.usable


def test_cli_exits_0_with_one_warning_line_and_never_opens_a_fifo(tmp_path: Path, rlsql_exe: str) -> None:
    run = damaged_run(tmp_path)
    before = {
        p: (p.lstat().st_mtime_ns, p.read_bytes() if p.is_file() else None) for p in run.rglob("*") if not p.is_fifo()
    }
    # a reader that opens the FIFO blocks forever: the timeout turns that into a failure
    done = subprocess.run(
        [rlsql_exe, "query", "reward_summary", "--run", str(run)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "skipped 10 result.json files" in done.stderr
    checked = subprocess.run(
        [rlsql_exe, "check", "--run", str(run), "--format", "json"], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stderr
    issues = json.loads(checked.stdout)["runs"][0]["issues"]
    assert {Path(i["file"]).parent.name for i in issues if i["severity"] == "warning"} == set(DAMAGE_REASONS)
    after = {
        p: (p.lstat().st_mtime_ns, p.read_bytes() if p.is_file() else None) for p in run.rglob("*") if not p.is_fifo()
    }
    assert after == before


def test_an_unreadable_result_file_is_skipped(tmp_path: Path) -> None:
    """A result.json the kernel refuses this process (tests/conftest.py refused_by_mode: as root, without the
    capabilities that read anything, which once failed the whole query), in a process of its own."""
    run = tmp_path / "run"
    write_trial(run / "trace_jobs", "ok", small_trial("ok"))
    locked = write_trial(run / "trace_jobs", "locked", small_trial("locked"))
    locked.chmod(0)
    done = subprocess.run(
        [*refused_by_mode(), sys.executable, "-m", "rlsql", "query", "reward_summary", "-r", str(run), "-f", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "RLSQL_CACHE": "off"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["trials"] == 1
    (message,) = [line for line in done.stderr.splitlines() if line.startswith("rlsql: warning:")]
    assert f"{locked} (cannot read (permission denied))" in message


def test_listing_classifies_without_reading(tmp_path: Path) -> None:
    """harbor.list_trials sorts the trial folders by name and never opens a file."""
    from rlsql.runs import harbor

    run = damaged_run(tmp_path)
    listing = harbor.list_trials(run / "trace_jobs")
    assert [f.folder for f in listing.files] == sorted([*GOOD, *DAMAGE_REASONS])
    assert listing.in_flight == len(IN_FLIGHT)
    refused = {f.folder for f in listing.files if f.problem}
    assert refused == {"d03-empty__a", "d05-fifo__a", "d06-dangling__a", "d07-folder__a"}


def test_export_of_a_damaged_run_records_the_files_it_read(tmp_path: Path, rlsql_exe: str) -> None:
    run = damaged_run(tmp_path)
    out = tmp_path / "out"
    # the export's fingerprint hashes the result.json files: a FIFO among them would block it
    done = subprocess.run(
        [rlsql_exe, "export", "trials", "--run", str(run), "-o", str(out), "--format", "csv"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stderr.splitlines() if "warning" in line]) == 1
    (meta,) = out.glob("*.meta.json")
    sources = json.loads(json.loads(meta.read_text())["rlsql.sources"])
    (record,) = [s for s in sources if s["artifact"] == "harbor"]
    # the files DuckDB read: the trials and the six damaged ones it had to open to reject
    # (not the empty file, the FIFO, the dangling link or the folder)
    assert record["files"] == len(GOOD) + 6


def test_a_name_starting_with_a_backslash_beside_a_globbed_one_costs_only_that_file(tmp_path: Path) -> None:
    # DuckDB's glob of a folder fails outright ("cannot join incompatible paths") when the folder
    # holds a name starting with a backslash: rlsql must not hand it such a pattern
    for run, rewards in (("?", [1.0, 1.0]), ("\\", [0.0]), ("\\x", [1.0, 0.0, 0.0])):
        for i, reward in enumerate(rewards):
            write_trial(tmp_path / run / "trace_jobs", f"t__{i}", small_trial(f"t__{i}", reward=reward))
    inside = tmp_path / "in" / "trace_jobs"
    for folder, reward in (("t[1]", 1.0), ("\\t", 0.0), ("plain", 1.0)):
        write_trial(inside, folder, small_trial(folder, reward=reward))
    rows, caught = query_with_warnings("reward_summary", [tmp_path])
    assert {r["run"]: r["trials"] for r in rows} == {"?": 0, "\\": 1, "\\x": 3, "in": 2}
    assert len(caught) == 2
    (about_q,) = [m for m in caught if m.startswith("run '?'")]
    assert "skipped 2 result.json files" in about_q and "starting with a backslash" in about_q
    (about_in,) = [m for m in caught if m.startswith("run 'in'")]
    assert str(inside / "t[1]" / "result.json") in about_in
    for run in ("?", "\\", "\\x", "in"):
        matches_oracle(tmp_path / run, f"in {run!r} beside names starting with a backslash")


def test_an_unreadable_result_file_is_skipped_as_another_user_would_see_it(tmp_path: Path, monkeypatch) -> None:
    """The same case in this process: access() refuses the file, as the kernel answers a user (or a root
    without the capabilities that read anything) whom its mode refuses."""
    run = tmp_path / "run"
    write_trial(run / "trace_jobs", "ok", small_trial("ok"))
    locked = write_trial(run / "trace_jobs", "locked", small_trial("locked"))
    locked.chmod(0o600)  # not readable by others: the listing asks access()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    rows, caught = query_with_warnings("reward_summary", [run])
    assert rows[0]["trials"] == 1
    (message,) = caught
    assert f"{locked} (cannot read (permission denied))" in message
