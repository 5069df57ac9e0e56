"""Build a DuckDB connection holding rlsql's views and macros over a set of runs.

Sources are rendered here from what `runs.py` found (paths, headers, the flattened config); every
value reaches the SQL as an escaped literal. Only the views a caller needs are created, so a
query pays for its own dependencies only.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from rlsql import badcells, cache, csvread, harbor
from rlsql.badcells import BadCells
from rlsql.cachebuild import cached_copy
from rlsql.catalog import Catalog, Column, SqlFile, load_catalog
from rlsql.config import config_rows
from rlsql.duckconn import memory_connection
from rlsql.duckdb_errors import data_error, one_line
from rlsql.duckpaths import why_unnameable
from rlsql.errors import DataError, RlsqlWarning
from rlsql.rawlogs import LOG_SOURCES, log_context, reads_logs
from rlsql.runs import CONFIG_NAMES, CSV_ARTIFACTS, HARBOR_DIR, HARBOR_RESULT, Run, csv_header, resolve_runs
from rlsql.sqltext import identifier, literal

RunSpec = str | Path | Sequence[str | Path] | None

ARTIFACT_LABELS = {
    "metrics": "trainer metrics",
    "trials": "trial results",
    "vllm": "vLLM engine stats",
    "config": "rl_config.yaml",
    "harbor": "Harbor trial results",
    "logs": "raw training logs",
}
#: an artifact a source reads -> the artifacts that satisfy it (a run's trials come from its CSV, else
#: from Harbor's trace_jobs/*/result.json)
ARTIFACT_ALTERNATIVES = {"trials": ("trials", "harbor"), "harbor": ("trials", "harbor")}
#: ...and trainer metrics and vLLM stats come from the CSV, else from the raw training logs (rlsql/rawlogs.py)
ARTIFACT_ALTERNATIVES.update({"metrics": ("metrics", "logs"), "vllm": ("vllm", "logs")})


_GLOB = re.compile(r"[*?\[\]{}]")


#: columns that hold whole numbers (turns, tokens, steps, counts), read as DOUBLE so `3.0` parses and
#: handed on as BIGINT; a cell with a fraction or beyond 2**53 (where a DOUBLE stops holding every
#: integer) reads as empty instead of being rounded or failing a cast (`rlsql check` lists it)
INTEGER_COLUMNS = {
    "trials": ("n_episodes", "n_input_tokens", "n_output_tokens"),
    # counts: read as BIGINT by the sources (issue 16), through the same guard
    "metrics": ("trainer/global_step", "global_step", "async/discarded_count", "async/effective_batch_groups",
                "async/effective_batch_samples", "generate/min_num_tokens", "generate/max_num_tokens",
                "batch_errors/total_batches", "batch_errors/total_instances", "batch_errors/total_successful",
                "batch_errors/total_failed", "batch_errors/total_masked"),
    "vllm": ("n_engines_reporting", "unique_ips", "total_running_requests", "total_waiting_requests",
             "min_running_requests", "max_running_requests"),
}


@dataclass(frozen=True)
class CsvFile:
    """One CSV as a source template sees it; `cached` is its fresh Parquet copy, if any (rlsql/cache.py)."""

    run: str
    path: str
    header: list[str]
    types: dict[str, str]
    cached: str | None = None
    #: the read buffer DuckDB needs for the file's longest line (None: its default)
    buffer: int | None = None


def where_looked(run: Run, kind: str) -> str:
    if kind == "config":
        return f"{run.path} for {' or '.join(CONFIG_NAMES)}"
    if kind == "harbor":
        return f"{run.path} for {HARBOR_DIR}/*/{HARBOR_RESULT}"
    prefixed, plain = CSV_ARTIFACTS[kind]
    if kind == "trials":
        return f"{run.path} for *_{prefixed}, {plain} or {HARBOR_DIR}/*/{HARBOR_RESULT}"
    return f"{run.path} for *_{prefixed}, {plain} or training logs (*.out, *.log, logs/)"


def check_artifacts(runs: Sequence[Run], files: Iterable[SqlFile], query: str) -> None:
    """Fail when no run has an artifact the query reads; warn for the runs that lack it."""
    for f in files:
        if f.kind != "source" or not f.artifact or f.optional:
            continue
        kinds = ARTIFACT_ALTERNATIVES.get(f.artifact, (f.artifact,))
        lacking = [r for r in runs if all(r.artifact(kind) is None for kind in kinds)]
        label = ARTIFACT_LABELS[f.artifact]
        if len(lacking) == len(runs):
            run = lacking[0]
            more = f" (nor do {len(lacking) - 1} other runs)" if len(lacking) > 1 else ""
            raise DataError(
                f"{query} needs the {label} of run {run.name!r}, and there are none{more}: "
                f"looked in {where_looked(run, f.artifact)}"
            )
        for run in lacking:
            warnings.warn(
                f"run {run.name!r} has no {label} (looked in {where_looked(run, f.artifact)}); "
                f"{query} has nothing from it",
                RlsqlWarning,
                stacklevel=3,
            )


class SourceContext:
    """What the source templates are rendered with; each piece is computed once, when first needed."""

    def __init__(self, runs: Sequence[Run], config_function: str | None = None, bad_cells: str | None = None):
        self.runs = list(runs)
        #: set by rlsql.connect(): config_src calls this function of the connection for config_docs
        self.config_function = config_function if any(r.artifact("config") for r in self.runs) else None
        #: whole-number cells that read as empty: None, 'fail' or 'record' (rlsql/badcells.py)
        self.bad_cells = bad_cells

    @functools.cached_property
    def run_rows(self) -> list[dict]:
        return [
            {"name": r.name, "path": str(r.path), "vllm_base_date": r.vllm_base_date()} for r in self.runs
        ]

    @functools.cached_property
    def run_files(self) -> list[dict]:
        files = [
            {"run": r.name, "kind": a.kind, "path": str(a.path), "prefix": a.prefix}
            for r in self.runs
            for a in r.artifacts.values()
        ]
        # a run without a metrics or vLLM CSV reads them from its raw logs: listed as that artifact too
        files.extend(
            {"run": r.name, "kind": kind, "path": str(r.artifacts["logs"].path), "prefix": None}
            for r in self.runs
            for kind in LOG_SOURCES.values()
            if reads_logs(r, kind)
        )
        return files

    @functools.cached_property
    def config_docs(self) -> list[dict]:
        """Per run with a config: its flattened leaves as one JSON text of parallel lists (config_src.sql)."""
        docs: list[dict] = []
        for run in self.runs:
            config = run.artifact("config")
            if config is None:
                continue
            rows = config_rows(run.name, config.path)
            doc = {
                "keys": [r["key"] for r in rows],
                "texts": [r["value"] for r in rows],
                "jsons": [r["value_json"] for r in rows],
            }
            docs.append({"run": run.name, "doc": json.dumps(doc, ensure_ascii=False)})
        return docs

    def csv_context(self, source: SqlFile) -> dict:
        """files (one per run that has the artifact) and the union of their columns, declared ones first."""
        columns: list[Column] = list(source.columns)
        seen = {c.name for c in columns}
        files: list[CsvFile] = []
        for run in self.runs:
            artifact = run.artifact(source.artifact or "")
            if artifact is None:
                continue
            unnameable = why_unnameable(artifact.path)
            if unnameable:
                warnings.warn(f"{artifact.path}: {unnameable}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                continue
            unparsable = csvread.unparsable.get(csvread.file_version(str(artifact.path)))
            if unparsable is not None:
                warnings.warn(f"{unparsable}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                continue
            try:
                read = csv_header(artifact.path)
            except DataError as exc:
                # one damaged file must not cost the other runs their answer: skip it, say so
                warnings.warn(f"{exc}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                continue
            header = read.names
            if read.notice():
                warnings.warn(f"{artifact.path}:1: {read.notice()}", RlsqlWarning, stacklevel=2)
            if not header:
                warnings.warn(f"{artifact.path}: empty file, no rows read", RlsqlWarning, stacklevel=2)
                continue
            types = source.column_types(header)
            cached = cached_copy(source, artifact.path, header, types)
            buffer = None
            if cached is None:
                try:
                    buffer = csvread.buffer_size([artifact.path])
                except DataError as exc:
                    warnings.warn(f"{exc}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                    continue
            files.append(CsvFile(run.name, str(artifact.path), header, types, cached, buffer))
            for name in header:
                if name not in seen:
                    seen.add(name)
                    columns.append(Column(name, source.other_columns_type))
        groups: dict[tuple[bool, tuple[str, ...]], dict] = {}
        for f in files:
            key = (f.cached is not None, tuple(f.header))
            group = groups.setdefault(
                key,
                {"header": f.header, "types": f.types, "files": [], "parquet": f.cached is not None, "buffer": None},
            )
            group["files"].append(f)
            if f.buffer:
                group["buffer"] = max(group["buffer"] or 0, f.buffer)
        integers = INTEGER_COLUMNS.get(source.artifact or "", ())
        return {"files": files, "groups": list(groups.values()), "columns": columns, "integers": integers,
                "bad_cells": self.bad_cells}

    def harbor_context(self) -> dict:
        """files: per run that has trace_jobs and no trials CSV (the CSV wins), its listed trial folders.

        `names` holds every listed folder name, sorted and '/'-joined (a name cannot hold a '/');
        `read_names` the ones DuckDB reads, escaped (harbor.reader_path) as `reader_prefix` is, so
        that no path is taken as a glob pattern. `refused`: the files rlsql does not read, and why.
        """
        files: list[dict] = []
        refused: list[dict] = []
        for run in self.runs:
            artifact = run.artifact("harbor")
            if artifact is None or run.artifact("trials") is not None:
                continue
            prefix = str(artifact.path)
            listing = harbor.list_trials(artifact.path)
            names = [harbor.sql_name(f.folder) for f in listing.files]
            read = [harbor.reader_path(f.folder) for f in listing.files if f.problem is None]
            refused.extend(
                {"run": run.name, "path": f"{prefix}/{harbor.sql_name(f.folder)}/{harbor.HARBOR_RESULT}",
                 "problem": f.problem}
                for f in listing.files if f.problem is not None
            )
            files.append({"run": run.name, "prefix": prefix, "names": "/".join(names),
                          "reader_prefix": harbor.reader_path(prefix), "read_names": "/".join(read)})
        return {"files": files, "refused": refused}

    def render(self, catalog: Catalog, source: SqlFile) -> str:
        context: dict = {"runs": self.run_rows}
        if source.name == "run_files":
            context["run_files"] = self.run_files
        elif source.artifact == "config":
            context["config_function"] = self.config_function
            context["config_docs"] = [] if self.config_function else self.config_docs
        elif source.artifact == "harbor":
            context.update(self.harbor_context())
        elif source.artifact:
            context.update(self.csv_context(source))
            # runs without the CSV read their raw training logs (rlsql/rawlogs.py)
            context.update(log_context(self.runs, source, context["columns"]))
        return catalog.render(source, **context)


#: Sources a query connection loads into its in-memory database instead of defining as views.
#: The trainer metrics are small (a row per step) but wide, and many views stack on them: as a view,
#: every stacked view re-binds and re-plans the whole union of every run's CSV (300 runs: ~10 s to
#: create the views, ~13 s to plan one query). Loaded once, they cost one read. Trials and vLLM
#: seconds can be millions of rows and stay views read in place. Harbor's result.json files are
#: loaded too (a row per file): the same rows then tell which files were skipped and why
#: (warn_harbor_problems) without reading any file twice.
LOADED_SOURCES = frozenset({"runs", "run_files", "config_src", "metrics_src", "harbor_trials_src"})


def after_loading(con: duckdb.DuckDBPyConnection, f: SqlFile) -> None:
    """Warnings a loaded source's rows carry: the result.json files skipped or read with empty values."""
    if f.name == "harbor_trials_src":
        harbor.warn_harbor_problems(con)


