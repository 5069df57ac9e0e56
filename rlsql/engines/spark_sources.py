"""The sources on Spark: the same run folders read in place, as DataFrames with the sources' columns.

The small sources (runs, run_files, config_src) come from the Python code that renders them for
DuckDB (rlsql/connection.py SourceContext, rlsql/config.py), turned into DataFrames. The CSV
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
import os
import re
import urllib.parse
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlsql.catalog import Column, SqlFile
from rlsql.connection import SourceContext
from rlsql.errors import DataError, RlsqlWarning
from rlsql.runs import HARBOR_RESULT

_SPARK_TYPE = {"VARCHAR": "STRING", "DOUBLE": "DOUBLE", "BIGINT": "BIGINT", "INTEGER": "INT", "BOOLEAN": "BOOLEAN"}
_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")
CORRUPT = "_rlsql_corrupt"


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


def _lit(value: Any) -> str:
    """A Spark SQL string literal (Spark reads backslash escapes inside quotes)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def small_frame(spark: Any, rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> Any:
    schema = ", ".join(f"{_q(name)} {ctype}" for name, ctype in columns)
    return spark.createDataFrame([tuple(row[name] for name, _ in columns) for row in rows], schema)


class SparkSources:
    """Builds each source's DataFrame over `runs` for one Spark session."""

    def __init__(self, spark: Any, context: SourceContext):
        self.spark = spark
        self.context = context

    def frame(self, source: SqlFile) -> Any:
        if source.name == "runs":
            return small_frame(self.spark, self.context.run_rows,
                               [("name", "STRING"), ("path", "STRING"), ("vllm_base_date", "DATE")]
                               ).toDF("run", "run_path", "vllm_base_date")
        if source.name == "run_files":
            return small_frame(self.spark, self.context.run_files,
                               [("run", "STRING"), ("kind", "STRING"), ("path", "STRING"), ("prefix", "STRING")]
                               ).toDF("run", "artifact", "path", "prefix")
        if source.artifact == "config":
            return small_frame(self.spark, self.context.config_rows,
                               [("run", "STRING"), ("ordinal", "INT"), ("key", "STRING"), ("value", "STRING"),
                                ("value_json", "STRING")])
        if source.artifact == "harbor":
            return self.harbor_frame(source)
        if source.artifact:
            return self.csv_frame(source)
        raise DataError(f"{source.path}: the Spark engine has no reader for source {source.name}")

    # -- CSV --------------------------------------------------------------------------------------
    def csv_frame(self, source: SqlFile) -> Any:
        context = self.context.csv_context(source)
        columns: list[Column] = context["columns"]
        parts = [self._csv_group(group, columns) for group in context["groups"]]
        if not parts:
            schema = ", ".join(
                ["run STRING", "source_file STRING", "row_no BIGINT"]
                + [f"{_q(c.name)} {spark_type(c.type)}" for c in columns]
            )
            return self.spark.createDataFrame([], schema)
        return functools.reduce(lambda a, b: a.unionAll(b), parts)

    def _csv_group(self, group: dict, columns: list[Column]) -> Any:
        from pyspark.sql import functions as F

        header: list[str] = group["header"]
        types: dict[str, str] = group["types"]
        files = group["files"]
        raw_names = [f"c{i}" for i in range(len(header))]
        schema = ", ".join([f"{n} STRING" for n in raw_names] + [f"{CORRUPT} STRING"])
        raw = (
            self.spark.read.format("csv")
            .options(header=True, quote='"', escape='"', mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT,
                     enforceSchema=True, multiLine=True)
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
            if ctype == "DOUBLE":
                # nan and inf cells read as empty (the sources' rule, as pandas' skipna statistics)
                typed.append(f"CASE WHEN isnan({cast}) OR abs({cast}) = double('inf') THEN NULL ELSE {cast} END "
                             f"AS {_q(name)}")
            else:
                typed.append(f"{cast} AS {_q(name)}")
        rejected = " OR ".join([f"{CORRUPT} IS NOT NULL", *bad])
        marked = raw.selectExpr("_rlsql_file", "monotonically_increasing_id() AS _rlsql_order",
                                f"({rejected}) AS _rlsql_rejected", *typed)
        if os.environ.get("RLSQL_SPARK_CACHE", "1") != "0":
            # read once: the count below fills the cache, the numbered rows are read from it
            marked = marked.cache()
        counts = {
            _local(r["_rlsql_file"]): (r["_rlsql_file"], r["rows"], r["rejected"])
            for r in marked.groupBy("_rlsql_file").agg(
                F.count(F.lit(1)).alias("rows"), F.sum(F.col("_rlsql_rejected").cast("int")).alias("rejected")
            ).collect()
        }
        mapping, offset = [], 0
        for f in files:
            reported, rows, rejected_rows = counts.get(str(Path(f.path)), (None, 0, 0))
            if rejected_rows:
                warnings.warn(
                    f"{f.path}: skipped {rejected_rows} unreadable row{'s' if rejected_rows > 1 else ''} "
                    "(a wrong number of fields or a cell not of its column's type)",
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
            out.append(_q(c.name) if c.name in header else f"CAST(NULL AS {spark_type(c.type)}) AS {_q(c.name)}")
        return numbered.selectExpr(*out)

    # -- Harbor result.json -----------------------------------------------------------------------
    def harbor_frame(self, source: SqlFile) -> Any:
        timing = "STRUCT<started_at: STRING, finished_at: STRING>"
        structure = (
            "task_name STRING, trial_name STRING, "
            "agent_result STRUCT<n_input_tokens: DOUBLE, n_output_tokens: DOUBLE, "
            "metadata: STRUCT<n_episodes: DOUBLE>>, "
            "verifier_result STRUCT<rewards: STRUCT<reward: DOUBLE>>, "
            "exception_info STRUCT<exception_type: STRING, exception_message: STRING>, "
            f"started_at STRING, finished_at STRING, environment_setup {timing}, agent_setup {timing}, "
            f"agent_execution {timing}, verifier {timing}"
        )
        listed: list[tuple[str, str]] = []
        for entry in self.context.harbor_context()["files"]:
            run_dir = Path(entry["pattern"]).parent.parent
            listed.extend((entry["run"], str(p)) for p in sorted(run_dir.glob(f"*/{HARBOR_RESULT}")))
        columns = [(c.name, spark_type(c.type)) for c in source.columns]
        if not listed:
            schema = ", ".join(["run STRING", "source_file STRING", "row_no INT"]
                               + [f"{_q(n)} {t}" for n, t in columns])
            return self.spark.createDataFrame([], schema)
        text = (
            self.spark.read.format("text").option("wholetext", True)
            .load([exact_path(p) for _, p in listed])
            .selectExpr("_metadata.file_path AS _rlsql_file", "value")
        )
        invalid = text.where("try_parse_json(value) IS NULL").select("_rlsql_file").limit(1).collect()
        if invalid:
            raise DataError(f"{_local(invalid[0][0])}: not valid JSON (a Harbor trial result.json)")
        reported = {_local(r[0]): r[0] for r in text.select("_rlsql_file").collect()}
        files = self.spark.createDataFrame(
            [(reported.get(str(Path(p)), p), run, p, Path(p).parent.name) for run, p in listed],
            "_rlsql_file STRING, run STRING, source_file STRING, trial_folder STRING",
        )
        parsed = text.selectExpr("_rlsql_file", f"from_json(value, {_lit(structure)}) AS j").join(files, "_rlsql_file")

        def seconds(started: str, finished: str) -> str:
            # finished - started as the log parser's datetime arithmetic: both with an offset, or both without
            offset = "'[T ][0-9:.]+([Zz]|[+-][0-9:]+)$'"
            micro = "timestampdiff(MICROSECOND, try_cast({s} AS {t}), try_cast({f} AS {t})) / 1e6"
            return (
                f"CASE WHEN {started} RLIKE {offset} AND {finished} RLIKE {offset} "
                f"THEN {micro.format(s=started, f=finished, t='TIMESTAMP_LTZ')} "
                f"WHEN NOT {started} RLIKE {offset} AND NOT {finished} RLIKE {offset} "
                f"THEN {micro.format(s=started, f=finished, t='TIMESTAMP_NTZ')} END"
            )

        return parsed.selectExpr(
            "run",
            "source_file",
            "row_number() OVER (PARTITION BY run ORDER BY trial_folder) AS row_no",
            "j.task_name AS task_name",
            "j.trial_name AS trial_name",
            "j.agent_result.metadata.n_episodes AS n_episodes",
            "j.agent_result.n_input_tokens AS n_input_tokens",
            "j.agent_result.n_output_tokens AS n_output_tokens",
            "j.exception_info.exception_type AS exception_type",
            "j.verifier_result.rewards.reward AS reward",
            "CAST(NULL AS DOUBLE) AS agent_duration_sec",
            f"{seconds('j.started_at', 'j.finished_at')} AS trial_duration",
            *(
                f"{seconds(f'j.{phase}.started_at', f'j.{phase}.finished_at')} AS {phase}_duration"
                for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier")
            ),
            "j.exception_info.exception_message AS exception_message",
            "j.started_at AS started_at",
            "j.finished_at AS finished_at",
        )
