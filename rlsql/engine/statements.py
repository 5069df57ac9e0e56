"""Build a DuckDB connection holding rlsql's views and macros over a set of runs: the DDL, in dependency
order, and the connections that run it.

The sources are rendered by rlsql.engine.sources (what `runs.py` found, every value through the templates'
filters); whether the runs have what a query reads is rlsql.runs.artifacts'. Only the views a caller needs
are created, so a query pays for its own dependencies only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import duckdb

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import DataError, QueryError, UnparsableCsv, one_line
from rlsql.core.sqltext import identifier, literal, reported_type
from rlsql.duck import badcells, damagedfiles
from rlsql.duck.badcells import BadCells
from rlsql.duck.memorydb import TRAJECTORY_MEMORY, memory_connection
from rlsql.duck.rejects import read_every_cell, rejected_lines
from rlsql.engine import answer
from rlsql.engine.copies import Copies
from rlsql.engine.failures import data_error
from rlsql.engine.sources import SourceContext
from rlsql.runs.folders import Run

RunSpec = str | Path | Sequence[str | Path] | None


#: Sources a query connection loads into its in-memory database instead of defining as views.
#: The trainer metrics are small (a row per step) but wide, and many views stack on them: as a view,
#: every stacked view re-binds and re-plans the whole union of every run's CSV (300 runs: ~10 s to
#: create the views, ~13 s to plan one query). Loaded once, they cost one read. Trials and vLLM
#: seconds can be millions of rows and stay views read in place. Harbor's result.json files are
#: loaded too (a row per file): the same rows then tell which files were skipped and why
#: (damagedfiles.warn_harbor_problems) without reading any file twice.
LOADED_SOURCES = frozenset({"runs", "run_files", "config_src", "metrics_src", "harbor_trials_src"})
#: loaded sources that a named query (query_connection, one statement with CTEs, bound once) reads in its
#: statement instead: only the columns it uses are read (1,000 runs, CPU-s of the whole answer:
#: compare_runs 3.28 -> 2.68, run_overview 1.14 -> 0.86, from the Parquet cache 1.07 -> 0.6)
IN_STATEMENT = frozenset({"metrics_src"})


#: the source that says which CSV rows and files the runs' reads skip (sql/sources/skipped_rows_src.sql)
SKIPPED_ROWS = "skipped_rows_src"


def skipped_rows_last(catalog: Catalog, files: list[SqlFile]) -> list[SqlFile]:
    """`files` (in dependency order) with skipped_rows_src, and whatever reads it, after the last CSV source: its
    rows are what the reads of those sources recorded (note_rejected_rows)."""
    names = [f.name for f in files]
    if SKIPPED_ROWS not in names:
        return files
    last_csv = max((i for i, f in enumerate(files) if is_csv_source(f)), default=-1)
    start = names.index(SKIPPED_ROWS)
    if start > last_csv:
        return files
    moved = [
        f
        for f in files[start : last_csv + 1]
        if f.name == SKIPPED_ROWS or any(d.name == SKIPPED_ROWS for d in catalog.closure([f.name]))
    ]
    kept = [f for f in files if f not in moved]
    at = kept.index(files[last_csv]) + 1
    return kept[:at] + moved + kept[at:]


def is_csv_source(f: SqlFile) -> bool:
    """A source over one of the runs' CSVs (trials, trainer metrics, vLLM seconds)."""
    return f.kind == "source" and f.artifact not in (None, "", "config", "harbor", "trajectories")


