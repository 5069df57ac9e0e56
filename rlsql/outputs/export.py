"""Export named queries and base views to files for BI tools: Parquet (with provenance), CSV or JSON.

Every file goes through rlsql.runs.writes: written under a temporary name in the output folder, then
renamed into place, so an interrupted export leaves the previous export intact and no half file
under a final name; the next export into the folder sweeps what a killed one left.

An export replaces only what an earlier export wrote: the output folder's mark (`.rlsql-export.json`)
records each file it wrote (inode, size, mtime), a partition tree and each of its partitions carry a
mark of their own. Anything else in the way, and any target that is or holds a run folder, is refused.

`--partition-by run` writes an item with many rows per run as one partition per run
(`NAME/run=RUN/data_0.parquet`), each carrying its own run's provenance (PARTITION_KEYS; the parts
shared by every partition, TREE_KEYS, once in the tree's mark), and an item with about one row per
run (rlsql.outputs.exportmerge.merged_by_run: its grain) as one file `NAME.parquet` merged run by run. By
default only the exported runs' partitions or rows are replaced, the others stay; `replace_all`
swaps in each whole tree or file instead. An export holds its folder's lock (writes.folder_lock)
from its second check of the targets to its last rename.

Parquet files carry key-value metadata (METADATA_KEYS): what was exported, its version and
fingerprint, the parameters, rlsql's and DuckDB's versions, the source files read, the export time and
each column's description (with PANDAS_ATTRS, where pandas looks). A file's sources are a summary whose
full list (path, size, modification time, sha256) lies beside it in `FILE.sources-HASH.json`; a partition
lists its own run's. CSV and JSON files get the whole record in a sidecar `FILE.meta.json` (in a
partition, in the partition's hidden mark).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import shutil
import urllib.parse
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import DataError, RlsqlWarning, UsageError
from rlsql.core.sqltext import identifier, literal
from rlsql.core.version import __version__
from rlsql.duck.badcells import BadCells
from rlsql.duck.fileio import copy_to
from rlsql.duck.memorydb import Connection, DuckError, duckdb_version, spill_into
from rlsql.engine.answer import Answer
from rlsql.engine.copies import Copies
from rlsql.engine.failures import query_failure
from rlsql.engine.query import bind_params, reset_variables, set_variables
from rlsql.engine.sources import SourceContext
from rlsql.engine.statements import open_connection, reads_result_files
from rlsql.outputs.exportmerge import (
    carried_config_keys,
    is_sources_sidecar,
    merge,
    partition_layout,
    sidecar,
    sources_sidecar,
    sources_summary,
)
from rlsql.outputs.provenance import SourceFingerprints, run_record
from rlsql.runs.artifacts import MissingArtifact, check_artifacts
from rlsql.runs.folders import Run
from rlsql.runs.writes import (
    MARK,
    atomic_path,
    disk_failure,
    failures_named,
    folder_lock,
    fsync_tree,
    guard,
    guard_folder,
    owns_file,
    parse_temp_name,
    read_mark,
    remove_dir,
    remove_file,
    swap_dir,
    sweep,
    temp_name,
    write_mark,
    write_text,
)

#: the views `--views` exports, in this order
BASE_VIEWS = ("trials", "steps", "metric_rows", "metrics_long", "vllm_seconds", "config")
#: format -> file suffix
EXPORT_FORMATS = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}
PARTITIONS = ("run",)
#: the provenance record of every exported file, in this order (`_metadata` fills it; the one list)
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
    "rlsql.columns",
)
#: what a partition's own file (or, for CSV/JSON, its mark) keeps of METADATA_KEYS: the item's
#: identity, its run's provenance and the column descriptions (where readers of the file look; compact
#: since the metric columns share one, SqlFile.column_descriptions). The rest is the same for every
#: partition of an export and is written once, in the tree's mark (key `metadata`).
PARTITION_KEYS = (
    "rlsql.query.name",
    "rlsql.query.version",
    "rlsql.query.fingerprint",
    "rlsql.query.params",
    "rlsql.runs",
    "rlsql.sources",
    "rlsql.exported_at",
    "rlsql.columns",
)
#: what the tree's mark keeps once for all its partitions
TREE_KEYS = (
    "rlsql.query.name",
    "rlsql.query.kind",
    "rlsql.query.version",
    "rlsql.query.fingerprint",
    "rlsql.version",
    "rlsql.duckdb_version",
    "rlsql.exported_at",
    "rlsql.columns",
)
#: the temporary table a partitioned export's rows wait in while each run's partition is copied out
_STAGED = "__rlsql_export"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Written:
    """One exported query or view: where it went and how much."""

    name: str
    path: Path
    rows: int
    bytes: int
    files: int
    #: a merged file: all the rows it holds now (`rows`: the exported runs' only)
    file_rows: int | None = None


def select_items(names: Sequence[str], all_queries: bool, views: bool, catalog: Catalog | None = None) -> list[SqlFile]:
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


def _select(con: Connection, name: str, fmt: str, partition: str | None) -> str:
    columns = con.execute(f"DESCRIBE {identifier(name)}").fetchall()
    names = [c[0] for c in columns]
    if partition and partition not in names:
        raise UsageError(f"{name} has no {partition!r} column to partition by")
    if fmt == "parquet":
        # a timestamp as the UTC instant it is (rlsql's timestamps are UTC): Parquet's isAdjustedToUTC, so that
        # pyarrow, pandas, polars, Spark and BI tools read an instant, not a wall-clock time of no zone
        stamps = [c for c, ctype, *_ in columns if ctype == "TIMESTAMP"]
        instants = [
            (c, "TIMESTAMP WITH TIME ZONE" if ctype == "TIMESTAMP" else ctype, *rest) for c, ctype, *rest in columns
        ]
        replaced = (
            (" REPLACE (" + ", ".join(f"timezone('UTC', {identifier(c)}) AS {identifier(c)}" for c in stamps) + ")")
            if stamps
            else ""
        )
        return f"SELECT *{replaced} FROM {identifier(name)}{_every_column_nullable(instants)}"
    if fmt != "json":
        return f"SELECT * FROM {identifier(name)}"
    # JSON has no NaN: write null, as `rlsql query -f json` does
    parts = [
        f"CASE WHEN isnan({identifier(c)}) THEN NULL ELSE {identifier(c)} END AS {identifier(c)}"
        if ctype in ("DOUBLE", "FLOAT")
        else identifier(c)
        for c, ctype, *_ in columns
    ]
    return f"SELECT {', '.join(parts)} FROM {identifier(name)}"


#: a DuckDB type name as DESCRIBE prints it for a plain column (VARCHAR, DECIMAL(18,3), VARCHAR[], ...)
_PLAIN_TYPE = re.compile(r"^[A-Z][A-Z0-9_ ]*(\(\d+(, ?\d+)?\))?(\[\d*\])*$")


def _every_column_nullable(columns: Sequence[tuple]) -> str:
    """A never-true branch of typed NULLs, so that Parquet declares every column optional.

    DuckDB writes a column as `required` when its statistics prove no NULL (a column of a loaded
    source, a group key), which depends on the data: the same query's schema would change from one
    export to the next. A union with a row of NULLs that no run ever yields keeps it optional at the
    cost of one filtered row. Left out when a type is not a plain name (a STRUCT's field names).
    """
    branch = _null_row(columns)
    return f" UNION ALL BY NAME {branch}" if branch else ""


def _null_row(columns: Sequence[tuple]) -> str:
    """`_every_column_nullable`'s branch: a SELECT of typed NULLs that yields no row ("" if not possible)."""
    if not all(_PLAIN_TYPE.match(str(ctype)) for _, ctype, *_ in columns):
        return ""
    nulls = ", ".join(f"CAST(NULL AS {ctype}) AS {identifier(c)}" for c, ctype, *_ in columns)
    return f"SELECT {nulls} WHERE random() > 2"


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
    replace_all: bool = False,
    relative_to: Path | None = None,
    copies: Copies | None = None,
) -> list[Written]:
    """Write each of `items` (queries or views) over `runs` into `out_dir`; returns what was written.
    `copies`: the fresh cached copies the command hands in, read instead of the files (rlsql/engine/copies.py).

    `relative_to`: the provenance names each run folder and source file relative to that folder (as
    `os.path.relpath` writes it), so that a lake moved with its runs still names them.

    An item whose artifact is missing in every run is an error, or, when its name is in `skippable`
    (what --all and --views add), a warning and no file. Nothing is written before every item,
    parameter and target has been checked. With `partition_by`, only the exported runs' partitions
    are replaced unless `replace_all`.
    """
    catalog = catalog or load_catalog()
    progress = progress or (lambda message: None)
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    if partition_by is not None and partition_by not in PARTITIONS:
        raise UsageError(f"--partition-by {partition_by!r}: only {', '.join(PARTITIONS)} is supported")
    if replace_all and partition_by is None:
        raise UsageError("--replace-all goes with --partition-by (an unpartitioned file is always replaced whole)")
    guard_folder(out_dir)  # an empty path too; never at, in or around a run
    with failures_named(out_dir):
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"{out_dir}: not a folder; -o takes the folder the files go to")
    values = check_params(items, params or {})

    kept: list[SqlFile] = []
    for item in items:
        try:
            check_artifacts(runs, catalog.closure([item.name]), item.name)
        except MissingArtifact as exc:
            if item.name not in skippable:
                raise
            warnings.warn(f"skipping {item.name}: {exc.absent}", RlsqlWarning, stacklevel=2)
            continue
        kept.append(item)
    if not kept:
        raise DataError("nothing to export: every query asked for needs an artifact these runs lack")

    if out_dir.is_dir():
        sweep(out_dir)  # first: a tree a killed export left mid-swap goes back before it is checked
    suffix = EXPORT_FORMATS[fmt]
    # partitioned: a hive tree NAME/; merged (about one row per run) and unpartitioned: NAME.EXT
    # an item without a run column (group_curves: one row per config value and step, over every run) has
    # nothing to split by: one file, written whole as without --partition-by (partition_layout None)
    trees = {item.name for item in kept if partition_by and partition_layout(item) == "tree"}
    targets = {item.name: out_dir / (item.name if item.name in trees else f"{item.name}{suffix}") for item in kept}
    check = functools.partial(
        _check_targets, kept, targets, trees, out_dir, fmt, runs, replace_all, partition_by is not None
    )
    check()  # before anything is written, the output folder included
    with failures_named(out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
    # one export at a time in a folder: a merged file read by one and replaced by the other would lose runs
    with folder_lock(out_dir, progress):
        sweep(out_dir)
        check()  # again, now that no other export can change the folder
        # the whole export is one answer (rlsql/engine/answer.py): a cached copy that fails to read costs a
        # second export from the CSVs, never a failed export
        write = functools.partial(
            _write_items,
            runs,
            kept,
            out_dir,
            fmt,
            partition_by,
            values,
            targets,
            trees,
            progress,
            catalog,
            replace_all,
            relative_to,
        )
        answering = Answer(copies)
        return answering.run(lambda bad_cells: write(bad_cells=bad_cells, copies=answering.copies))


def _check_targets(
    kept: Sequence[SqlFile],
    targets: dict[str, Path],
    trees: Collection[str],
    out_dir: Path,
    fmt: str,
    runs: Sequence[Run],
    replace_all: bool,
    partitioned: bool,
) -> None:
    """Every target the export would write or replace is rlsql's (or new); else a UsageError."""
    with failures_named(out_dir):
        for item in kept:
            target = targets[item.name]
            guard_folder(target) if item.name in trees else guard(target)
            if item.name in trees:
                _check_tree_replaceable(target, item.name, runs, replace_all)
                continue
            _check_file_replaceable(target)
            if fmt != "parquet":  # a Parquet file's list has a new name whenever it changes (sources_sidecar)
                _check_file_replaceable(sidecar(target))
            if partitioned:
                _check_old_tree(out_dir / item.name, item.name, fmt, replace_all)


def _check_old_tree(tree: Path, name: str, fmt: str, replace_all: bool) -> None:
    """A merged item's partition tree from an older rlsql (which split it by run) goes with --replace-all."""
    if not (tree.exists() or tree.is_symlink()):
        return
    if replace_all and not tree.is_symlink() and tree.is_dir():
        mark = read_mark(tree)
        if mark is not None and mark.get("name") == name:
            _check_tree_replaceable(tree, name, [], replace_all=True)
            return
    if read_mark(tree) is not None and not tree.is_symlink():
        raise UsageError(
            f"{tree}: a partition tree an older rlsql wrote; {name} is now one merged file "
            f"{name}{EXPORT_FORMATS[fmt]}: export every run again with --replace-all (it removes "
            "the tree)"
        )
    raise _not_ours(tree, f"is in the way of {name}'s merged file (a folder rlsql did not write)")


def _write_items(
    runs: Sequence[Run],
    kept: Sequence[SqlFile],
    out_dir: Path,
    fmt: str,
    partition_by: str | None,
    values: dict[str, dict[str, Any]],
    targets: dict[str, Path],
    trees: Collection[str],
    progress: Progress,
    catalog: Catalog,
    replace_all: bool,
    relative_to: Path | None = None,
    bad_cells: BadCells | None = None,
    copies: Copies | None = None,
) -> list[Written]:
    """export()'s writing half, once every item, parameter and target has been checked. `trees`: the items
    written as partition trees (the others with `partition_by` are merged files). `bad_cells` and `copies`: the
    answer's attempt's (rlsql/engine/answer.py)."""
    # run_table's columns are laid out when its view is created: its `keys` parameter picks them then
    keys = next((values[f.name].get("keys") for f in kept if f.per_runs), None)
    if keys is None and partition_by and not replace_all:
        keys = _merged_config_keys(runs, kept, targets, trees, fmt)
    con = open_connection(runs, [f.name for f in kept], catalog, config_keys=keys, bad_cells=bad_cells, copies=copies)
    # DuckDB spills to `.tmp` in the current folder by default (a run folder, maybe): beside the output instead
    spill = temp_name(out_dir / "duckdb-spill")
    spill_into(con, spill)
    try:
        fingerprints = SourceFingerprints()
        exported_at = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
        beside_csv = any(r.artifact("harbor") is not None and r.artifact("trials") is not None for r in runs)
        written: list[Written] = []
        set_before: set[str] = set()
        for number, item in enumerate(kept, 1):
            columns = [c[0] for c in con.execute(f"DESCRIBE {identifier(item.name)}").fetchall()]
            needed = catalog.closure([item.name])
            # the result.json beside a trials CSV: in the provenance when the plan reads them (planning
            # costs ~0.1 s over 300 runs, so only where there are such files to read)
            fills = (
                beside_csv and any(f.name == "harbor_fill_src" for f in needed) and reads_result_files(con, item.name)
            )
            metadata = functools.partial(
                _metadata, item, values[item.name], needed, fingerprints, exported_at, columns, fills, relative_to
            )
            reset_variables(con, set_before)  # a view must not see a parameter set for an earlier query
            set_before = set(values[item.name])
            set_variables(con, values[item.name])
            whole = partition_by is None or partition_layout(item) is None
            select = _select(con, item.name, fmt, None if whole else partition_by)
            target = targets[item.name]
            try:
                if not whole and item.name not in trees:
                    # run_table's config columns: typed by their values, so retyped when merged with kept rows
                    loose = [c for c in columns if c not in item.column_docs]
                    done = _write_merged(con, select, fmt, target, item, runs, metadata(runs), replace_all, loose)
                    old_tree = out_dir / item.name
                    if replace_all and old_tree.is_dir() and not old_tree.is_symlink():
                        remove_dir(old_tree)  # checked: an older rlsql's tree of this item, every entry marked
                elif not whole:
                    done = _write_tree(con, select, fmt, target, item.name, runs, metadata, replace_all)
                else:
                    with _listed_beside(metadata(runs), target, fmt) as meta:
                        done = _write_file(con, select, _copy_options(fmt, meta), target, item.name)
                    if fmt != "parquet":
                        write_text(sidecar(target), json.dumps(meta, indent=2) + "\n", mark=True)
                    _drop_unnamed_lists(target, meta)
            except DuckError as exc:
                raise query_failure(exc, item.name, runs, catalog.closure([item.name])) from exc
            written.append(done)
            rows = f"{done.rows:,} row{'' if done.rows == 1 else 's'}"
            if done.file_rows is not None and done.file_rows != done.rows:
                rows += f" ({done.file_rows:,} in the file)"
            progress(f"[{number}/{len(kept)}] {item.name}: {rows}, {_human(done.bytes)} -> {done.path}")
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return written


def _merged_config_keys(
    runs: Sequence[Run],
    kept: Sequence[SqlFile],
    targets: dict[str, Path],
    trees: Collection[str],
    fmt: str,
) -> str | None:
    """run_table merged into an earlier file without a `keys` parameter: its columns are the file's config
    keys and the keys that differ between the runs exported now (None: no such file, the usual layout)."""
    carried = [
        key
        for f in kept
        if f.per_runs and f.name not in trees and targets[f.name].exists()
        for key in carried_config_keys(f, targets[f.name], fmt)
    ]
    if not carried:
        return None
    keys = {*carried, *SourceContext(runs).differing_keys()}
    return ",".join(sorted(k for k in keys if "," not in k))  # `keys` is comma-separated: such a key cannot go


def _metadata(
    item: SqlFile,
    params: dict[str, Any],
    needed: Sequence[SqlFile],
    fingerprints: SourceFingerprints,
    exported_at: str,
    columns: Sequence[str],
    fills: bool,
    relative_to: Path | None,
    runs: Sequence[Run],
) -> dict[str, str]:
    """The provenance record of `item` exported over `runs` (all of them, or one partition's run). `fills`:
    whether its plan reads the result.json files beside a trials CSV (reads_result_files); `relative_to`: the
    folder the paths are written relative to (None: absolute)."""

    def shown(path: str) -> str:
        return path if relative_to is None else os.path.relpath(path, relative_to)

    sources = [
        {**f, "path": shown(f["path"])} if "path" in f else f for f in fingerprints.for_files(runs, needed, fills)
    ]
    return dict(
        zip(
            METADATA_KEYS,
            (
                item.name,
                item.kind,
                item.version,
                item.fingerprint,
                json.dumps(params),
                __version__,
                duckdb_version(),
                json.dumps([{**run_record(r), "path": shown(str(r.path))} for r in runs]),
                json.dumps(sources),
                exported_at,
                # column -> its `-- column:` description (Parquet has no per-column comment of its own)
                json.dumps(item.column_descriptions(columns)),
            ),
            strict=True,
        )
    )


def partition_folder(value: Any) -> str:
    """The hive folder of one partition, its value percent-encoded as DuckDB and pyarrow decode it."""
    return f"run={urllib.parse.quote(str(value), safe='')}"


def _not_ours(path: Path, what: str = "was not written by rlsql export (or changed since)") -> UsageError:
    return UsageError(f"{path}: exists and {what}; move it away or choose another -o folder")


def _check_file_replaceable(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        raise _not_ours(target, "is a folder")
    if (target.exists() or target.is_symlink()) and not owns_file(target.parent, target.name):
        raise _not_ours(target)


def _check_tree_replaceable(tree: Path, name: str, runs: Sequence[Run], replace_all: bool) -> None:
    """A tree to write into or replace must be one an export wrote (its mark names `name`), and so must
    every partition it would replace (with `replace_all`: everything in it)."""
    if not (tree.exists() or tree.is_symlink()):
        return
    if tree.is_symlink() or not tree.is_dir():
        raise _not_ours(tree, "is not a folder an export wrote")
    mark = read_mark(tree)
    if mark is None or mark.get("name") != name:
        raise _not_ours(tree)
    if replace_all:
        replaced = [p for p in tree.iterdir() if p.name != MARK and parse_temp_name(p.name) is None]
    else:
        replaced = [tree / partition_folder(run.name) for run in runs]
    for part in replaced:
        if (part.exists() or part.is_symlink()) and (part.is_symlink() or read_mark(part) is None):
            raise _not_ours(part)


#: the file metadata key pandas reads into `DataFrame.attrs` (pandas.read_parquet; the only metadata it shows)
PANDAS_ATTRS = "PANDAS_ATTRS"


def _copy_options(fmt: str, metadata: dict[str, str]) -> str:
    if fmt == "parquet":
        if "rlsql.columns" in metadata:  # df.attrs["rlsql.columns"] in pandas (bench/parquet_readers.py)
            metadata = {**metadata, PANDAS_ATTRS: json.dumps({"rlsql.columns": json.loads(metadata["rlsql.columns"])})}
        kv = ", ".join(f"{identifier(k)}: {literal(v)}" for k, v in metadata.items())
        return ", ".join(["FORMAT parquet", "COMPRESSION zstd", f"KV_METADATA {{{kv}}}"])
    if fmt == "csv":
        return "FORMAT csv, HEADER true"
    return "FORMAT json, ARRAY true"


def _copy(con: Connection, select: str, to: Path, options: str, target: Path, staging: Path) -> int:
    """COPY into `to` (a temporary, or a file in the `staging` folder); a full or read-only disk is a
    WriteError naming `target`, the output the user asked for."""
    try:
        return copy_to(con, select, str(to), options)
    except DuckError as exc:
        failure = disk_failure(target, staging, str(exc))
        if failure is not None:
            raise failure from exc
        raise


def _write_merged(
    con: Connection,
    select: str,
    fmt: str,
    target: Path,
    item: SqlFile,
    runs: Sequence[Run],
    record: dict[str, str],
    replace_all: bool,
    loose: Sequence[str],
) -> Written:
    """One file of an item with about one row per run (rlsql.outputs.exportmerge): the exported runs' rows
    replace theirs in it, the other runs' rows and records stay."""

    def copy(sql: str, meta: dict[str, str], columns: list[str]) -> int:
        described = {**meta, "rlsql.columns": json.dumps(item.column_descriptions(columns))}
        with _listed_beside(described, target, fmt) as meta, atomic_path(target, mark=True) as tmp:
            rows = _copy(con, sql, tmp, _copy_options(fmt, meta), target, tmp)
        if fmt != "parquet":
            write_text(sidecar(target), json.dumps(meta, indent=2) + "\n", mark=True)
        _drop_unnamed_lists(target, meta)
        return rows

    rows, file_rows = merge(con, select, fmt, target, runs, record, replace_all, copy, _null_row, loose)
    return Written(item.name, target, rows, target.stat().st_size, 1, file_rows)


@contextlib.contextmanager
def _listed_beside(meta: dict[str, str], target: Path, fmt: str) -> Iterator[dict[str, str]]:
    """A Parquet file's record with its sources summarised (exportmerge.sources_summary) and the full list
    written beside it first, as `FILE.sources-HASH.json` (exportmerge.sources_sidecar): over 300 runs the
    list was 180 kB of a 229 kB run_table.parquet. A partition (one run's files) and a CSV or JSON file's
    sidecar keep the list. When the block fails (a full disk), a list written for it is removed: no file
    names it (one already there, of the same sources, may be named by the file in place, and stays)."""
    if fmt != "parquet":
        yield meta
        return
    sources = json.loads(meta["rlsql.sources"])
    text = "[\n" + ",\n".join(json.dumps(source) for source in sources) + "\n]\n"  # a file a line
    listed = sources_sidecar(target, text)
    _check_file_replaceable(listed)
    existed = listed.exists()
    write_text(listed, text, mark=True)
    try:
        yield {**meta, "rlsql.sources": json.dumps(sources_summary(sources, text, target))}
    except BaseException:
        if not existed:
            listed.unlink(missing_ok=True)
        raise


def _drop_unnamed_lists(target: Path, meta: dict[str, str]) -> None:
    """Once `target` is in place: remove the lists of sources beside it that it does not name (its earlier
    ones, or a killed export's new one), those rlsql wrote; a file of anyone else's stays."""
    summary = json.loads(meta["rlsql.sources"])
    if not isinstance(summary, dict):  # a CSV or JSON file's sidecar lists its sources itself
        return
    with failures_named(target.parent):
        for entry in target.parent.iterdir():
            if entry.name != summary.get("list") and is_sources_sidecar(target, entry.name):
                remove_file(target.parent, entry.name)


def _write_file(con: Connection, select: str, options: str, target: Path, name: str) -> Written:
    with atomic_path(target, mark=True) as tmp:
        rows = _copy(con, select, tmp, options, target, tmp)
    return Written(name, target, rows, target.stat().st_size, 1)


Metadata = Callable[[Sequence[Run]], dict[str, str]]


def _write_tree(
    con: Connection,
    select: str,
    fmt: str,
    tree: Path,
    name: str,
    runs: Sequence[Run],
    metadata: Metadata,
    replace_all: bool,
) -> Written:
    """A hive tree (`NAME/run=X/data_0.parquet`): one COPY per run, so each partition's metadata is its own
    run's, built in a staging folder beside the tree. Then either the whole tree is swapped in, or each
    exported run's partition is swapped into the existing tree (the other runs' partitions stay)."""
    suffix = EXPORT_FORMATS[fmt]
    by_name = {run.name: run for run in runs}
    staging = temp_name(tree)
    rows = files = size = 0
    try:
        with failures_named(tree):
            staging.mkdir()
        con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGED} AS {select}")
        values = [v for (v,) in con.execute(f"SELECT DISTINCT run FROM {_STAGED} ORDER BY run").fetchall()]
        for value in values:
            part = staging / partition_folder(value)
            of = [by_name[value]] if value in by_name else []
            meta = {k: v for k, v in metadata(of).items() if k in PARTITION_KEYS}
            with failures_named(part):
                part.mkdir()
            where = f"run IS NOT DISTINCT FROM {literal(value)}"
            data = part / f"data_0{suffix}"
            rows += _copy(
                con,
                f"SELECT * EXCLUDE (run) FROM {_STAGED} WHERE {where}",
                data,
                _copy_options(fmt, meta),
                tree,
                staging,
            )
            files, size = files + 1, size + data.stat().st_size
            write_mark(
                part,
                {"name": name, "partition": "run", "value": value, **({"metadata": meta} if fmt != "parquet" else {})},
                staged=True,
            )
        con.execute(f"DROP TABLE {_STAGED}")
        shared = {k: v for k, v in metadata([]).items() if k in TREE_KEYS}
        tree_mark = {"name": name, "partition_by": "run", "file_format": fmt, "metadata": shared}
        write_mark(staging, tree_mark, staged=True)
        with failures_named(tree):
            fsync_tree(staging)
            if replace_all or not tree.exists():
                swap_dir(staging, tree)
            else:
                sweep(tree)
                for value in dict.fromkeys([*values, *by_name]):
                    new, old = staging / partition_folder(value), tree / partition_folder(value)
                    if new.exists():
                        swap_dir(new, old)
                    elif old.exists():
                        remove_dir(old)  # an exported run with no rows now: its old rows must go
                # the shared record now describes this export (each partition names the version and
                # fingerprint it was written with, so an older partition can be told apart)
                write_mark(tree, tree_mark)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Written(name, tree, rows, size, files)


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
    counted = f"{files} file{'' if files == 1 else 's'}, {rows:,} row{'' if rows == 1 else 's'}"
    return f"exported {what} to {out_dir}: {counted}, {_human(size)}"
