"""`export --partition-by run` of an item with about one row per run: one file, merged run by run.

A one-row-per-run table split into one file per run is the small-files anti-pattern: every file
repeats the Parquet schema and a footer entry per column (DuckDB writes min/max statistics it cannot
leave out), so 300 one-row files of run_table were 13x the one file. Such items (`merged_by_run`)
are written as `NAME.EXT`, the file an unpartitioned export writes, and an export of some runs
replaces those runs' rows in it: the new file holds the old file's rows of the other runs and the
exported runs' new rows, written to a temporary name and renamed (rlsql.runs.writes), with provenance
whose `rlsql.runs` and `rlsql.sources` are the union of the per-run records (the other runs' carried
over from the old file). The export holds the folder's lock (writes.folder_lock) from its checks to
its last rename, so two exports into one folder cannot drop each other's runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import UsageError
from rlsql.core.sqltext import identifier, literal, sql_type
from rlsql.duck.fileio import parquet_key_values
from rlsql.duck.memorydb import Connection, DuckError, memory_connection
from rlsql.runs.config import value_type
from rlsql.runs.folders import Run

#: grain columns (after `run`) naming a small vocabulary fixed by the data contract or the run's setup,
#: not growing with its length: an item whose `-- grain:` is `run` followed only by these has a few rows
#: per run and is merged. Any other grain column (step, row_no, ts, trial_name, turns, ...), or no grain
#: header, keeps the item partitioned, as before: a new query is partitioned until it is listed here.
CATEGORY_KEYS = frozenset({"exception_type", "treatment", "outcome", "phase", "log_file", "span", "key", "metric"})
#: the provenance keys that must be the same for every row of a merged file (else the merge is refused)
SAME_FOR_ALL = ("rlsql.query.version", "rlsql.query.fingerprint", "rlsql.query.params")
_NEW = "__rlsql_merge_new"
_ORDER = "__rlsql_merge_order"


def grain_columns(item: SqlFile) -> list[str]:
    return [c.strip() for c in (item.grain or "").split(",") if c.strip()]


def partition_layout(item: SqlFile) -> str | None:
    """How `--partition-by run` writes `item`: "merged" (one file, merged run by run), "tree" (a partition per
    run), or None: it has no run column to split by (group_curves), so one file written whole."""
    if "run" not in item.column_docs:
        return None
    return "merged" if merged_by_run(item) else "tree"


def merged_by_run(item: SqlFile) -> bool:
    """Does `--partition-by run` write `item` as one merged file (about one row per run)?"""
    grain = grain_columns(item)
    return bool(grain) and grain[0] == "run" and set(grain[1:]) <= CATEGORY_KEYS


def sidecar(target: Path) -> Path:
    """Where a CSV or JSON file's provenance goes: `FILE.meta.json`."""
    return target.with_name(target.name + ".meta.json")


def sources_sidecar(target: Path, text: str) -> Path:
    """Where a Parquet file's full list of source files (`text`) goes: `FILE.sources-HASH.json`, HASH the
    first 16 hex digits of its sha256 (the file holds a summary naming it). Named by its contents, a list is
    never replaced under the file that names it: an export killed between writing the new list and renaming
    the new file leaves the old file with its old list, and the next export removes the unnamed one."""
    return target.with_name(f"{target.name}.sources-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json")


def is_sources_sidecar(target: Path, name: str) -> bool:
    """Is `name` a list of sources of `target` (this rlsql's name, or `FILE.sources.json` of earlier ones)?"""
    return re.fullmatch(re.escape(target.name) + r"\.sources(-[0-9a-f]{16})?\.json", name) is not None


def sources_summary(sources: Sequence[dict], text: str, target: Path) -> dict[str, Any]:
    """What a Parquet file keeps of its `sources` (written as `text` to its sources_sidecar): how many runs,
    files and bytes, and the sha256 of the sidecar's bytes, so that the list beside it can be checked."""
    return {
        "list": sources_sidecar(target, text).name,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "runs": len({s.get("run") for s in sources}),
        "files": sum(s.get("files", 1) for s in sources),
        "bytes": sum(s.get("size", 0) for s in sources),
    }


