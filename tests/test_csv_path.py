"""The fast CSV path (sql/sources/_read_csv.sql.j2) keeps every row with its own run and file.

Each row's run comes from DuckDB's file_index, checked against its filename; a CSV with a column
named `filename` or `file_index` shadows those virtual columns, so its group takes the join on the
path instead. Both ways, in place and from the Parquet cache, give the oracle's figures.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import rlsql
from tests import oracle
from tests.compare import assert_rows_match

HEADER = "task_name,trial_name,n_episodes,exception_type,reward"
QUERIES = ["turn_stats", "reward_summary", "exception_distribution", "turns_by_exception"]


def trials(n: int, extra: str = "") -> str:
    rows = [
        f"t{i % 3},t{i}__x,{1 + i % 4}.0,{'AgentTimeoutError' if i % 5 == 0 else ''},{i % 2}.0{extra}" for i in range(n)
    ]
    return "\n".join(rows) + "\n"


def make_runs(root: Path, shadowing: bool) -> list[Path]:
    """Three runs of one header (one read_csv over all three files); with `shadowing`, the header
    holds columns named like DuckDB's virtual columns, with values that would mislead a lookup."""
    runs = []
    for i, n in enumerate((5, 9, 2)):
        run = root / f"run{i}"
        run.mkdir(parents=True)
        header = HEADER + (",file_index,filename" if shadowing else "")
        body = trials(n, ",7,/elsewhere.csv" if shadowing else "")
        (run / "20260105_120000_trial_results.csv").write_text(header + "\n" + body, encoding="utf-8")
        runs.append(run)
    return runs


@pytest.mark.parametrize("cached", [False, True], ids=["in place", "from the cache"])
@pytest.mark.parametrize("shadowing", [False, True], ids=["plain header", "file_index and filename columns"])
@pytest.mark.parametrize("name", QUERIES)
def test_rows_keep_their_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, shadowing: bool, cached: bool
) -> None:
    runs = make_runs(tmp_path / "runs", shadowing)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "on" if cached else "off")
    with warnings.catch_warnings():
        warnings.simplefilter("error", rlsql.RlsqlWarning)  # no row skipped, no run lacking its file
        got = rlsql.query(name, runs).to_dicts()
    assert_rows_match(got, oracle.expected(name, runs), f"{name}, shadowing={shadowing}, cached={cached}")
    if cached:
        assert list((tmp_path / "cache").rglob("*.parquet")), "the cache was not used"
