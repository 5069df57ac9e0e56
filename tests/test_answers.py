"""Kept answers (rlsql/answers.py): a repeated `rlsql query` is answered from what the first one stored,
and only while nothing it was computed from has changed.

The values are checked against the oracle (tests/oracle.py) on both sides of every change; a kept
answer is proved to be used by answering with DuckDB made unimportable.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from rlsql import answers, cli
from rlsql import api as rlsql_api
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.inprocess import Ran, run_cli

#: a Python that cannot import DuckDB: only a kept answer can satisfy it
NO_DUCKDB = "import sys; sys.modules['duckdb'] = None; from rlsql.quickcli import main; main()"


def aged_copy(source: Path, target: Path) -> Path:
    """`source` copied to `target`, modified an hour ago. The copy's change time is now (no call sets it
    back): call settle() before the first answer that should be kept."""
    shutil.copytree(source, target)
    age(target)
    return target


def age(folder: Path, seconds_ago: float = 3600) -> None:
    past = time.time() - seconds_ago
    for path in folder.rglob("*"):
        os.utime(path, (past, past))


def settle() -> None:
    """Wait out the racy window: a file changed less than RACY_SECONDS ago is kept from answers."""
    time.sleep(answers.RACY_SECONDS + 0.1)


#: the private copies tests change, made and settled with `settled`'s (one wait out of the racy window for the
#: module, not one per test: ~2 s of wall time each): (fixture run, path of the copy under its own folder)
PRIVATE_COPIES = [*[("tiny", "tiny")] * 4, ("calendar", "calendar"), ("rawlogs", "rawlogs"), ("tiny", "fleet/a")]


@pytest.fixture(scope="module")
def settled_copies(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], list[tuple[str, str, Path]]]:
    """`settled`'s shared copies and the pool of PRIVATE_COPIES, all older than the racy window."""
    base = tmp_path_factory.mktemp("private")
    pool = [(run, rel, aged_copy(RUNS / run, base / str(i) / rel)) for i, (run, rel) in enumerate(PRIVATE_COPIES)]
    return _shared_copies(tmp_path_factory), pool


@pytest.fixture(scope="module")
def settled(settled_copies) -> dict[str, Path]:
    """Copies of fixture runs that no test changes, older than the racy window."""
    return settled_copies[0]


@pytest.fixture
def settled_copy(settled_copies) -> Callable[..., Path]:
    """`take(run, rel=run)`: a copy of fixture run `run` at `.../rel` that this test alone has and may change,
    older than the racy window (what aged_copy() then settle() give, without the wait)."""
    pool = settled_copies[1]

    def take(run: str, rel: str | None = None) -> Path:
        for i, (name, where, path) in enumerate(pool):
            if (name, where) == (run, rel or run):
                del pool[i]
                return path
        raise AssertionError(f"no settled copy of {run} at {rel or run} left: add one to PRIVATE_COPIES")

    return take


def _shared_copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("settled")
    runs = {name: aged_copy(RUNS / name, base / name) for name in ("calendar", "tiny", "harbor")}
    # trace_jobs beside a trials CSV (which wins)
    runs["harbor_and_csv"] = aged_copy(RUNS / "harbor", base / "harbor_and_csv")
    shutil.copy2(RUNS / "tiny" / "20260105_120000_trial_results.csv", runs["harbor_and_csv"])
    bare = base / "metrics_only"
    bare.mkdir()
    shutil.copy(RUNS / "tiny" / "20260105_120000_metrics_table.csv", bare)
    runs["metrics_only"] = bare
    settle()
    return runs


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "RLSQL_CACHE_DIR": str(tmp_path / "cache"), "RLSQL_CACHE": "auto"}


