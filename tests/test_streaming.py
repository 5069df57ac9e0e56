"""Rows to stdout as DuckDB produces them (rlsql/outputs/rows.py, docs/semantics.md "Rows as they come"): the first
lines come before the statement ends, a reader that goes away ends the command quietly, and no row is ever printed
twice (an answer that would have to start again after rows went out fails in one line instead).

The commands run in a subprocess whose stdout is a real pipe: under pytest's capture stdout has no descriptor, and
rlsql stages the rows whole there as it does for a terminal."""

from __future__ import annotations

import csv
import io
import os
import selectors
import subprocess
import sys
from pathlib import Path

import pytest

from tests import oracle
from tests.conftest import RUNS

#: generous bounds on a subprocess that should end at once: a hang fails the test instead of the suite
PATIENCE = 300


def _rlsql(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlsql", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _first_line(proc: subprocess.Popen) -> bytes:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(PATIENCE), "no line came"
    return proc.stdout.readline()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "table"])
def test_first_rows_come_at_once_and_a_closed_pipe_ends_the_command_quietly(fmt: str) -> None:
    """A statement of 10**12 rows: its first lines come while it runs (staged whole, none would ever come), and
    only the reader going away ends it: exit 0, nothing on stderr (no traceback, no BrokenPipe message)."""
    proc = _rlsql("sql", "SELECT range AS n FROM range(1000000000000)", "-r", str(RUNS / "tiny"), "-f", fmt)
    first = _first_line(proc)
    assert first.strip() in (b"n", b'{"n":0}')
    assert proc.stdout is not None
    proc.stdout.close()  # `| head -1` exits
    assert proc.wait(PATIENCE) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""


