"""The sources on Spark: the same run folders read in place, as DataFrames with the sources' columns.

The small sources (runs, run_files, config_src) come from the Python code that renders them for
DuckDB (rlsql/engine/statements.py SourceContext, rlsql/runs/config.py), turned into DataFrames. The CSV
sources read each file where it lies with every cell as text, then type the cells as the source
header declares (as DuckDB's read_csv with `columns = {...}` does); a row Spark cannot read (wrong
field count, a cell that is not of its column's type) is counted per file, warned about and left
out, never dropped silently. row_no numbers the rows as DuckDB's sources do: the files of one
header group in order, then line order. Harbor's result.json files are read whole and parsed with
the fields rlsql uses; a file that is not valid JSON fails the query naming the file.

No path reaches Spark as a glob: Hadoop's glob characters in a folder name are escaped.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from rlsql.catalog.catalog import Catalog
from rlsql.catalog.sqlfile import Column, SqlFile
from rlsql.core.errors import DataError, RlsqlWarning, one_line
from rlsql.duck.memorydb import memory_connection
from rlsql.engine.sources import SourceContext
from rlsql.runs.config import config_rows

_SPARK_TYPE = {
    "VARCHAR": "STRING",
    "DOUBLE": "DOUBLE",
    "BIGINT": "BIGINT",
    "INTEGER": "INT",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    # trajectory_steps_src's calls (the tool_call_names view)
    "STRUCT(CALL_INDEX BIGINT, FUNCTION_NAME VARCHAR)[]": "ARRAY<STRUCT<call_index: BIGINT, function_name: STRING>>",
}
_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")
CORRUPT = "_rlsql_corrupt"


#: why Spark skipped a CSV row (it does not say which line, nor which of the two)
SPARK_REJECTED = "a wrong number of fields or a cell not of its column's type"


def spark_type(duckdb_type: str) -> str:
    return _SPARK_TYPE[duckdb_type.upper()]


def exact_path(path: str) -> str:
    """A path Hadoop reads as that one file: its glob characters escaped."""
    return _HADOOP_GLOB.sub(r"\\\1", path)


def _local(reported: str) -> str:
    """The file path Spark reports (`file:///a%20b/x.csv`) as the local path string rlsql uses."""
    parsed = urllib.parse.urlparse(reported)
    if parsed.scheme in ("", "file"):
        return str(Path(urllib.parse.unquote(parsed.path)))
    return reported


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def small_frame(spark: Any, rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> Any:
    schema = ", ".join(f"{_q(name)} {ctype}" for name, ctype in columns)
    return spark.createDataFrame([tuple(row[name] for name, _ in columns) for row in rows], schema)


class SparkSources:
    """Builds each source's DataFrame over `runs` for one Spark session."""

    def __init__(self, spark: Any, context: SourceContext, catalog: Catalog):
        self.spark = spark
        self.context = context
        self.catalog = catalog
        #: the DataFrames cached here (SparkCatalog.close() frees them)
        self.persisted: list[Any] = []

    def frame(self, source: SqlFile) -> Any:
        if source.name == "runs":
            return small_frame(
                self.spark, self.context.run_rows, [("name", "STRING"), ("path", "STRING"), ("vllm_base_date", "DATE")]
            ).toDF("run", "run_path", "vllm_base_date")
        if source.name == "run_files":
            return small_frame(
                self.spark,
                self.context.run_files,
                [("run", "STRING"), ("kind", "STRING"), ("path", "STRING"), ("prefix", "STRING")],
            ).toDF("run", "artifact", "path", "prefix")
        if source.artifact == "config":
            return small_frame(
                self.spark,
                self.config_rows(),
                [
                    ("run", "STRING"),
                    ("ordinal", "INT"),
                    ("key", "STRING"),
                    ("value", "STRING"),
                    ("value_json", "STRING"),
                ],
            )
        if source.name == "skipped_rows_src":  # made after the CSV sources, whose reads counted what they skip
            return small_frame(
                self.spark,
                self.context.skipped_rows,
                [
                    ("run", "STRING"),
                    ("artifact", "STRING"),
                    ("path", "STRING"),
                    ("rows", "BIGINT"),
                    ("read", "BIGINT"),
                    ("why", "STRING"),
                ],
            ).toDF("run", "artifact", "source_file", "rows", "rows_read", "why")
        if source.artifact == "harbor":
            return self.harbor_frame(source)
        if source.artifact == "trajectories":  # read by DuckDB here (rlsql/trajectories.py), handed over as rows
            columns, rows = duckdb_rows(self.context, self.catalog, source)
            return self.spark.createDataFrame(rows, ", ".join(f"{_q(n)} {spark_type(t)}" for n, t in columns))
        if source.artifact:
            return self.csv_frame(source)
        raise DataError(f"{source.path}: the Spark engine has no reader for source {source.name}")

    def config_rows(self) -> list[dict]:
        """Every run's rl_config.yaml as (run, ordinal, key, value, value_json) rows, as config_src gives them."""
        rows: list[dict] = []
        for run in self.context.runs:
            config = run.artifact("config")
            if config is not None:
                rows.extend(config_rows(run.name, config.path))
        return rows

    # -- CSV --------------------------------------------------------------------------------------
    def csv_frame(self, source: SqlFile) -> Any:
        context = self.context.csv_context(source)
        columns: list[Column] = context["columns"]
        integers = set(context.get("integers", ()))
        parts = [self._csv_group(group, columns, integers) for group in context["groups"]]
        if not parts:
            schema = ", ".join(
                ["run STRING", "source_file STRING", "row_no BIGINT"]
                + [f"{_q(c.name)} {'BIGINT' if c.name in integers else spark_type(c.type)}" for c in columns]
            )
            return self.spark.createDataFrame([], schema)
        return functools.reduce(lambda a, b: a.unionAll(b), parts)

    def _csv_group(self, group: dict, columns: list[Column], integers: set[str]) -> Any:
        from pyspark.sql import functions as F

        header: list[str] = group["header"]
        types: dict[str, str] = group["types"]
        files = group["files"]
        raw_names = [f"c{i}" for i in range(len(header))]
        schema = ", ".join([f"{n} STRING" for n in raw_names] + [f"{CORRUPT} STRING"])
        raw = (
            self.spark.read.format("csv")
            .options(
                header=True,
                quote='"',
                escape='"',
                mode="PERMISSIVE",
                columnNameOfCorruptRecord=CORRUPT,
                enforceSchema=True,
                multiLine=True,
            )
            .schema(schema)
            .load([exact_path(f.path) for f in files])
            .withColumn("_rlsql_file", F.col("_metadata.file_path"))
        )
        # typed cells, as DuckDB reads them: a cell that does not convert makes the row unreadable
        typed, bad = [], []
        for raw_name, name in zip(raw_names, header, strict=True):
            ctype = types[name].upper()
            if ctype == "VARCHAR":
                typed.append(f"{raw_name} AS {_q(name)}")
                continue
            cast = f"try_cast({raw_name} AS {spark_type(ctype)})"
            bad.append(f"({raw_name} IS NOT NULL AND {cast} IS NULL)")
            if ctype == "DOUBLE" and name in integers:
                # a whole-number column keeps whole values up to 2**53 only (the sources' rule)
                typed.append(
                    f"CASE WHEN isnan({cast}) OR abs({cast}) = double('inf') THEN NULL "
                    f"WHEN abs({cast}) <= 9007199254740992D AND pmod({cast}, 1.0D) = 0.0D "
                    f"THEN CAST({cast} AS BIGINT) END "
                    f"AS {_q(name)}"
                )
            elif ctype == "DOUBLE":
                # nan and inf cells read as empty (the sources' rule, as pandas' skipna statistics)
                typed.append(
                    f"CASE WHEN isnan({cast}) OR abs({cast}) = double('inf') THEN NULL ELSE {cast} END AS {_q(name)}"
                )
            else:
                typed.append(f"{cast} AS {_q(name)}")
        rejected = " OR ".join([f"{CORRUPT} IS NOT NULL", *bad])
        marked = raw.selectExpr(
            "_rlsql_file", "monotonically_increasing_id() AS _rlsql_order", f"({rejected}) AS _rlsql_rejected", *typed
        )
        # read once: the count below fills Spark's cache, the numbered rows are read from it
        marked = marked.cache()
        self.persisted.append(marked)
        counts = {
            _local(r["_rlsql_file"]): (r["_rlsql_file"], r["rows"], r["rejected"])
            for r in marked.groupBy("_rlsql_file")
            .agg(F.count(F.lit(1)).alias("rows"), F.sum(F.col("_rlsql_rejected").cast("int")).alias("rejected"))
            .collect()
        }
        mapping, offset = [], 0
        for f in files:
            reported, rows, rejected_rows = counts.get(str(Path(f.path)), (None, 0, 0))
            count = self.context.csv_read[f.path]
            count.rows, count.skipped = rows - (rejected_rows or 0), rejected_rows or 0
            if rejected_rows:
                warnings.warn(
                    f"{f.path}: skipped {rejected_rows} unreadable row{'s' if rejected_rows > 1 else ''} "
                    f"({SPARK_REJECTED})",
                    RlsqlWarning,
                    stacklevel=4,
                )
            if reported is not None:
                mapping.append((reported, f.run, f.path, offset))
                offset += rows - (rejected_rows or 0)
        files_frame = self.spark.createDataFrame(
            mapping, "_rlsql_file STRING, run STRING, source_file STRING, _rlsql_offset BIGINT"
        )
        numbered = (
            marked.where("NOT _rlsql_rejected")
            .join(F.broadcast(files_frame), "_rlsql_file")
            .selectExpr(
                "*",
                "_rlsql_offset + row_number() OVER (PARTITION BY _rlsql_file ORDER BY _rlsql_order) AS row_no",
            )
        )
        out = ["run", "source_file", "row_no"]
        for c in columns:
            ctype = "BIGINT" if c.name in integers else spark_type(c.type)
            out.append(_q(c.name) if c.name in header else f"CAST(NULL AS {ctype}) AS {_q(c.name)}")
        return numbered.selectExpr(*out)

    # -- Harbor result.json -----------------------------------------------------------------------
    def harbor_frame(self, source: SqlFile) -> Any:
        """harbor_trials_src as DuckDB reads it, on this machine, handed to Spark as rows.

        Harbor's result.json files are one small file per trial, listed by rlsql itself (rlsql/runs/harbor.py)
        and read by sql/sources/harbor_trials_src.sql: its checks (what is no trial, which values are of
        the wrong JSON type) stay in one place, and its rows are one per trial, a small table.
        """
        import duckdb

        from rlsql.engine.failures import data_error

        columns = [("run", "STRING"), ("source_file", "STRING"), ("row_no", "BIGINT")]
        columns += [(c.name, spark_type(c.type)) for c in source.columns]
        sql = self.context.render(self.catalog, source)
        try:
            rows = memory_connection().execute(sql).fetchall()
        except duckdb.Error as exc:
            raise data_error(exc) or DataError(f"{source.path}: cannot read {source.name}: {one_line(exc)}") from exc
        schema = ", ".join(f"{_q(name)} {ctype}" for name, ctype in columns)
        return self.spark.createDataFrame(rows, schema)


def duckdb_rows(context, catalog, source) -> tuple[list[tuple[str, str]], list[tuple]]:
    """A trajectory source's (column, DuckDB type) pairs and rows, read by DuckDB on this machine (the Spark
    engine's source: the same SQL, checks and warnings as on DuckDB)."""
    from rlsql.duck.damagedfiles import forget, record_damaged, warn_damaged
    from rlsql.engine.failures import data_error

    con = memory_connection()
    saved = context.damaged_seen
    context.damaged_seen = record_damaged(con)
    try:
        cursor = con.execute(context.render(catalog, source))
        rows = cursor.fetchall()
    except duckdb.Error as exc:
        raise data_error(exc) or DataError(f"{source.path}: cannot read {source.name}: {one_line(exc)}") from exc
    finally:
        context.damaged_seen = saved
    columns = [(d[0], str(d[1])) for d in cursor.description]
    warn_damaged(con)
    forget(con)
    return columns, rows
