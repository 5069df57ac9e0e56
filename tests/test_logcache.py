"""The cache of raw training logs (rlsql/cache/logentries.py): cached answers equal in-place ones and the oracle,
a growing log parses only its tail, a rewritten log starts over, a damaged entry falls back to the log.

Every test points RLSQL_CACHE_DIR at a folder of its own and turns the cache on (RLSQL_CACHE=1: the
fixture logs are far below the default size threshold).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.cache import admin
from rlsql.cache import logentries as logcache
from rlsql.cache import store as cache
from rlsql.cache.copies import for_command
from rlsql.catalog.catalog import load_catalog
from rlsql.core import settings
from rlsql.duck.memorydb import memory_connection
from rlsql.engine import rawlogs
from rlsql.runs.folders import resolve_runs
from rlsql.runs.logfiles import find_logs
from tests import oracle
from tests.compare import assert_rows_match
from tests.test_rawlogs import PARAMS, PARSED_AT, QUERIES, RAW, TWIN, copy_run, without


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(root))
    monkeypatch.setenv("RLSQL_CACHE", "on")
    monkeypatch.setenv("RLSQL_VERBOSE", "1")
    return root


def log_records(root: Path) -> dict[str, dict]:
    """source path -> record, for every log entry under `root`."""
    return {r["source"]: r for e in cache.list_root(root).entries if (r := e.read_meta()).get("kind") == "log"}


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def block(step: int, reward: str) -> str:
    """A console metric block as SkyRL's ConsoleLogger prints it (4-decimal strings), Ray prefix on each line."""
    lines = [
        f"Step {step}: {{'async/staleness_mean': '1.5000',",
        f" 'reward/avg_raw_reward': '{reward}',",
        f" 'trainer/global_step': {step}}}",
    ]
    return "".join(f"(skyrl_entrypoint pid=7) {line}\n" for line in lines)


VLLM = (
    "\x1b[36m(AsyncVLLMInferenceEngine pid=31, ip=10.0.0.1)\x1b[0m INFO 06-02 08:00:{s:02d} [loggers.py:1] "
    "Engine 000: "
    "Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: {g}.0 tokens/s, Running: 3 reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 10.0%, Prefix cache hit rate: 50.0%\n"
)
NOISE = "(TerminalBenchGenerator pid=5, ip=10.0.0.2) trial t1 episode 3 finished: status=ok\n" * 20


def steps(run: Path) -> list[tuple[int, float]]:
    """(step, reward) of reward_curve: a named query as a user runs it (rlsql.connect never reads the cache)."""
    return [(r["step"], r["reward"]) for r in rlsql.query("reward_curve", [run]).to_dicts()]