def note_rejected_rows(con: duckdb.DuckDBPyConnection, sources: SourceContext) -> None:
    """Before skipped_rows_src is rendered: every cell of each CSV source `sources` rendered that reads a file in
    place read once on `con`, so that DuckDB's reject tables hold every row it cannot read (a statement cannot
    count what its own scan rejects): the rows read and skipped per file, into `sources.csv_read`, as `rlsql
    check` counts them. A bad whole-number cell stops this read as it would stop the query
    (rlsql/duck/badcells.py), and an unparsable CSV fails it the same way. A cached copy keeps the counts of its
    build (SourceContext.csv_context)."""
    for f, sql in sources.csv_sources.values():
        try:
            for path, rows in read_every_cell(con, sql).items():
                if path in sources.csv_read:
                    sources.csv_read[path].rows = rows
        except duckdb.Error as exc:
            failure = data_error(exc) or DataError(f"{f.path}: cannot read {f.name}: {one_line(exc)}")
            if answer.current() is not None or not isinstance(failure, UnparsableCsv):
                raise failure from exc  # an answer reads the file line-bounded or skips it, and asks again
            # a connection or database file whose views read the file as it is (`db build` warns of it)
            if (count := sources.csv_read.get(failure.path)) is not None:
                sources.skipped_whole(count.run, count.artifact, failure.path, str(failure))
    skipped: dict[str, int] = {}
    for path, _, _ in rejected_lines(con):  # every scan on `con` so far, each line once
        skipped[path] = skipped.get(path, 0) + 1
    for path, n in skipped.items():
        if path in sources.csv_read:
            sources.csv_read[path].skipped = n


def in_creation_order(
    catalog: Catalog, files: Iterable[SqlFile], con: duckdb.DuckDBPyConnection, sources: SourceContext
) -> Iterator[SqlFile]:
    """`files` (in dependency order) as they are made on `con`: skipped_rows_src after the CSV sources, their
    cells read first (note_rejected_rows)."""
    for f in skipped_rows_last(catalog, list(files)):
        if f.name == SKIPPED_ROWS:
            note_rejected_rows(con, sources)
        yield f


def after_loading(con: duckdb.DuckDBPyConnection, f: SqlFile) -> None:
    """Warnings a loaded source's rows carry: the result.json files skipped or read with empty values."""
    if f.name == "harbor_trials_src":
        damagedfiles.warn_harbor_problems(con)


def defining_sql(catalog: Catalog, sources: SourceContext, f: SqlFile) -> str:
    """The SQL `f` is created with over these runs, the same from every entry point: a source rendered
    over the runs; a view or query with the views and queries it reads before it as CTEs, in dependency
    order, as `rlsql query` answers (query_connection). Created view over view, DuckDB would inline a view
    at each place a view above names it, and read its files again each time (run_summary names
    reward_summary twice: 300 runs' trials read three times instead of twice); in one statement a CTE
    named twice is computed once."""
    sql = sources.object_sql(catalog, f)
    if f.kind not in ("view", "query"):
        return sql
    below = [d for d in catalog.closure([f.name]) if d.kind in ("view", "query") and d.name != f.name]
    if not below:
        return sql
    ctes = [_cte(catalog, d, sources.object_sql(catalog, d)) for d in below] + [_cte(catalog, f, sql)]
    return "WITH " + ",\n".join(ctes) + f"\nSELECT * FROM {identifier(f.name)}"


def _cte(catalog: Catalog, f: SqlFile, sql: str) -> str:
    # the trajectory sources and the views over them alone stream (DuckDB would otherwise hold a CTE
    # such as tool_calls_src whole and read it back: 45k trials, 3x the time; rlsql/trajectories.py)
    streamed = {d.artifact for d in catalog.closure([f.name]) if d.kind == "source"} == {"trajectories"}
    return f"{identifier(f.name)} AS {'NOT MATERIALIZED ' if streamed else ''}(\n{sql}\n)"


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
    for f in in_creation_order(catalog, files, scratch, sources):
        sql = defining_sql(catalog, sources, f)
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
    cells = ", ".join(f"CAST(NULL AS {reported_type(ctype)}) AS {identifier(name)}" for name, ctype in columns)
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


def register_config_function(con: duckdb.DuckDBPyConnection, sources: SourceContext) -> None:
    """Give `con` the function config_src reads the parsed configs through, when `sources` asks for one."""
    if sources.config_function is not None:
        con.create_function(
            CONFIG_FUNCTION, lambda: sources.config_docs, [], "STRUCT(run VARCHAR, doc VARCHAR)[]", side_effects=True
        )  # not folded into a constant when a view binds


