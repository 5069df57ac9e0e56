"""The background builder's marks and races (rlsql/cachebg.py, issue 15): a CSV that changes while it is
cached, one DuckDB cannot convert, two reads in quick succession, and `cache clear` during a build."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from rlsql import cache, cachebg, cachebuild
from rlsql.errors import DataError
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.test_cache import cache_states, cli_run


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(folder))
    monkeypatch.setenv("RLSQL_CACHE", "")  # the default policy
    return folder


@pytest.fixture(autouse=True)
def no_builder_left() -> None:
    cachebuild.reap_builders(wait=True)
    yield
    cachebuild.reap_builders(wait=True)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", folder)
    monkeypatch.setenv("RLSQL_CACHE_MIN_BYTES", "1")  # every CSV counts as large
    return folder


def trials_of(run: Path) -> Path:
    return next(run.glob("*_trial_results.csv"))


def append_trial(trials: Path) -> None:
    lines = trials.read_text().splitlines()
    with trials.open("a") as fh:
        fh.write(lines[1].replace(lines[1].split(",")[1], f"added-{time.time_ns()}", 1) + "\n")


def age(path: Path, seconds: float) -> None:
    """Set the file's modification time `seconds` into the past (a CSV nobody has written for a while)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def query_verbose(run: Path, capsys, monkeypatch) -> str:
    code, out, err = cli_run(["-v", "query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "answered in place")
    return err


def started_builder_for(err: str, csv: Path) -> bool:
    return any(str(csv) in line and "built in the background" in line for line in err.splitlines())


def assert_quiet_csv_is_cached_by_the_next_read(run: Path, trials: Path, capsys, monkeypatch) -> None:
    """Once nobody has written `trials` for an hour, the next read starts a builder, which caches it."""
    age(trials, 3600)
    err = query_verbose(run, capsys, monkeypatch)
    assert started_builder_for(err, trials)
    cachebuild.reap_builders(wait=True)
    assert cache_states(capsys, monkeypatch)[trials.name] == "fresh"


def test_a_csv_that_changes_while_it_is_cached_is_marked_and_no_builder_is_respawned_while_it_keeps_changing(
        cache_dir, run, capsys, monkeypatch) -> None:
    trials = trials_of(run)
    real_digest = cache.sha256_of

    def growing(path: Path) -> str:  # the run appends a trial while the builder reads the CSV
        if path == trials:
            append_trial(trials)
        return real_digest(path)

    monkeypatch.setattr(cache, "sha256_of", growing)
    assert cachebg.build(cache_dir, [f"trials_src={trials}"]) == []
    monkeypatch.setattr(cache, "sha256_of", real_digest)
    entry = cache.entry_for(trials, cache_dir)
    assert not entry.parquet.exists()
    assert cache_states(capsys, monkeypatch)[trials.name] == "unbuilt"
    # the run goes on: it changed again just now, so the next read starts no builder for it
    append_trial(trials)
    err = query_verbose(run, capsys, monkeypatch)
    assert not started_builder_for(err, trials)
    assert [line for line in err.splitlines() if str(trials) in line and "changed while" in line]
    assert not cachebuild.builders or all(str(trials) not in line for line in err.splitlines()
                                          if "building the cached copies" in line)
    cachebuild.reap_builders(wait=True)  # the other, stable CSVs of the run may have been deferred
    assert cache_states(capsys, monkeypatch)[trials.name] == "unbuilt"
    # `cache build` does not wait for the CSV to settle: asked, it builds (here from a copy of the mark)
    saved = entry.meta.read_bytes()
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and {b["artifact"]: b["state"] for b in json.loads(out)}["trials"] == "built"
    assert cache_states(capsys, monkeypatch)[trials.name] == "fresh"
    entry.parquet.unlink()
    entry.meta.write_bytes(saved)
    assert cache_states(capsys, monkeypatch)[trials.name] == "unbuilt"
    # once nobody has written the CSV for longer than a build takes, a read caches it again
    assert_quiet_csv_is_cached_by_the_next_read(run, trials, capsys, monkeypatch)


def test_a_csv_duckdb_cannot_convert_is_not_retried_until_it_changes(cache_dir, run, capsys, monkeypatch) -> None:
    trials = trials_of(run)

    def refuse(*args, **kwargs):
        raise DataError(f"{trials}: cannot build its cached copy: a reason")

    age(trials, 3600)  # quiet for an hour (set before the mark: it changes the ctime): only the mark holds it
    monkeypatch.setattr(cachebg, "build_cache_entry", refuse)
    assert cachebg.build(cache_dir, [f"trials_src={trials}"]) == []
    monkeypatch.undo()
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("RLSQL_CACHE", "")
    monkeypatch.setenv("RLSQL_CACHE_MIN_BYTES", "1")
    err = query_verbose(run, capsys, monkeypatch)
    assert not started_builder_for(err, trials)
    assert [line for line in err.splitlines() if str(trials) in line and "could not be cached" in line]
    cachebuild.reap_builders(wait=True)
    # the file changes (and then stays put): the mark no longer holds, so it is tried again
    append_trial(trials)
    assert_quiet_csv_is_cached_by_the_next_read(run, trials, capsys, monkeypatch)


def test_a_second_read_right_after_the_first_starts_no_second_builder(cache_dir, run, capsys, monkeypatch) -> None:
    trials = trials_of(run)
    err = query_verbose(run, capsys, monkeypatch)
    assert started_builder_for(err, trials) and len(cachebuild.builders) == 1
    pid = cachebuild.builders[0]
    # claimed in the builder's name as it is started, before its Python has even imported rlsql
    assert cache.builder_of(cache.entry_for(trials, cache_dir)) == pid
    err = query_verbose(run, capsys, monkeypatch)
    assert f"process {pid} is building its cached copy" in err
    assert cachebuild.builders == [pid]
    cachebuild.reap_builders(wait=True)
    assert cache_states(capsys, monkeypatch)[trials.name] == "fresh"
    code, _, err = cli_run(["cache", "status"], capsys, monkeypatch)
    assert code == 0 and "leftover" not in err  # the builder removed the claim it was started with


def test_a_claim_left_by_a_builder_that_died_is_replaced_not_piled_up(cache_dir, run, capsys, monkeypatch) -> None:
    from rlsql import writes

    trials = trials_of(run)
    cache.ensure_root(cache_dir)
    entry = cache.entry_for(trials, cache_dir)
    entry.parquet.parent.mkdir(parents=True)
    dead = writes.temp_name(entry.parquet, pid=2**22 + 12345)  # above any pid_max: no such process
    dead.touch()
    assert cache.builder_of(entry) is None  # a dead claim claims nothing
    err = query_verbose(run, capsys, monkeypatch)
    assert started_builder_for(err, trials)
    assert not dead.exists()
    cachebuild.reap_builders(wait=True)
    assert cache_states(capsys, monkeypatch)[trials.name] == "fresh"


def test_cache_clear_during_a_build_leaves_no_entry_behind(cache_dir, run, capsys, monkeypatch) -> None:
    trials = trials_of(run)
    real_digest = cache.sha256_of

    def clear_meanwhile(path: Path) -> str:  # `rlsql cache clear` runs while the builder reads the CSV
        digest = real_digest(path)
        code, _, err = cli_run(["cache", "clear"], capsys, monkeypatch)
        assert code == 0, err
        return digest

    monkeypatch.setattr(cache, "sha256_of", clear_meanwhile)
    assert cachebg.build(cache_dir, [f"trials_src={trials}"]) == []
    monkeypatch.setattr(cache, "sha256_of", real_digest)
    entry = cache.entry_for(trials, cache_dir)
    assert not entry.parquet.exists() and not entry.meta.exists()
    assert trials.name not in cache_states(capsys, monkeypatch)
    # a build that starts after the clear is not affected by it
    assert cachebg.build(cache_dir, [f"trials_src={trials}"]) == [trials]
    assert cache_states(capsys, monkeypatch)[trials.name] == "fresh"


def test_bad_whole_number_cells_read_from_a_cache_entry_as_in_place(cache_dir, tmp_path, monkeypatch) -> None:
    """A cache entry stores whole-number columns checked (BIGINT beside their bad cells): the same rows and
    the same warning, naming the same lines, as the CSV read in place (tests/test_adversarial.py, by hand)."""
    from tests.test_adversarial import HEADER, TRIALS, caught_query, write

    path = write(tmp_path / "r", TRIALS, HEADER + "t,t__1,99999999999999999999,,1.0\nt,t__2,4,,0.0\n"
                 "t,t__3,2.5,,1.0\nt,t__4,3.0,,1.0\nt,t__5,nan,,1.0\nt,t__6,-9007199254740992,,1.0\n"
                 "t,t__7,9007199254740994,,0.0\nt,t__8,inf,,1.0\n")
    expected = (f"{path}: 3 cells not a whole number up to 2**53, read as empty (line 2: column n_episodes: "
                "'99999999999999999999'; line 4: column n_episodes: '2.5'; line 8: column n_episodes: "
                "'9007199254740994')")
    answers = {}
    for policy in ("off", "on"):
        monkeypatch.setenv("RLSQL_CACHE", policy)
        rows, said = caught_query("turn_stats", [path.parent])
        assert expected in said and said.count("whole number") == 1, (policy, said)
        answers[policy] = rows
    assert list(cache_dir.glob("*/*.parquet")), "the second answer did not read a cache entry"
    # by hand: 4, 3.0 and -2**53 are whole numbers in range; nan and inf are empty
    assert [(r["trials"], r["min"], r["max"]) for r in answers["on"]] == [(3, -2**53, 4)]
    assert answers["on"] == answers["off"]
