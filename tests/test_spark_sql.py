"""Spark SQL compilation (rlsql/engine/spark_sql.py) without a Spark session: the compiled statements kept.

A `* REPLACE (...)` compiles to an explicit column list read from the session, so its compiled SQL
belongs to the columns it was compiled for: the metric columns of one set of runs were once reused for
another, and Spark then failed to create `steps` ("cannot resolve async/staleness_min").
"""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from rlsql.catalog.catalog import load_catalog
from rlsql.engine.spark_sql import _hoist_ctes, _inline, compile_file

FIXED = ["trainer/global_step", "global_step", "async/discarded_count"]


def listing(extra: list[str]):
    """What Spark lists for metric_rows' probe (`* EXCLUDE (...)` over metrics_src): the kept columns."""
    return lambda sql: [*FIXED, *extra]


def test_a_star_replace_is_compiled_again_for_other_columns() -> None:
    catalog = load_catalog()
    f = catalog.files["metric_rows"]
    cache: dict = {}
    ((_, wide),) = compile_file(f, catalog, {}, listing(["timing/step", "a/wide"]), "metrics_src:wide", cache)
    ((_, narrow),) = compile_file(f, catalog, {}, listing(["timing/step"]), "metrics_src:narrow", cache)
    assert "a/wide" in wide
    assert "a/wide" not in narrow and "timing/step" in narrow
    # the same columns again: the kept statement, unchanged, without compiling
    ((_, again),) = compile_file(f, catalog, {}, lambda sql: pytest.fail("compiled again"), "metrics_src:wide", cache)
    assert again == wide


def test_an_inlined_macro_keeps_its_arguments_and_body_whole() -> None:
    """Inlined as text, `10 - m(a - b)` with m(n) = n * 2 + 1 read 10 - a - b * 2 + 1 (task_diff's p-values
    were wrong on Spark); DuckDB's own macro is the reference."""
    macros = {"m": (["n"], sqlglot.parse_one("n * 2 + 1", read="duckdb"))}
    tree = sqlglot.parse_one("SELECT 10 - m(a - b) AS v FROM (SELECT 5 AS a, 3 AS b)", read="duckdb")
    inlined = _inline(tree, macros, "test").sql(dialect="duckdb")
    con = duckdb.connect()
    con.execute("CREATE MACRO m(n) AS n * 2 + 1")
    want = con.execute("SELECT 10 - m(a - b) AS v FROM (SELECT 5 AS a, 3 AS b)").fetchone()
    assert want == (5,)
    assert con.execute(inlined).fetchone() == want


@pytest.mark.parametrize(("span", "depth"), [(1, 0), (5, 103), (100, 2080)])
def test_the_ema_window_depth_folds_to_a_literal_frame_bound(span: int, depth: int) -> None:
    """Spark takes only a literal as a frame bound: reward_curve's ema_depth(span) is folded when compiled.
    By hand: the depth d is the least with (1 - 2/(span+1))^d < 2^-60, so d = ceil(60 ln 2 / -ln(1 - alpha)):
    span 5 (alpha 1/3): 41.589 / 0.405465 = 102.57 -> 103; span 100: 41.589 / 0.0200007 = 2079.4 -> 2080;
    span 1 (alpha 1): the current value alone."""
    catalog = load_catalog()
    statements = compile_file(catalog.files["reward_curve"], catalog, {"span": span})
    text = " ".join(sql for _, sql in statements)
    assert f"ROWS BETWEEN {depth} PRECEDING AND CURRENT ROW" in " ".join(text.split())


SHARED = """
WITH a AS (SELECT 1 AS x UNION ALL SELECT 2),
    b AS (SELECT x + 1 AS y FROM a),
    c AS (SELECT y FROM b WHERE y > 2),
    d AS (SELECT 5 AS z)
SELECT c.y, b.y AS b_y, d.z FROM c JOIN b ON b.y = c.y CROSS JOIN d ORDER BY 1
"""


def _duck_rows(statements: list[tuple[str, str]]) -> list[tuple]:
    """The last statement's rows in DuckDB, the ones before it created as views (how Spark gets them)."""
    con = duckdb.connect()
    *helpers, (_, main) = statements
    for view, sql in helpers:
        con.execute(f"CREATE VIEW {view} AS {sqlglot.transpile(sql, read='spark', write='duckdb')[0]}")
    return con.execute(sqlglot.transpile(main, read="spark", write="duckdb")[0]).fetchall()


def test_a_cte_read_twice_is_hoisted_with_the_ctes_it_reads() -> None:
    """Spark computes a CTE again at each reference: b (read by c and by the query) becomes a helper view,
    with a, which b reads (a view sees no CTE); c and d, read once, stay. By hand: a = {1, 2}, b = {2, 3},
    c = {3}: one row (3, 3, 5)."""
    helpers, main = _hoist_ctes(sqlglot.parse_one(SHARED, read="duckdb"), "q")
    assert [view for view, _ in helpers] == ["q__a", "q__b"]
    assert [cte.alias for cte in main.args["with_"].expressions] == ["c", "d"]
    assert "q__a" in helpers[1][1]
    statements = [*helpers, ("q", main.sql(dialect="spark"))]
    assert _duck_rows(statements) == [(3, 3, 5)]
    assert _duck_rows([("q", SHARED)]) == [(3, 3, 5)]


def test_a_recursive_ctes_inputs_are_hoisted_but_not_what_reads_it() -> None:
    """Under WITH RECURSIVE every plain CTE becomes a helper view (base), but not one that reads the recursive
    CTE (s): a view cannot see r. By hand: n = 1, 2, 3, each with k = 10."""
    sql = """
    WITH RECURSIVE base AS (SELECT 10 AS k),
        r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3),
        s AS (SELECT n FROM r)
    SELECT s.n, base.k FROM s CROSS JOIN base ORDER BY 1
    """
    helpers, main = _hoist_ctes(sqlglot.parse_one(sql, read="duckdb"), "q")
    assert [view for view, _ in helpers] == ["q__base"]
    assert [cte.alias for cte in main.args["with_"].expressions] == ["r", "s"]
    assert _duck_rows([*helpers, ("q", main.sql(dialect="spark"))]) == [(1, 10), (2, 10), (3, 10)]


@pytest.mark.parametrize(
    "sql",
    [
        # read once each: nothing to gain
        "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
        # a CTE with a column list cannot be a plain view's body as it stands
        "WITH a(x) AS (SELECT 1) SELECT * FROM a AS p, a AS q",
        # the name a is defined again inside: renaming by name would reach the inner one
        "WITH a AS (SELECT 1 AS x) SELECT * FROM a, (WITH a AS (SELECT 2 AS x) SELECT x FROM a) AS i, a AS j",
    ],
)
def test_ctes_stay_where_hoisting_gains_nothing_or_is_unsafe(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="duckdb")
    helpers, main = _hoist_ctes(tree, "q")
    assert helpers == [] and main.sql() == sqlglot.parse_one(sql, read="duckdb").sql()
