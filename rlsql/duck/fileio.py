"""What DuckDB writes into files and reads back from them: COPY ... TO (a query's rows, an export, the cache's
Parquet copies), the database file `rlsql db build` attaches, and Parquet footers (rows, key-value metadata).

The callers choose the path (a temporary name of rlsql/runs/writes.py), the options and what a failure means;
these functions are only DuckDB's side of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsql.core.sqltext import literal
from rlsql.duck.memorydb import Connection, scalar


def copy_to(con: Connection, select: str, path: str, options: str) -> int:
    """COPY the rows of `select` into the file at `path` (written as named) with COPY's `options`; the rows
    written."""
    row = con.execute(f"COPY ({select}) TO {literal(path)} ({options})").fetchone()
    return int(row[0]) if row else 0


def run_copy(con: Connection, statement: str) -> Any:
    """Run a whole COPY ... TO `statement` (a cache entry's, rendered from its template); the rows it wrote."""
    return con.execute(statement).fetchall()[0][0]  # COPY ... TO answers with the rows it wrote


def attach_file(con: Connection, path: Path, alias: str, storage_version: str) -> None:
    """Attach the database file at `path` (created when absent) to `con` as `alias`, in DuckDB's
    `storage_version`."""
    con.execute(f"ATTACH {literal(str(path))} AS {alias} (STORAGE_VERSION {literal(storage_version)})")


def detach_file(con: Connection, alias: str) -> None:
    """Write what `con` put in the attached file `alias` into it (a checkpoint: no write-ahead log left beside it)
    and detach it, back on the in-memory database."""
    con.execute("CHECKPOINT")
    con.execute("USE memory")
    con.execute(f"DETACH {alias}")


def parquet_rows(con: Connection, path: str) -> Any:
    """The rows a Parquet file's footer says it holds (`path` as DuckDB's readers take it: a glob)."""
    return scalar(con, "SELECT sum(num_rows) FROM parquet_file_metadata(?)", [path])


def parquet_key_values(con: Connection, path: str) -> dict[str, str]:
    """The key-value metadata of a Parquet file's footer, decoded (`path` as DuckDB's readers take it: a glob)."""
    return dict(con.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [path]).fetchall())
