"""Build a DuckDB connection holding rlsql's views and macros over a set of runs.

Sources are rendered here from what `runs.py` found (paths, headers, the flattened config); every
value reaches the SQL as an escaped literal. Only the views a caller needs are created, so a
query pays for its own dependencies only.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from rlsql import cache
from rlsql.catalog import Catalog, Column, SqlFile, load_catalog
from rlsql.config import config_rows
from rlsql.errors import DataError
from rlsql.runs import CONFIG_NAMES, CSV_ARTIFACTS, HARBOR_DIR, HARBOR_RESULT, Run, read_header, resolve_runs
from rlsql.sqltext import identifier

RunSpec = str | Path | Sequence[str | Path] | None

ARTIFACT_LABELS = {
    "metrics": "trainer metrics",
    "trials": "trial results",
    "vllm": "vLLM engine stats",
    "config": "rl_config.yaml",
    "harbor": "Harbor trial results",
}
#: an artifact a source reads -> the artifacts that satisfy it (a run's trials come from its CSV, else
#: from Harbor's trace_jobs/*/result.json)
ARTIFACT_ALTERNATIVES = {"trials": ("trials", "harbor"), "harbor": ("trials", "harbor")}


_GLOB = re.compile(r"[*?\[\]{}]")


class RlsqlWarning(UserWarning):
    """Something rlsql skipped or assumed; the numbers it prints do not include it."""


@dataclass(frozen=True)
class CsvFile:
    """One CSV as a source template sees it; `cached` is its fresh Parquet copy, if any (rlsql/cache.py)."""

    run: str
    path: str
    header: list[str]
    types: dict[str, str]
    cached: str | None = None


def where_looked(run: Run, kind: str) -> str:
    if kind == "config":
        return f"{run.path} for {' or '.join(CONFIG_NAMES)}"
    if kind == "harbor":
        return f"{run.path} for {HARBOR_DIR}/*/{HARBOR_RESULT}"
    prefixed, plain = CSV_ARTIFACTS[kind]
    if kind == "trials":
        return f"{run.path} for *_{prefixed}, {plain} or {HARBOR_DIR}/*/{HARBOR_RESULT}"
    return f"{run.path} for *_{prefixed} or {plain}"


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


def cached_copy(source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> str | None:
    """The fresh Parquet copy of a CSV from rlsql's cache, built now when RLSQL_CACHE asks for it."""
    entry = cache.fresh_entry(path)
    if entry is None and cache.auto_build():
        entry = build_cache_entry(source, path, header, types)
    if entry is None:
        return None
    rejected = entry.read_meta().get("rejected_rows", 0)
    if rejected:
        warnings.warn(
            f"{path}: {rejected} unreadable row(s) were skipped when its cached copy was built "
            "(`rlsql check` lists them)",
            RlsqlWarning,
            stacklevel=3,
        )
    return str(entry.parquet)


def build_cache_entry(source: SqlFile, path: Path, header: list[str], types: dict[str, str]) -> cache.Entry:
    """Convert one CSV into its cache entry (sources/_cache_csv.sql.j2) on a connection of its own."""
    catalog = load_catalog()
    con = duckdb.connect(":memory:")

    template = catalog.env.get_template("sources/_cache_csv.sql.j2")

    def write(target: Path) -> int:
        # COPY ... TO answers with the number of rows it wrote
        sql = template.render(path=str(path), header=header, types=types, target=str(target))
        return con.execute(sql).fetchall()[0][0]

    try:
        entry, _ = cache.build_entry(path, write)
    except duckdb.Error as exc:
        raise DataError(f"{path}: cannot build its cached copy: {one_line(exc)}") from exc
    rejected = 0
    if has_reject_tables(con):
        rejected = con.execute("SELECT count(DISTINCT line) FROM reject_errors").fetchone()[0]
    cache.record_rejected(entry, rejected)
    return entry


def build_cache(runs: Sequence[Run], force: bool = False) -> list[tuple]:
    """`rlsql cache build`: a fresh Parquet copy of every CSV artifact of `runs`.

    Returns (run, artifact, csv path, state, rows, parquet bytes) per file; state is built or fresh.
    """
    catalog = load_catalog()
    done = []
    for run in runs:
        for kind in CSV_ARTIFACTS:
            artifact = run.artifact(kind)
            if artifact is None:
                continue
            header = read_header(artifact.path)
            if not header:
                continue
            source = catalog.files[f"{kind}_src"]
            declared = {c.name: c.type for c in source.columns}
            types = {name: declared.get(name, source.other_columns_type) for name in header}
            entry = None if force else cache.fresh_entry(artifact.path)
            state = "fresh"
            if entry is None:
                entry, state = build_cache_entry(source, artifact.path, header, types), "built"
            meta = entry.read_meta()
            done.append((run.name, kind, str(artifact.path), state, meta.get("rows"), meta.get("parquet_bytes")))
    return done


