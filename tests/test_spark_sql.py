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
from rlsql.engine.spark_sql import _inline, compile_file

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