def create_objects(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[Run],
    files: Iterable[SqlFile],
    catalog: Catalog,
    load: frozenset[str] = frozenset(),
    lazy_config: bool = False,
    config_keys: str | None = None,
    sources: SourceContext | None = None,
    bound: dict[str, list[tuple[str, str]]] | None = None,
    trial: str | None = None,
    bad_cells: BadCells | Literal[False] | None = False,
    copies: Copies | None = None,
) -> None:
    """Create `files` (already in dependency order) on `con`; the sources named in `load` as tables.

    `lazy_config` (rlsql.connect): the runs' rl_config.yaml files are parsed when a query first
    reads config_src, through a Python function registered on `con` (CONFIG_FUNCTION), instead of
    now (YAML is most of a connection's start-up over many runs: ~1 ms a file). `config_keys`:
    run_table's `keys` parameter, which picks its columns (SqlFile.per_runs).

    CREATE VIEW binds the view, and binding a view binds every view below it down to the sources:
    over many runs a source (read_csv over hundreds of files, a glob per Harbor run, thousands of
    config VALUES) costs 0.05-1 s to bind, once per view stacked on it (1,000 runs: tens of
    seconds). So each source view is bound once, under a waiting name; the views above it are
    created over an empty stand-in with the same columns and types (binding that costs nothing),
    then the stand-in is dropped and the real view renamed into place. A view stores its SQL,
    not its plan: every query binds it afresh over the real source, so nothing a query sees differs.

    A connection that creates its objects in several calls (rlsql.engine.connection) passes its own `sources`
    (the runs' files looked at once, the config function registered once) and `bound`: source view
    -> its columns, for the source views earlier calls created. Those are renamed out of the way for
    the time this call creates views over them (a stand-in in their place), and `bound` gains the
    sources this call creates. `trial`, `bad_cells` and `copies`: see open_connection.
    """
    files = list(files)
    if sources is None:
        sources = SourceContext(
            runs,
            CONFIG_FUNCTION if lazy_config else None,
            bad_cells=None if bad_cells is False else "fail" if bad_cells is None else "record",
            config_keys=config_keys,
            trial=trial,
            copies=copies,
        )
        register_config_function(con, sources)
        if isinstance(bad_cells, BadCells):
            badcells.register(con, bad_cells)
        if any(f.artifact == "trajectories" for f in files):  # damaged files named once (rlsql/duck/damagedfiles.py)
            sources.damaged_seen = damagedfiles.record_damaged(con)
    bound = {} if bound is None else bound
    waiting: list[SqlFile] = []
    new_views = {f.name for f in files if f.kind in ("view", "query")}
    if new_views:  # the sources already created that the new views read: stand-ins while they are created
        wanted = {f.name for f in catalog.closure(new_views) if f.kind == "source"}
        for name in sorted(wanted & set(bound)):
            f = catalog.files[name]
            _run(con, f, f"ALTER VIEW {identifier(name)} RENAME TO {identifier(_WAITING.format(name))}")
            _run(con, f, f"CREATE VIEW {identifier(name)} AS {stub_select(bound[name])}")
            waiting.append(f)
    renamed = list(waiting)
    try:
        for f in in_creation_order(catalog, files, con, sources):
            sql = defining_sql(catalog, sources, f)
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
            bound[f.name] = columns
            waiting.append(f)
    except BaseException:
        # no empty stand-in may outlive a failed call as if it were the source (a lazy connection goes on):
        # the sources earlier calls created go back, the ones this call began are dropped
        for f in waiting:
            con.execute(f"DROP VIEW IF EXISTS {identifier(f.name)}")
            if f in renamed:
                con.execute(f"ALTER VIEW {identifier(_WAITING.format(f.name))} RENAME TO {identifier(f.name)}")
            else:
                con.execute(f"DROP VIEW IF EXISTS {identifier(_WAITING.format(f.name))}")
                bound.pop(f.name, None)
        raise
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


