"""Raw training logs as a source of trainer metrics and vLLM stats (docs/semantics.md "Raw training logs").

A run whose folder holds no metrics CSV (or, with `--from-logs`, any run with logs) reads its
metric rows from the console metric blocks or `WANDB_MIRROR` lines of its logs, and a run
without a vLLM CSV its per-second vLLM rows from the stat lines: the log parts of metrics_src and
vllm_src (sql/sources/_metrics_log.sql.j2, _vllm_log.sql.j2) give exactly the CSV parts'
columns, so every view above them works unchanged.

The metric columns of a log are its keys, so they are only known after reading it: before
metrics_src is rendered, `metric_keys` reads the logs' metric rows with DuckDB in long form
(sql/sources/_metrics_log_keys.sql.j2) and remembers, per set of log files as they are now (size,
mtime), the keys, each log's form and the long rows; metrics_src's log part pivots those rows
(a few per step: tiny next to the logs), so the logs are scanned once for the metrics, not twice.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.sqlfile import Column, SqlFile
from rlsql.core.errors import DataError, RlsqlWarning, one_line
from rlsql.core.exactpaths import why_unnameable
from rlsql.duck.memorydb import memory_connection
from rlsql.engine.copies import Copies, without_copies
from rlsql.runs import folders
from rlsql.runs.folders import Run
from rlsql.runs.logfiles import find_logs, short_name

#: sources with a log part, and the CSV artifact whose absence sends a run to its logs
LOG_SOURCES = {"metrics_src": "metrics", "vllm_src": "vllm"}


@dataclass(frozen=True)
class LogFile:
    run: str
    path: str
    log_file: str
    file_no: int
    #: the log's fresh cache entry (rlsql/engine/copies.py), read instead of the log; None: read in place
    cached: str | None = None
    #: the kept lines after the entry's end (a line being written), as {offset, text, is_metric, is_vllm}
    tail: tuple = ()


@dataclass(frozen=True)
class LogMetrics:
    """What the logs' metric rows hold: keys in first-appearance order, and per log its form and rows."""

    keys: tuple[str, ...]
    #: log path -> (form: 'wandb_mirror' or 'console', number of metric rows)
    forms: dict[str, tuple[str, int]]
    #: the long rows in log order, as JSON column lists (run, log_file, path, file_no, row_line, key, value)
    rows: str = ""


def reads_logs(run: Run, kind: str) -> bool:
    """True when the run's `kind` (metrics or vllm) comes from its raw logs: it has logs and no CSV."""
    return run.artifact(kind) is None and run.artifact("logs") is not None


def log_files(runs: Sequence[Run], kind: str, copies: Copies | None = None) -> list[LogFile]:
    """The logs `kind` is read from, each with its fresh entry among `copies` when it has one."""
    files: list[LogFile] = []
    for run in runs:
        if not reads_logs(run, kind):
            continue
        paths = find_logs(run.path)
        run_bytes = sum(_size(p) for p in paths) if copies is not None else 0
        for path in paths:
            reason = why_unnameable(path) or folders.unreadable(path)
            if reason is not None:  # one bad log costs its own rows, never the other logs' or runs'
                warnings.warn(f"{path}: {reason}; log skipped", RlsqlWarning, stacklevel=2)
                continue
            entry = copies.log_entry(path, run_bytes) if copies is not None else None
            files.append(
                LogFile(
                    run.name,
                    str(path),
                    short_name(path, run.path),
                    len(files),
                    entry.parquet if entry else None,
                    tuple(k.__dict__ for k in entry.tail) if entry else (),
                )
            )
    return files


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _frozen(tail: tuple) -> tuple:
    """The tail lines as a hashable key (the stamp is an lru_cache key)."""
    return tuple(tuple(sorted(t.items())) for t in tail)


