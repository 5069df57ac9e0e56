"""Attacks on what rlsql writes (issue 25): no command writes into, replaces or deletes a run folder,
given on the command line or not; `-o` onto a FIFO or a device writes into it as a shell's `>` would;
every format's rows come out whole and as the oracle computes them; markdown cells are escaped.

Each case was a defect on main at 47a4ae3 (D1, D7, D8, M1, M2); the expectations are the oracle's
(tests/oracle.py) or worked out by hand.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import socket
import stat
import threading
from pathlib import Path

import pytest

from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.test_desk import run_main

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a character device (mknod) needs root")


def tree(folder: Path) -> dict[str, str]:
    """Every file's sha256 and every folder under `folder`: what a refused command must leave."""
    found = {}
    for p in sorted(folder.rglob("*")):
        found[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return found


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A folder of two runs, r1 and r2 (copies of the fixture runs tiny and newest)."""
    shutil.copytree(RUNS / "tiny", tmp_path / "runs" / "r1")
    shutil.copytree(RUNS / "newest", tmp_path / "runs" / "r2")
    return tmp_path / "runs"


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("rlsql: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- D1: no command writes into a run folder it was not given -------------------------------------------


def test_no_command_writes_into_a_run_folder_that_is_not_among_its_runs(runs: Path, capsys, monkeypatch) -> None:
    r1, r2 = runs / "r1", runs / "r2"
    trials_csv = next(r1.glob("*_trial_results.csv"))
    before = tree(runs)
    attacks = [
        ["db", "build", str(trials_csv), "-r", str(r2)],  # replaced r1's trials CSV with a DuckDB file
        ["query", "turn_stats", "-r", str(r2), "-o", str(r1 / "out.csv")],
        ["query", "turn_stats", "-r", str(r2), "-o", str(trials_csv)],
        ["sql", "SELECT 1 AS x", "-r", str(r2), "-o", str(r1 / "x.json")],
        ["shell-init", "-r", str(r2), "-o", str(r1 / "init.sql")],
        ["export", "turn_stats", "-r", str(r2), "-o", str(r1 / "bi")],
        ["export", "turn_stats", "-r", str(r2), "-o", str(r1)],
    ]
    for args in attacks:
        code, out, err = run_main(args, capsys, monkeypatch)
        assert code == 2 and out == "", (args, err)
        assert "run folder" in one_line(err) and str(r1) in one_line(err), (args, err)
        assert tree(runs) == before, args


def test_a_report_never_goes_into_or_among_run_folders(runs: Path, capsys, monkeypatch) -> None:
    before = tree(runs)
    for target in (runs / "r1" / "report", runs):
        code, _, err = run_main(["report", "-r", str(runs / "r2"), "-o", str(target)], capsys, monkeypatch)
        assert code == 2 and "run folder" in one_line(err), (target, err)
    assert tree(runs) == before


# -- D7: export never writes beside the run folders of a folder of runs ----------------------------------


def test_export_into_the_folder_of_runs_it_reads_is_refused(runs: Path, capsys, monkeypatch) -> None:
    before = tree(runs)
    for extra in ([], ["--partition-by", "run"]):
        code, out, err = run_main(
            ["export", "--all", "-r", str(runs / "*"), "-o", str(runs), *extra], capsys, monkeypatch
        )
        assert code == 2 and out == "" and f"{runs}: holds run folder" in one_line(err), err
        assert tree(runs) == before


# -- D8: -o onto a FIFO, a device, stdout ----------------------------------------------------------------


def reading(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of `fifo` in a thread (as `cat FIFO` would be), collecting what it reads."""
    got: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


def test_o_onto_a_fifo_writes_into_it(tmp_path: Path, capsys, monkeypatch) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = reading(fifo)
    code, out, err = run_main(
        ["query", "turn_stats", "-r", str(RUNS / "tiny"), "-f", "json", "-o", str(fifo)], capsys, monkeypatch
    )
    reader.join(timeout=60)
    assert code == 0 and out == "", err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO: nothing renamed over it
    assert_rows_match(json.loads(got[0]), oracle.expected("turn_stats", [RUNS / "tiny"]), "through a FIFO")


@needs_root
def test_o_onto_a_character_device_writes_into_it(tmp_path: Path, capsys, monkeypatch) -> None:
    """A device node like /dev/null (major 1, minor 3) made in the test's folder: rlsql writes into it and
    it stays a device (renaming a file over /dev/null, as root, would replace the system's)."""
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for fmt in ("csv", "json", "table"):
        code, _, err = run_main(
            ["query", "trials", "-r", str(RUNS / "calendar"), "-f", fmt, "-o", str(device)], capsys, monkeypatch
        )
        assert code == 0, err
        assert stat.S_ISCHR(device.lstat().st_mode), fmt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary left beside it


def test_o_dash_is_stdout(capsys, monkeypatch) -> None:
    code, out, _ = run_main(
        ["query", "turn_stats", "-r", str(RUNS / "tiny"), "-f", "json", "-o", "-"], capsys, monkeypatch
    )
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [RUNS / "tiny"]), "-o -")


