"""Probing a CSV: read every column of one file as its source declares them (sources/_check_csv.sql.j2),
and find the file and line DuckDB could not parse when its own error names neither.

`rlsql check` probes every CSV (rlsql/inspection/check.py); a failed query probes the CSVs it read to name the
culprit (rlsql.engine.failures.query_failure). Both sit above this module, which needs only the
catalogue's templates and the runs' headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from rlsql.catalog.catalog import load_catalog
from rlsql.core.errors import DataError, UnparsableCsv, one_line
from rlsql.duck.memorydb import memory_connection
from rlsql.runs.artifacts import INTEGER_COLUMNS
from rlsql.runs.folders import Run, read_header


def probe_sql(
    kind: str, path: Path | None, header: list[str], buffer: int | None = None, paths: Sequence[Path] = ()
) -> str:
    """SQL that reads every column of one CSV as its source declares them (sources/_check_csv.sql.j2);
    with `paths`, of many CSVs with this header, a row of counts per file."""
    catalog = load_catalog()
    types = catalog.files[f"{kind}_src"].column_types(header)
    return catalog.env.get_template("sources/_check_csv.sql.j2").render(
        path=str(path),
        header=header,
        types=types,
        integers=INTEGER_COLUMNS[kind],
        buffer=buffer,
        paths=[str(p) for p in paths],
    )


#: the column a grouped probe names each row's file in (a header holding it is probed alone)
PROBE_FILE = "rlsql_probe_file"


def parser_failure(path: Path, exc: BaseException) -> tuple[int | None, str]:
    """(line, problem) for a CSV DuckDB's parser gave up on: the line of a stray carriage return
    (a CR not followed by LF, which DuckDB's strict parser cannot place) when there is one."""
    line = stray_cr_line(path)
    if line is not None:
        return line, "a carriage return (CR) inside a line: DuckDB cannot parse the file"
    return None, f"DuckDB cannot parse the file: {one_line(exc)}"


def stray_cr_line(path: Path, chunk: int = 1 << 24) -> int | None:
    """The line number of the first CR not followed by LF in `path`, or None."""
    lines, previous_cr = 1, False
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            if previous_cr and not block.startswith(b"\n"):
                return lines
            at = block.find(b"\r")
            while at != -1:
                if at + 1 < len(block) and block[at + 1] != 0x0A:
                    return lines + block.count(b"\n", 0, at)
                at = block.find(b"\r", at + 1)
            previous_cr = block.endswith(b"\r")
            lines += block.count(b"\n")
    return lines if previous_cr else None


def locate_unparsable_csv(runs: Sequence[Run], kinds: Sequence[str]) -> DataError | None:
    """After DuckDB failed without naming a file: probe each CSV a query reads and name the first that fails."""
    con = memory_connection()
    for run in runs:
        for kind in kinds:
            artifact = run.artifact(kind)
            header = read_header(artifact.path) if artifact is not None else []
            if artifact is None or not header:
                continue
            try:
                con.execute(probe_sql(kind, artifact.path, header)).fetchall()
            except duckdb.Error as exc:
                line, problem = parser_failure(artifact.path, exc)
                return UnparsableCsv(str(artifact.path), line, problem)
    return None