def _stamp(files: Sequence[LogFile]) -> tuple:
    out: list[tuple] = []
    for f in files:
        try:
            st = Path(f.path).stat()
            out.append((f.run, f.path, f.log_file, f.file_no, f.cached, _frozen(f.tail), st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((f.run, f.path, f.log_file, f.file_no, f.cached, _frozen(f.tail), None, None))
    return tuple(out)


def metric_keys(files: Sequence[LogFile]) -> LogMetrics:
    """The metric keys and forms of `files` (re-read when a file changed size or time)."""
    return _metric_keys(_stamp(files))


@functools.lru_cache(maxsize=32)
def _metric_keys(stamp: tuple) -> LogMetrics:
    files = [
        {"run": s[0], "path": s[1], "log_file": s[2], "file_no": s[3], "cached": s[4], "tail": [dict(t) for t in s[5]]}
        for s in stamp
    ]
    if not files:
        return LogMetrics((), {})
    sql = load_catalog().env.get_template("sources/_metrics_log_keys.sql.j2").render(log_files=files)
    con = memory_connection()
    try:
        con.execute(f"CREATE TEMP TABLE long AS {sql}")
        keys = [
            r[0]
            for r in con.execute(
                "SELECT key FROM long GROUP BY key ORDER BY min({'f': file_no, 'l': row_line, 'p': pos})"
            ).fetchall()
        ]
        forms = {
            r[0]: (r[1], r[2])
            for r in con.execute(
                "SELECT path, any_value(form), count(DISTINCT row_line) FROM long GROUP BY path"
            ).fetchall()
        }
        # column lists, handed to the log part of metrics_src as one JSON literal (JSON numbers are
        # written and read back exactly; a long VALUES list would cost seconds to bind)
        columns = ("run", "log_file", "path", "file_no", "row_line", "key", "value")
        fetched = con.execute(
            "SELECT run, log_file, path, file_no, row_line, key, value FROM long ORDER BY file_no, row_line, pos"
        ).fetchall()
        rows = json.dumps({c: [r[i] for r in fetched] for i, c in enumerate(columns)}) if fetched else ""
    except duckdb.Error as exc:
        names = ", ".join(f["path"] for f in files)
        raise DataError(f"cannot read the training logs ({names}): {one_line(exc)}") from exc
    finally:
        con.close()
    return LogMetrics(tuple(keys), forms, rows)


def unread_stat_lines(run: Run) -> list[tuple[str, int, str]]:
    """Per log of `run` whose vLLM stats come from its logs: lines holding `Avg prompt throughput`
    that are not stat lines rlsql reads (count, first one): for `rlsql check`."""
    files = log_files([run], "vllm")
    if not files:
        return []
    template = load_catalog().env.get_template("sources/_vllm_log_unread.sql.j2")
    sql = template.render(log_files=[f.__dict__ for f in files])
    con = memory_connection()
    try:
        return [(r[0], r[1], r[2]) for r in con.execute(f"{sql} ORDER BY path").fetchall()]
    except duckdb.Error as exc:
        raise DataError(f"cannot read the training logs of run {run.name!r}: {one_line(exc)}") from exc
    finally:
        con.close()


def log_context(runs: Sequence[Run], source: SqlFile, columns: list[Column], copies: Copies | None = None) -> dict:
    """Template values of a source's log part: log_files (their entries among `copies`), and for metrics the keys
    and the widened columns."""
    kind = LOG_SOURCES.get(source.name)
    if kind is None:
        return {}
    files = log_files(runs, kind, copies)
    if copies is None:
        for f in files:
            without_copies(f.path)
    context: dict = {"log_files": [f.__dict__ for f in files]}
    if kind == "metrics":
        found = metric_keys(files) if files else LogMetrics((), {})
        seen = {c.name for c in columns}
        context["columns"] = columns + [Column(k, source.other_columns_type) for k in found.keys if k not in seen]
        context["log_keys"] = list(found.keys)
        context["log_rows"] = found.rows
    return context


def metrics_origin(run: Run, copies: Copies | None = None) -> str | None:
    """How `rlsql runs` names where a run's metric rows come from: the CSV, or its logs and their form (read from
    their entries among `copies`)."""
    csv, logs = run.artifact("metrics"), run.artifact("logs")
    if csv is not None:
        return csv.path.name
    if logs is None:
        return None
    files = log_files([run], "metrics", copies)
    forms = metric_keys(files).forms
    counts: dict[str, int] = {}
    for f in files:
        form = forms.get(f.path, ("no metric rows", 0))[0]
        counts[form] = counts.get(form, 0) + 1
    where = logs.path.relative_to(run.path).as_posix()
    where = "" if where == "." else f"{where}/"
    labels = {"wandb_mirror": "WANDB_MIRROR", "console": "console"}
    parts = ", ".join(f"{n} {labels.get(form, form)}" for form, n in sorted(counts.items()))
    return f"{where}*.out|*.log: {len(files)} logs ({parts})"


def vllm_origin(run: Run) -> str | None:
    csv, logs = run.artifact("vllm"), run.artifact("logs")
    if csv is not None:
        return csv.path.name
    if logs is None:
        return None
    where = logs.path.relative_to(run.path).as_posix()
    return f"{'' if where == '.' else where + '/'}*.out|*.log: vLLM stat lines"
