"""A plain query never writes to, or deletes from, the cache folder (issue 37): only `rlsql cache build` and
`--cache` do. The folder holds a CSV's copy, a run's trajectory rows, a raw log's entry whose log then grows
and a copy with flipped bytes; plain `rlsql query` processes read each, and every file and folder under the
cache is as it was, byte for byte and to the nanosecond of its modification time."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rlsql.cache import store
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.test_logcache import NOISE, VLLM, block


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under `root` (folders too: a file made and removed again changes its folder's mtime) with
    the SHA-256 of its bytes (None for a folder) and its modification time; atime is left out (the OS sets it)."""
    out: dict[str, tuple[str, int]] = {}
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        out[str(p.relative_to(root))] = (
            "" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest(),
            st.st_mtime_ns,
        )
    return out


def rlsql_json(exe: str, env: dict[str, str], *args: str) -> list[dict]:
    done = subprocess.run([exe, *args, "-f", "json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def built(tmp_path: Path, rlsql_exe: str) -> tuple[dict[str, str], dict[str, Path]]:
    """A cache folder built by `rlsql cache build` over three runs: a CSV run (tiny), a run with trajectories
    (harbor) and a run of raw logs (live); then live's log grows and tiny's trials copy gets three bytes flipped."""
    runs = {"tiny": tmp_path / "tiny", "harbor": tmp_path / "harbor", "live": tmp_path / "live"}
    shutil.copytree(RUNS / "tiny", runs["tiny"])
    shutil.copytree(RUNS / "harbor", runs["harbor"])
    runs["live"].mkdir()
    log = runs["live"] / "train.out"
    log.write_text(NOISE + block(1, "0.2500") + VLLM.format(s=1, g=10) + NOISE + block(2, "0.5000"))
    env = {**os.environ, "RLSQL_CACHE_DIR": str(tmp_path / "cache"), "RLSQL_CACHE": "auto"}
    env.pop("RLSQL_VERBOSE", None)
    rows = rlsql_json(rlsql_exe, env, "cache", "build", *(a for r in runs.values() for a in ("-r", str(r))))
    states = {(r["artifact"], Path(r["file"].split(" ")[0]).name): r["state"] for r in rows}
    assert states[("trials", "20260105_120000_trial_results.csv")] == "built", rows
    assert states[("log", "train.out")] == "built", rows
    assert [r["state"] for r in rows if r["artifact"] == "trajectories"] == ["built", "built"], rows
    with log.open("a") as writer:
        writer.write(NOISE + block(3, "0.7500"))
    trials = store.entry_for(runs["tiny"].resolve() / "20260105_120000_trial_results.csv", tmp_path / "cache")
    data = bytearray(trials.parquet.read_bytes())
    for offset in range(len(data) // 3, len(data) // 3 + 3):
        data[offset] ^= 0x5A
    trials.parquet.write_bytes(bytes(data))
    return env, runs


def test_plain_queries_leave_the_cache_folder_as_it_was(built, tmp_path: Path, rlsql_exe: str) -> None:
    env, runs = built
    root = tmp_path / "cache"
    before = snapshot(root)
    # the damaged copy (tiny's trials), fresh copies (tiny's steps and vLLM CSVs, harbor's trajectories), the
    # grown log; each a new process, as a user runs them, with the answers the files give
    for name, run in [
        ("turn_stats", "tiny"),
        ("reward_summary", "tiny"),
        ("tool_usage", "harbor"),
        ("token_usage", "harbor"),
    ]:
        got = rlsql_json(rlsql_exe, env, "query", name, "-r", str(runs[run]))
        assert_rows_match(got, oracle.expected(name, [runs[run]]), f"{name} over the cache")
    every_csv = "SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM vllm_seconds)"
    rlsql_json(rlsql_exe, env, "sql", every_csv, "-r", str(runs["tiny"]))
    curve = rlsql_json(rlsql_exe, env, "query", "reward_curve", "-r", str(runs["live"]))
    assert [(r["step"], r["reward"]) for r in curve] == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert snapshot(root) == before
    # `cache status` finds the damage by its own check, and calls the log grown: the query recorded neither
    status = {Path(r["file"].split(" ")[0]).name: r["state"] for r in rlsql_json(rlsql_exe, env, "cache", "status")}
    assert status["20260105_120000_trial_results.csv"] == "damaged" and status["train.out"] == "grown", status


def test_a_copy_that_fails_its_read_is_answered_from_the_file_and_nothing_is_recorded(
    tmp_path: Path, rlsql_exe: str
) -> None:
    """A copy whose bytes match the checksum of its record but that DuckDB cannot read (here the record made to
    agree with zeroed pages, as an rlsql that wrote a bad copy would have): the query fails over it, the CSV
    answers with one warning naming the copy, and the cache folder is left as it was; `cache status` finds
    the copy damaged by reading its footer, and `cache build` rebuilds it."""
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    env = {**os.environ, "RLSQL_CACHE_DIR": str(tmp_path / "cache"), "RLSQL_CACHE": "auto"}
    rlsql_json(rlsql_exe, env, "cache", "build", "-r", str(run))
    trials = run.resolve() / "20260105_120000_trial_results.csv"
    entry = store.entry_for(trials, tmp_path / "cache")
    data = bytearray(entry.parquet.read_bytes())
    data[4 : len(data) - 8] = bytes(len(data) - 12)  # pages and footer zeroed; size and both magic numbers kept
    entry.parquet.write_bytes(bytes(data))
    record = json.loads(entry.meta.read_text())
    entry.meta.write_text(json.dumps({**record, "parquet_crc32": store.parquet_checksum(entry.parquet)}))
    before = snapshot(tmp_path / "cache")
    done = subprocess.run(
        [rlsql_exe, "query", "turn_stats", "-r", str(run), "-f", "json"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert_rows_match(json.loads(done.stdout), oracle.expected("turn_stats", [run]), "turn_stats past a bad copy")
    warned = [line for line in done.stderr.splitlines() if "its cached copy" in line]
    assert len(warned) == 1 and str(trials) in warned[0] and str(entry.parquet) in warned[0], done.stderr
    assert "could not be read" in warned[0] and "answered from the file" in warned[0]
    assert snapshot(tmp_path / "cache") == before
    status = {r["file"]: r for r in rlsql_json(rlsql_exe, env, "cache", "status")}
    assert status[str(trials)]["state"] == "damaged" and "footer" in status[str(trials)]["why"], status
    rebuilt = {r["file"]: r["state"] for r in rlsql_json(rlsql_exe, env, "cache", "build", "-r", str(run))}
    assert rebuilt[str(trials)] == "built", rebuilt