def object_statements(
    runs: Sequence[Run], files: Iterable[SqlFile], catalog: Catalog, load: frozenset[str] = frozenset()
) -> list[tuple[SqlFile, str]]:
    """The DDL that creates `files` (already in dependency order) over `runs`: (file, statement) pairs, in order.

    Sources are rendered with the runs' absolute paths, so the statements work from any folder.
    Each source view not in `load` is first created as an empty stand-in with its columns (learnt
    by binding it once here), and for real after every other object: the views above it bind over
    the stand-in (see create_objects for why).
    """
    sources = SourceContext(runs)
    statements: list[tuple[SqlFile, str]] = []
    last: list[tuple[SqlFile, str]] = []
    scratch = memory_connection()
    for f in files:
        sql = sources.render(catalog, f) if f.kind == "source" else f.rendered
        real = [(f, statement) for statement in f.create_statements(sql, as_table=f.name in load)]
        if f.kind != "source" or f.name in load:
            statements.extend(real)
            continue
        try:
            described = scratch.execute(f"DESCRIBE {sql}").fetchall()
        except duckdb.Error as exc:
            raise DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc
        stub = stub_select([(row[0], row[1]) for row in described])
        statements.append((f, f"CREATE OR REPLACE VIEW {identifier(f.name)} AS {stub}"))
        last.extend(real)
    scratch.close()
    return statements + last