def rlsql(args: list[str], env: dict[str, str], without_duckdb: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", NO_DUCKDB, *args] if without_duckdb else [sys.executable, "-m", "rlsql", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


Runner = Callable[..., Ran]


@pytest.fixture
def run_in(capsys, monkeypatch) -> Runner:
    """rlsql's console entry in this process (cheaper than a process per call), as `rlsql()` takes it;
    `without_duckdb`: running a query at all fails (exit 99), so only a kept answer succeeds."""
    def call(args: list[str], env: dict[str, str], without_duckdb: bool = False) -> Ran:
        return run_cli(args, monkeypatch, capsys, env, ("RLSQL_CACHE_DIR", "RLSQL_CACHE", "RLSQL_CACHE_ANSWERS"),
                       (rlsql_api, "run_query") if without_duckdb else None)
    return call


def kept_files(env: dict[str, str]) -> list[Path]:
    folder = Path(env["RLSQL_CACHE_DIR"]) / "answers"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_a_repeated_query_is_answered_from_its_kept_answer(settled: dict[str, Path], env: dict[str, str]) -> None:
    run = settled["calendar"]
    args = ["query", "turns_by_exception", "-r", str(run), "-f", "json"]
    # without a kept answer, a process that cannot import DuckDB fails
    assert rlsql(args, env, without_duckdb=True).returncode != 0
    first = rlsql(args, env)
    assert first.returncode == 0, first.stderr
    assert_rows_match(json.loads(first.stdout), oracle.expected("turns_by_exception", [run]), "first")
    assert len(kept_files(env)) == 1
    again = rlsql(args, env, without_duckdb=True)
    assert again.returncode == 0, again.stderr
    assert (again.stdout, again.stderr) == (first.stdout, first.stderr)
    # the table a terminal or pipe gets is the same too
    table = rlsql(["query", "turns_by_exception", "-r", str(run)], env)
    assert rlsql(["query", "turns_by_exception", "-r", str(run)], env, without_duckdb=True).stdout == table.stdout


def test_an_edited_csv_is_answered_afresh(settled_copy, env: dict[str, str],
        run_in: Runner) -> None:
    run = settled_copy("tiny")
    trials = run / "20260105_120000_trial_results.csv"
    args = ["query", "turn_stats", "-r", str(run), "-f", "json"]
    before = run_in(args, env)
    assert before.returncode == 0
    assert run_in(args, env, without_duckdb=True).returncode == 0
    old = trials.stat()
    # the same size and modification time, other content: only the change time (and the bytes) differ
    text = trials.read_text()
    lines = text.splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    turns = header.index("n_episodes") if "n_episodes" in header else None
    assert turns is not None
    cells = lines[1].rstrip("\n").split(",")
    first_digit = "9" if cells[turns][0] != "9" else "8"  # 3.0 -> 9.0: another count, the same width
    cells[turns] = first_digit + cells[turns][1:]
    edited = ",".join(cells) + "\n"
    assert len(edited) == len(lines[1])
    trials.write_text(lines[0] + edited + "".join(lines[2:]))
    os.utime(trials, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert (trials.stat().st_size, trials.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)
    after = run_in(args, env)
    assert after.returncode == 0, after.stderr
    assert_rows_match(json.loads(after.stdout), oracle.expected("turn_stats", [run]), "after the edit")
    assert after.stdout != before.stdout
    settle()
    assert run_in(args, env).returncode == 0
    kept = run_in(args, env, without_duckdb=True)
    assert kept.returncode == 0, kept.stderr
    assert_rows_match(json.loads(kept.stdout), oracle.expected("turn_stats", [run]), "kept after the edit")


def test_a_new_file_in_the_run_changes_the_answer(settled_copy, env: dict[str, str],
        run_in: Runner) -> None:
    run = settled_copy("tiny")
    args = ["query", "turn_stats", "-r", str(run), "-f", "json"]
    before = run_in(args, env)
    assert before.returncode == 0
    assert run_in(args, env, without_duckdb=True).returncode == 0
    # a newer parse of the trials: it wins, and the kept answer of the older one is not used
    older = run / "20260105_120000_trial_results.csv"
    lines = older.read_text().splitlines(keepends=True)
    newer = run / "20260106_120000_trial_results.csv"
    newer.write_text(lines[0] + "".join(lines[1:3]))
    age(run)
    got = run_in(args, env, without_duckdb=True)
    assert got.returncode != 0  # a new key: DuckDB needed
    got = run_in(args, env)
    assert_rows_match(json.loads(got.stdout), oracle.expected("turn_stats", [run]), "newer trials")
    assert got.stdout != before.stdout


def test_parameters_and_runs_are_part_of_the_key(settled: dict[str, Path], env: dict[str, str],
        run_in: Runner) -> None:
    calendar, tiny = settled["calendar"], settled["tiny"]
    for span in (3, 7):
        args = ["query", "reward_curve", "-r", str(calendar), "-p", f"span={span}", "-f", "json"]
        assert run_in(args, env).returncode == 0
        kept = run_in(args, env, without_duckdb=True)
        assert kept.returncode == 0, kept.stderr
        assert_rows_match(json.loads(kept.stdout), oracle.expected("reward_curve", [calendar], span=span), f"{span}")
    both = ["query", "turn_stats", "-r", str(calendar), "-r", str(tiny), "-f", "json"]
    assert run_in(both, env).returncode == 0
    kept = run_in(both, env, without_duckdb=True)
    assert_rows_match(json.loads(kept.stdout), oracle.expected("turn_stats", [calendar, tiny]), "two runs")
    assert run_in(["query", "turn_stats", "-r", str(tiny), "-f", "json"], env, without_duckdb=True).returncode != 0


def test_warnings_are_said_again_with_the_kept_answer(settled: dict[str, Path], env: dict[str, str]) -> None:
    calendar, bare = settled["calendar"], settled["metrics_only"]
    args = ["query", "turn_stats", "-r", str(calendar), "-r", str(bare), "-f", "json"]
    first = rlsql(args, env)
    assert first.returncode == 0
    assert "warning: run 'metrics_only' has no trial results" in first.stderr
    again = rlsql(args, env, without_duckdb=True)
    assert again.returncode == 0, again.stderr
    assert (again.stdout, again.stderr) == (first.stdout, first.stderr)


def test_nothing_is_kept_when_the_cache_or_answers_are_off_or_files_are_fresh(settled_copy,
                                                                             env: dict[str, str],
        run_in: Runner) -> None:
    run = settled_copy("tiny")
    args = ["query", "turn_stats", "-r", str(run)]
    for off in ({"RLSQL_CACHE": "0"}, {"RLSQL_CACHE_ANSWERS": "0"}):
        assert run_in(args, {**env, **off}).returncode == 0
        assert kept_files(env) == []
    assert run_in(["--no-cache", *args], env).returncode == 0
    assert kept_files(env) == []
    # an input changed within the racy window (here: stamped in the future, as a server's skewed clock
    # would, so the test does not depend on how long the query takes)
    future = time.time() + 600
    os.utime(run / "rl_config.yaml", (future, future))
    assert run_in(args, env).returncode == 0
    assert kept_files(env) == []


def test_harbor_trial_folders_are_never_kept(settled: dict[str, Path], env: dict[str, str],
        run_in: Runner) -> None:
    run = settled["harbor"]
    args = ["query", "turn_stats", "-r", str(run), "-f", "json"]
    got = run_in(args, env)
    assert got.returncode == 0, got.stderr
    assert_rows_match(json.loads(got.stdout), oracle.expected("turn_stats", [run]), "harbor")
    assert kept_files(env) == []
    # beside a trials CSV, which wins, the trial folders are not read: that answer is kept
    both = settled["harbor_and_csv"]
    args = ["query", "turn_stats", "-r", str(both), "-f", "json"]
    assert run_in(args, env).returncode == 0
    kept = run_in(args, env, without_duckdb=True)
    assert kept.returncode == 0, kept.stderr
    assert_rows_match(json.loads(kept.stdout), oracle.expected("turn_stats", [both]), "harbor_csv")


def test_a_bad_name_or_parameter_fails_as_without_answers(settled: dict[str, Path], tmp_path: Path,
                                                          env: dict[str, str],
        run_in: Runner) -> None:
    run = settled["tiny"]
    cases = [["query", "turn_stats", "-r", str(run), "-p", "bogus=1"],
             ["query", "turn_stats", "-r", str(tmp_path / "nowhere"), "-p", "bogus=1"],
             ["query", "turn_stats", "-p", "bogus=1"],
             ["query", "turn_stat", "-r", str(run)]]
    for args in cases:
        on, off = run_in(args, env), run_in(args, {**env, "RLSQL_CACHE": "0"})
        assert on.returncode == off.returncode == 2, (args, on.stderr)
        assert on.stderr == off.stderr


def test_cache_status_counts_and_clear_removes_only_answers_rlsql_kept(settled_copy, env: dict[str, str],
        run_in: Runner) -> None:
    tiny = settled_copy("tiny")
    calendar = settled_copy("calendar")
    for run in (tiny, calendar):
        assert run_in(["query", "turn_stats", "-r", str(run)], env).returncode == 0
    assert len(kept_files(env)) == 2
    status = run_in(["cache", "status"], env)
    assert "2 kept answers of named queries" in status.stderr and "stale" not in status.stderr
    foreign = Path(env["RLSQL_CACHE_DIR"]) / "answers" / ("0" * 32 + ".json")
    foreign.write_text('{"somebody": "else"}')
    # tiny's answer goes stale: its trials CSV is written again (same bytes, a new change time)
    trials = tiny / "20260105_120000_trial_results.csv"
    trials.write_text(trials.read_text())
    assert "2 kept answers of named queries, " in run_in(["cache", "status"], env).stderr
    assert ", 1 stale" in run_in(["cache", "status"], env).stderr
    assert run_in(["cache", "clear", "--stale"], env).returncode == 0
    left = [p for p in kept_files(env) if p != foreign]
    assert [json.loads(p.read_text())["inputs"][0][0] for p in left] == ["calendar"]
    assert run_in(["cache", "clear"], env).returncode == 0
    assert kept_files(env) == [foreign]
    assert foreign.read_text() == '{"somebody": "else"}'


def test_every_named_query_answers_the_same_from_its_kept_answer(settled: dict[str, Path], tmp_path: Path, capsys,
                                                                 monkeypatch) -> None:
    """In one process (cheap): each named query over two runs, answered, then answered again from what it
    kept; the same text in json and in the table, warnings included."""
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "auto")
    runs = [settled["calendar"], settled["tiny"]]
    run_args = [a for r in runs for a in ("-r", str(r))]

    def answer(args: list[str]) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["rlsql", *args])
        with pytest.raises(SystemExit) as stop:
            cli.main()
        out, err = capsys.readouterr()
        return stop.value.code, out, err

    # the trajectory queries need trace_jobs/*/agent/trajectory.json, which these runs lack (and are never kept)
    for kept_before, name in enumerate(q for q in oracle.QUERIES if q not in oracle.TRAJECTORY_QUERIES):
        first = answer(["query", name, *run_args, "-f", "json"])
        assert first[0] == 0, (name, first[2])
        kept_now = len(list((tmp_path / "cache" / "answers").glob("*.json")))
        assert kept_now == kept_before + 1, f"{name} kept no answer"
        assert answer(["query", name, *run_args, "-f", "json"]) == first, name
        assert_rows_match(json.loads(first[1]), oracle.expected(name, runs), f"{name} kept")
        # the format is not part of the key: the table printed from the kept answer is the one computed afresh
        monkeypatch.setenv("RLSQL_CACHE_ANSWERS", "0")
        fresh = answer(["query", name, *run_args, "-f", "table"])
        monkeypatch.delenv("RLSQL_CACHE_ANSWERS")
        assert answer(["query", name, *run_args, "-f", "table"]) == fresh, name


