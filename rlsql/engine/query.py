"""Named queries and ad hoc SQL over runs already found: rows, a pandas DataFrame or an Arrow table (the Python
API, rlsql/__init__.py, finds the runs and calls these)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import duckdb

from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.params import Param
from rlsql.core.errors import QueryError, RlsqlError, UsageError
from rlsql.core.sqltext import identifier
from rlsql.duck import badcells
from rlsql.duck.badcells import BadCells
from rlsql.duck.parsing import inner_statement
from rlsql.engine.answer import Answer, said_after
from rlsql.engine.copies import Copies
from rlsql.engine.failures import data_error, query_failure
from rlsql.engine.statements import open_connection, queries_connection, query_connection
from rlsql.runs.artifacts import check_artifacts
from rlsql.runs.folders import Run

T = TypeVar("T")


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
        _require("pandas", "df()")
        return self._relation().df()

    def arrow(self):
        """A pyarrow Table (needs pyarrow: `pip install 'rlsql[frames]'`)."""
        _require("pyarrow", "arrow()")
        relation = self._relation()
        # DuckDB 2 renamed fetch_arrow_table() to to_arrow_table(); accept both
        to_arrow = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        return to_arrow()


def _require(package: str, method: str) -> None:
    """A plain install has neither pandas nor pyarrow: say which extra brings it, not DuckDB's error."""
    import importlib.util

    if importlib.util.find_spec(package) is None:
        raise UsageError(f"QueryResult.{method} needs {package}, which is not installed: pip install 'rlsql[frames]'")


def declared_params(name: str) -> list[Param]:
    """The parameters a query or view takes: its own, then those of the views it reads (first one wins)."""
    catalog = load_catalog()
    catalog.query(name)  # an unknown name fails here, with suggestions
    found: dict[str, Param] = {p.name: p for p in catalog.files[name].params}
    for f in reversed(catalog.closure([name])):
        for p in f.params:
            found.setdefault(p.name, p)
    return list(found.values())


