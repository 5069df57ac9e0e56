"""`rlsql db build`: a DuckDB database file holding rlsql's views and macros, for tools that want a file.

The views read the runs' files in place through absolute paths; with `materialize` the sources and
views become tables (the file no longer needs the CSVs) while the named queries, and the views that
read a parameter, stay views, so parameters (`SET VARIABLE span = 10`) still work. A table `rlsql_metadata(key, value)`
records the rlsql and DuckDB versions, the runs and every source file read.

The file is built under a temporary name beside the target (rlsql.runs.writes' scheme; DuckDB adds a
`.wal` beside it) and renamed onto it when complete; the next build sweeps what a killed one left. A
symbolic link is written through; a FIFO or a device is written into as `>` would (never renamed over).
A new file gets mode 0666 minus the umask, a replaced one keeps its mode.
It is written in an older storage format (DEFAULT_STORAGE_VERSION) unless asked otherwise, so
that DuckDB releases back to that version, the `duckdb-cli` package among them, can open it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import DataError, RlsqlError, RlsqlWarning, UsageError, one_line
from rlsql.core.sqltext import identifier, literal
from rlsql.core.version import __version__
from rlsql.duck.fileio import attach_file, detach_file
from rlsql.duck.memorydb import Connection, DuckError, duckdb_version, memory_connection
from rlsql.engine.statements import comment_columns, create_objects
from rlsql.outputs.provenance import SourceFingerprints, run_record
from rlsql.runs.csvfiles import mixed_line_ending
from rlsql.runs.folders import CSV_ARTIFACTS, Run
from rlsql.runs.writes import atomic_path, disk_failure, failures_named, guard

#: readable by DuckDB 1.4 and later (rlsql itself needs duckdb>=1.4)
DEFAULT_STORAGE_VERSION = "v1.4.0"
_ALIAS = "rlsql_build"
_BUILDING = "__rlsql_building"


@dataclass(frozen=True)
class Built:
    path: Path
    views: int
    tables: int
    macros: int
    bytes: int


def build_database(
    runs: Sequence[Run],
    target: Path,
    materialize: bool = False,
    storage_version: str = DEFAULT_STORAGE_VERSION,
    catalog: Catalog | None = None,
) -> Built:
    catalog = catalog or load_catalog()
    guard(target)  # an empty path too; never in a run folder, given or not
    with failures_named(target):
        if target.is_dir():
            raise UsageError(f"{target}: is a folder; give the database FILE to write (e.g. runs.duckdb)")
    _warn_mixed_line_endings(runs)
    with atomic_path(target) as tmp:
        wal = tmp.with_name(tmp.name + ".wal")
        try:
            tables = _build(tmp, target, runs, materialize, storage_version, catalog)
            size = tmp.stat().st_size  # before it is put in place: a FIFO or a device has no size
        except (DuckError, RlsqlError) as exc:
            # DuckDB's write failures surface anywhere (a commit while creating a view): name the target
            failure = disk_failure(target, tmp, str(exc))
            if failure is not None:
                raise failure from exc
            raise
        finally:
            with contextlib.suppress(OSError):
                wal.unlink()
            shutil.rmtree(tmp.with_name(tmp.name + ".tmp"), ignore_errors=True)  # DuckDB's spill folder
    macros = sum(1 for f in catalog.order if f.kind == "macro")
    views = sum(1 for f in catalog.order if f.kind != "macro") - tables
    return Built(target, views, tables + 1, macros, size)


def _warn_mixed_line_endings(runs: Sequence[Run]) -> None:
    """Name each CSV whose line endings are mixed: the file's views read it in place, and DuckDB's parser fails
    it (its strict_mode=false reads it, but would as silently swallow the rows after a quote that never closes);
    rlsql's queries read such a file through a line-bounded copy, which outlives no process."""
    for run in runs:
        for kind in CSV_ARTIFACTS:
            artifact = run.artifact(kind)
            if artifact is None or not artifact.path.is_file():
                continue
            try:
                found = mixed_line_ending(artifact.path)
            except OSError:
                continue  # the build's read names a file it cannot open
            if found is not None:
                line, why = found
                warnings.warn(
                    f"{artifact.path}:{line}: {why}: DuckDB cannot parse the file, so the database's views of it "
                    "fail (rlsql's queries read it)",
                    RlsqlWarning,
                    stacklevel=3,
                )


def _build(
    tmp: Path, target: Path, runs: Sequence[Run], materialize: bool, storage_version: str, catalog: Catalog
) -> int:
    """Write the database at `tmp`; returns the number of tables materialized."""
    con = memory_connection()
    try:
        try:
            attach_file(con, tmp, _ALIAS, storage_version)
        except DuckError as exc:
            if disk_failure(target, tmp, str(exc)):
                raise
            raise UsageError(f"cannot write storage version {storage_version!r}: {one_line(exc)}") from exc
        con.execute(f"USE {_ALIAS}")
        # no copies handed in: the file's views read the runs' files, never a cache copy that may go
        create_objects(con, runs, catalog.order, catalog)
        tables = 0
        if materialize:
            for f in catalog.order:
                if not _materializable(f, catalog):
                    continue
                name = identifier(f.name)
                try:
                    con.execute(f"CREATE TABLE {_BUILDING} AS SELECT * FROM {name}")
                except DuckError as exc:
                    if disk_failure(target, tmp, str(exc)):
                        raise
                    raise DataError(f"{f.path}: cannot materialize {f.name}: {one_line(exc)}") from exc
                con.execute(f"DROP VIEW {name}")
                con.execute(f"ALTER TABLE {_BUILDING} RENAME TO {name}")
                con.execute(f"COMMENT ON TABLE {name} IS {literal(f.description)}")
                tables += 1
        # after materializing: a table made from a view starts without the view's column comments
        comment_columns(con, catalog.order)
        _write_metadata(con, runs, catalog, materialize, storage_version)
        detach_file(con, _ALIAS)
    finally:
        con.close()
    return tables


def _materializable(f: SqlFile, catalog: Catalog) -> bool:
    """Sources and views that read no parameter, themselves or below: a table of them means the same."""
    if f.kind not in ("source", "view"):
        return False
    return all(not g.params and g.kind != "query" for g in catalog.closure([f.name]))


def _write_metadata(
    con: Connection, runs: Sequence[Run], catalog: Catalog, materialize: bool, storage_version: str
) -> None:
    rows = [
        ("rlsql_version", __version__),
        ("duckdb_version", duckdb_version()),
        ("storage_version", storage_version),
        ("built_at", dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()),
        ("materialized", "true" if materialize else "false"),
        ("runs", json.dumps([run_record(r) for r in runs])),
        ("sources", json.dumps(SourceFingerprints().for_files(runs, catalog.order))),
        (
            "queries",
            json.dumps({q.name: {"version": q.version, "fingerprint": q.fingerprint} for q in catalog.queries()}),
        ),
    ]
    con.execute("CREATE TABLE rlsql_metadata (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.executemany("INSERT INTO rlsql_metadata VALUES (?, ?)", rows)
    con.execute(
        "COMMENT ON TABLE rlsql_metadata IS "
        + literal("How rlsql built this file: versions, runs, source files (path, size, mtime, sha256), queries.")
    )
    con.execute(
        "COMMENT ON COLUMN rlsql_metadata.key IS "
        + literal("what the row records: rlsql_version, duckdb_version, runs, sources, queries, ...")
    )
    con.execute("COMMENT ON COLUMN rlsql_metadata.value IS " + literal("its value (a list or mapping as JSON text)"))