#: the function of an rlsql.connect() connection that gives config_src its rows (create_objects)
CONFIG_FUNCTION = "rlsql_config_docs"
#: the name a source's real view waits under while the views above it are created (create_objects)
_WAITING = "__rlsql_source_{}"


def stub_select(columns: Sequence[tuple[str, str]]) -> str:
    """An empty SELECT with `columns` (name, DuckDB type): a source's stand-in while the views above it are created."""
    cells = ", ".join(f"CAST(NULL AS {ctype}) AS {identifier(name)}" for name, ctype in columns)
    return f"SELECT {cells} WHERE false"


def _view_columns(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    """A view's columns as DuckDB stored them when it bound the view (no second bind)."""
    return con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
        "AND database_name = current_database() AND schema_name = current_schema() ORDER BY column_index",
        [name],
    ).fetchall()


def _run(con: duckdb.DuckDBPyConnection, f: SqlFile, statement: str) -> None:
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise data_error(exc) or DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc


def create_objects(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[Run],
    files: Iterable[SqlFile],
    catalog: Catalog,
    load: frozenset[str] = frozenset(),
    lazy_config: bool = False,
) -> None:
    """Create `files` (already in dependency order) on `con`; the sources named in `load` as tables.

    `lazy_config` (rlsql.connect): the runs' rl_config.yaml files are parsed when a query first
    reads config_src, through a Python function registered on `con` (CONFIG_FUNCTION), instead of
    now (YAML is most of a connection's start-up over many runs: ~1 ms a file).

    CREATE VIEW binds the view, and binding a view binds every view below it down to the sources:
    over many runs a source (read_csv over hundreds of files, a glob per Harbor run, thousands of
    config VALUES) costs 0.05-1 s to bind, once per view stacked on it (1,000 runs: tens of
    seconds). So each source view is bound once, under a waiting name; the views above it are
    created over an empty stand-in with the same columns and types (binding that costs nothing),
    then the stand-in is dropped and the real view renamed into place. A view stores its SQL,
    not its plan: every query binds it afresh over the real source, so nothing a query sees differs.
    """
    sources = SourceContext(runs, CONFIG_FUNCTION if lazy_config else None)
    if sources.config_function is not None:
        con.create_function(CONFIG_FUNCTION, lambda: sources.config_docs, [], "STRUCT(run VARCHAR, doc VARCHAR)[]",
                            side_effects=True)  # not folded into a constant when a view binds
    waiting: list[SqlFile] = []
    for f in files:
        sql = sources.render(catalog, f) if f.kind == "source" else f.rendered
        if f.kind != "source" or f.name in load:
            for statement in f.create_statements(sql, as_table=f.name in load):
                _run(con, f, statement)
                if f.name in load and statement.startswith("CREATE"):
                    after_loading(con, f)
            continue
        hidden = identifier(_WAITING.format(f.name))
        _run(con, f, f"CREATE OR REPLACE VIEW {hidden} AS\n{sql}")
        columns = _view_columns(con, _WAITING.format(f.name))
        _run(con, f, f"CREATE OR REPLACE VIEW {identifier(f.name)} AS {stub_select(columns)}")
        waiting.append(f)
    for f in waiting:
        name = identifier(f.name)
        _run(con, f, f"DROP VIEW {name}")
        _run(con, f, f"ALTER VIEW {identifier(_WAITING.format(f.name))} RENAME TO {name}")
        _run(con, f, f.create_statements("", as_table=False)[1])  # the COMMENT ON VIEW