class Bound(dict[str, Any]):
    """What bind_params returns: every parameter query `name` declares, with its checked, typed value.

    Binding it again for the same query returns it as it is: a caller that checks the parameters early
    (the CLI, before any file is read) hands it down, and they are validated once per query."""

    def __init__(self, name: str, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.name = name


def bind_params(name: str, given: dict[str, Any]) -> Bound:
    """Validate `given` against the query's (or view's) declared params; returns every param with its value."""
    if isinstance(given, Bound) and given.name == name:
        return given
    declared = {p.name: p for p in declared_params(name)}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        accepted = ", ".join(declared) or "none"
        raise UsageError(f"{name} has no parameter {', '.join(unknown)} (accepted: {accepted})")
    return Bound(name, {pname: _convert(param, given.get(pname)) for pname, param in declared.items()})


def _convert(param: Param, raw: Any) -> Any:
    if raw is None:
        return param.default
    return param.convert(raw if isinstance(raw, str) else str(raw))


def set_variables(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> None:
    """Bind a query's parameters on `con` as the DuckDB variables its views read (`getvariable`)."""
    for pname, value in values.items():
        # the name is a validated identifier (SQL header or checked here); the value is a bound parameter
        con.execute(f"SET VARIABLE {identifier(pname)} = ?", [value])


def reset_variables(con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
    """Unbind the parameters `names` on `con` (a view must not see a parameter set for an earlier query)."""
    for pname in names:
        con.execute(f"RESET VARIABLE {identifier(pname)}")


#: what takes a statement's rows: the connection and the statement, run on it by the consumer (the CLI
#: writes them out as DuckDB produces them, rlsql/outputs/rows.py; the Python API fetches them)
Consume = Callable[[duckdb.DuckDBPyConnection, str], T]


def run_query(
    name: str,
    runs: Sequence[Run],
    params: dict[str, Any],
    consume: Consume | None = None,
    config_columns: list[dict] | None = None,
    copies: Copies | None = None,
    peers: Sequence[Run] | None = None,
) -> Any:
    """Run the named query or view `name` over `runs`: a QueryResult, or what `consume` returns.
    `config_columns`: run_table's config columns worked out over more runs than `runs`; `peers`: the runs whose
    configs and listing it reads, `runs` among them (statements.py). `copies`: the fresh cached copies the
    command hands in, read instead of the files (rlsql/engine/copies.py).

    The whole answer, `consume` included, is retried where a retry mends it (rlsql/engine/answer.py):
    `consume` must be able to start over."""
    catalog = load_catalog()
    qfile = catalog.query(name)
    values = bind_params(name, params)
    needed = catalog.closure([name])
    check_artifacts(runs, needed, name)

    answering = Answer(copies)

    def answer(bad_cells: BadCells | None) -> Any:
        con, sql = query_connection(
            runs,
            qfile.name,
            catalog,
            bad_cells,
            values.get("keys"),
            config_columns,
            copies=answering.copies,
            peers=peers,
        )
        set_variables(con, values)
        try:
            result = None
            if bad_cells is not None and bad_cells.naming:
                badcells.name_cells(con, sql)
            elif consume is not None:
                result = consume(con, sql)
            else:
                cursor = con.execute(sql)
                columns = [d[0] for d in cursor.description or []]
                result = QueryResult(name, columns, cursor.fetchall(), list(runs), values, con, sql)
            said_after(con)  # rows DuckDB rejected, trajectory files the query skipped
            badcells.count(con, bad_cells)
        except duckdb.Error as exc:
            raise query_failure(exc, name, runs, needed) from exc
        return result

    return answering.run(answer)


def run_queries(
    names: Sequence[str],
    runs: Sequence[Run],
    params: dict[str, dict[str, Any]],
    consume: Consume,
    copies: Copies | None = None,
    peers: Sequence[Run] | None = None,
) -> dict:
    """Several named queries over the same `runs` on one connection (statements.queries_connection): query ->
    what `consume` returns for its statement, `params[query]` its parameters; `peers`: the runs whose configs
    and listing it reads (SourceContext.peers). Any failure fails them all (the caller may ask each alone); what
    a retry mends is retried for all of them together, as run_query does."""
    catalog = load_catalog()
    values = {name: bind_params(name, params.get(name, {})) for name in names}
    for name in names:
        check_artifacts(runs, catalog.closure([name]), name)

    answering = Answer(copies)

    def answer(bad_cells: BadCells | None) -> dict:
        con, statements = queries_connection(runs, names, catalog, bad_cells, copies=answering.copies, peers=peers)
        results = {}
        name = names[0]
        try:
            for name in names:
                set_variables(con, values[name])
                results[name] = consume(con, statements[name])
            said_after(con)  # once: the reject tables hold every statement's rejected rows, each line once
        except duckdb.Error as exc:
            raise query_failure(exc, name, runs, catalog.closure([name])) from exc
        return results

    return answering.run(answer)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


def referenced_objects(sql: str) -> list[str]:
    """The catalog's views, queries and macros that ad hoc `sql` may read, each with what it needs.

    Every word of the text that names a catalog object counts (a column called like a view costs
    only that view's creation), so no SQL parser has to understand the user's dialect.
    """
    catalog = load_catalog()
    words = {w.lower() for w in _WORD.findall(sql)}
    names = [f.name for f in catalog.order if f.kind != "source" and f.name in words]
    return [f.name for f in catalog.closure(names)]


def sql_params(names: Sequence[str], given: dict[str, str]) -> dict[str, Any]:
    """Values for `rlsql sql -p`: typed as the objects in `names` declare them; any other name is text."""
    catalog = load_catalog()
    declared: dict[str, Param] = {}
    for name in names:
        for p in catalog.files[name].params:
            declared.setdefault(p.name, p)
    values = {pname: _convert(param, given.get(pname)) for pname, param in declared.items()}
    for pname, raw in given.items():
        if pname in declared:
            continue
        if not _VARIABLE.match(pname):
            raise UsageError(f"-p {pname}=...: a variable name is lower-case letters, digits and _")
        values[pname] = raw
    return values


_MISSING_TABLE = re.compile(r"Table with name (?P<name>[^\s!]+) does not exist!")


def sql_failure(exc: duckdb.Error) -> str:
    """DuckDB's message for a failed ad hoc statement on one line: the error and its hint, no caret drawing.

    The connection holds only the views the SQL names, so for an unknown table DuckDB's own
    "did you mean" cannot see the rest of the catalog: the hint then comes from the catalog.
    """
    kept = []
    for line in str(exc).splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            kept.append(line.strip())
    missing = _MISSING_TABLE.search(kept[0]) if kept and isinstance(exc, duckdb.CatalogException) else None
    if missing:
        import difflib

        names = [f.name for f in load_catalog().files.values() if f.kind in ("view", "query")]
        close = difflib.get_close_matches(missing["name"].lower(), names, n=3, cutoff=0.6)
        kept = [kept[0], *([f"Did you mean {', '.join(close)}?"] if close else [])]
    return " ".join(kept) or type(exc).__name__


def run_sql(
    sql: str,
    runs: Sequence[Run],
    params: dict[str, str] | None = None,
    consume: Consume | None = None,
    copies: Copies | None = None,
) -> Any:
    """Run ad hoc SQL (one or more statements; the last one's rows come back, or go to `consume` as in
    run_query) over every view and macro, reading the fresh `copies` handed in as run_query does."""
    if not sql.strip():
        raise UsageError("no SQL given")
    catalog = load_catalog()
    names = referenced_objects(sql)
    needed = catalog.closure(names)
    check_artifacts(runs, needed, "the SQL")
    values = sql_params(names, params or {})
    answering = Answer(copies)

    def answer(bad_cells: BadCells | None) -> Any:
        # run_table's columns are laid out when its view is created: `-p keys=` picks them then
        keys = values.get("keys") if any(catalog.files[n].per_runs for n in names) else None
        con = open_connection(runs, names, catalog, config_keys=keys, bad_cells=bad_cells, copies=answering.copies)
        set_variables(con, values)
        try:
            if consume is not None:
                statements = con.extract_statements(sql)
                for statement in statements[:-1]:
                    con.execute(statement)
                last = inner_statement(statements[-1].query) if statements else None
                result = None
                if bad_cells is not None and bad_cells.naming:
                    if last:
                        badcells.name_cells(con, last)
                elif last:
                    result = consume(con, last)
            else:
                cursor = con.execute(sql)
                columns = [d[0] for d in cursor.description] if cursor.description else []
                rows = cursor.fetchall() if cursor.description else []
                result = QueryResult("sql", columns, rows, list(runs), values, con, sql)
            said_after(con)  # rows DuckDB rejected, trajectory files the SQL skipped
            badcells.count(con, bad_cells)
        except duckdb.Error as exc:
            problem: RlsqlError | None = data_error(exc)
            if problem is None and isinstance(exc, duckdb.InvalidInputException) and "CSV" in str(exc):
                problem = query_failure(exc, "the SQL", runs, needed)
            raise problem or QueryError(f"SQL: {sql_failure(exc)}") from exc
        return result

    return answering.run(answer)
