"""Every view and named query that declares a `grain` header holds one row per grain value.

The grain is the file's promise of what one row is (README, "SQL files"); BI tools join on it. The
rows are fetched through rlsql.connect() and counted in plain Python, on every fixture run and on
all of them together (the run column keeps runs apart).
"""

from __future__ import annotations

from collections import Counter

import pytest

import rlsql
from rlsql.catalog import load_catalog
from rlsql.sqltext import identifier
from tests.conftest import FIXTURE_RUNS, RUNS

GRAINED = sorted(
    (f.name, [c.strip() for c in f.grain.split(",")])
    for f in load_catalog().files.values()
    if f.grain and f.kind in ("view", "query")
)
# a grain is only worth declaring where rlsql can be held to it
assert len(GRAINED) >= 30


@pytest.fixture(scope="module", params=[*FIXTURE_RUNS, "all"])
def connection(request):
    runs = [RUNS / r for r in FIXTURE_RUNS] if request.param == "all" else [RUNS / request.param]
    con = rlsql.connect(runs)
    yield con
    con.close()


@pytest.mark.parametrize(("name", "grain"), GRAINED, ids=[g[0] for g in GRAINED])
def test_the_declared_grain_is_unique(connection, name: str, grain: list[str]) -> None:
    columns = ", ".join(identifier(c) for c in grain)
    rows = connection.execute(f"SELECT {columns} FROM {identifier(name)}").fetchall()
    repeated = {key: n for key, n in Counter(rows).items() if n > 1}
    assert not repeated, f"{name}: grain ({', '.join(grain)}) repeats: {list(repeated.items())[:5]}"
