"""Every view and named query that declares a `grain` header holds one row per grain value.

The grain is the file's promise of what one row is (docs/architecture.md, "The SQL layer"); BI tools join on it. The
rows are fetched through the connection rlsql answers queries with (the session's
`fixture_connections`, one per run set) and counted in plain Python, on every fixture run and on all
of them together (the run column keeps runs apart).
"""

from __future__ import annotations

from collections import Counter

import pytest

from rlsql.catalog.catalog import load_catalog
from rlsql.core.sqltext import identifier
from tests.conftest import FixtureConnections

GRAINED = sorted(
    (f.name, [c.strip() for c in f.grain.split(",")])
    for f in load_catalog().files.values()
    if f.grain and f.kind in ("view", "query")
)
# a grain is only worth declaring where rlsql can be held to it
assert len(GRAINED) >= 30


@pytest.fixture(params=FixtureConnections.SETS)
def connection(request, fixture_connections):
    return fixture_connections[request.param]


@pytest.mark.parametrize(("name", "grain"), GRAINED, ids=[g[0] for g in GRAINED])
def test_the_declared_grain_is_unique(connection, name: str, grain: list[str]) -> None:
    columns = ", ".join(identifier(c) for c in grain)
    rows = connection.execute(f"SELECT {columns} FROM {identifier(name)}").fetchall()
    repeated = {key: n for key, n in Counter(rows).items() if n > 1}
    assert not repeated, f"{name}: grain ({', '.join(grain)}) repeats: {list(repeated.items())[:5]}"