def reads_result_files(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether reading all of view `name` on `con` (open_connection's: Harbor's trials loaded) reads result.json
    files in place: the ones beside a trials CSV (harbor_fill_src), which DuckDB reads only for a column the
    CSV lacks and drops from the plan otherwise. Asked of the plan, so that provenance lists what was read."""
    plan = con.execute(f"EXPLAIN SELECT * FROM {identifier(name)}").fetchall()
    return any("READ_BLOB" in str(row[-1]).upper() for row in plan)


def open_connection(
    runs: Sequence[Run],
    names: Iterable[str] | None = None,
    catalog: Catalog | None = None,
    load: frozenset[str] = LOADED_SOURCES,
    config_keys: str | None = None,
    trial: str | None = None,
    bad_cells: BadCells | Literal[False] | None = False,
    copies: Copies | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection for rlsql's own work (queries, reports, exports): the small sources loaded once, read from
    their fresh `copies` (rlsql/engine/copies.py) where the command handed some in.

    `config_keys`: run_table's `keys` parameter, which picks its columns (SqlFile.per_runs). `trial`
    (`rlsql trial`): the Harbor sources read that trial's result.json alone (SourceContext.trial).
    `bad_cells`: what an attempt of an answer was given (rlsql/engine/answer.py): None, a whole-number cell
    that reads as empty stops the statement; BadCells, it is recorded there. False (not an answer: `check`,
    `runs`): such a cell reads as empty, unnamed.
    """
    catalog = catalog or load_catalog()
    files = catalog.closure(names) if names is not None else catalog.order
    con = memory_connection()
    create_objects(
        con, runs, files, catalog, load, config_keys=config_keys, trial=trial, bad_cells=bad_cells, copies=copies
    )
    return con


#: a statement reading CSVs of fewer bytes than this in all runs one thread: as fast (19 against 21 ms at
#: 45,711 trials, 3 MB) and 4-7 MB less peak memory than a second thread's buffers (bench/RESULTS.md at
#: 9434c57, "Questions answered ahead")
LITTLE_INPUT_BYTES = 8 * 2**20
#: artifacts whose size says what a read costs (Harbor's folders and raw logs are read otherwise)
_SIZED = frozenset({"trials", "metrics", "vllm", "config"})


def reads_little(runs: Sequence[Run], files: Iterable[SqlFile]) -> bool:
    """Whether the sources among `files` read, over `runs`, only CSVs (and configs) of fewer than
    LITTLE_INPUT_BYTES bytes in all."""
    kinds = {f.artifact for f in files if f.kind == "source" and f.artifact}
    total = 0
    for run in runs:
        for kind in kinds:
            artifact = run.artifact(kind)
            if artifact is None:
                if kind in _SIZED and "logs" in run.artifacts:
                    return False  # read from the raw training logs instead
                continue
            if kind not in _SIZED:
                return False
            try:
                total += artifact.path.stat().st_size
            except OSError:
                return False
            if total >= LITTLE_INPUT_BYTES:
                return False
    return True


def query_connection(
    runs: Sequence[Run],
    name: str,
    catalog: Catalog | None = None,
    bad_cells: BadCells | None = None,
    config_keys: str | None = None,
    config_columns: list[dict] | None = None,
    copies: Copies | None = None,
    peers: Sequence[Run] | None = None,
) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection and the one statement that answers named query `name` over `runs`.

    The query's views go into that statement as CTEs, in dependency order, so DuckDB binds the
    chain once: created as views, each CREATE VIEW re-binds every view below it (half the
    start-up of a deep query such as timing_breakdown). Macros and the loaded sources are created
    first. A view referenced once is inlined as before; DuckDB may compute one referenced by
    several CTEs once. A whole-number cell that reads as empty fails the statement, or with
    `bad_cells` is recorded there (rlsql/duck/badcells.py). `config_keys`: run_table's `keys` parameter,
    which picks its columns when the statement is rendered (SqlFile.per_runs); `config_columns`: those columns
    as worked out over a larger set of runs (SourceContext.config_columns), so `runs`' rows are theirs in it;
    `peers`: the runs whose configs and listing it reads (SourceContext.peers). `copies`: the fresh cached copies
    read instead of the files (rlsql/engine/copies.py).
    """
    con, statements = queries_connection(
        runs, [name], catalog, bad_cells, config_keys, config_columns, copies=copies, peers=peers
    )
    return con, statements[name]


def queries_connection(
    runs: Sequence[Run],
    names: Sequence[str],
    catalog: Catalog | None = None,
    bad_cells: BadCells | None = None,
    config_keys: str | None = None,
    config_columns: list[dict] | None = None,
    copies: Copies | None = None,
    peers: Sequence[Run] | None = None,
) -> tuple[duckdb.DuckDBPyConnection, dict[str, str]]:
    """query_connection for several named queries over the same runs: one connection, each macro and loaded
    source created on it once and each object rendered once, and per query the one statement that answers it.
    Over a few small runs a statement's fixed cost (the connection, ~20 ms of DuckDB's start; the rendering)
    is most of it: `rlsql serve` computes a page's per-run queries this way (rlsql/serve/state.py)."""
    catalog = catalog or load_catalog()
    sources = SourceContext(
        runs,
        bad_cells="fail" if bad_cells is None else "record",
        config_keys=config_keys,
        config_columns=config_columns,
        copies=copies,
        peers=peers,
    )
    closure = catalog.closure(list(names))
    trajectory = any(f.artifact == "trajectories" for f in closure)
    con = memory_connection(
        threads=1 if reads_little(runs, closure) else None, memory_limit=TRAJECTORY_MEMORY if trajectory else None
    )
    if bad_cells is not None:
        badcells.register(con, bad_cells)
    if trajectory:  # damaged files named once (rlsql/duck/damagedfiles.py)
        sources.damaged_seen = damagedfiles.record_damaged(con)
    ctes: dict[str, str] = {}
    for f in in_creation_order(catalog, closure, con, sources):
        sql = sources.object_sql(catalog, f)
        # the trainer metrics stay in the one statement (IN_STATEMENT): DuckDB then reads only the columns the
        # query uses instead of loading every column of every run's CSV or cache copy first
        load = f.name in LOADED_SOURCES and f.name not in IN_STATEMENT
        if f.artifact == "harbor" and not sources.reads_harbor():
            # no result.json to read: its empty rows stay in the statement, no table and no check of
            # problems (~5 ms and 4 MB of a trial query's start on a run with a trials CSV)
            load = False
        if f.kind == "macro" or load:
            statement = f.create_statements(sql, as_table=load)[0]
            try:
                con.execute(statement)
            except duckdb.Error as exc:
                raise data_error(exc) or DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc
            if load:
                after_loading(con, f)
        else:
            ctes[f.name] = _cte(catalog, f, sql)
    statements = {}
    for name in names:
        mine = [ctes[f.name] for f in catalog.closure([name]) if f.name in ctes]
        statements[name] = "WITH " + ",\n".join(mine) + f"\nSELECT * FROM {identifier(name)}"
    return con, statements


def column_types(name: str, runs: Sequence[Run], copies: Copies | None = None) -> list[tuple[str, str]]:
    """(column, DuckDB type) of query or view `name`, bound over `runs` (their `copies` where fresh) without
    reading their rows."""
    con, sql = query_connection(runs, name, copies=copies)
    try:
        # LIMIT 0: DuckDB binds (and so types) the statement; no row is read
        cursor = con.execute(f"SELECT * FROM ({sql}) AS {identifier(name)} LIMIT 0")
    except duckdb.Error as exc:
        raise QueryError(f"{name}: cannot bind it over these runs: {exc}") from exc
    return [(d[0], str(d[1])) for d in cursor.description]