def listed_sources(record: dict[str, str], target: Path) -> list | None:
    """A record's `rlsql.sources` as the list of files: inline (a partition, a CSV's sidecar, an older
    export), or the summary's sidecar when its sha256 is the summary's; None when neither reads."""
    sources = _loads(record.get("rlsql.sources"))
    if isinstance(sources, dict) and isinstance(sources.get("list"), str):
        try:
            text = (target.parent / Path(sources["list"]).name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if hashlib.sha256(text.encode()).hexdigest() != sources.get("sha256"):
            return None
        sources = _loads(text)
    return sources if isinstance(sources, list) else None


def _listed_name(record: dict[str, str]) -> str:
    sources = _loads(record.get("rlsql.sources"))
    return str(sources.get("list")) if isinstance(sources, dict) else "rlsql.sources"


def read_provenance(target: Path, fmt: str) -> dict[str, str]:
    """The provenance record an earlier export left with `target` (Parquet metadata or the sidecar)."""
    if fmt == "parquet":
        with contextlib.closing(memory_connection()) as con:
            rows = parquet_key_values(con, str(target))
        return {k: v for k, v in rows.items() if k.startswith("rlsql.")}
    try:
        record = json.loads(sidecar(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _loads(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def kept_records(old: dict[str, str], new: dict[str, str], replaced: set[str], target: Path) -> tuple[list, list]:
    """The old file's per-run records (runs, sources) of the runs this export does not replace.

    Refused (exit 2) when the old rows came from another version of the query or other parameter
    values: every row of one file is computed the same way, so mixing would be a silent trap."""
    for key in SAME_FOR_ALL:
        if old.get(key) != new[key]:
            what = key.removeprefix("rlsql.query.")
            raise UsageError(
                f"{target}: holds rows exported with {what} {old.get(key)!r}, this export has {new[key]!r}; "
                "export every run again with --replace-all, or choose another -o folder"
            )
    runs, sources = _loads(old.get("rlsql.runs")), listed_sources(old, target)
    if not isinstance(runs, list) or sources is None:
        what = (
            "lists no runs"
            if not isinstance(runs, list)
            else f"names a list of its source files that is missing or changed ({_listed_name(old)})"
        )
        raise UsageError(
            f"{target}: its provenance {what}, so its rows cannot be merged; "
            "export again with --replace-all, or choose another -o folder"
        )
    # a run's record names its export time when that is not the file's (`rlsql.exported_at`, this export's)
    exported_at = old.get("rlsql.exported_at")
    kept = [
        {**r, "exported_at": r.get("exported_at", exported_at)}
        for r in runs
        if isinstance(r, dict) and r.get("name") not in replaced
    ]
    names = {r["name"] for r in kept}
    return kept, [s for s in sources if isinstance(s, dict) and s.get("run") in names]


def _old_rows(con: Connection, target: Path, fmt: str, types: dict[str, str]) -> str:
    """A SELECT of the old file's rows, typed as this export's columns (CSV and JSON keep no types)."""
    path = literal(str(target))
    if fmt == "parquet":
        return f"SELECT * FROM read_parquet({path})"
    if fmt == "csv":  # every cell as text, then cast: no guess of DuckDB's sniffer reaches the rows
        source = f"read_csv({path}, header = true, all_varchar = true)"
        columns = [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        cast = [
            f"CAST({identifier(c)} AS {types[c]}) AS {identifier(c)}" if c in types else identifier(c) for c in columns
        ]
        return f"SELECT {', '.join(cast)} FROM {source}"
    # JSON: read with this export's types, so a text that looks like a time stays the text it was
    if con.execute(f"SELECT count(*) FROM read_json({path}, format = 'array')").fetchall() == [(0,)]:
        # `[]` names no column (a comparison exported over one run has no row): the old file adds no row
        typed = ", ".join(f"CAST(NULL AS {sql_type(t)}) AS {identifier(c)}" for c, t in types.items())
        return f"SELECT {typed} WHERE false"
    detected = con.execute(f"DESCRIBE SELECT * FROM read_json({path}, format = 'array')").fetchall()
    spec = ", ".join(f"{literal(c)}: {literal(types.get(c, str(t)))}" for c, t, *_ in detected)
    return f"SELECT * FROM read_json({path}, format = 'array', columns = {{{spec}}})"


def old_columns(target: Path, fmt: str) -> list[str]:
    """The column names of a file an earlier export wrote ([] when it cannot be read)."""
    path = literal(str(target))
    source = {
        "parquet": f"read_parquet({path})",
        "csv": f"read_csv({path}, header = true, all_varchar = true)",
        "json": f"read_json({path}, format = 'array')",
    }[fmt]
    try:
        with contextlib.closing(memory_connection()) as con:
            return [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    except DuckError:
        return []


def carried_config_keys(item: SqlFile, target: Path, fmt: str) -> list[str]:
    """The config keys of the config columns in `target`, an earlier export of `item` (run_table).

    A run_table exported over some runs has a column per key differing between *those* runs, so a run
    exported on its own would have none: merged into a file with columns, its row would read NULL
    where it has a value. Its export lays out the file's keys too (export.py). A column is named by its
    key, or `config.KEY` when KEY is one of the item's own columns (SourceContext.config_columns)."""
    own = {name.lower() for name in item.column_docs if name != "*"}
    keys = []
    for column in old_columns(target, fmt):
        if column.lower() in own:
            continue
        rest = column.removeprefix("config.")
        keys.append(rest if rest != column and rest.lower() in own else column)
    return keys


Copy = Callable[[str, dict[str, str], list[str]], int]


def _value_cast(column: str, ctype: str) -> str:
    """`column` as `ctype`, by its text: a config value typed in one export and text in another (rlsql.runs.config
    value_type's rule; `null`, a YAML null as text, is NULL in a typed column)."""
    q = identifier(column)
    if ctype == "VARCHAR":
        return f"CAST({q} AS VARCHAR) AS {q}"
    return f"CAST(nullif(CAST({q} AS VARCHAR), 'null') AS {sql_type(ctype)}) AS {q}"


def _merged_types(con: Connection, loose: Sequence[str], old: str, old_names: Collection[str]) -> dict:
    """The type of each of `loose` (columns whose type follows the values: run_table's config keys) over the
    new rows and the kept old ones together: a key typed DOUBLE in one export and text in another is text."""
    types = {}
    for column in loose:
        q = identifier(column)
        parts = [f"SELECT CAST({q} AS VARCHAR) FROM {_NEW}"]
        if column in old_names:
            parts.append(f"SELECT CAST({q} AS VARCHAR) FROM ({old})")
        types[column] = value_type(v for (v,) in con.execute(" UNION ".join(parts)).fetchall())
    return types


def merge(
    con: Connection,
    select: str,
    fmt: str,
    target: Path,
    runs: Sequence[Run],
    metadata: dict[str, str],
    replace_all: bool,
    copy: Copy,
    nullable: Callable[[Sequence[tuple]], str],
    loose: Collection[str] = (),
) -> tuple[int, int]:
    """Write `target` holding the exported runs' rows (`select`) and, unless `replace_all`, the old
    file's rows of every other run it holds; returns (the exported runs' rows, all the file's rows).

    `metadata` is this export's record over `runs`; its runs and sources are extended by the kept
    runs' records. `copy(sql, metadata, columns)` writes the SELECT to `target` through the one write
    path (a temporary name, then a rename) with the record built for its columns. `nullable(DESCRIBE
    rows)` is the never-true branch that keeps every Parquet column optional (export.py): the staged
    table's statistics would otherwise declare a column without NULLs `required`; "" when it cannot.
    `loose`: the columns whose type follows the values (run_table's config keys, typed per export): merged
    with kept rows, each gets the type both sides' values give together (_merged_types).
    """
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_NEW} AS {select}")
    try:
        described = con.execute(f"DESCRIBE {_NEW}").fetchall()
        types = {c: str(t) for c, t, *_ in described}
        replaced = {r.name for r in runs} | {
            v for (v,) in con.execute(f"SELECT DISTINCT run FROM {_NEW} WHERE run IS NOT NULL").fetchall()
        }
        new_runs = json.loads(metadata["rlsql.runs"])  # exported now: the file's own rlsql.exported_at
        kept_runs: list = []
        kept_sources: list = []
        if not replace_all and target.exists():
            kept_runs, kept_sources = kept_records(read_provenance(target, fmt), metadata, replaced, target)
        parts = [f"SELECT *, row_number() OVER () AS {_ORDER} FROM {_NEW}"]
        if kept_runs:
            names = ", ".join(literal(r["name"]) for r in kept_runs)
            retyped = [c for c in types if c in loose]
            old = _old_rows(con, target, fmt, {**types, **{c: "VARCHAR" for c in retyped}})
            old = f"SELECT * FROM ({old}) WHERE run IN ({names})"
            old_names = set(old_columns(target, fmt)) if retyped else set()
            merged = _merged_types(con, retyped, old, old_names)
            new_cast = ", ".join(_value_cast(c, t) for c, t in merged.items())
            old_cast = ", ".join(_value_cast(c, t) for c, t in merged.items() if c in old_names)
            parts = [
                f"SELECT *{f' REPLACE ({new_cast})' if new_cast else ''}, row_number() OVER () AS {_ORDER} FROM {_NEW}",
                f"SELECT *{f' REPLACE ({old_cast})' if old_cast else ''}, row_number() OVER () AS {_ORDER} "
                f"FROM ({old})",
            ]
            described = [(c, merged.get(c, t), *rest) for c, t, *rest in described]
        if fmt == "parquet" and (branch := nullable(described)):
            parts.append(f"SELECT *, NULL::BIGINT AS {_ORDER} FROM ({branch})")
        # each run's rows stay together and in the order its export wrote them
        sql = (
            f"SELECT * EXCLUDE ({_ORDER}) FROM ({' UNION ALL BY NAME '.join(parts)}) ORDER BY run NULLS LAST, {_ORDER}"
        )
        columns = [c[0] for c in con.execute(f"DESCRIBE {sql}").fetchall()]
        record = dict(metadata)
        record["rlsql.runs"] = json.dumps(sorted([*kept_runs, *new_runs], key=lambda r: str(r.get("name"))))
        record["rlsql.sources"] = json.dumps(
            sorted([*kept_sources, *(listed_sources(metadata, target) or [])], key=lambda s: str(s.get("run")))
        )
        new_rows = con.execute(f"SELECT count(*) FROM {_NEW}").fetchone()
        return (int(new_rows[0]) if new_rows else 0), copy(sql, record, columns)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_NEW}")
