"""Every rlsql internal that `rlsql serve` uses, in one module: the rest of rlsql/serve/ reaches the package
through the public API (rlsql.query's QueryResult, rlsql's errors) and through the names below, so a
restructuring of the package re-points these imports here and nowhere else.

What is used, and why the public API does not do it:
- the catalogue's queries and views with their descriptions and parameters (rlsql.catalog,
  rlsql.engine.query): the query pages and their forms;
- runs resolved once as Run objects and folders scanned again (rlsql.runs.folders): the server names its
  runs once, and a run whose files appear is looked at again without resolving every run;
- rlsql.engine.query.run_query over those Run objects: the CLI's own path for a named query (a fresh
  cached copy is read as the CLI reads it; nothing is built);
- a lazy connection over Run objects (rlsql.engine.connection), sandboxed here, for ad hoc SQL and the
  pages' SQL;
- rlsql.duck.memorydb's `opened` hook: every connection a request opens, to interrupt at the time limit;
- rlsql.outputs.formats' JSON cell conversion and CSV rendering, so the API's rows are `rlsql query -f json`'s;
- rlsql.engine.query.sql_failure: a DuckDB error as the CLI's one line with DuckDB's hint;
- rlsql.outputs.findings.worst_first: the run page lists its findings in `rlsql findings`' order;
- rlsql.outputs.transcript: `rlsql trial`'s transcript of one trial and its shaping (cut texts, folded copied
  context, step titles), so the trial page shows what the CLI prints;
- rlsql.inspection.describe and the version: `rlsql mcp`'s `describe` tool and the name it gives its client.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from rlsql.cache.mirrors import resolve_runs
from rlsql.catalog.catalog import load_catalog
from rlsql.core import settings
from rlsql.core.errors import DataError, QueryError, RlsqlError, RlsqlWarning, UsageError
from rlsql.core.sqltext import identifier
from rlsql.core.version import __version__
from rlsql.duck import memorydb
from rlsql.engine.connection import LazyConnection, OnDemand
from rlsql.engine.query import QueryResult, declared_params, run_query, sql_failure
from rlsql.engine.sources import SourceContext
from rlsql.inspection.describe import Description
from rlsql.inspection.describe import describe as _describe
from rlsql.outputs import transcript as transcripts
from rlsql.outputs.findings import worst_first  # noqa: F401 - used by rlsql/serve/pages.py
from rlsql.outputs.formats import _jsonable, display, to_csv, to_json
from rlsql.runs.folders import HARBOR_DIR, Run, chosen_sources, scan_folder

Settings = settings.Settings

__all__ = [
    "HARBOR_DIR",
    "DataError",
    "QueryError",
    "QueryResult",
    "RlsqlError",
    "RlsqlWarning",
    "Run",
    "Settings",
    "UsageError",
    "display",
    "identifier",
    "settings",
    "to_csv",
    "to_json",
    "transcripts",
]


def version() -> str:
    return __version__


def describe(name: str, runs: Sequence[Run]) -> Description:
    """`rlsql describe NAME --run ...`: the columns with DuckDB's types over `runs`, the header's facts."""
    return _describe(name, runs)


#: a JSON-ready cell exactly as `rlsql query -f json` writes it (NaN and inf as null, dates ISO 8601)
json_cell: Callable[[Any], Any] = _jsonable


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str
    default: Any
    minimum: float | None
    doc: str
    maximum: float | None = None


@dataclass(frozen=True)
class Item:
    """A named query or view: what its page and the query list show."""

    name: str
    kind: str  # "query" or "view"
    description: str
    params: tuple[ParamInfo, ...]


def items() -> list[Item]:
    """Every named query, then every view, each by name."""
    catalog = load_catalog()
    return [
        Item(
            f.name,
            f.kind,
            " ".join(f.description.split()),
            tuple(ParamInfo(p.name, p.type, p.default, p.minimum, p.doc, p.maximum) for p in declared_params(f.name)),
        )
        for f in [*catalog.queries(), *catalog.views()]
    ]


def own_columns(name: str) -> set[str]:
    """The columns a query or view names in its header (not those it passes through, such as config keys)."""
    return set(load_catalog().files[name].column_docs) - {"*"}


def item(name: str) -> Item:
    """The named query or view `name`; UsageError with a did-you-mean otherwise."""
    load_catalog().query(name)
    return next(i for i in items() if i.name == name)


def resolve(specs: Sequence[str] | None) -> list[Run]:
    """`--run` values as the CLI resolves them (names, aliases, globs, folders of runs)."""
    return resolve_runs(list(specs) if specs else None)


def rescan(run: Run) -> Run:
    """`run` looked at again (a file appeared or went), keeping its name."""
    found = scan_folder(run.path)
    fresh = Run(run.name, run.path, found.artifacts if found else {}, found.ignored if found else ())
    return chosen_sources(fresh)


def run_named(
    name: str,
    runs: Sequence[Run],
    params: dict[str, str],
    consume: Callable[[duckdb.DuckDBPyConnection, str], Any],
    config_columns: list[dict] | None = None,
) -> Any:
    """`rlsql query NAME -p ...` over `runs`: the CLI's path; `consume(connection, sql)` fetches what it needs
    of the answer (so no row past the server's limits is fetched) and its value is returned. `config_columns`:
    run_table's config columns as worked out over more runs (config_columns below)."""
    return run_query(name, runs, params, consume, config_columns)


def config_columns(name: str, runs: Sequence[Run], params: dict[str, str]) -> list[dict]:
    """The config columns the query `name` has over `runs` (run_table's: the keys that differ, typed), [] for
    a query whose columns do not depend on the runs."""
    f = load_catalog().query(name)
    if "config_columns" not in f.body:
        return []
    return SourceContext(runs, config_keys=params.get("keys")).config_columns(f)


def write_parquet(name: str, runs: Sequence[Run], params: dict[str, str], path: Path) -> None:
    """A named query's rows as a Parquet file, with DuckDB's own types, written by DuckDB (no row passes
    through Python)."""
    run_query(name, runs, params, lambda con, sql: con.sql(sql).write_parquet(str(path)))


def sandboxed(runs: Sequence[Run], memory_limit: str) -> LazyConnection:
    """A connection with every view and macro over `runs` that can read only the runs' folders, cannot load
    extensions, and cannot change any setting (DuckDB enforces it; statements are checked as well: a COPY
    into a run folder would be allowed by these settings alone)."""
    con = LazyConnection(OnDemand(memorydb.memory_connection(), list(runs), load_catalog()))
    folders = sorted({str(r.path).rstrip("/") + "/" for r in runs})
    # exactly the files the runs' listings found: one that links out of its run folder (a trials CSV kept
    # elsewhere) is read as the CLI reads it, and nothing else outside the folders is
    files = sorted({str(a.path) for r in runs for a in r.artifacts.values()})
    con.execute("SET memory_limit = ?", [memory_limit])
    con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET allowed_paths = ?", [files])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def check_select(con: LazyConnection, sql: str) -> None:
    """Refuse anything but one SELECT (DESCRIBE, SHOW, SUMMARIZE, FROM ..., VALUES and WITH are SELECTs),
    as DuckDB's own parser reads the text."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL: {sql_failure(exc)}") from exc
    if not statements:
        raise UsageError("SQL: no statement given (only comments or blanks)")
    if len(statements) != 1:
        raise PermissionError(f"one statement at a time, please ({len(statements)} given)")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        # DuckDB parses INSTALL as a LOAD statement: name both, as the user may have written either
        what = "INSTALL and LOAD" if kind == duckdb.StatementType.LOAD else kind.name
        raise PermissionError(f"read-only: {what} statements are refused; only SELECT runs here")


def one_line(exc: duckdb.Error) -> str:
    """A DuckDB error as `rlsql sql` prints it: one line with DuckDB's hint."""
    return sql_failure(exc)


class Deadline:
    """Interrupts every DuckDB connection handed to it once `seconds` have passed, or when fire() is called
    sooner (rlsql.duck.memorydb's hook hands it each connection a request opens, and sets its memory limit);
    `why` says what stopped it: "time", or the reason fire() was given."""

    def __init__(self, seconds: float, active: set[Deadline] | None = None, memory_limit: str | None = None):
        self.why: str | None = None
        self._active = active if active is not None else set()
        self._memory_limit = memory_limit
        self._cons: list[duckdb.DuckDBPyConnection] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.fire, ["time"])
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        return self.why is not None

    def watch(self, con: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            self._cons.append(con)
            if self.expired:
                con.interrupt()

    def _opened(self, con: duckdb.DuckDBPyConnection) -> None:
        if self._memory_limit is not None:
            con.execute("SET memory_limit = ?", [self._memory_limit])
        self.watch(con)

    def fire(self, why: str = "time") -> None:
        with self._lock:
            self.why = self.why or why
            for con in self._cons:
                with contextlib.suppress(duckdb.Error):
                    con.interrupt()

    @contextlib.contextmanager
    def running(self) -> Iterator[Deadline]:
        """While the block runs: its connections are watched and the timer is on; both end with it."""
        token = memorydb.opened.set(self._opened)
        self._active.add(self)
        self._timer.start()
        try:
            yield self
        finally:
            self._timer.cancel()
            self._timer.join()
            self._active.discard(self)
            memorydb.opened.reset(token)
