"""Build and find the Parquet copies of the cache (rlsql/cache.py keeps the files; this module fills them)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import duckdb

from rlsql import cache
from rlsql.catalog import SqlFile, load_catalog
from rlsql.duckdb_errors import has_reject_tables, one_line
from rlsql.errors import DataError, RlsqlWarning
from rlsql.runs import CSV_ARTIFACTS, Run, read_header


def cached_copy(
    source: SqlFile, path: Path, header: list[str], types: dict[str, str], build: bool | None = None
) -> str | None:
    """The fresh Parquet copy of a CSV from rlsql's cache, built now when `build` (`--cache`) asks for it.

    `build` None (a library caller who did not say) follows the RLSQL_CACHE environment variable.
    """
    entry = cache.fresh_entry(path)
    if entry is None and (cache.auto_build() if build is None else build):
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
            types = source.column_types(header)
            entry = None if force else cache.fresh_entry(artifact.path)
            state = "fresh"
            if entry is None:
                entry, state = build_cache_entry(source, artifact.path, header, types), "built"
            meta = entry.read_meta()
            done.append((run.name, kind, str(artifact.path), state, meta.get("rows"), meta.get("parquet_bytes")))
    return done
