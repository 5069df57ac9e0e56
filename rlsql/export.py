"""Export named queries and base views to files for BI tools: Parquet (with provenance), CSV or JSON.

Each output is written by DuckDB's COPY into a temporary name in the output folder, then renamed
into place, so an interrupted export leaves the previous export intact and no half file under a
final name. A killed export (SIGKILL) can leave a hidden temporary (`.NAME.PID.TOKEN.rlsql-tmp`);
the next export into that folder removes it once its process is gone.

Parquet files carry key-value metadata (see METADATA_KEYS): what was exported, its version and
fingerprint, the parameters, rlsql's and DuckDB's versions, every source file read (path, size,
modification time, sha256) and the export time. CSV and JSON files get the same record in a
sidecar `FILE.meta.json`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import secrets
import shutil
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from rlsql import __version__, harbor
from rlsql.api import bind_params
from rlsql.atomic import refuse_run_folders, write_text
from rlsql.catalog import Catalog, SqlFile, load_catalog
from rlsql.connection import check_artifacts, open_connection
from rlsql.duckdb_errors import query_failure
from rlsql.errors import DataError, RlsqlWarning, UsageError
from rlsql.runs import Run
from rlsql.sqltext import identifier, literal

#: the views `--views` exports, in this order
BASE_VIEWS = ("trials", "steps", "metric_rows", "metrics_long", "vllm_seconds", "config")
#: format -> file suffix
EXPORT_FORMATS = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}
PARTITIONS = ("run",)
METADATA_KEYS = (
    "rlsql.query.name",
    "rlsql.query.kind",
    "rlsql.query.version",
    "rlsql.query.fingerprint",
    "rlsql.query.params",
    "rlsql.version",
    "rlsql.duckdb_version",
    "rlsql.runs",
    "rlsql.sources",
    "rlsql.exported_at",
)
TMP_SUFFIX = ".rlsql-tmp"
_TMP_NAME = re.compile(r"^\.(?P<final>.+)\.(?P<pid>\d+)\.(?P<token>[0-9a-f]+)(?P<old>\.old)?\.rlsql-tmp$")
_CHUNK = 1 << 20

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Written:
    """One exported query or view: where it went and how much."""

    name: str
    path: Path
    rows: int
    bytes: int
    files: int


def select_items(
    names: Sequence[str], all_queries: bool, views: bool, catalog: Catalog | None = None
) -> list[SqlFile]:
    """The queries and base views to export, each once, in the order asked."""
    catalog = catalog or load_catalog()
    if not names and not all_queries and not views:
        raise UsageError("name what to export: query names, --all (every named query) or --views (the base views)")
    chosen: list[str] = []
    for name in names:
        if name not in BASE_VIEWS:
            catalog.query(name)  # an unknown name fails here, with suggestions
        chosen.append(name)
    if all_queries:
        chosen.extend(q.name for q in catalog.queries())
    if views:
        chosen.extend(BASE_VIEWS)
    return [catalog.files[name] for name in dict.fromkeys(chosen)]


class SourceFingerprints:
    """Size, modification time and sha256 of each file read; each file is hashed once."""

    def __init__(self) -> None:
        self._seen: dict[Path, dict[str, Any]] = {}

    def describe(self, path: Path) -> dict[str, Any]:
        if path not in self._seen:
            digest = hashlib.sha256()
            try:
                stat = path.stat()
                with path.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
            except OSError as exc:
                raise DataError(f"{path}: cannot read ({exc.strerror})") from exc
            self._seen[path] = {
                "path": str(path),
                "size": stat.st_size,
                "mtime": dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC).isoformat(),
                "sha256": digest.hexdigest(),
            }
        return self._seen[path]

    def for_files(self, runs: Sequence[Run], files: Sequence[SqlFile]) -> list[dict[str, Any]]:
        """Every artifact the files' sources read, run by run."""
        kinds = {f.artifact for f in files if f.kind == "source" and f.artifact}
        out = []
        for run in runs:
            for kind in sorted(kinds):
                artifact = run.artifact(kind)
                if kind == "harbor" and artifact is not None:
                    if run.artifact("trials") is None:  # a run with a trials CSV reads the CSV instead
                        out.append({"run": run.name, "artifact": kind, **self.describe_trials(artifact.path)})
                elif artifact is not None:
                    out.append({"run": run.name, "artifact": kind, **self.describe(artifact.path)})
        return out

    def describe_trials(self, trace_jobs: Path) -> dict[str, Any]:
        """Harbor's trace_jobs folder as one record: its result.json files' total size, newest mtime and one
        sha256 over their relative paths and contents, in sorted order.

        The files are the ones the source reads (harbor.list_trials): a FIFO, a folder or a dangling
        link among the trial folders is not opened (a FIFO would block the export)."""
        if trace_jobs not in self._seen:
            digest, size, mtime, count = hashlib.sha256(), 0, 0.0, 0
            for path in (Path(f.path) for f in harbor.list_trials(trace_jobs).files if f.problem is None):
                record = self.describe(path)
                digest.update(f"{path.relative_to(trace_jobs).as_posix()}\0{record['sha256']}\n".encode())
                size, count = size + record["size"], count + 1
                mtime = max(mtime, path.stat().st_mtime)
                del self._seen[path]  # one record for the folder, not one per trial
            self._seen[trace_jobs] = {
                "path": str(trace_jobs),
                "size": size,
                "mtime": dt.datetime.fromtimestamp(mtime, tz=dt.UTC).isoformat(),
                "sha256": digest.hexdigest(),
                "files": count,
            }
        return self._seen[trace_jobs]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(folder: Path) -> None:
    """Remove temporaries that killed exports left in `folder`; restore a partition tree caught mid-swap."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _TMP_NAME.match(entry.name)
        if not match or _pid_alive(int(match["pid"])):
            continue
        final = folder / match["final"]
        if match["old"] and not final.exists():
            os.rename(entry, final)  # killed between the two renames of a swap: put the old tree back
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _tmp_name(final: Path, old: bool = False) -> Path:
    return final.with_name(f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}{'.old' if old else ''}{TMP_SUFFIX}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _copy_options(fmt: str, metadata: dict[str, str], partition: str | None) -> str:
    if fmt == "parquet":
        kv = ", ".join(f"{identifier(k)}: {literal(v)}" for k, v in metadata.items())
        options = ["FORMAT parquet", "COMPRESSION zstd", f"KV_METADATA {{{kv}}}"]
    elif fmt == "csv":
        options = ["FORMAT csv", "HEADER true"]
    else:
        options = ["FORMAT json", "ARRAY true"]
    if partition:
        options.append(f"PARTITION_BY ({identifier(partition)})")
    return ", ".join(options)


def _select(con: duckdb.DuckDBPyConnection, name: str, fmt: str, partition: str | None) -> str:
    columns = con.execute(f"DESCRIBE {identifier(name)}").fetchall()
    names = [c[0] for c in columns]
    if partition and partition not in names:
        raise UsageError(f"{name} has no {partition!r} column to partition by")
    if fmt != "json":
        return f"SELECT * FROM {identifier(name)}"
    # JSON has no NaN: write null, as `rlsql query -f json` does
    parts = [
        f"CASE WHEN isnan({identifier(c)}) THEN NULL ELSE {identifier(c)} END AS {identifier(c)}"
        if ctype in ("DOUBLE", "FLOAT") else identifier(c)
        for c, ctype, *_ in columns
    ]
    return f"SELECT {', '.join(parts)} FROM {identifier(name)}"


def check_params(items: Sequence[SqlFile], given: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each exported query's parameter values; a parameter no exported query declares is an error."""
    declared = {p.name for f in items if f.kind == "query" for p in f.params}
    unknown = sorted(set(given) - declared)
    if unknown:
        accepted = ", ".join(sorted(declared)) or "none"
        raise UsageError(f"no exported query has parameter {', '.join(unknown)} (accepted: {accepted})")
    values: dict[str, dict[str, Any]] = {}
    for f in items:
        if f.kind == "query":
            own = {p.name for p in f.params}
            values[f.name] = bind_params(f.name, {k: v for k, v in given.items() if k in own})
        else:
            values[f.name] = {}
    return values