def column_comment_statements(con: duckdb.DuckDBPyConnection, files: Iterable[SqlFile]) -> list[str]:
    """COMMENT ON COLUMN for every column of the views and queries in `files` that `con` holds.

    Read from DuckDB's catalog after the objects exist, so the columns a view passes through from
    a file (a run's trainer metrics) get their `-- column: *:` description too.
    """
    by_name = {f.name: f for f in files if f.kind in ("view", "query")}
    rows = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE NOT internal AND database_name = current_database() AND schema_name = current_schema() "
        "ORDER BY table_name, column_index"
    ).fetchall()
    statements = []
    for table, column in rows:
        f = by_name.get(table)
        doc = f.column_doc(column) if f is not None else ""
        if doc:
            statements.append(f"COMMENT ON COLUMN {identifier(table)}.{identifier(column)} IS {literal(doc)}")
    return statements


def comment_columns(con: duckdb.DuckDBPyConnection, files: Iterable[SqlFile]) -> None:
    """Attach every column description of `files` on `con` (the shell, `connect()`, `db build`)."""
    for statement in column_comment_statements(con, files):
        con.execute(statement)


def open_connection(
    runs: Sequence[Run],
    names: Iterable[str] | None = None,
    catalog: Catalog | None = None,
    load: frozenset[str] = LOADED_SOURCES,
    lazy_config: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A connection for rlsql's own work (queries, reports, exports): the small sources loaded once."""
    catalog = catalog or load_catalog()
    files = catalog.closure(names) if names is not None else catalog.order
    con = memory_connection()
    create_objects(con, runs, files, catalog, load, lazy_config)
    return con


def query_connection(
    runs: Sequence[Run], name: str, catalog: Catalog | None = None, bad_cells: BadCells | None = None
) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection and the one statement that answers named query `name` over `runs`.

    The query's views go into that statement as CTEs, in dependency order, so DuckDB binds the
    chain once: created as views, each CREATE VIEW re-binds every view below it (half the
    start-up of a deep query such as timing_breakdown). Macros and the loaded sources are created
    first. A view referenced once is inlined as before; DuckDB may compute one referenced by
    several CTEs once. A whole-number cell that reads as empty fails the statement, or with
    `bad_cells` is recorded there (rlsql/badcells.py).
    """
    catalog = catalog or load_catalog()
    sources = SourceContext(runs, bad_cells="fail" if bad_cells is None else "record")
    con = memory_connection()
    if bad_cells is not None:
        badcells.register(con, bad_cells)
    ctes = []
    for f in catalog.closure([name]):
        sql = sources.render(catalog, f) if f.kind == "source" else f.rendered
        if f.kind == "macro" or f.name in LOADED_SOURCES:
            statement = f.create_statements(sql, as_table=f.name in LOADED_SOURCES)[0]
            try:
                con.execute(statement)
            except duckdb.Error as exc:
                raise data_error(exc) or DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc
            if f.name in LOADED_SOURCES:
                after_loading(con, f)
        else:
            ctes.append(f"{identifier(f.name)} AS (\n{sql}\n)")
    return con, "WITH " + ",\n".join(ctes) + f"\nSELECT * FROM {identifier(name)}"


def connect(runs: RunSpec = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every rlsql view and macro over `runs` (default: the sample run).

    `runs` takes what `--run` takes: run folders, folders of runs, globs.
    """
    # every object a view over the run's own files (never a cache copy), so the connection always
    # reads the files as they are now
    catalog = load_catalog()
    with cache.disabled():
        con = open_connection(resolve_runs(runs), catalog=catalog, load=frozenset(), lazy_config=True)
    comment_columns(con, catalog.order)
    return con