def test_cell_values_keep_their_type_and_value() -> None:
    cells = [None, True, False, 0, -7, 2**70, 0.1, -0.0, 1e300, float("inf"), float("-inf"), "x\u00e9\n",
             decimal.Decimal("12.3400"), dt.datetime(2026, 6, 2, 23, 59, 59, 999999),
             dt.datetime(2026, 6, 2, 1, 2, tzinfo=dt.UTC), dt.date(2026, 1, 5), dt.time(12, 30, 1),
             dt.timedelta(days=-1, seconds=5, microseconds=7), uuid.UUID(int=5), [1, None, [2.5]],
             {"a": 1, "b": [None]}, (1, "a")]
    for cell in cells:
        back = answers._decode(json.loads(json.dumps(answers._encode(cell))))
        assert type(back) is type(cell) and back == cell, (cell, back)
        if isinstance(cell, float):
            assert math.copysign(1, back) == math.copysign(1, cell)
    nan = answers._decode(json.loads(json.dumps(answers._encode(float("nan")))))
    assert isinstance(nan, float) and math.isnan(nan)
    with pytest.raises(answers._Unstorable):
        answers._encode({1: "a"})
    with pytest.raises(answers._Unstorable):
        answers._encode(b"bytes")


def test_a_growing_raw_log_is_answered_afresh(settled_copy, env: dict[str, str],
        run_in: Runner) -> None:
    """A run read from its raw logs: an answer is kept per size of each log, so a log that grows (a run
    still training) is read again."""
    run = settled_copy("rawlogs")
    # the oracle reads CSVs: the raw-log run's rows are its twin's (fixtures/rawlogs.py writes both)
    want = [{**row, "run": "rawlogs"} for row in oracle.expected("reward_curve", [RUNS / "rawlogs_csv"])]
    args = ["query", "reward_curve", "-r", str(run), "-f", "json"]
    first = run_in(args, env)
    assert first.returncode == 0, first.stderr
    assert_rows_match(json.loads(first.stdout), want, "raw logs")
    assert run_in(args, env, without_duckdb=True).stdout == first.stdout
    log = sorted((run / "logs").iterdir())[-1]
    with log.open("a") as fh:
        fh.write("an unrelated line the run printed\n")
    assert run_in(args, env, without_duckdb=True).returncode != 0  # grown: read again
    again = run_in(args, env)
    assert again.returncode == 0, again.stderr
    assert_rows_match(json.loads(again.stdout), want, "grown log")