def export(
    runs: Sequence[Run],
    items: Sequence[SqlFile],
    out_dir: Path,
    fmt: str = "parquet",
    partition_by: str | None = None,
    params: dict[str, str] | None = None,
    skippable: Collection[str] = (),
    progress: Progress | None = None,
    catalog: Catalog | None = None,
) -> list[Written]:
    """Write each of `items` (queries or views) over `runs` into `out_dir`; returns what was written.

    An item whose artifact is missing in every run is an error, or, when its name is in `skippable`
    (what --all and --views add), a warning and no file. Nothing is written before every item and
    parameter has been checked.
    """
    catalog = catalog or load_catalog()
    progress = progress or (lambda message: None)
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    if partition_by is not None and partition_by not in PARTITIONS:
        raise UsageError(f"--partition-by {partition_by!r}: only {', '.join(PARTITIONS)} is supported")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: not a folder; -o takes the folder the files go to")
    refuse_run_folders(out_dir, runs)
    values = check_params(items, params or {})

    kept: list[SqlFile] = []
    for item in items:
        try:
            check_artifacts(runs, catalog.closure([item.name]), item.name)
        except DataError as exc:
            if item.name not in skippable:
                raise
            warnings.warn(f"skipping {item.name}: {exc}", RlsqlWarning, stacklevel=2)
            continue
        kept.append(item)
    if not kept:
        raise DataError("nothing to export: every query asked for needs an artifact these runs lack")

    out_dir.mkdir(parents=True, exist_ok=True)
    sweep_stale(out_dir)
    con = open_connection(runs, [f.name for f in kept], catalog)
    fingerprints = SourceFingerprints()
    exported_at = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    run_list = json.dumps([{"name": r.name, "path": str(r.path)} for r in runs])
    written: list[Written] = []
    set_before: set[str] = set()
    for number, item in enumerate(kept, 1):
        metadata = {
            "rlsql.query.name": item.name,
            "rlsql.query.kind": item.kind,
            "rlsql.query.version": item.version,
            "rlsql.query.fingerprint": item.fingerprint,
            "rlsql.query.params": json.dumps(values[item.name]),
            "rlsql.version": __version__,
            "rlsql.duckdb_version": duckdb.__version__,
            "rlsql.runs": run_list,
            "rlsql.sources": json.dumps(fingerprints.for_files(runs, catalog.closure([item.name]))),
            "rlsql.exported_at": exported_at,
        }
        for pname in set_before:  # a view must not see a parameter set for an earlier query
            con.execute(f"RESET VARIABLE {identifier(pname)}")
        set_before = set(values[item.name])
        for pname, value in values[item.name].items():
            con.execute(f"SET VARIABLE {identifier(pname)} = ?", [value])
        select = _select(con, item.name, fmt, partition_by)
        options = _copy_options(fmt, metadata, partition_by)
        suffix = EXPORT_FORMATS[fmt]
        try:
            if partition_by:
                done = _write_tree(con, select, options, out_dir / item.name, item.name)
            else:
                done = _write_file(con, select, options, out_dir / f"{item.name}{suffix}", item.name)
        except duckdb.Error as exc:
            raise query_failure(exc, item.name, runs, catalog.closure([item.name])) from exc
        if fmt != "parquet":
            write_text(done.path.with_name(done.path.name + ".meta.json"), json.dumps(metadata, indent=2) + "\n")
        written.append(done)
        rows = f"{done.rows:,} row{'' if done.rows == 1 else 's'}"
        progress(f"[{number}/{len(kept)}] {item.name}: {rows}, {_human(done.bytes)} -> {done.path}")
    return written