def test_a_closed_stderr_stops_no_command(tmp_path: Path) -> None:
    """`rlsql report ... 2>&1 | head -1`: the reader is gone after the first notice, and the report is still
    written (it exited 1 without one). stdout and stderr here are a pipe whose reader closed before the start."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rlsql",
                "report",
                "--run",
                str(RUNS / "tiny"),
                "-f",
                "md",
                "-o",
                str(tmp_path / "r"),
            ],
            stdout=write,
            stderr=write,
            timeout=PATIENCE,
        )
    finally:
        os.close(write)
    assert done.returncode == 0
    assert "## Findings" in (tmp_path / "r" / "report.md").read_text()


def test_a_failure_after_rows_went_out_is_one_line_and_prints_no_row_twice() -> None:
    # the last row fails: its morsel is the last DuckDB hands out, after the rows before it went out
    proc = _rlsql(
        "sql",
        "SELECT CASE WHEN range < 2999999 THEN range ELSE error('boom') END AS n FROM range(3000000)",
        "-r",
        str(RUNS / "tiny"),
        "-f",
        "csv",
    )
    out, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 3
    lines = out.decode().splitlines()
    assert lines[0] == "n" and lines[1:] == [str(i) for i in range(len(lines) - 1)]  # in order, once each
    said = err.decode().splitlines()
    assert len(said) == 1 and said[0].startswith("rlsql: error: the answer stopped after its first ")
    assert "boom" in said[0] and "it is not printed again" in said[0]


def test_an_answer_is_never_started_again_after_rows_went_out(tmp_path: Path, monkeypatch) -> None:
    """The retries (a damaged cached copy, a CSV DuckDB cannot parse) call the output again: once rows went to
    stdout, that call fails in one line before writing anything."""
    from rlsql.core.errors import DataError
    from rlsql.duck.memorydb import memory_connection
    from rlsql.outputs.formats import OutputFormat
    from rlsql.outputs.rows import Output

    with (tmp_path / "stdout").open("w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        out = Output(OutputFormat.CSV, None)
        assert out.stream_to == stdout.fileno()
        con = memory_connection(threads=1)  # the rows in order: the failing one comes after the first went out
        with pytest.raises(DataError, match="it is not printed again"):
            # the rows before the last went out as written (test_rows_go_out_as_written_not_in_blocks)
            out.write_query(
                con, "SELECT CASE WHEN range < 2999999 THEN range ELSE error('late') END AS n FROM range(3000000)"
            )
        sent = out.sent
        assert sent > 0
        with pytest.raises(DataError, match="an answer again was needed"):
            out.write_query(con, "SELECT 1 AS n")
    text = (tmp_path / "stdout").read_text()
    assert len(text.encode()) == sent
    numbers = text.splitlines()[1:]
    assert numbers[:-1] == [str(i) for i in range(len(numbers) - 1)]  # the last line may be cut mid-number


def test_a_bad_cell_late_in_a_streamed_answer_is_recorded_at_once(tmp_path: Path) -> None:
    """A whole-number cell that is not one, in the last row of 60,000: the rows stream, the cell reads as empty
    and one warning names it, as in a staged answer (the bad cells are recorded from the first attempt)."""
    run = tmp_path / "run"
    run.mkdir()
    header = (RUNS / "tiny" / "20260105_120000_trial_results.csv").read_text().splitlines()[0]
    rows = [f"calendar-{i % 500:04d},calendar-{i % 500:04d}__{i:07d},3.0,9120.0,410.0,,1.0,30.0" for i in range(60_000)]
    rows[-1] = rows[-1].replace(",3.0,", ",2.5,", 1)
    (run / "20260105_120000_trial_results.csv").write_text("\n".join([header, *rows]) + "\n")
    proc = _rlsql("query", "trials", "-r", str(run), "-f", "csv")
    out, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    lines = out.decode().splitlines()
    assert len(lines) == 60_001 and len(set(lines)) == 60_001
    names = lines[0].split(",")
    last = dict(zip(names, lines[-1].split(","), strict=True))
    assert last["trial_name"] == "calendar-0499__0059999" and last["n_episodes"] == ""
    said = [line for line in err.decode().splitlines() if line]
    assert len(said) == 1 and "1 cell not a whole number up to 2**53, read as empty" in said[0], said


def test_a_streamed_answer_over_clean_files_imports_no_numpy() -> None:
    """A streamed answer counts bad cells in SQL (rlsql/duck/badcells.py): over files without one, no Python
    function is registered, so numpy (which DuckDB's Python functions import, ~0.1 s) is never imported before
    or after its rows."""
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "rlsql", "query", "trials", "-r", str(RUNS / "tiny"), "-f", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    rows = list(csv.DictReader(io.StringIO(out.decode())))
    assert [r["trial_name"] for r in rows] == [t["trial_name"] for t in oracle.read_trials(RUNS / "tiny")]
    imported = [line.rsplit("|", 1)[-1].strip() for line in err.decode().splitlines() if line.startswith("import time")]
    assert "duckdb" in imported and "numpy" not in imported


def test_rows_go_out_as_written_not_in_blocks(tmp_path: Path, monkeypatch) -> None:
    """1.3 MB of CSV, then a failing row: the rows before it went to stdout as DuckDB wrote them, before the statement
    failed (its asynchronous writer would hold them in its first 8 MB block, and nothing went out: issue 38 item 3)."""
    from rlsql.core.errors import DataError
    from rlsql.duck.memorydb import memory_connection
    from rlsql.outputs.formats import OutputFormat
    from rlsql.outputs.rows import Output

    with (tmp_path / "stdout").open("w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        out = Output(OutputFormat.CSV, None)
        con = memory_connection(threads=1)  # the rows in order
        with pytest.raises(DataError, match="it is not printed again"):
            out.write_query(
                con, "SELECT CASE WHEN range < 200000 THEN range ELSE error('late') END AS n FROM range(200001)"
            )
    text = (tmp_path / "stdout").read_text()
    assert len(text) > 1_200_000  # of 1,288,892: all but DuckDB's last few KB not yet written
    numbers = text.splitlines()[1:]
    assert numbers[:-1] == [str(i) for i in range(len(numbers) - 1)]  # the last line may be cut mid-number


def test_piped_rows_are_the_files_bytes_and_the_oracles_rows(tmp_path: Path) -> None:
    """`rlsql query trials -f csv | ...` on 60,000 trials (4 MB of CSV, written in many pieces by two threads):
    the same bytes as `-o FILE`, and the oracle's trials in its order (cells that need quotes included)."""
    run = tmp_path / "run"
    run.mkdir()
    header = (RUNS / "tiny" / "20260105_120000_trial_results.csv").read_text().splitlines()[0].split(",")
    exceptions = ["", "AgentTimeoutError", '"Bad, quoted" error', "DaytonaError"]
    with (run / "20260105_120000_trial_results.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for i in range(60_000):
            reward = "" if i % 4 else f"{i % 2}.0"
            task = f"calendar-{i % 500:04d}"
            tokens = [f"{9000 + i}.0", f"{i % 400}.0"]
            writer.writerow([task, f"{task}__{i:07d}", f"{i % 7}.0", *tokens, exceptions[i % 4], reward, f"{i / 8}"])
    piped = _rlsql("query", "trials", "-r", str(run), "-f", "csv")
    out, err = piped.communicate(timeout=PATIENCE)
    assert piped.returncode == 0, err
    written = subprocess.run(
        [sys.executable, "-m", "rlsql", "query", "trials", "-r", str(run), "-f", "csv", "-o", str(tmp_path / "t.csv")],
        capture_output=True,
        timeout=PATIENCE,
        check=True,
    )
    assert written.returncode == 0
    assert out == (tmp_path / "t.csv").read_bytes()
    got = list(csv.DictReader(io.StringIO(out.decode())))
    expected = oracle.read_trials(run)
    assert len(got) == len(expected) == 60_000
    for row, want in zip(got, expected, strict=True):
        assert row["trial_name"] == want["trial_name"]
        assert row["exception_type"] == want["exception_type"]
        assert int(row["n_episodes"]) == want["n_episodes"]
        assert (float(row["reward"]) if row["reward"] else None) == want["reward"]
