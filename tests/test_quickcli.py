"""The console entry point's fast path (rlsql/quickcli.py): a plain `rlsql query` answered without typer
prints, warns and fails exactly as the typer command does, and every other command line goes to typer."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rlsql import cli, quickcli
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS


def run(entry, args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        entry()
    out, err = capsys.readouterr()
    return stop.value.code, out, err


TINY = str(RUNS / "tiny")

SAME = [
    ["query", "turn_stats", "-r", TINY, "-f", "csv"],
    ["query", "-f", "json", "turns_by_exception", "--run", TINY, "--run", str(RUNS / "calendar")],
    ["query", "reward_curve", f"--run={TINY}", "--format=jsonl", "-p", "span=3"],
    ["query", "turn_histogram", "-r", TINY, "-p", "bucket=2"],  # a parameter the query does not take
    ["query", "turn_stats", "-r", TINY, "-f", "nope"],  # usage error, exit 2
    ["query", "no_such_query", "-r", TINY],  # usage error naming the query
    ["query", "turn_stats", "-r", str(RUNS / "no-such-run")],  # missing run, exit 3
    ["query", "turn_histogram", "-r", TINY, "-p", "bucket"],  # a parameter without a value
    ["query", "turn_stats", "-r", str(RUNS / "harbor"), "-f", "csv"],  # warnings on stderr
    ["query", "turn_stats", "-f", "csv"],  # no --run: the sample run, with its notice
]


@pytest.mark.parametrize("args", SAME, ids=[" ".join(a[:2] + a[2:3]) for a in SAME])
def test_the_fast_path_answers_as_the_typer_command(args, capsys, monkeypatch) -> None:
    assert quickcli.plain_query(args) is not None
    assert run(quickcli.main, args, capsys, monkeypatch) == run(cli.main, args, capsys, monkeypatch)


def test_the_fast_path_gives_the_oracle_figures(capsys, monkeypatch) -> None:
    code, out, _ = run(quickcli.main, ["query", "turn_stats", "-r", TINY, "-f", "json"], capsys, monkeypatch)
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [RUNS / "tiny"]), "fast path")


@pytest.mark.parametrize("args", [
    [],
    ["list"],
    ["query"],
    ["query", "--help"],
    ["query", "turn_stats", "-o", "out.csv"],
    ["query", "turn_stats", "-n", "1"],
    ["query", "turn_stats", "-v"],
    ["-v", "query", "turn_stats"],
    ["--no-cache", "query", "turn_stats"],
    ["query", "turn_stats", "extra"],
    ["query", "turn_stats", "-r"],
    ["query", "turn_stats", "-r", "-weird"],
    ["query", "turn_stats", "--run="],
    ["query", "turn_stats", "-f", "csv", "-f", "json"],
    ["query", "turn_stats", "--", "x"],
    ["query", "turn_stats", "-rfoo"],
    ["query", "turn_stats", "--engine", "duckdb"],
])
def test_every_other_command_line_goes_to_typer(args) -> None:
    assert quickcli.plain_query(args) is None


def test_the_console_script_takes_the_fast_path_without_importing_typer() -> None:
    code = ("import sys; sys.argv = ['rlsql', 'query', 'turn_stats', '-r', sys.argv[1], '-f', 'csv']\n"
            "from rlsql import quickcli\n"
            "try:\n    quickcli.main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "print('typer' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, TINY], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "False"
    assert done.stdout.startswith("run,trials,mean,median,std,min,max\n")


def test_a_warm_start_imports_neither_typer_nor_jinja2_nor_sqlglot(tmp_path) -> None:
    import os

    code = ("import sys; sys.argv = ['rlsql', 'query', 'turn_stats', '-r', sys.argv[1], '-f', 'csv']\n"
            "from rlsql import quickcli\n"
            "try:\n    quickcli.main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "print(sorted(m for m in ('typer', 'jinja2', 'sqlglot', 'yaml') if m in sys.modules), file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if k != "RLSQL_NO_CACHE"}
    env["RLSQL_CACHE_DIR"] = str(tmp_path / "cache")
    said = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code, TINY], capture_output=True, text=True, check=True, env=env)
        said.append(done.stderr.strip().splitlines()[-1])
        assert done.stdout.startswith("run,trials,mean,median,std,min,max\n")
    assert said == ["['jinja2', 'sqlglot']", "[]"]  # the first start fills the caches, the second needs neither
