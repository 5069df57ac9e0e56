"""rlsql's write safety: never replace a run or a file it did not write, one temp-naming scheme swept by
the next run, one-line errors on read-only and full filesystems, modes from the umask, kill -9."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlsql.runs import writes
from tests import oracle
from tests.conftest import RUNS
from tests.test_cli import one_error_line, run_main

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="mounting a tmpfs (full or read-only filesystem) needs root")


def tree_hash(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative path -> sha256), and every folder, to compare before/after."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<dir>"
    return out


def copy_run(src: str, dst: Path) -> Path:
    shutil.copytree(RUNS / src, dst)
    return dst


@contextmanager
def tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


# -- issue 9 item 1: an export never replaces a run, nor anything it did not write ----------------


def test_export_into_a_folder_of_runs_never_replaces_a_run(tmp_path, capsys, monkeypatch) -> None:
    """`export trials --run del/ -o del/ --partition-by run` where del/trials is a run."""
    folder = tmp_path / "del"
    copy_run("tiny", folder / "trials")
    copy_run("calendar", folder / "other")
    before = tree_hash(folder)
    code, stdout, err = run_main(
        ["export", "trials", "--run", str(folder), "-o", str(folder), "--partition-by", "run"], capsys, monkeypatch
    )
    assert code == 2, err
    assert f"{folder}: holds run folder {folder / 'other'}" in one_error_line(err) and stdout == ""
    assert tree_hash(folder) == before
    # unpartitioned too: a folder of runs is no output folder, not even for new names beside the runs
    code, _, err = run_main(["export", "trials", "--run", str(folder), "-o", str(folder)], capsys, monkeypatch)
    assert code == 2 and "holds run folder" in one_error_line(err), err
    assert tree_hash(folder) == before


def test_export_refuses_a_file_it_did_not_write(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "trials.parquet").write_bytes(b"the user's own file")
    (out / "steps").mkdir()
    (out / "steps" / "notes.txt").write_text("mine")
    before = tree_hash(out)
    code, _, err = run_main(["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(out)], capsys, monkeypatch)
    assert code == 2
    assert str(out / "trials.parquet") in one_error_line(err)
    code, _, err = run_main(
        ["export", "steps", "-r", str(RUNS / "tiny"), "-o", str(out), "--partition-by", "run"], capsys, monkeypatch
    )
    assert code == 2
    assert str(out / "steps") in one_error_line(err)
    assert tree_hash(out) == before


def test_export_replaces_what_it_wrote_but_not_a_file_changed_since(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    args = ["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(out)]
    for _ in range(2):
        code, _, err = run_main(args, capsys, monkeypatch)
        assert code == 0, err
    # the user puts a file of their own in the place of rlsql's: it is no longer rlsql's to replace
    (out / "trials.parquet").unlink()
    (out / "trials.parquet").write_bytes(b"replaced by hand")
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 2
    assert "trials.parquet" in one_error_line(err)
    assert (out / "trials.parquet").read_bytes() == b"replaced by hand"


def test_csv_sidecar_is_replaced_only_when_rlsql_wrote_it(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "trials.csv.meta.json").write_text("{}")
    code, _, err = run_main(
        ["export", "trials", "-f", "csv", "-r", str(RUNS / "tiny"), "-o", str(out)], capsys, monkeypatch
    )
    assert code == 2
    assert "trials.csv.meta.json" in one_error_line(err)
    assert not (out / "trials.csv").exists()  # checked before anything is written


# -- issue 9 item 9: OSError becomes one line and a documented exit code ----------------------------


def test_query_output_onto_a_folder_or_empty_name(tmp_path, capsys, monkeypatch) -> None:
    folder = tmp_path / "afolder"
    folder.mkdir()
    for output, needle in [(str(folder), str(folder)), ("", "empty")]:
        code, stdout, err = run_main(
            ["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", output], capsys, monkeypatch
        )
        assert code == 2 and stdout == "", err
        assert needle in one_error_line(err)
    assert list(folder.iterdir()) == []
    code, _, err = run_main(["shell-init", "-r", str(RUNS / "tiny"), "-o", str(folder)], capsys, monkeypatch)
    assert code == 2 and str(folder) in one_error_line(err)
    code, _, err = run_main(["export", "trials", "-r", str(RUNS / "tiny"), "-o", ""], capsys, monkeypatch)
    assert code == 2 and "empty" in one_error_line(err)


@needs_root
def test_read_only_filesystem_is_one_line_exit_4(tmp_path, capsys, monkeypatch) -> None:
    mnt = tmp_path / "ro"
    with tmpfs(mnt, size="4m"):
        (mnt / "old.txt").write_text("old")
        remount_read_only(mnt)
        cases = [
            (["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(mnt / "q.txt")], mnt / "q.txt"),
            (["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(mnt / "old.txt")], mnt / "old.txt"),
            (["shell-init", "-r", str(RUNS / "tiny"), "-o", str(mnt / "init.sql")], mnt / "init.sql"),
            (["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(mnt / "bi")], mnt / "bi"),
            (["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(mnt)], mnt),
            (["db", "build", str(mnt / "runs.duckdb"), "-r", str(RUNS / "tiny")], mnt / "runs.duckdb"),
        ]
        for args, path in cases:
            before = tree_hash(RUNS / "tiny")
            code, stdout, err = run_main(args, capsys, monkeypatch)
            line = one_error_line(err)
            assert code == 4 and stdout == "", (args, err)
            assert str(path) in line and "read-only" in line.lower(), line
            assert tree_hash(RUNS / "tiny") == before
        assert sorted(p.name for p in mnt.iterdir()) == ["old.txt"]


@needs_root
def test_full_disk_is_one_line_exit_4_and_the_old_file_stays(tmp_path, capsys, monkeypatch) -> None:
    mnt = tmp_path / "full"
    big = tmp_path / "big"
    big.mkdir()
    src = oracle.find_artifacts(RUNS / "calendar")["trials"]
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    with (big / src.name).open("w", encoding="utf-8") as fh:
        fh.write(lines[0])
        fh.writelines(lines[1:] * 40)
    with tmpfs(mnt, size="64k"):
        (mnt / "out.csv").write_text("previous\n")
        code, _, err = run_main(
            ["query", "turn_stats", "-f", "csv", "-r", str(RUNS / "tiny"), "-o", str(mnt / "out.csv")],
            capsys,
            monkeypatch,
        )
        assert code == 0, err
        small = (mnt / "out.csv").read_bytes()
        code, _, err = run_main(
            ["export", "trials", "-f", "csv", "-r", str(big), "-o", str(mnt / "bi")], capsys, monkeypatch
        )
        line = one_error_line(err)
        assert code == 4 and str(mnt / "bi" / "trials.csv") in line and "space" in line.lower(), line
        for args, path in [
            (["export", "trials", "-r", str(big), "-o", str(mnt / "hive"), "--partition-by", "run"], mnt / "hive"),
            (["db", "build", str(mnt / "x.duckdb"), "-r", str(big), "--materialize"], mnt / "x.duckdb"),
        ]:
            code, _, err = run_main(args, capsys, monkeypatch)
            line = one_error_line(err)
            assert code == 4 and str(path) in line and "space" in line.lower(), line
        # fill the disk to the last block, then ask for the file again: the old one stays
        with pytest.raises(OSError), (mnt / "filler").open("wb", buffering=0) as fh:
            while True:
                fh.write(b"x" * 4096)
                os.fsync(fh.fileno())
        code, _, err = run_main(
            ["query", "turn_stats", "-f", "json", "-r", str(RUNS / "tiny"), "-o", str(mnt / "out.csv")],
            capsys,
            monkeypatch,
        )
        line = one_error_line(err)
        assert code == 4 and str(mnt / "out.csv") in line and "space" in line.lower(), line
        assert (mnt / "out.csv").read_bytes() == small
        assert not [p for p in mnt.rglob("*") if writes.TMP_SUFFIX in p.name]


# -- issue 9 item 14: modes from the umask; a replaced file keeps its mode ---------------------------


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_files_honour_the_umask(mask, tmp_path, capsys, monkeypatch) -> None:
    old = os.umask(mask)
    monkeypatch.setattr(writes, "_UMASK", None)
    try:
        want = 0o666 & ~mask
        for args, path in [
            (["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "q.txt")], tmp_path / "q.txt"),
            (["shell-init", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "i.sql")], tmp_path / "i.sql"),
            (
                ["export", "trials", "-f", "csv", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "bi")],
                tmp_path / "bi" / "trials.csv.meta.json",
            ),
            (
                ["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "bi")],
                tmp_path / "bi" / "trials.parquet",
            ),
            (["db", "build", str(tmp_path / "r.duckdb"), "-r", str(RUNS / "tiny")], tmp_path / "r.duckdb"),
            (
                ["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(tmp_path / "bi"), "--partition-by", "run"],
                tmp_path / "bi" / "trials" / "run=tiny" / "data_0.parquet",
            ),
        ]:
            code, _, err = run_main(args, capsys, monkeypatch)
            assert code == 0, err
            assert stat.S_IMODE(path.stat().st_mode) == want, (path, oct(path.stat().st_mode))
        assert stat.S_IMODE((tmp_path / "bi" / "trials").stat().st_mode) == 0o777 & ~mask
    finally:
        os.umask(old)


def test_a_replaced_file_keeps_its_mode(tmp_path, capsys, monkeypatch) -> None:
    target = tmp_path / "q.txt"
    target.write_text("old")
    target.chmod(0o640)
    code, _, err = run_main(["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(target)], capsys, monkeypatch)
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_text() != "old"


# -- issue 9 item 13: one temp-naming scheme, swept by the next run ----------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _temp_of(target: Path, pid: int, old: bool = False) -> Path:
    """A temporary name as a (now dead) process `pid` would have made it."""
    real = os.getpid
    try:
        os.getpid = lambda: pid  # type: ignore[assignment]
        return writes.temp_name(target, old=old)
    finally:
        os.getpid = real  # type: ignore[assignment]


def test_temp_names_are_hidden_checked_and_unique(tmp_path) -> None:
    a, b = writes.temp_name(tmp_path / "x.parquet"), writes.temp_name(tmp_path / "x.parquet")
    assert a != b and a.parent == tmp_path
    assert a.name.startswith(".x.parquet.") and a.name.endswith(writes.TMP_SUFFIX)
    parts = writes.parse_temp_name(a.name)
    assert parts is not None and parts.final == "x.parquet" and parts.pid == os.getpid() and not parts.old
    assert writes.parse_temp_name(writes.temp_name(tmp_path / "t", old=True).name).old
    # a look-alike (one digit of the checksum changed) is not rlsql's
    forged = a.name[: -len(writes.TMP_SUFFIX) - 1] + ("0" if a.name[-len(writes.TMP_SUFFIX) - 1] != "0" else "1")
    assert writes.parse_temp_name(forged + writes.TMP_SUFFIX) is None
    assert writes.parse_temp_name(".x.parquet.1234.abcd1234.rlsql-tmp") is None  # the old scheme


def test_sweep_removes_only_dead_rlsql_temporaries(tmp_path) -> None:
    dead = _dead_pid()
    leftovers = [_temp_of(tmp_path / "a.parquet", dead), _temp_of(tmp_path / "b.duckdb", dead)]
    for path in leftovers:
        path.write_bytes(b"half")
    wal = leftovers[1].with_name(leftovers[1].name + ".wal")
    wal.write_bytes(b"wal")
    spilled = leftovers[1].with_name(leftovers[1].name + ".tmp")
    spilled.mkdir()
    (spilled / "duckdb_temp_storage-0.tmp").write_bytes(b"spill")
    tree = _temp_of(tmp_path / "trials", dead)
    (tree / "run=x").mkdir(parents=True)
    (tree / "run=x" / "data_0.parquet").write_bytes(b"p")
    live = writes.temp_name(tmp_path / "c.parquet")  # this process is alive
    live.write_bytes(b"in progress")
    foreign = [tmp_path / ".a.parquet.123.abcd1234.rlsql-tmp", tmp_path / "notes.rlsql-tmp", tmp_path / "a.parquet"]
    for path in foreign:
        path.write_bytes(b"not rlsql's")
    removed = writes.sweep(tmp_path)
    assert sorted(removed) == sorted([*leftovers, wal, spilled, tree])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, *(p.name for p in foreign)])


def test_sweep_puts_back_a_folder_caught_mid_swap(tmp_path) -> None:
    dead = _dead_pid()
    old = _temp_of(tmp_path / "trials", dead, old=True)
    (old / "run=a").mkdir(parents=True)
    (old / "run=a" / "data_0.parquet").write_bytes(b"old")
    new = _temp_of(tmp_path / "trials", dead)
    new.mkdir()
    writes.sweep(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trials"]
    assert (tmp_path / "trials" / "run=a" / "data_0.parquet").read_bytes() == b"old"


def test_dbfile_does_not_reach_into_export() -> None:
    text = (Path(writes.__file__).parents[1] / "outputs" / "dbfile.py").read_text()
    assert "rlsql.outputs.export" not in text and "_tmp_name" not in text


# -- kill -9 ---------------------------------------------------------------------------------------


def _big_run(folder: Path, copies: int, name: str = "bigrun") -> Path:
    run = folder / name
    run.mkdir()
    for kind in ("trials", "metrics"):
        src = oracle.find_artifacts(RUNS / "calendar")[kind]
        lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
        with (run / src.name).open("w", encoding="utf-8") as fh:
            fh.write(lines[0])
            fh.writelines(lines[1:] * copies)
    return run


def _kill_when(args: list[str], cwd: Path, ready) -> None:
    """Start `rlsql args` and SIGKILL it once `ready(its pid)` is true."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsql", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 90
    try:
        while not ready(proc.pid):
            assert proc.poll() is None, f"ended before it was killed: {proc.communicate()}"
            assert time.monotonic() < deadline, "the write never started"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()
    # the process may end between the last poll and the kill (a moment drawn near the end of its run):
    # the same "ended before it was killed" as above, which callers drawing random moments accept
    assert proc.returncode == -signal.SIGKILL, f"ended before it was killed: exit {proc.returncode}"


