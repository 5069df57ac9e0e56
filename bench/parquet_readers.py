"""Which Parquet readers show an exported column's description, and where; and what provenance costs a file.

Usage (from the repository root; needs pyarrow, polars and pandas: `pip install -e '.[test]'`)::

    python bench/parquet_readers.py                 # the readers, over an export of the fixture runs
    python bench/parquet_readers.py /tmp/fleet300   # and the sizes of run_table.parquet over that folder of runs

Parquet's own schema has no description field. A description can sit in the file's key-value metadata
(what DuckDB's COPY writes: rlsql.columns, PANDAS_ATTRS) or in the Arrow schema pyarrow serialises into the
key `ARROW:schema`, whose fields carry metadata (what DuckDB does not write). The second file below is the same
table rewritten by pyarrow with a `description` on every field, to see which readers would show that.
Results: bench/RESULTS.md, "Column descriptions and provenance in Parquet".
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"


def export(out: Path, runs: list[Path], *names: str) -> None:
    args = [sys.executable, "-m", "rlsql", "--no-cache", "export", *names, "-o", str(out)]
    for run in runs:
        args += ["-r", str(run)]
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)


def with_field_metadata(path: Path, target: Path) -> None:
    """`path` rewritten by pyarrow with each column's description as Arrow field metadata."""
    table = pq.read_table(path)
    docs = json.loads(table.schema.metadata[b"rlsql.columns"])
    fields = [f.with_metadata({"description": docs.get(f.name, docs.get("*", ""))}) for f in table.schema]
    pq.write_table(table.cast(pa.schema(fields)), target)


def readers(path: Path, column: str) -> dict[str, str]:
    """What each reader shows of `column`'s description in `path` ('-' where it shows none)."""

    def short(text: object) -> str:
        return "-" if not text else str(text)[:48]

    schema = pq.read_schema(path)
    file_meta = schema.metadata or {}
    field_meta = schema.field(column).metadata or {}
    polars_meta = pl.read_parquet_metadata(path)
    frame = pd.read_parquet(path)
    con = duckdb.connect()
    kv = dict(con.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [str(path)]).fetchall())
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
    comment = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE table_name = 't' AND column_name = ?", [column]
    ).fetchone()
    chunk = con.execute(
        "SELECT key_value_metadata FROM parquet_metadata(?) WHERE path_in_schema = ? LIMIT 1", [str(path), column]
    ).fetchone()

    def from_json(text: str | bytes | None) -> str:
        # a column passed through from a file (a config key) shares the description under `*`
        docs = json.loads(text) if text else {}
        return short(docs.get(column, docs.get("*")))

    return {
        "pyarrow schema.metadata[rlsql.columns]": from_json(file_meta.get(b"rlsql.columns")),
        "pyarrow field.metadata": short(field_meta.get(b"description")),
        "polars read_parquet_metadata()[rlsql.columns]": from_json(polars_meta.get("rlsql.columns")),
        "polars schema (no metadata in its dtypes)": short(None),
        "pandas DataFrame.attrs[rlsql.columns]": from_json(json.dumps(frame.attrs.get("rlsql.columns", {}))),
        "duckdb parquet_kv_metadata()[rlsql.columns]": from_json(kv.get("rlsql.columns")),
        "duckdb column comment of a table read from it": short(comment[0] if comment else None),
        "duckdb parquet_metadata().key_value_metadata": short(chunk[0] if chunk else None),
    }


def sizes(folder: Path, out: Path) -> None:
    export(out, [folder], "run_table")
    path = out / "run_table.parquet"
    listed = out / json.loads(pq.read_schema(path).metadata[b"rlsql.sources"])["list"]
    kv = dict(
        duckdb.execute("SELECT decode(key), octet_length(value) FROM parquet_kv_metadata(?)", [str(path)]).fetchall()
    )
    print(
        f"\nrun_table over {folder}: run_table.parquet {path.stat().st_size:,} B, of which rlsql.sources "
        f"{kv['rlsql.sources']:,} B, rlsql.runs {kv['rlsql.runs']:,} B, rlsql.columns {kv['rlsql.columns']:,} B, "
        f"PANDAS_ATTRS {kv['PANDAS_ATTRS']:,} B; beside it {listed.name} {listed.stat().st_size:,} B"
    )


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bi"
        export(out, [RUNS / "calendar", RUNS / "tiny"], "run_table", "trials")
        with_field_metadata(out / "trials.parquet", Path(tmp) / "trials-field-metadata.parquet")
        own = json.loads(pq.read_schema(out / "run_table.parquet").metadata[b"rlsql.columns"])
        config_column = next(c for c in pq.read_schema(out / "run_table.parquet").names if c not in own)
        cases = [
            ("rlsql export trials.parquet", out / "trials.parquet", "effective_treatment"),
            ("rlsql export run_table.parquet (a config column)", out / "run_table.parquet", config_column),
            (
                "the same trials rewritten by pyarrow with field metadata",
                Path(tmp) / "trials-field-metadata.parquet",
                "effective_treatment",
            ),
        ]
        for label, path, column in cases:
            print(f"\n{label}, column {column}:")
            for reader, shown in readers(path, column).items():
                print(f"  {reader:<48} {shown}")
        if len(argv) > 1:
            sizes(Path(argv[1]), Path(tmp) / "sizes")


if __name__ == "__main__":
    main(sys.argv)
