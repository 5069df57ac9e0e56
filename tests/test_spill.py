"""DuckDB spills into a folder rlsql owns, never into the current folder (which may be a run folder)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import rlsql
from rlsql.engine.statements import open_connection
from rlsql.runs.folders import resolve_runs
from rlsql.runs.writes import private_root
from tests.conftest import RUNS

PACKAGE = Path(rlsql.__file__).parent
#: a sort of this many md5 strings under a 40 MB memory limit must spill (DuckDB writes its temp files)
SPILLING_SORT = "SELECT count(*) FROM (SELECT md5(i::VARCHAR) AS m FROM range(1000000) t(i) ORDER BY m)"


def _spill_inside(con, cwd: Path) -> tuple[list[str], str]:
    con.execute("SET memory_limit = '40MB'")
    con.execute("SET threads = 1")
    con.execute("SET enable_progress_bar = false")
    con.execute("SET preserve_insertion_order = false")
    seen: list[str] = []
    # a cursor kept open keeps DuckDB's temp files alive while we look at the current folder
    cur = con.execute(SPILLING_SORT)
    seen = sorted(os.listdir(cwd))
    assert cur.fetchone()[0] == 1000000
    return seen, con.execute("SELECT current_setting('temp_directory')").fetchone()[0]


@pytest.mark.parametrize("opener", ["open_connection", "connect"])
def test_a_spilling_query_writes_nothing_into_the_current_run_folder(opener, tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    before = sorted(os.listdir(run))
    monkeypatch.chdir(run)  # the user runs rlsql from inside a run folder
    con = open_connection(resolve_runs([run])) if opener == "open_connection" else rlsql.connect([run])
    seen, temp_directory = _spill_inside(con, run)
    con.close()
    assert seen == before, "DuckDB spilled into the run folder"
    assert Path(temp_directory).parent == private_root() or Path(temp_directory).parent.name.startswith("rlsql-spill-")
    assert sorted(os.listdir(run)) == before


def test_every_duckdb_connection_goes_through_memorydb() -> None:
    """One place opens DuckDB connections, so none of them spills into the current folder."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "memorydb.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bduckdb\.connect\(", line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}")
    assert not offenders, offenders


_PROGRESS = """
import rlsql
from rlsql.duck.memorydb import memory_connection
from tests.conftest import RUNS
con = rlsql.connect([RUNS / "tiny"])
settings = [c.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]
            for c in (memory_connection(), con, con.cursor())]
print("bar:" + ",".join(str(s) for s in settings))
"""


def _progress_settings(stdout_tty: bool) -> str:
    """The progress-bar setting of a plain connection, a connect() and its cursor, in a child process whose
    stderr is a terminal and whose stdout is a terminal or a pipe."""
    import pty
    import subprocess
    import sys

    main, child = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROGRESS],
            stdin=subprocess.DEVNULL,
            stdout=child if stdout_tty else subprocess.PIPE,
            stderr=child,
            cwd=Path(__file__).parent.parent,
            timeout=120,
        )
        os.close(child)
        child = -1
        assert proc.returncode == 0
        if not stdout_tty:
            return proc.stdout.decode()
        out = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other end closed: everything was read
                break
            if not chunk:
                break
            out += chunk
        return out.decode(errors="replace")
    finally:
        if child >= 0:
            os.close(child)
        os.close(main)


def test_duckdb_progress_bar_never_draws_into_a_redirected_stdout() -> None:
    """DuckDB draws its bar into stdout whether or not it is a terminal: a slow `rlsql query -f csv > out.csv`
    would carry its frames. Off wherever stdout is not a terminal, on where a person watches both (a cursor's
    own default is off)."""
    assert "bar:False,False,False" in _progress_settings(stdout_tty=False)
    assert "bar:True,True," in _progress_settings(stdout_tty=True)