def _has_temp(folder: Path, pid: int | None = None) -> bool:
    """Whether `folder` holds one of rlsql's temporary names (of process `pid`, when given)."""
    try:
        parts = [writes.parse_temp_name(p.name) for p in folder.iterdir()]
    except FileNotFoundError:
        return False
    return any(part is not None and pid in (None, part.pid) for part in parts)


def test_kill_9_db_build_then_the_next_build_sweeps(tmp_path, capsys, monkeypatch) -> None:
    target = tmp_path / "runs.duckdb"
    code, _, err = run_main(["db", "build", str(target), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 0, err
    before = target.read_bytes()
    big = _big_run(tmp_path, 300)
    inputs = tree_hash(big)
    _kill_when(["db", "build", str(target), "-r", str(big), "--materialize"], tmp_path, lambda pid: _has_temp(tmp_path))
    assert target.read_bytes() == before  # the old file, whole
    assert _has_temp(tmp_path)
    code, _, err = run_main(["db", "build", str(target), "-r", str(RUNS / "newest")], capsys, monkeypatch)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bigrun", "runs.duckdb"]
    assert tree_hash(big) == inputs


@pytest.mark.parametrize("how", [[], ["--replace-all"]], ids=["incremental", "replace-all"])
def test_kill_9_partitioned_export_leaves_each_partition_old_or_new(how, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "hive"
    small = copy_run("tiny", tmp_path / "small")
    args = ["export", "metric_rows", "-r", str(small), "-o", str(out), "--partition-by", "run"]
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    part = out / "metric_rows" / "run=small" / "data_0.parquet"
    before = part.read_bytes()
    big = _big_run(tmp_path, 300)
    inputs = tree_hash(big)
    _kill_when(
        ["export", "metric_rows", "-r", str(big), "-r", str(small), "-o", str(out), "--partition-by", "run", *how],
        tmp_path,
        lambda pid: _has_temp(out),
    )
    assert part.read_bytes() == before
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    # the folder's lock file (writes.folder_lock) stays: removing it would let two exports lock different files
    assert sorted(p.name for p in out.iterdir()) in (
        sorted([writes.MARK, writes.LOCK, "metric_rows"]),
        sorted([writes.LOCK, "metric_rows"]),
    )
    assert not any(writes.parse_temp_name(p.name) for p in out.rglob("*"))
    assert tree_hash(big) == inputs


def test_mark_is_json_with_format(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "o"
    code, _, err = run_main(
        ["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(out), "--partition-by", "run"], capsys, monkeypatch
    )
    assert code == 0, err
    mark = json.loads((out / "trials" / writes.MARK).read_text())
    assert mark["format"] == writes.MARK_FORMAT and mark["name"] == "trials"
    assert pq.read_metadata(out / "trials" / "run=tiny" / "data_0.parquet").num_rows == len(
        oracle.read_trials(RUNS / "tiny")
    )


def test_hostile_run_names_round_trip_through_partitions(tmp_path, capsys, monkeypatch) -> None:
    """A run folder named with glob, quote, percent and space characters gets its own partition, and
    hive readers decode the partition folder back to the run's name."""
    import duckdb
    import pyarrow.dataset as ds

    name = "r[1] 'q'%25 *?;"
    runs = tmp_path / "runs"
    copy_run("tiny", runs / name)
    copy_run("calendar", runs / "plain")
    before = tree_hash(runs)
    out = tmp_path / "out"
    code, _, err = run_main(
        ["export", "trials", "-r", str(runs), "-o", str(out), "--partition-by", "run"], capsys, monkeypatch
    )
    assert code == 0, err
    table = ds.dataset(out / "trials", format="parquet", partitioning="hive").to_table()
    counts = {run: table.filter(ds.field("run") == run).num_rows for run in (name, "plain")}
    assert counts == {name: len(oracle.read_trials(RUNS / "tiny")), "plain": len(oracle.read_trials(RUNS / "calendar"))}
    files = sorted(str(p) for p in (out / "trials").glob("run=*/data_0.parquet"))
    got = duckdb.execute(
        "SELECT run, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY run", [files]
    ).fetchall()
    assert dict(got) == counts
    assert tree_hash(runs) == before


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_swap_dir_replaces_a_folder_whole(exchange, tmp_path, monkeypatch) -> None:
    if not exchange:
        monkeypatch.setattr(writes, "_exchange", lambda a, b: False)
    target = tmp_path / "trials"
    (target / "run=a").mkdir(parents=True)
    (target / "run=a" / "data_0.parquet").write_bytes(b"old")
    for content in (b"new", b"newer"):
        staging = writes.temp_name(target)
        (staging / "run=b").mkdir(parents=True)
        (staging / "run=b" / "data_0.parquet").write_bytes(content)
        writes.swap_dir(staging, target)
        assert tree_hash(target) == {"run=b": "<dir>", "run=b/data_0.parquet": hashlib.sha256(content).hexdigest()}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["trials"]
    # into a place that does not exist yet: a plain rename
    staging = writes.temp_name(tmp_path / "steps")
    staging.mkdir()
    writes.swap_dir(staging, tmp_path / "steps")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["steps", "trials"]


@pytest.mark.parametrize(
    "args",
    [
        ["query", "turn_stats", "-o", "OUT/q [1] *?.txt"],
        ["shell-init", "-o", "OUT/init 'x'.sql"],
        ["export", "trials", "steps", "-o", "OUT/bi [*]"],
        ["export", "trials", "-f", "csv", "--partition-by", "run", "-o", "OUT/hive?"],
        ["db", "build", "OUT/r;un's.duckdb", "--materialize"],
    ],
    ids=["query", "shell-init", "export", "export-partitioned", "db-build"],
)
def test_every_writing_command_leaves_the_runs_byte_identical(args, tmp_path, capsys, monkeypatch) -> None:
    """Outputs beside the runs, in the folder that holds them, under names with glob and quote characters."""
    runs = tmp_path / "runs"
    copy_run("tiny", runs / "tiny")
    copy_run("harbor", runs / "harbor")
    before = tree_hash(runs)
    args = [a.replace("OUT", str(runs)) for a in args] + ["-r", str(runs)]
    for _ in range(2):  # the second time replaces what the first wrote
        code, _, err = run_main(args, capsys, monkeypatch)
        assert code == 0, err
    after = tree_hash(runs)
    assert {k: v for k, v in after.items() if k.split("/")[0] in ("tiny", "harbor")} == before
    assert not [p for p in runs.rglob("*") if writes.TMP_SUFFIX in p.name]


@pytest.mark.slow
def test_kill_9_at_random_points_never_leaves_half_a_partition(tmp_path, capsys, monkeypatch) -> None:
    """SIGKILL an incremental partitioned export at seeded random moments: every partition present is a
    whole Parquet file with its run's rows, a missing one comes back with the next export, and that
    export sweeps every leftover."""
    import random

    rng = random.Random(9)
    runs = tmp_path / "runs"
    runs.mkdir()
    copies = 40
    _big_run(runs, copies, "big")
    small = copy_run("tiny", runs / "small")
    # the big trials file is the calendar run's rows `copies` times over (_big_run)
    want = {"big": copies * len(oracle.read_trials(RUNS / "calendar")), "small": len(oracle.read_trials(small))}
    out = tmp_path / "out"
    args = ["export", "trials", "-r", str(runs), "-o", str(out), "--partition-by", "run"]
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    inputs = tree_hash(runs)
    # the moments are drawn within the writing of one whole export here and now: from its first
    # temporary name to its end (a fixed range of seconds let a fast machine finish before the kill,
    # and a loaded one be killed before it started; time before the first write kills nothing worth it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsql", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    first_write = None
    while proc.poll() is None:
        if first_write is None and (_has_temp(out) or _has_temp(out / "trials")):
            first_write = time.monotonic()
        time.sleep(0.002)
    assert proc.returncode == 0 and first_write is not None, "no temporary name seen: the export never wrote"
    writing = time.monotonic() - first_write
    for _ in range(3):
        delay, seen = rng.uniform(0.0, 0.8) * writing, []

        def ready(pid: int, delay=delay, seen=seen) -> bool:
            """`delay` seconds after this export's first temporary name appeared (not a killed one's)."""
            if not seen and (_has_temp(out, pid) or _has_temp(out / "trials", pid)):
                seen.append(time.monotonic())
            return bool(seen) and time.monotonic() - seen[0] >= delay

        try:
            _kill_when(args, tmp_path, ready)
        except AssertionError as exc:  # this export ran faster than the timing run: whole, checked below too
            assert "ended before it was killed" in str(exc)
        for part in (out / "trials").glob("run=*"):
            if writes.parse_temp_name(part.name) is None:
                run = part.name.removeprefix("run=")
                assert pq.read_metadata(part / "data_0.parquet").num_rows == want[run], run
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    assert not [p for p in tmp_path.rglob("*") if writes.TMP_SUFFIX in p.name]
    assert sorted(p.name for p in (out / "trials").iterdir()) == [writes.MARK, "run=big", "run=small"]
    assert tree_hash(runs) == inputs
