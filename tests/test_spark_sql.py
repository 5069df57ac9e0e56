"""Spark SQL compilation (rlsql/engines/spark_sql.py) without a Spark session: the compiled-SQL cache.

A `* REPLACE (...)` compiles to an explicit column list read from the session, so its compiled SQL
belongs to the columns it was compiled for: with the cache on (a user's default), the metric columns of
one set of runs were once reused for another, and Spark then failed to create `steps` ("cannot resolve
async/staleness_min"; found when the suite turned the SQL caches on, bench/RESULTS.md, session 5).
"""

from __future__ import annotations

import pytest

from rlsql.catalog import load_catalog
from rlsql.engines.spark_sql import CompiledCache, compile_file

FIXED = ["trainer/global_step", "global_step", "async/discarded_count"]


def listing(extra: list[str]):
    """What Spark lists for metric_rows' probe (`* EXCLUDE (...)` over metrics_src): the kept columns."""
    return lambda sql: [*FIXED, *extra]


@pytest.mark.parametrize("fresh_process", [False, True])
def test_a_star_replace_is_compiled_again_for_other_columns(tmp_path, monkeypatch, fresh_process) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RLSQL_NO_CACHE", raising=False)
    catalog = load_catalog()
    f = catalog.files["metric_rows"]
    cache = CompiledCache()
    (_, wide), = compile_file(f, catalog, {}, listing(["timing/step", "a/wide"]), "metrics_src:wide", cache)
    cache.save()
    if fresh_process:
        cache = CompiledCache()  # as the next process finds it on disk
        assert cache.entries, "the compiled SQL was not saved in RLSQL_CACHE_DIR"
    (_, narrow), = compile_file(f, catalog, {}, listing(["timing/step"]), "metrics_src:narrow", cache)
    assert "a/wide" in wide
    assert "a/wide" not in narrow and "timing/step" in narrow
    # the same columns again: the cached statement, unchanged
    (_, again), = compile_file(f, catalog, {}, listing(["timing/step", "a/wide"]), "metrics_src:wide", cache)
    assert again == wide


def test_the_cache_lives_in_rlsql_cache_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RLSQL_NO_CACHE", raising=False)
    catalog = load_catalog()
    cache = CompiledCache()
    compile_file(catalog.files["metric_rows"], catalog, {}, listing([]), "metrics_src:x", cache)
    cache.save()
    assert (tmp_path / "cache" / CompiledCache.NAME).is_file()