def _copy(con: duckdb.DuckDBPyConnection, select: str, target: Path, options: str) -> int:
    row = con.execute(f"COPY ({select}) TO {literal(str(target))} ({options})").fetchone()
    return int(row[0]) if row else 0


def _write_file(con: duckdb.DuckDBPyConnection, select: str, options: str, target: Path, name: str) -> Written:
    tmp = _tmp_name(target)
    try:
        rows = _copy(con, select, tmp, options)
        _fsync(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return Written(name, target, rows, target.stat().st_size, 1)


def _write_tree(con: duckdb.DuckDBPyConnection, select: str, options: str, target: Path, name: str) -> Written:
    """A hive tree (`NAME/run=X/data_0.parquet`) built beside the target, then swapped in by two renames."""
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target}: exists and is not a folder; move it away to export a partitioned tree there")
    tmp = _tmp_name(target)
    old = _tmp_name(target, old=True)
    try:
        rows = _copy(con, select, tmp, options)
        tmp.mkdir(exist_ok=True)  # no rows: no partition, but still an (empty) export
        for path in tmp.rglob("*"):
            if path.is_file():
                _fsync(path)
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if old.exists() and not target.exists():
            os.rename(old, target)  # the swap failed half-way: the previous export goes back
        shutil.rmtree(tmp, ignore_errors=True)
    files, size = _tree_size(target)
    return Written(name, target, rows, size, files)


def _human(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def summary(written: Sequence[Written], out_dir: Path) -> str:
    files = sum(w.files for w in written)
    rows = sum(w.rows for w in written)
    size = sum(w.bytes for w in written)
    what = "1 query or view" if len(written) == 1 else f"{len(written)} queries and views"
    return f"exported {what} to {out_dir}: {files} file{'' if files == 1 else 's'}, {rows:,} rows, {_human(size)}"
