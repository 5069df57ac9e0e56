"""The Python API: run a named query and get its rows, a pandas DataFrame or an Arrow table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from rlsql.cachebuild import with_cache_fallback
from rlsql.catalog import load_catalog
from rlsql.connection import RunSpec, check_artifacts, query_connection
from rlsql.duckdb_errors import query_failure, warn_rejected_rows
from rlsql.errors import QueryError, UsageError
from rlsql.runs import Run, resolve_runs


@dataclass
class QueryResult:
    """A named query's output. Rows are fetched once; df() and arrow() read the same result again."""

    name: str
    columns: list[str]
    rows: list[tuple]
    runs: list[Run] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    _con: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    _sql: str = field(default="", repr=False)

    def to_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def _relation(self) -> duckdb.DuckDBPyRelation:
        if self._con is None:
            raise QueryError("this result has no connection left to read from")
        return self._con.sql(self._sql)

    def df(self):
        """A pandas DataFrame (needs pandas: `pip install 'rlsql[frames]'`)."""
        return self._relation().df()

    def arrow(self):
        """A pyarrow Table (needs pyarrow: `pip install 'rlsql[frames]'`)."""
        relation = self._relation()
        # DuckDB 2 renamed fetch_arrow_table() to to_arrow_table(); accept both
        to_arrow = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        return to_arrow()


def bind_params(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """Validate `given` against the query's declared params; returns every param with its value."""
    qfile = load_catalog().query(name)
    declared = {p.name: p for p in qfile.params}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        accepted = ", ".join(declared) or "none"
        raise UsageError(f"{name} has no parameter {', '.join(unknown)} (accepted: {accepted})")
    values: dict[str, Any] = {}
    for pname, param in declared.items():
        raw = given.get(pname)
        if raw is None:
            values[pname] = param.default
        elif isinstance(raw, str):
            values[pname] = param.convert(raw)
        else:
            values[pname] = param.convert(str(raw))
    return values


def run_query(name: str, runs: Sequence[Run], params: dict[str, Any]) -> QueryResult:
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, params)
    needed = catalog.closure([name])
    check_artifacts(runs, needed, name)

    def answer() -> QueryResult:
        con, sql = query_connection(runs, qfile.name, catalog)
        for pname, value in values.items():
            # the name comes from the SQL header (validated identifier); the value is a bound parameter
            con.execute(f"SET VARIABLE {pname} = ?", [value])
        try:
            cursor = con.execute(sql)
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
            warn_rejected_rows(con)
        except duckdb.Error as exc:
            raise query_failure(exc, name, runs, needed) from exc
        return QueryResult(name, columns, rows, list(runs), values, con, sql)

    # a cached copy that fails to read costs a second answer from the CSVs, never a failed query
    return with_cache_fallback(answer)


def query(name: str, runs: RunSpec = None, **params: Any) -> QueryResult:
    """Run the named query `name` over `runs` (default: the packaged sample run).

    Warnings about skipped runs or rows are issued through the `warnings` module (RlsqlWarning).
    """
    return run_query(name, resolve_runs(runs), params)