def test_an_answers_link_in_the_cache_folder_is_neither_read_nor_written(settled: dict[str, Path], tmp_path: Path,
                                                                       env: dict[str, str], run_in: Runner) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ["query", "turn_stats", "-r", str(settled["tiny"]), "-f", "json"]
    assert run_in(args, env).returncode == 0  # creates the cache folder and keeps an answer
    answers_dir = Path(env["RLSQL_CACHE_DIR"]) / "answers"
    shutil.rmtree(answers_dir)
    answers_dir.symlink_to(elsewhere)
    first = run_in(args, env)
    assert first.returncode == 0
    assert_rows_match(json.loads(first.stdout), oracle.expected("turn_stats", [settled["tiny"]]), "linked")
    assert list(elsewhere.iterdir()) == []
    assert run_in(args, env, without_duckdb=True).returncode == 99
    # an answer-shaped file behind the link survives cache clear
    (elsewhere / ("1" * 32 + ".json")).write_text(json.dumps({"format": answers.ANSWER_FORMAT, "key": "1" * 32}))
    assert run_in(["cache", "clear"], env).returncode == 0
    assert [p.name for p in elsewhere.iterdir()] == ["1" * 32 + ".json"]


def test_a_run_added_to_a_folder_of_runs_is_answered_afresh(settled_copy, env: dict[str, str],
                                                             run_in: Runner) -> None:
    """`-r FOLDER` of runs (a fleet on shared storage): a run folder that appears there is in the next
    answer, not hidden behind the kept one."""
    fleet = settled_copy("tiny", "fleet/a").parent
    args = ["query", "turn_stats", "-r", str(fleet), "-f", "json"]
    assert run_in(args, env).returncode == 0
    assert run_in(args, env, without_duckdb=True).returncode == 0  # kept
    aged_copy(RUNS / "calendar", fleet / "b")
    assert run_in(args, env, without_duckdb=True).returncode == 99  # a new run: a new key
    got = run_in(args, env)
    assert_rows_match(json.loads(got.stdout), oracle.expected("turn_stats", [fleet / "a", fleet / "b"]), "two")
