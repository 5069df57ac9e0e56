"""Query engines: DuckDB (the default, in process) and Apache Spark (local, a given session, or Spark Connect).

The catalogue is written once, in DuckDB's dialect and within the portability rules of docs/spark.md;
`spark_sql` compiles it for Spark, `spark_sources` reads the run folders there, `spark` runs queries.
"""

from __future__ import annotations

import os

from rlsql.errors import UsageError

ENGINES = ("duckdb", "spark")
ENGINE_ENV = "RLSQL_ENGINE"


def resolve_engine(engine: str | None) -> str:
    """The engine asked for (`--engine`), else $RLSQL_ENGINE, else duckdb."""
    chosen = (engine or os.environ.get(ENGINE_ENV) or "duckdb").strip().lower()
    if chosen not in ENGINES:
        where = "--engine" if engine else ENGINE_ENV
        raise UsageError(f"{where} {chosen!r}: choose one of {', '.join(ENGINES)}")
    return chosen