def test_o_onto_a_folder_or_a_socket_is_refused_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for target, what in ((tmp_path, "a folder"), (sock_path, "a socket")):
            code, out, err = run_main(
                ["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(target)], capsys, monkeypatch
            )
            assert code == 2 and out == "" and f"is {what}" in one_line(err), err
    finally:
        server.close()
    assert stat.S_ISSOCK(sock_path.lstat().st_mode)


def test_o_through_a_symlink_replaces_the_file_it_points_to(tmp_path: Path, capsys, monkeypatch) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    code, _, err = run_main(["query", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(link)], capsys, monkeypatch)
    assert code == 0, err
    assert link.is_symlink() and real.read_text().startswith("run,")  # as `>` writes through the link


# -- issue 42, item 5: db build (every write target) never renames over a FIFO, a device or a link ------


def tables_in(database: bytes, tmp_path: Path) -> set[str]:
    """The tables and views of a DuckDB database given as its bytes (opened read-only from a copy)."""
    import duckdb

    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(database)
    con = duckdb.connect(str(copy), read_only=True)
    try:
        return {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()


def test_db_build_into_a_fifo_writes_the_database_into_it(tmp_path: Path, capsys, monkeypatch) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = reading(fifo)
    code, _, err = run_main(["db", "build", str(fifo), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    reader.join(timeout=60)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO: nothing renamed over it
    assert {"rlsql_metadata", "trials", "turn_stats"} <= tables_in(got[0], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.duckdb", "pipe"]  # no temporary beside it


@needs_root
def test_db_build_onto_a_character_device_writes_into_it(tmp_path: Path, capsys, monkeypatch) -> None:
    """`rlsql db build /dev/null` as root replaced the system's /dev/null with a database file: a device
    node made in the test's folder stays a device."""
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    code, _, err = run_main(["db", "build", str(device), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 0, err
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_db_build_through_a_symlink_replaces_the_file_it_points_to(tmp_path: Path, capsys, monkeypatch) -> None:
    real = tmp_path / "real.duckdb"
    real.write_text("old\n")
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    code, _, err = run_main(["db", "build", str(link), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 0, err
    assert link.is_symlink() and link.readlink() == real  # the link stays, as `>` leaves it
    assert {"rlsql_metadata", "trials"} <= tables_in(real.read_bytes(), tmp_path)


def test_db_build_onto_a_socket_is_refused_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        code, out, err = run_main(["db", "build", str(sock_path), "-r", str(RUNS / "tiny")], capsys, monkeypatch)
        assert code == 2 and out == "" and "is a socket" in one_line(err), err
    finally:
        server.close()
    assert stat.S_ISSOCK(sock_path.lstat().st_mode)


# -- every format's rows whole, as the oracle computes them ---------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl", "table", "markdown"])
def test_every_format_to_a_file_and_to_stdout_holds_every_row(fmt: str, tmp_path: Path, capsys, monkeypatch) -> None:
    run = RUNS / "calendar"
    want = oracle.read_trials(run)
    code, printed, err = run_main(["query", "trials", "-r", str(run), "-f", fmt], capsys, monkeypatch)
    assert code == 0, err
    out = tmp_path / f"trials.{fmt}"
    code, _, err = run_main(["query", "trials", "-r", str(run), "-f", fmt, "-o", str(out)], capsys, monkeypatch)
    assert code == 0 and f"wrote {out} ({len(want):,} rows)" in err, err
    assert out.read_text(encoding="utf-8") == printed  # the same bytes whichever way they went
    lines = printed.splitlines()
    if fmt == "csv":
        names = [r["trial_name"] for r in csv.DictReader(io.StringIO(printed))]
    elif fmt == "json":
        names = [r["trial_name"] for r in json.loads(printed)]
    elif fmt == "jsonl":
        names = [json.loads(line)["trial_name"] for line in lines]
    else:
        header = [c.strip() for c in (lines[0].strip("|").split("|") if fmt == "markdown" else lines[0].split())]
        at = header.index("trial_name")
        body = lines[2:]
        names = [(row.strip("|").split("|") if fmt == "markdown" else row.split())[at].strip() for row in body]
    assert names == [t["trial_name"] for t in want]


def test_json_writes_nan_as_null_and_timestamps_in_iso_8601(tmp_path: Path, capsys, monkeypatch) -> None:
    sql = (
        "SELECT 'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, 1.5::DOUBLE AS x, "
        "TIMESTAMP '2026-06-01 09:00:00' AS t0, TIMESTAMP '2026-06-01 09:00:00.25' AS t1"
    )
    for fmt in ("json", "jsonl"):
        code, out, err = run_main(["sql", sql, "-r", str(RUNS / "tiny"), "-f", fmt], capsys, monkeypatch)
        assert code == 0, err
        (row,) = json.loads(out) if fmt == "json" else [json.loads(out)]
        assert row == {
            "nan": None,
            "inf": None,
            "x": 1.5,
            "t0": "2026-06-01T09:00:00",
            "t1": "2026-06-01T09:00:00.250000",
        }  # Python's isoformat, by hand


def test_a_table_on_a_terminal_holds_a_bounded_number_of_rows_and_says_how_many_more(capsys, monkeypatch) -> None:
    from rlsql.outputs.rows import TERMINAL_ROWS

    run = RUNS / "calendar"
    total = len(oracle.read_trials(run))
    with monkeypatch.context() as on_a_terminal:
        code, out, err = run_main(["query", "trials", "-r", str(run)], capsys, on_a_terminal, tty_width=200)
    assert code == 0
    assert len(out.splitlines()) == 2 + TERMINAL_ROWS
    assert f"{total - TERMINAL_ROWS:,} more rows ({TERMINAL_ROWS:,} of {total:,} shown; -f csv or -o FILE" in err
    code, piped, err = run_main(["query", "trials", "-r", str(run)], capsys, monkeypatch)
    assert code == 0 and len(piped.splitlines()) == 2 + total and "more row" not in err  # piped: whole


# -- M1, M2 -------------------------------------------------------------------------------------------


def test_markdown_escapes_every_cell(tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "<b>x|y`z"
    shutil.copytree(RUNS / "tiny", run)
    code, out, err = run_main(["query", "turn_stats", "-r", str(run), "-f", "md"], capsys, monkeypatch)
    assert code == 0, err
    row = out.splitlines()[2]
    assert row.startswith("| &lt;b&gt;x\\|y\\`z |"), row  # by hand: | and ` escaped, < > entities
    assert len([c for c in row.split(" | ")]) == 7  # still 7 cells: the run's | did not add one


def test_sql_may_start_with_a_comment(capsys, monkeypatch) -> None:
    code, out, err = run_main(
        ["sql", "-- how many trials\nSELECT count(*) AS n FROM trials", "-r", str(RUNS / "tiny"), "-f", "csv"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert out == f"n\n{len(oracle.read_trials(RUNS / 'tiny'))}\n"


def test_an_export_onto_a_full_disk_leaves_no_orphaned_sources_list(tmp_path: Path, rlsql_exe: str) -> None:
    """Issue 42 (minor): a Parquet file's list of sources is written beside it first; when the file itself
    cannot be written (a full disk; here a file size limit, which the filesystem answers the same way),
    the list named by no file was left behind. Now: exit 4, and only what a finished item wrote stays."""
    import hashlib
    import os
    import subprocess

    run = tmp_path / "r"
    run.mkdir()
    rows = [f"t,{hashlib.sha256(str(i).encode()).hexdigest()}__{i},{i % 9},,1.0" for i in range(20000)]
    (run / "trial_results.csv").write_text(
        "task_name,trial_name,n_episodes,exception_type,reward\n" + "\n".join(rows) + "\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "RLSQL_CACHE": "off"}
    done = subprocess.run(
        [
            "bash",
            "-c",
            'trap "" XFSZ; ulimit -f 300; exec "$0" export reward_summary trials -f parquet -o "$1" -r "$2"',
            rlsql_exe,
            str(out),
            str(run),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr
    assert f"{out / 'trials.parquet'}: cannot write (File too large)" in done.stderr
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    # reward_summary (one row) was written with its list; trials failed, and its list went with it
    assert [n for n in names if not n.startswith("reward_summary.parquet.sources-")] == ["reward_summary.parquet"]
    assert len(names) == 2
