"""Questions answered ahead (rlsql/ahead.py): after a first question is kept, the other named queries over
the same files are answered in the background, so that the next question is a kept answer.

Every answer given ahead is checked against the oracle (tests/oracle.py) and proved to be a kept one by a
process that cannot import DuckDB (tests/test_answers.py's NO_DUCKDB).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rlsql import ahead, answers, cache, detached
from rlsql import api as rlsql_api
from rlsql.runs import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.inprocess import TRAPPED, run_cli
from tests.test_answers import aged_copy, kept_files, rlsql, settle

TRIAL_QUERIES = {"turn_stats", "turns_by_exception", "turns_by_outcome", "turn_percentiles",
                 "exception_distribution", "exception_treatment", "reward_summary", "trial_phases"}
METRICS_QUERIES = {"reward_curve", "async_health", "best_checkpoint", "timing_breakdown", "run_overview",
                   "step_timing"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Answers and answers ahead on, in a cache folder of the test's own (for this process and its children)."""
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "auto")
    monkeypatch.delenv("RLSQL_CACHE_AHEAD", raising=False)
    monkeypatch.delenv("RLSQL_CACHE_ANSWERS", raising=False)
    return dict(os.environ)


@pytest.fixture
def kept_rows(env: dict[str, str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    """`rlsql query NAME -r RUN -f json` in this process with running a query made to fail: the rows of a
    kept answer, or None when there is none (cheaper than tests/test_answers.py's process without DuckDB,
    which the end-to-end test keeps)."""
    def call(name: str, run: Path) -> list[dict] | None:
        with monkeypatch.context() as reading:  # a read starts nothing ahead (it would only fail to run)
            reading.setenv("RLSQL_CACHE_AHEAD", "0")
            got = run_cli(["query", name, "-r", str(run), "-f", "json"], reading, capsys,
                          trap=(rlsql_api, "run_query"))
        if got.returncode == TRAPPED:
            return None
        assert got.returncode == 0, got.stderr
        return json.loads(got.stdout)
    return call


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Copies of the tiny run older than the racy window, settled once: `shared` no test changes,
    `changed` one test does."""
    base = tmp_path_factory.mktemp("ahead")
    made = {name: aged_copy(RUNS / "tiny", base / name / "tiny") for name in ("shared", "changed")}
    settle()
    return made


@pytest.fixture
def tiny(copies: dict[str, Path]) -> Path:
    return copies["shared"]


def test_the_questions_over_the_same_files() -> None:
    # by hand from the spec's queries: the trial queries read the trials, the metrics queries the
    # trainer's metrics; the config and the run list are shared by many and do not count
    assert set(ahead.questions_over_the_same_files("turns_by_exception")) == TRIAL_QUERIES - {"turns_by_exception"}
    assert set(ahead.questions_over_the_same_files("reward_summary")) == TRIAL_QUERIES - {"reward_summary"}
    assert set(ahead.questions_over_the_same_files("reward_curve")) == METRICS_QUERIES - {"reward_curve"}
    assert ahead.questions_over_the_same_files("vllm_summary") == []
    # over the trials and the metrics: every query but the vLLM one
    assert set(ahead.questions_over_the_same_files("compare_runs")) == (
        TRIAL_QUERIES | METRICS_QUERIES | {"run_table"})
    assert ahead.questions_over_the_same_files("no_such_query") == []


def test_the_questions_are_answered_and_kept(tiny: Path, env: dict[str, str], kept_rows,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    names = sorted(TRIAL_QUERIES - {"turn_stats"})
    for name in names:  # nothing kept yet
        assert kept_rows(name, tiny) is None
    # main() lowers its process's priority; run here, it would lower this test worker's for the rest of
    # the suite (a process cannot raise it again without privileges): the call is recorded instead
    niced: list[int] = []
    monkeypatch.setattr(os, "nice", lambda increment: niced.append(increment) or increment)
    assert ahead.main([env["RLSQL_CACHE_DIR"], *names, "--", str(tiny)]) == 0
    assert niced == [ahead.NICE]
    assert len(kept_files(env)) == len(names)
    for name in names:
        assert_rows_match(kept_rows(name, tiny), oracle.expected(name, [tiny]), name)
    # all kept now: a first question over these files starts nothing
    assert ahead.unanswered(names, resolve_runs([str(tiny)])) == []


def test_a_first_question_starts_the_background_process(tiny: Path, env: dict[str, str], kept_rows) -> None:
    first = rlsql(["query", "turn_stats", "-r", str(tiny), "-f", "json"], env)
    assert first.returncode == 0, first.stderr
    assert_rows_match(json.loads(first.stdout), oracle.expected("turn_stats", [tiny]), "turn_stats")
    deadline = time.monotonic() + 120  # the process is detached: wait for its answers, not for a pid
    while len(kept_files(env)) < len(TRIAL_QUERIES) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(kept_files(env)) == len(TRIAL_QUERIES)
    # a process that cannot import DuckDB answers one of them; the others are checked in this process
    alone = rlsql(["query", "turns_by_exception", "-r", str(tiny), "-f", "json"], env, without_duckdb=True)
    assert alone.returncode == 0, alone.stderr
    assert_rows_match(json.loads(alone.stdout), oracle.expected("turns_by_exception", [tiny]), "alone")
    for name in sorted(TRIAL_QUERIES - {"turn_stats"}):
        assert_rows_match(kept_rows(name, tiny), oracle.expected(name, [tiny]), name)
    # the metrics queries read other files: not answered ahead
    assert kept_rows("reward_curve", tiny) is None


def spawned(monkeypatch: pytest.MonkeyPatch, pid: int = 0) -> list[list[str]]:
    """The argument lists ahead.start() would start processes with (none is started; `pid` is the one
    each start is told it got)."""
    calls: list[list[str]] = []

    def spawn(path, argv, environ, **kwargs):
        calls.append(list(argv))
        return pid

    monkeypatch.setattr(os, "posix_spawn", spawn)
    return calls


def test_what_start_asks_for_and_when_it_starts_nothing(tiny: Path, env: dict[str, str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    runs = resolve_runs([str(tiny)])
    answers_folder = Path(env["RLSQL_CACHE_DIR"]) / "answers"
    cache.ensure_root(answers_folder.parent)
    answers_folder.mkdir()  # as the first question's stored answer leaves it
    stand_in = subprocess.Popen(["sleep", "60"])  # the pid start() is told it started: alive until killed
    calls = spawned(monkeypatch, stand_in.pid)
    try:
        assert ahead.start("turn_stats", [str(tiny)], runs) == stand_in.pid
        # one at a time per cache folder: while it lives, a second first question starts none
        assert ahead.start("turns_by_exception", [str(tiny)], runs) is None
    finally:
        stand_in.kill()
        stand_in.wait()
    (argv,) = calls
    split = argv.index("--")
    assert argv[argv.index("rlsql.ahead") + 1] == env["RLSQL_CACHE_DIR"]
    assert set(argv[argv.index("rlsql.ahead") + 2:split]) == TRIAL_QUERIES - {"turn_stats"}
    assert argv[split + 1:] == [str(tiny)]
    # its claim is a dead process's now: the next first question starts one; without --run, the sample
    # run is answered, as `rlsql query` without one
    calls.clear()
    assert ahead.start("turn_stats", None, resolve_runs(None)) == stand_in.pid
    assert calls[0][calls[0].index("--") + 1:] == []
    shutil.rmtree(answers_folder)  # (its claim too: a fake pid's)
    calls.clear()
    for name, value in [("RLSQL_CACHE_AHEAD", "0"), ("RLSQL_CACHE_ANSWERS", "0"), ("RLSQL_CACHE", "0")]:
        with monkeypatch.context() as off:
            off.setenv(name, value)
            assert ahead.start("turn_stats", [str(tiny)], runs) is None
    monkeypatch.setattr(ahead, "MAX_RUNS", 0)
    assert ahead.start("turn_stats", [str(tiny)], runs) is None
    assert calls == []


def test_a_file_changed_while_answering_ahead_is_never_served(copies: dict[str, Path], env: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    run = copies["changed"]
    trials = run / "20260105_120000_trial_results.csv"
    names = ["turns_by_exception", "turns_by_outcome", "turn_percentiles"]
    real = rlsql_api.run_query

    def changing(name, runs, params):
        result = real(name, runs, params)
        if name == "turns_by_outcome":  # while it is read: the run gets a trial more
            lines = trials.read_text().splitlines(keepends=True)
            trials.write_text("".join(lines) + lines[-1])
        return result

    monkeypatch.setattr(rlsql_api, "run_query", changing)
    kept = ahead.answer(names, resolve_runs([str(run)]))
    # the first was kept before the change; the second's key changed under it, the third's file is too new
    assert kept == ["turns_by_exception"]
    monkeypatch.setattr(rlsql_api, "run_query", real)
    for name in names:
        got = rlsql(["query", name, "-r", str(run), "-f", "json"], {**env, "RLSQL_CACHE_AHEAD": "0"})
        assert got.returncode == 0, got.stderr
        assert_rows_match(json.loads(got.stdout), oracle.expected(name, [run]), f"{name} after the change")


def test_it_waits_for_the_builder_of_a_cached_copy(tiny: Path, env: dict[str, str]) -> None:
    root = Path(env["RLSQL_CACHE_DIR"])
    cache.ensure_root(root)
    runs = resolve_runs([str(tiny)])
    csv = runs[0].artifacts["trials"].path
    builder = subprocess.Popen(["sleep", "2"])
    reaper = threading.Thread(target=builder.wait)
    reaper.start()
    cache.claim_for(cache.entry_for(csv, root), builder.pid)
    assert cache.builder_of(cache.entry_for(csv, root)) == builder.pid
    ahead.wait_for_builders(runs, root, timeout=60)
    with pytest.raises(ProcessLookupError):  # it returned only once the builder had ended
        os.kill(builder.pid, 0)
    reaper.join()


def test_a_process_started_for_another_cache_folder_does_nothing(tiny: Path, env: dict[str, str],
                                                                  tmp_path: Path) -> None:
    assert answers.enabled()  # answers are on here: what follows is the other folder's doing
    assert ahead.main([str(tmp_path / "elsewhere"), "turns_by_outcome", "--", str(tiny)]) == 0
    assert kept_files(env) == []
    assert not (tmp_path / "elsewhere").exists()


def test_the_process_runs_this_rlsql_whatever_folder_it_starts_in(tiny: Path, env: dict[str, str], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch, kept_rows) -> None:
    """Started from a folder holding another `rlsql` (a checkout, say), it still imports the rlsql that
    started it: `python -m` would otherwise put the working folder first and compute other keys."""
    shadow = tmp_path / "checkout"
    (shadow / "rlsql").mkdir(parents=True)
    used = tmp_path / "shadow-used"
    (shadow / "rlsql" / "__init__.py").write_text(f"open({str(used)!r}, 'w').close()\nraise SystemExit(7)\n")
    with monkeypatch.context() as there:
        there.chdir(shadow)
        pid = detached.start("rlsql.ahead", [env["RLSQL_CACHE_DIR"], "turns_by_outcome", "--", str(tiny)])
    assert pid is not None
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not used.exists()
    assert_rows_match(kept_rows("turns_by_outcome", tiny), oracle.expected("turns_by_outcome", [tiny]),
                      "turns_by_outcome")


def test_a_cache_clear_while_answering_ahead_keeps_nothing_after_it(tiny: Path, env: dict[str, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(env["RLSQL_CACHE_DIR"])
    cache.ensure_root(root)
    names = ["turns_by_exception", "turns_by_outcome", "turn_percentiles"]
    real = rlsql_api.run_query

    def clearing(name, runs, params):
        result = real(name, runs, params)
        if name == "turns_by_outcome":  # the user clears the cache while this one is answered
            cache.note_cleared(root)
        return result

    monkeypatch.setattr(rlsql_api, "run_query", clearing)
    started = time.time_ns()
    assert ahead.answer(names, resolve_runs([str(tiny)]), started) == ["turns_by_exception"]
    assert len(kept_files(env)) == 1
