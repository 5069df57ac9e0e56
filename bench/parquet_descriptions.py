"""What per-column descriptions in an exported Parquet file's schema (Arrow field metadata, what pyarrow, pandas
and the BI tools built on Arrow show per column) would cost (issue 42): DuckDB 2.0's COPY writes none (no
per-column option beyond FIELD_IDS; COMMENT ON COLUMN is not carried), so pyarrow must.

Usage (from the repository root; the data under /tmp)::

    python bench/make_run.py --preset 1m /work/bench-data/1m
    RLSQL_CACHE=off rlsql export trials -r /work/bench-data/1m -o /tmp/descbench
    python bench/parquet_descriptions.py /tmp/descbench/trials.parquet --repeats 3

Two ways, each timed in this process (CPU s, wall s, alternated, medians) after the export: `rewrite`, the file
read whole by pyarrow and written again with each field's description (what a pyarrow step after DuckDB's COPY
costs), and `schema`, only the Arrow schema with the descriptions built and serialized, the bytes DuckDB's COPY
would write under the `ARROW:schema` key (KV_METADATA), which pyarrow reads its fields from. Each result is read
back to check that pyarrow shows the descriptions. The peak RSS printed is the process's, after both.
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
import statistics
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq


def described(schema: pa.Schema, descriptions: dict[str, str]) -> pa.Schema:
    """`schema` with each field's description (the columns passed through share the one under `*`)."""
    return pa.schema(
        [f.with_metadata({"description": descriptions.get(f.name, descriptions.get("*", ""))}) for f in schema],
        metadata=schema.metadata,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("parquet", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    source: Path = args.parquet
    descriptions = json.loads(pq.read_schema(source).metadata[b"rlsql.columns"])
    rewritten, copied = source.with_suffix(".rewritten.parquet"), source.with_suffix(".copied.parquet")

    def rewrite() -> None:
        table = pq.read_table(source)
        pq.write_table(table.cast(described(table.schema, descriptions)), rewritten, compression="zstd")

    serialized: list[str] = []

    def schema() -> None:
        blob = described(pq.read_schema(source), descriptions).serialize().to_pybytes()
        serialized[:] = [base64.b64encode(blob).decode()]

    figures: dict[str, list[tuple[float, float]]] = {"rewrite": [], "schema": []}
    for _ in range(args.repeats):
        for name, work in (("rewrite", rewrite), ("schema", schema)):
            cpu, wall = time.process_time(), time.perf_counter()
            work()
            figures[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    # the schema's bytes where DuckDB's COPY puts them (the copy itself is the export's, not timed)
    duckdb.execute(
        "COPY (FROM read_parquet(?)) TO '" + str(copied).replace("'", "''") + "' (FORMAT parquet, COMPRESSION zstd, "
        "KV_METADATA {'ARROW:schema': '" + serialized[0] + "'})",
        [str(source)],
    )
    for path in (rewritten, copied):
        fields = pq.read_schema(path)
        assert all(f.metadata and b"description" in f.metadata for f in fields), path
        assert pq.read_metadata(path).num_rows == pq.read_metadata(source).num_rows
    rows = pq.read_metadata(source).num_rows
    print(f"{source} ({rows:,} rows, {source.stat().st_size / 1e6:.1f} MB), median of {args.repeats}")
    for name, runs in figures.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        print(f"| {name} | {cpu:.3f} CPU-s | {wall:.3f} s |")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