class SourceContext:
    """What the source templates are rendered with; each piece is computed once, when first needed."""

    def __init__(self, runs: Sequence[Run]):
        self.runs = list(runs)

    @functools.cached_property
    def run_rows(self) -> list[dict]:
        return [
            {"name": r.name, "path": str(r.path), "vllm_base_date": r.vllm_base_date()} for r in self.runs
        ]

    @functools.cached_property
    def run_files(self) -> list[dict]:
        return [
            {"run": r.name, "kind": a.kind, "path": str(a.path), "prefix": a.prefix}
            for r in self.runs
            for a in r.artifacts.values()
        ]

    @functools.cached_property
    def config_rows(self) -> list[dict]:
        rows: list[dict] = []
        for run in self.runs:
            config = run.artifact("config")
            if config is not None:
                rows.extend(config_rows(run.name, config.path))
        return rows

    def csv_context(self, source: SqlFile) -> dict:
        """files (one per run that has the artifact) and the union of their columns, declared ones first."""
        declared = {c.name: c.type for c in source.columns}
        columns: list[Column] = list(source.columns)
        seen = set(declared)
        files: list[CsvFile] = []
        for run in self.runs:
            artifact = run.artifact(source.artifact or "")
            if artifact is None:
                continue
            try:
                header = read_header(artifact.path)
            except DataError as exc:
                # one damaged file must not cost the other runs their answer: skip it, say so
                warnings.warn(f"{exc}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                continue
            if not header:
                warnings.warn(f"{artifact.path}: empty file, no rows read", RlsqlWarning, stacklevel=2)
                continue
            types = {name: declared.get(name, source.other_columns_type) for name in header}
            cached = cached_copy(source, artifact.path, header, types)
            files.append(CsvFile(run.name, str(artifact.path), header, types, cached))
            for name in header:
                if name not in seen:
                    seen.add(name)
                    columns.append(Column(name, source.other_columns_type))
        groups: dict[tuple[bool, tuple[str, ...]], dict] = {}
        for f in files:
            key = (f.cached is not None, tuple(f.header))
            group = groups.setdefault(
                key, {"header": f.header, "types": f.types, "files": [], "parquet": f.cached is not None}
            )
            group["files"].append(f)
        return {"files": files, "groups": list(groups.values()), "columns": columns}

    def harbor_context(self) -> dict:
        """files: one read of `trace_jobs/*/result.json` per run that has them and no trials CSV (the CSV wins)."""
        files: list[dict] = []
        for run in self.runs:
            artifact = run.artifact("harbor")
            if artifact is None or run.artifact("trials") is not None:
                continue
            pattern = str(artifact.path / "*" / HARBOR_RESULT)
            # a folder name with glob characters cannot go into DuckDB's glob: list the files instead
            paths = None
            if _GLOB.search(str(artifact.path)):
                paths = sorted(str(p) for p in artifact.path.glob(f"*/{HARBOR_RESULT}"))
            files.append({"run": run.name, "pattern": pattern, "paths": paths})
        return {"files": files}

    def render(self, catalog: Catalog, source: SqlFile) -> str:
        context: dict = {"runs": self.run_rows}
        if source.name == "run_files":
            context["run_files"] = self.run_files
        elif source.artifact == "config":
            context["config_rows"] = self.config_rows
        elif source.artifact == "harbor":
            context.update(self.harbor_context())
        elif source.artifact:
            context.update(self.csv_context(source))
        return catalog.render(source, **context)


#: Sources a query connection loads into its in-memory database instead of defining as views.
#: The trainer metrics are small (a row per step) but wide, and many views stack on them: as a view,
#: every stacked view re-binds and re-plans the whole union of every run's CSV (300 runs: ~10 s to
#: create the views, ~13 s to plan one query). Loaded once, they cost one read. Trials and vLLM
#: seconds can be millions of rows and stay views read in place.
LOADED_SOURCES = frozenset({"runs", "run_files", "config_src", "metrics_src"})


def object_statements(
    runs: Sequence[Run], files: Iterable[SqlFile], catalog: Catalog, load: frozenset[str] = frozenset()
) -> list[tuple[SqlFile, str]]:
    """The DDL that creates `files` (already in dependency order) over `runs`: (file, statement) pairs, in order.

    Sources are rendered with the runs' absolute paths, so the statements work from any folder.
    """
    sources = SourceContext(runs)
    statements: list[tuple[SqlFile, str]] = []
    for f in files:
        sql = sources.render(catalog, f) if f.kind == "source" else f.rendered
        statements.extend((f, statement) for statement in f.create_statements(sql, as_table=f.name in load))
    return statements


def create_objects(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[Run],
    files: Iterable[SqlFile],
    catalog: Catalog,
    load: frozenset[str] = frozenset(),
) -> None:
    """Create `files` (already in dependency order) on `con`; the sources named in `load` as tables."""
    for f, statement in object_statements(runs, files, catalog, load):
        try:
            con.execute(statement)
        except duckdb.Error as exc:
            raise DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc


def one_line(exc: BaseException) -> str:
    """DuckDB's messages span lines (and carry hints); keep the first meaningful line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.+)$", re.MULTILINE)


def csv_error(exc: BaseException) -> DataError | None:
    """A DuckDB CSV reading error as `file:line: problem`, or None when it is something else."""
    text = str(exc)
    line, path = _CSV_LINE.search(text), _CSV_FILE.search(text)
    if not path:
        return None
    details = [
        part.strip()
        for part in text.splitlines()[1:]
        if part.strip() and not part.startswith(("Original Line", "  ", "*", "Possible", "Column ", "This type"))
    ]
    where = f"{path.group(1).strip()}:{line.group(1)}" if line else path.group(1).strip()
    return DataError(f"{where}: {details[0] if details else one_line(exc)}")


REJECT_EXAMPLES = 3


def has_reject_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any scan has stored rejected rows yet (DuckDB creates the tables with the first one)."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'reject_errors'").fetchone()[0]
    return bool(found)


def warn_rejected_rows(con: duckdb.DuckDBPyConnection) -> None:
    """One warning per CSV file with rows DuckDB skipped (recorded because the sources set store_rejects)."""
    if not has_reject_tables(con):
        return  # nothing was rejected: DuckDB creates the tables on the first rejected row
    rows = con.execute(
        """
        SELECT s.file_path, e.line, any_value(e.error_type), any_value(e.column_name)
        FROM reject_errors AS e JOIN reject_scans AS s USING (scan_id, file_id)
        GROUP BY s.file_path, e.line
        ORDER BY s.file_path, e.line
        """
    ).fetchall()
    by_file: dict[str, list[tuple[int, str, str | None]]] = {}
    for path, line, kind, column in rows:
        by_file.setdefault(path, []).append((line, kind, column))
    for path, rejected in by_file.items():
        examples = "; ".join(
            f"line {line}: {kind.lower()}" + (f" in column {column}" if column and kind == "CAST" else "")
            for line, kind, column in rejected[:REJECT_EXAMPLES]
        )
        more = f"; and {len(rejected) - REJECT_EXAMPLES} more" if len(rejected) > REJECT_EXAMPLES else ""
        warnings.warn(
            f"{path}: skipped {len(rejected)} unreadable row{'s' if len(rejected) > 1 else ''} ({examples}{more})",
            RlsqlWarning,
            stacklevel=3,
        )


#: an `error()` raised by rlsql's own SQL about the data (see sql/sources) starts with this
DATA_ERROR_MARK = "rlsql-data: "


def data_error_text(exc: BaseException) -> str:
    text = str(exc)
    return text[text.index(DATA_ERROR_MARK) + len(DATA_ERROR_MARK):].splitlines()[0] if DATA_ERROR_MARK in text \
        else one_line(exc)


def data_error(exc: BaseException) -> DataError | None:
    """A DuckDB error that is about the input files, as a one-line DataError; None for anything else."""
    if DATA_ERROR_MARK in str(exc):
        return DataError(data_error_text(exc))
    return csv_error(exc)


def open_connection(
    runs: Sequence[Run],
    names: Iterable[str] | None = None,
    catalog: Catalog | None = None,
    load: frozenset[str] = LOADED_SOURCES,
) -> duckdb.DuckDBPyConnection:
    """A connection for rlsql's own work (queries, reports, exports): the small sources loaded once."""
    catalog = catalog or load_catalog()
    files = catalog.closure(names) if names is not None else catalog.order
    con = duckdb.connect(":memory:")
    create_objects(con, runs, files, catalog, load)
    return con


def query_connection(
    runs: Sequence[Run], name: str, catalog: Catalog | None = None
) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection and the one statement that answers named query `name` over `runs`.

    The query's views go into that statement as CTEs, in dependency order, so DuckDB binds the
    chain once: created as views, each CREATE VIEW re-binds every view below it (half the
    start-up of a deep query such as timing_breakdown). Macros and the loaded sources are created
    first. A view referenced once is inlined as before; DuckDB may compute one referenced by
    several CTEs once.
    """
    catalog = catalog or load_catalog()
    sources = SourceContext(runs)
    con = duckdb.connect(":memory:")
    ctes = []
    for f in catalog.closure([name]):
        sql = sources.render(catalog, f) if f.kind == "source" else f.rendered
        if f.kind == "macro" or f.name in LOADED_SOURCES:
            statement = f.create_statements(sql, as_table=f.name in LOADED_SOURCES)[0]
            try:
                con.execute(statement)
            except duckdb.Error as exc:
                raise data_error(exc) or DataError(f"{f.path}: cannot create {f.name}: {one_line(exc)}") from exc
        else:
            ctes.append(f"{identifier(f.name)} AS (\n{sql}\n)")
    return con, "WITH " + ",\n".join(ctes) + f"\nSELECT * FROM {identifier(name)}"


def connect(runs: RunSpec = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every rlsql view and macro over `runs` (default: the sample run).

    `runs` takes what `--run` takes: run folders, folders of runs, globs.
    """
    # every object a view, so the connection always reads the files as they are now
    return open_connection(resolve_runs(runs), load=frozenset())