def tiny_run(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "live"
    run.mkdir()
    log = run / "train.out"
    log.write_text(NOISE + block(1, "0.2500") + VLLM.format(s=1, g=10) + NOISE + block(2, "0.5000"))
    return run, log


def test_the_needles_are_those_of_the_in_place_reader() -> None:
    module = load_catalog().env.get_template("sources/_rawlogs.sql.j2").module
    assert tuple(module.metric_needles) == logcache.METRIC_NEEDLES
    assert tuple(module.vllm_needles) == logcache.VLLM_NEEDLES


def test_kept_lines_by_hand() -> None:
    data = (
        b"noise\n(A pid=1) Step 3: x\n\x1b[1mWANDB_MIRROR\x1b[0m a\nbad \xff Step 4:\n"
        b"cut\0Step 5:\nAvg prompt throughput: 1\n"
    )
    got = [(k.offset, k.text, k.is_metric, k.is_vllm) for k in logcache.kept_lines(data, 100)]
    assert got == [(106, "(A pid=1) Step 3: x", True, False), (126, "WANDB_MIRROR a", True, False),
                   (175, "Avg prompt throughput: 1", False, True)]  # fmt: skip


@pytest.mark.parametrize("ended", [False, True], ids=["being_written", "ended"])
@pytest.mark.parametrize("name", QUERIES)
def test_cached_answers_equal_in_place_and_the_oracle(
    name: str, ended: bool, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = copy_run(RAW, tmp_path / "rawlogs")
    # the fixture's logs all end in a line being written, kept lines of both pipelines: the query
    # recomputes their rows from the entry's lines and that line. Ended by a newline, the cut line
    # is a whole line that matches nothing, and the query reads each log's rows from its entry.
    if ended:
        for log in find_logs(run):
            with log.open("a") as out:
                out.write("\n")
            os.utime(log, (PARSED_AT, PARSED_AT))
    before = digest(run)
    params = PARAMS.get(name, {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = rlsql.query(name, [run], **params).to_dicts()  # builds the entries
        rawlogs._metric_keys.cache_clear()  # as a new process would
        second = rlsql.query(name, [run], **params).to_dicts()  # reads them
    assert not [w for w in caught if issubclass(w.category, rlsql.RlsqlWarning)], [str(w.message) for w in caught]
    entries = log_records(cache_dir)
    if {"metrics_src", "vllm_src"} & {f.name for f in load_catalog().closure([name])}:
        assert sorted(Path(p).name for p, r in entries.items() if (r["cut"] == r["size"]) == ended) == [
            "calendar_v2_agent_rl_run_8b_554408.out",
            "calendar_x_long_slurm_name_part2_554409.out",
            "calendar_z_554410.out",
        ]
    monkeypatch.setenv("RLSQL_CACHE", "0")
    rawlogs._metric_keys.cache_clear()
    in_place = rlsql.query(name, [run], **params).to_dicts()
    want = oracle.expected(name, [TWIN], **params)
    assert_rows_match(first, in_place, f"{name}: first cached query vs in place")
    assert_rows_match(second, in_place, f"{name}: repeated cached query vs in place")
    assert_rows_match(without(second, "run"), without(want, "run"), f"{name}: cached vs the oracle on the twin")
    assert digest(run) == before


def test_a_growing_log_parses_only_its_tail(tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture) -> None:
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    first = log_records(cache_dir)[str(log)]
    assert (first["parsed_from"], first["cut"]) == (0, log.stat().st_size)
    capsys.readouterr()

    assert steps(run) == [(1, 0.25), (2, 0.5)]
    assert "read from the cache" in capsys.readouterr().err

    size = log.stat().st_size
    with log.open("a") as writer:
        writer.write(NOISE + block(3, "0.7500"))
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    grown = log_records(cache_dir)[str(log)]
    assert (grown["parsed_from"], grown["parsed_bytes"]) == (size, log.stat().st_size - size)
    assert f"parsed bytes {size:,}-{log.stat().st_size:,}" in capsys.readouterr().err

    # a block cut at the entry's end: its first lines are in the entry, the rest arrives later
    four = block(4, "0.1250").splitlines(keepends=True)
    with log.open("a") as writer:
        writer.write("".join(four[:2]) + four[2][:20])  # the last line is being written
        writer.flush()
        assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
        assert "cache entry updated" in capsys.readouterr().err
        writer.write(four[2][20:] + VLLM.format(s=9, g=30)[:150])  # a stat line being written: no row yet
        writer.flush()
        assert [r["seconds"] for r in rlsql.query("vllm_summary", [run]).to_dicts()] == [1]
        assert "its rows are recomputed from the entry's lines" in capsys.readouterr().err
        writer.write(VLLM.format(s=9, g=30)[150:])
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75), (4, 0.125)]
    assert "the tail after the cached prefix" in capsys.readouterr().err
    summary = rlsql.query("vllm_summary", [run]).to_dicts()
    # two stat lines in two seconds: generation 10 and 30 tokens/s
    assert [(r["seconds"], r["max_total_generation_tps"]) for r in summary] == [(2, 30.0)], summary


def test_a_log_rewritten_shorter_is_parsed_again(tmp_path: Path, cache_dir: Path) -> None:
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    log.write_text(block(1, "0.9000"))  # same file, truncated and rewritten
    assert steps(run) == [(1, 0.9)]
    assert log_records(cache_dir)[str(log)]["parsed_from"] == 0


def test_a_log_rewritten_at_the_same_length_is_parsed_again(tmp_path: Path, cache_dir: Path) -> None:
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    text = log.read_text()
    log.write_text(text.replace("0.5000", "0.6000") + block(3, "0.7000"))  # grown, but its old bytes changed
    assert steps(run) == [(1, 0.25), (2, 0.6), (3, 0.7)]
    assert log_records(cache_dir)[str(log)]["parsed_from"] == 0


def test_a_damaged_entry_falls_back_to_the_log(tmp_path: Path, cache_dir: Path) -> None:
    run, log = tiny_run(tmp_path)
    want = rlsql.query("reward_curve", [run]).to_dicts()
    entry = cache.entry_for(log, cache_dir)
    # same size, both magic numbers intact, the pages between overwritten
    data = bytearray(entry.parquet.read_bytes())
    data[4:-8] = b"\x07" * (len(data) - 12)
    entry.parquet.write_bytes(bytes(data))
    rawlogs._metric_keys.cache_clear()  # as a new process: the metric rows are remembered per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rlsql.query("reward_curve", [run]).to_dicts()
    assert_rows_match(got, want, "reward_curve from the log after the entry was damaged")
    # the checksum of the entry's bytes (issue 42) finds the damage before DuckDB reads a page: the log is
    # parsed again and a good entry written, as for a truncated one; DuckDB never read the damaged pages
    assert not any("could not be read" in str(w.message) for w in caught), [str(w.message) for w in caught]
    record = entry.read_meta()
    assert not record.get("damaged") and record["parquet_crc32"] == cache.parquet_checksum(entry.parquet)
    assert_rows_match(rlsql.query("reward_curve", [run]).to_dicts(), want, "after the rebuild")


def test_a_truncated_entry_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    entry = cache.entry_for(log, cache_dir)
    entry.parquet.write_bytes(entry.parquet.read_bytes()[:-100])
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    assert log_records(cache_dir)[str(log)]["parsed_from"] == 0


def test_status_and_clear_show_and_remove_log_entries(tmp_path: Path, cache_dir: Path, rlsql_exe: str) -> None:
    run, log = tiny_run(tmp_path)
    before = digest(run)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    status = subprocess.run([rlsql_exe, "cache", "status", "-f", "json"], capture_output=True, text=True, check=True)
    listed = json.loads(status.stdout)
    assert [(r["file"], r["state"]) for r in listed] == [(str(log), "fresh")]
    cleared = subprocess.run([rlsql_exe, "cache", "clear"], capture_output=True, text=True, check=True)
    assert "removed 2 files" in cleared.stderr
    assert log_records(cache_dir) == {}
    assert digest(run) == before


def test_an_entry_another_rlsql_built_is_parsed_again_never_extended(
    tmp_path: Path, auto_cache: Path, capsys: pytest.CaptureFixture
) -> None:
    """An entry holds the log's lines as a version of rlsql's templates parse them: one recorded with another
    layout is not read (nor extended when the log grows), `cache status` calls it stale, a build replaces it."""
    run, log = tiny_run(tmp_path)
    assert [r[3] for r in build_entries(run)] == ["built"]
    entry = cache.entry_for(log, auto_cache)
    record = entry.read_meta()
    # as the rlsql before this one recorded it: the layout's number alone, its templates' parse unrecorded
    entry.meta.write_text(json.dumps({**record, "log_format": logcache.LOG_FORMAT}))
    capsys.readouterr()
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    assert f"{log}: read in place" in capsys.readouterr().err
    assert [(r[0], r[1]) for r in admin.status().rows] == [(str(log), "stale")]
    with log.open("a") as fh:  # grown: still parsed from its start, not from the old entry's cut
        fh.write(block(3, "0.7500"))
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert f"{log}: read in place" in capsys.readouterr().err
    assert [r[3] for r in build_entries(run)] == ["built"]
    assert log_records(auto_cache)[str(log)]["parsed_from"] == 0
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert f"{log}: read from the cache" in capsys.readouterr().err


def test_no_cache_writes_no_entry(tmp_path: Path, cache_dir: Path, rlsql_exe: str) -> None:
    run, _ = tiny_run(tmp_path)
    done = subprocess.run(
        [rlsql_exe, "--no-cache", "query", "reward_curve", "--run", str(run), "-f", "csv"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split(",")[1:2] == ["1"]
    assert log_records(cache_dir) == {}


def direct_lines(log: Path) -> list[tuple] | None:
    """The kept lines DuckDB finds in `log` (logcache.direct_read), or None when it cannot prove them exact.
    The log is given an hour-old mtime first: one written to just now is left to the Python scan."""
    os.utime(log, (time.time() - 3600, time.time() - 3600))
    con = memory_connection()
    with log.open("rb") as fh:
        cut = logcache.direct_read(con, log, fh, os.fstat(fh.fileno()))
    if cut is None:
        return None
    return con.execute(
        "SELECT line_no, text, is_metric, is_vllm FROM direct WHERE cum <= ? AND (is_metric OR is_vllm) "
        "ORDER BY line_no",
        [cut],
    ).fetchall()


def test_duckdb_finds_the_lines_the_python_scan_finds(tmp_path: Path) -> None:
    log = tmp_path / "a.out"
    # ANSI codes, an empty line, progress bars ended by lone CRs, a cut last line
    log.write_bytes(b"noise\n\n\x1b[1mStep 3:\x1b[0m x\r 10%\r 20%\rWANDB_MIRROR y\nAvg prompt throughput: 1\nStep 4")
    # by hand: the byte offset of each kept line up to the last LF, ANSI removed
    # (7 + 17 bytes of the Step line with its codes, two bars of 4 bytes each after their CRs)
    assert direct_lines(log) == [(7, "Step 3: x", True, False), (35, "WANDB_MIRROR y", True, False),
                                 (50, "Avg prompt throughput: 1", False, True)]  # fmt: skip
    want = [(k.offset, k.text, k.is_metric, k.is_vllm) for k in logcache.kept_lines(log.read_bytes()[:75])]
    assert direct_lines(log) == want
    for committed in find_logs(RAW):
        fixture_log = tmp_path / committed.name
        shutil.copyfile(committed, fixture_log)
        data = fixture_log.read_bytes()
        cut = data.rfind(b"\n") + 1
        got = direct_lines(fixture_log)
        assert got == [(k.offset, k.text, k.is_metric, k.is_vllm) for k in logcache.kept_lines(data[:cut])], fixture_log


@pytest.mark.parametrize(
    "data",
    [
        b"x\na NUL\0byte Step 9:\nStep 1: y\n",
        b"x\nnot \xff UTF-8 Step 9:\nStep 1: y\n",
        b"x\r\nStep 9: a\r\nStep 1: y\r\n",
    ],
    ids=["nul", "not_utf8", "crlf"],
)
def test_lines_duckdb_cannot_count_are_scanned_in_python(data: bytes, tmp_path: Path) -> None:
    log = tmp_path / "a.out"
    log.write_bytes(data)
    # the lengths DuckDB gives do not add up to the size: a line cut at the NUL, a line skipped, CRLF
    # read as one terminator (in a log of CRLF lines only; where LF lines come first it reads two)
    assert direct_lines(log) is None


@pytest.mark.parametrize(("crlf_everywhere", "found_by"), [(False, "DuckDB"), (True, "Python")])
def test_a_log_with_carriage_returns_is_cached(
    crlf_everywhere: bool, found_by: str, tmp_path: Path, cache_dir: Path
) -> None:
    run = tmp_path / "cr"
    run.mkdir()
    log = run / "train.out"
    # tqdm progress bars (lone CRs) around the blocks, one block printed with CRLF line ends; or
    # every line ended by CRLF, which DuckDB's line reader counts as one terminator (the Python scan then)
    bars = "".join(f"\r trials {p}%|###" for p in range(0, 100, 10))
    crlf = block(2, "0.5000").replace("\n", "\r\n")
    text = NOISE + bars + "\n" + block(1, "0.2500") + bars + crlf + VLLM.format(s=1, g=10) + bars
    if crlf_everywhere:
        text = (NOISE + block(1, "0.2500") + block(2, "0.5000") + VLLM.format(s=1, g=10)).replace("\n", "\r\n")
    log.write_bytes(text.encode())
    os.utime(log, (time.time() - 3600, time.time() - 3600))  # not written to lately: DuckDB's parallel read
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    record = log_records(cache_dir)[str(log)]
    cut = len(text) - (0 if crlf_everywhere else len(bars))  # the bytes after the last LF are not in it
    assert (record["lines_found_by"], record["cut"]) == (found_by, cut)
    with log.open("ab") as out:
        out.write(("\r" + block(3, "0.7500").replace("\n", "\r") + "\n").encode())  # a block whose lines end in CR
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert log_records(cache_dir)[str(log)]["parsed_from"] == record["cut"]  # the grown bytes only
    cached = rlsql.query("vllm_summary", [run]).to_dicts()
    assert [(r["seconds"], r["max_total_generation_tps"]) for r in cached] == [(1, 10.0)]
    with settings.active(settings.current().replace(cache="off")):  # every file in place
        rawlogs._metric_keys.cache_clear()
        assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
        assert_rows_match(cached, rlsql.query("vllm_summary", [run]).to_dicts(), "vllm_summary cached vs in place")


def test_cache_build_builds_the_log_entries(tmp_path: Path, cache_dir: Path, rlsql_exe: str) -> None:
    run, log = tiny_run(tmp_path)
    before = digest(run)
    env = {**os.environ, "RLSQL_CACHE": "auto"}  # the tiny log is far below the threshold: build caches it anyway

    def build(*flags: str) -> list[tuple]:
        done = subprocess.run(
            [rlsql_exe, "cache", "build", "--run", str(run), "-f", "json", *flags],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return [(r["artifact"], r["file"], r["state"]) for r in json.loads(done.stdout)]

    assert build() == [("log", str(log), "built")]
    assert (cache_dir / cache.MARKER).is_file()
    assert build() == [("log", str(log), "fresh")]
    size = log.stat().st_size
    with log.open("a") as writer:
        writer.write(block(3, "0.7500"))
    assert build() == [("log", str(log), "grown")]
    assert log_records(cache_dir)[str(log)]["parsed_from"] == size
    assert digest(run) == {**before, "train.out": hashlib.sha256(log.read_bytes()).hexdigest()}
    # a query reads the built entry: nothing is parsed again
    done = subprocess.run(
        [rlsql_exe, "-v", "query", "reward_curve", "--run", str(run), "-f", "csv"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "read from the cache" in done.stderr and "cache entry updated" not in done.stderr, done.stderr
    assert [line.split(",")[1] for line in done.stdout.splitlines()[1:]] == ["1", "2", "3"]


def test_a_log_grown_in_pieces_gives_the_rows_of_the_whole(tmp_path: Path, cache_dir: Path) -> None:
    """The entry keeps only the lines from its last block start on and the parts before it: after each
    piece the log's metric rows (batch_errors/* of steps whose lines straddle the cuts included) and
    vLLM fields are those of the whole log read in place."""
    run = copy_run(RAW, tmp_path / "rawlogs")
    runs = resolve_runs([str(run)])
    for log in find_logs(run):
        data = log.read_bytes()
        data = data[: data.rfind(b"\n") + 1]
        cuts = [data.find(b"\n", len(data) * k // 3) + 1 for k in (1, 2)] + [len(data)]
        log.write_bytes(b"")
        previous = 0
        for cut in cuts:
            with log.open("ab") as out:
                out.write(data[previous:cut])
            rawlogs._metric_keys.cache_clear()
            cached = rawlogs.log_files(runs, "metrics", for_command(runs, ["metrics_src"]))  # under --cache
            assert all(f.cached for f in cached)
            in_place = rawlogs.log_files(runs, "metrics")
            got, want = (json.loads(rawlogs.metric_keys(files).rows) for files in (cached, in_place))
            # row_line is a byte offset in an entry, a line number in place: both only order the rows
            assert {**got, "row_line": None} == {**want, "row_line": None}, (log, cut)
            record = log_records(cache_dir)[str(log)]
            assert (record["parsed_from"], record["cut"]) == (previous, cut)
            previous = cut
        con = memory_connection()
        kept = con.execute(
            "SELECT count(*) FILTER (WHERE part = 'line'), count(*) FILTER (WHERE part = 'pair') FROM read_parquet(?)",
            [str(cache.entry_for(log, cache_dir).parquet)],
        ).fetchone()
        assert kept[0] < sum(k.is_metric for k in logcache.kept_lines(data)), log  # not every kept line stays
        assert kept[1] > 0, log


# --- the first read answered in place; entries built by `cache build` or --cache only -------------


@pytest.fixture
def auto_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default policy (RLSQL_CACHE unset): fresh entries read, none built unasked."""
    monkeypatch.setenv("RLSQL_CACHE", "")
    return cache_dir


def answers(names: list[str], run: Path) -> dict[str, list[dict]]:
    rawlogs._metric_keys.cache_clear()  # as a new process would
    return {name: rlsql.query(name, [run], **PARAMS.get(name, {})).to_dicts() for name in names}


def assert_oracle(got: dict[str, list[dict]], what: str) -> None:
    for name, rows in got.items():
        want = oracle.expected(name, [TWIN], **PARAMS.get(name, {}))
        assert_rows_match(without(rows, "run"), without(want, "run"), f"{name}: {what} vs the oracle on the twin")


def build_entries(run: Path) -> list[tuple]:
    """What `rlsql cache build` does for a run's logs."""
    return logcache.build_log_entries(resolve_runs([str(run)]))


def test_the_first_query_answers_in_place_and_builds_nothing_until_cache_build(
    tmp_path: Path, auto_cache: Path, capsys: pytest.CaptureFixture
) -> None:
    run = copy_run(RAW, tmp_path / "rawlogs")
    logs = [str(p) for p in find_logs(run)]
    before = digest(run)
    names = ["reward_curve", "vllm_summary", "turns_by_exception"]
    first = answers(names, run)
    err = capsys.readouterr().err
    assert_oracle(first, "first query")
    for log in logs:
        assert f"{log}: read in place" in err, err
    assert log_records(auto_cache) == {}
    rows = build_entries(run)
    assert sorted(r[2] for r in rows) == sorted(logs) and {r[3] for r in rows} == {"built"}
    second = answers(names, run)
    err = capsys.readouterr().err
    assert_oracle(second, "query after cache build")
    for log in logs:
        assert f"{log}: read from the cache" in err, err
    assert digest(run) == before


def test_a_log_grown_while_it_is_cached_gives_no_stale_entry(
    tmp_path: Path, auto_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    run, log = tiny_run(tmp_path)
    os.utime(log, (time.time() - 3600, time.time() - 3600))  # not written to lately: read in parallel first
    size = log.stat().st_size
    real_direct_read = logcache.direct_read

    def run_writes_meanwhile(con, path, fh, before, **kwargs):
        with log.open("a") as writer:  # the trainer prints step 3 while the build reads the log
            writer.write(NOISE + block(3, "0.7500"))
        return real_direct_read(con, path, fh, before, **kwargs)

    monkeypatch.setattr(logcache, "direct_read", run_writes_meanwhile)
    (row,) = build_entries(run)
    assert row[3] == "built"
    monkeypatch.setattr(logcache, "direct_read", real_direct_read)
    record = log_records(auto_cache)[str(log)]
    # the entry covers the log as it was when the build began, and its record says so: DuckDB's read
    # was thrown away (the log changed under it) and Python scanned exactly those bytes
    assert (record["cut"], record["size"], record["lines_found_by"]) == (size, size, "Python")
    err = capsys.readouterr().err
    assert err.count(f"{log}: scanned in Python (it changed while it was read)") == 1, err
    state = {
        r["file"]: (r["state"], r["why"])
        for r in json.loads(
            subprocess.run(
                [sys.executable, "-m", "rlsql", "cache", "status", "-f", "json"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    }
    grown = log.stat().st_size - size
    assert state[str(log)] == (
        "grown",
        f"grown: {grown:,} new bytes, parsed by each query until `rlsql cache build` extends the entry",
    )
    # the next read sees the step the run wrote meanwhile: the growth is parsed for the answer (the entry
    # stays as it was: a plain query never writes the cache folder)
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    err = capsys.readouterr().err
    assert f"its new bytes {size:,}-{log.stat().st_size:,}, parsed for this answer" in err
    assert log_records(auto_cache)[str(log)] == record


@pytest.mark.parametrize(("age", "found_by"), [(1, "Python"), (3600, "DuckDB")])
def test_a_log_written_to_lately_is_scanned_in_python_at_once(
    age: int, found_by: str, tmp_path: Path, auto_cache: Path, capsys: pytest.CaptureFixture
) -> None:
    # a log written to in the last 10 s is probably still being written: a parallel read of it would
    # most likely be thrown away (it changed meanwhile), so it is scanned up to its size from the start
    run, log = tiny_run(tmp_path)
    os.utime(log, (time.time() - age, time.time() - age))
    size = log.stat().st_size
    assert build_entries(run)[0][3] == "built"
    record = log_records(auto_cache)[str(log)]
    assert (record["cut"], record["lines_found_by"]) == (size, found_by)
    cached = steps(run)
    with settings.active(settings.current().replace(cache="off")):  # every file in place
        rawlogs._metric_keys.cache_clear()
        assert steps(run) == cached == [(1, 0.25), (2, 0.5)]


def cached_then_grown(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """A tiny run whose log has its entry built, then one more step appended: (run, log, size before, growth)."""
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]
    size = log.stat().st_size
    with log.open("a") as writer:
        writer.write(NOISE + block(3, "0.7500"))
    return run, log, size, log.stat().st_size - size


def test_a_grown_log_is_read_from_its_entry_and_its_new_bytes_and_only_cache_build_extends_it(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, rlsql_exe: str
) -> None:
    run, log, size, _ = cached_then_grown(tmp_path)
    entry = cache.entry_for(log, cache_dir)
    files = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (entry.parquet, entry.meta)}
    monkeypatch.setenv("RLSQL_CACHE", "")  # the default policy: the new bytes are parsed, the entry left as it was
    capsys.readouterr()
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    err = capsys.readouterr().err
    assert f"its new bytes {size:,}-{log.stat().st_size:,}, parsed for this answer" in err, err
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == files
    assert log_records(cache_dir)[str(log)]["cut"] == size
    # the rows a read of the log in place gives, and the same again from the copy this process made
    with settings.active(settings.current().replace(cache="off")):  # every file in place
        rawlogs._metric_keys.cache_clear()
        assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert "parsed before" in capsys.readouterr().err
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == files
    built = subprocess.run(
        [rlsql_exe, "cache", "build", "-r", str(run), "-f", "json"], capture_output=True, text=True, check=True
    )
    assert [r["state"] for r in json.loads(built.stdout)] == ["grown"]
    record = log_records(cache_dir)[str(log)]
    assert (record["parsed_from"], record["cut"]) == (size, log.stat().st_size)


def test_a_log_grown_by_more_than_a_fifth_is_read_in_place_with_the_hint(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Its new bytes would cost each answer more than DuckDB's read of the whole log (logcache.GROWN_SHARE)."""
    run, log, _, growth = cached_then_grown(tmp_path)
    assert growth > log.stat().st_size // logcache.GROWN_SHARE
    entry = cache.entry_for(log, cache_dir)
    files = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (entry.parquet, entry.meta)}
    monkeypatch.setenv("RLSQL_CACHE", "")
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", str(growth))  # not above: parsed for the answer
    capsys.readouterr()
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    err = capsys.readouterr().err
    assert "parsed for this answer" in err and "hint" not in err, err
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", str(growth - 1))
    assert steps(run) == [(1, 0.25), (2, 0.5), (3, 0.75)]
    err = capsys.readouterr().err
    assert f"read in place (grown by {growth:,} bytes since its entry" in err and "rlsql: hint: read" in err, err
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == files


def test_a_report_under_the_default_policy_builds_nothing(
    tmp_path: Path, auto_cache: Path, capsys: pytest.CaptureFixture
) -> None:
    run, _ = tiny_run(tmp_path)
    for name in ("reward_curve", "vllm_summary", "reward_curve"):
        rlsql.query(name, [run])
    assert log_records(auto_cache) == {} and "read in place" in capsys.readouterr().err


def test_cache_status_says_a_log_grew_or_was_rewritten(tmp_path: Path, cache_dir: Path, rlsql_exe: str) -> None:
    run, log = tiny_run(tmp_path)
    assert steps(run) == [(1, 0.25), (2, 0.5)]

    def status() -> tuple[str, str]:
        done = subprocess.run([rlsql_exe, "cache", "status", "-f", "json"], capture_output=True, text=True, check=True)
        (row,) = json.loads(done.stdout)
        return row["state"], row["why"]

    size = log.stat().st_size
    with log.open("a") as writer:
        writer.write(block(3, "0.7500"))
    state, why = status()
    grown = log.stat().st_size - size
    assert (state, why) == (
        "grown",
        f"grown: {grown:,} new bytes, parsed by each query until `rlsql cache build` extends the entry",
    )
    subprocess.run([rlsql_exe, "cache", "clear", "--stale"], check=True, capture_output=True)
    assert status()[0] == "grown"  # kept: queries read it and the new bytes, `cache build` extends it
    log.write_text(block(1, "0.9000"))  # truncated and rewritten
    assert status()[0] == "stale" and "parsed again" in status()[1]


def test_a_report_with_cache_on_builds_each_entry_at_its_first_read(
    tmp_path: Path, cache_dir: Path, rlsql_exe: str
) -> None:
    run = copy_run(RAW, tmp_path / "rawlogs")
    logs = [str(p) for p in find_logs(run)]
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": ""}
    reports = {}
    for how in ("--no-cache", "--cache"):
        out = tmp_path / f"report{how}"
        done = subprocess.run(
            [rlsql_exe, how, "-v", "report", "--run", str(run), "-o", str(out)], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        reports[how] = (out / "report.md").read_text()
    err = done.stderr
    for log in logs:
        # the report's first read of each log builds its entry; every later read uses it
        assert err.count(f"{log}: cache entry updated: parsed ") == 1, err
        assert f"{log}: read from the cache" in err and f"{log}: read in place" not in err, err
    assert sorted(log_records(cache_dir)) == sorted(logs)
    assert reports["--cache"] == reports["--no-cache"]


def test_a_killed_builds_named_pipe_is_a_leftover_that_clear_removes(cache_dir: Path, tmp_path: Path) -> None:
    """A build of an earlier version killed while DuckDB read a log through its named pipe left the
    FIFO under rlsql's temporary name: `cache status` counts it as a leftover, not as somebody else's
    file, and `cache clear` removes it (a FIFO is not a regular file, but the name proves it rlsql's)."""
    from rlsql.runs import writes

    run = copy_run(RAW, tmp_path / "rawlogs")
    assert rlsql.query("reward_curve", [run]).rows  # the cache folder and an entry folder exist
    folder = next(p for p in cache_dir.iterdir() if p.is_dir() and len(p.name) == 2)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    pipe = writes.temp_name(folder / ("0" * 24 + ".pipe"), pid=dead_pid)
    os.mkfifo(pipe)
    listing = cache.list_root(cache_dir)
    assert pipe in listing.leftovers and listing.foreign == 0
    assert cache.sweep_leftovers(cache_dir) == 1
    assert not pipe.exists()
