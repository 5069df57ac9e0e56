"""Provenance of an output: size, modification time and sha256 of every source file read.

Used by `export` (Parquet key-value metadata, CSV/JSON sidecars) and `db build` (rlsql_metadata).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlsql.catalog.sqlfile import SqlFile
from rlsql.engine.rawlogs import LOG_SOURCES, reads_logs
from rlsql.runs import harbor
from rlsql.runs.folders import Run
from rlsql.runs.logfiles import find_logs

_CHUNK = 1 << 20


class SourceFingerprints:
    """Size, modification time and sha256 of each file read; each file is hashed once."""

    def __init__(self) -> None:
        self._seen: dict[Path, dict[str, Any]] = {}

    def describe(self, path: Path, run: Run | None = None) -> dict[str, Any]:
        """`path`'s record; with the `run` it belongs to, and that run given as a URL, the file's origin too."""
        if path not in self._seen:
            digest = hashlib.sha256()
            try:
                stat = path.stat()
                with path.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
            except OSError as exc:  # the query skipped it with a warning: the record says why, not a failed export
                self._seen[path] = {"path": str(path), "error": f"cannot read ({exc.strerror})"}
                return self._seen[path]
            self._seen[path] = {
                "path": str(path),
                "size": stat.st_size,
                "mtime": dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC).isoformat(),
                "sha256": digest.hexdigest(),
                **file_origin(run, path),  # a run given as a URL: the file's URL, ETag or blob id, Hub commit
            }
        return self._seen[path]

    def for_files(self, runs: Sequence[Run], files: Sequence[SqlFile], fills: bool = True) -> list[dict[str, Any]]:
        """Every artifact the files' sources read, run by run. `fills`: whether the output read harbor_fill_src,
        the result.json files beside a trials CSV (a query reads them only for the columns the CSV lacks)."""
        kinds = {f.artifact for f in files if f.kind == "source" and f.artifact}
        fills = fills and any(f.name == "harbor_fill_src" for f in files)
        out: list[dict[str, Any]] = []
        for run in runs:
            # the raw training logs, once per run, when a source reads them instead of a CSV
            if any(kind in LOG_SOURCES.values() and reads_logs(run, kind) for kind in kinds):
                out.extend(
                    {"run": run.name, "artifact": "logs", **self.describe(path, run)} for path in find_logs(run.path)
                )
            for kind in sorted(kinds):
                artifact = run.artifact(kind)
                if kind == "harbor" and artifact is not None:
                    if run.artifact("trials") is None or fills:  # beside a CSV: read only to fill its gaps
                        out.append({"run": run.name, "artifact": kind, **self.describe_trials(artifact.path, run)})
                elif artifact is not None:
                    out.append({"run": run.name, "artifact": kind, **self.describe(artifact.path, run)})
        return out

    def describe_trials(self, trace_jobs: Path, run: Run | None = None) -> dict[str, Any]:
        """Harbor's trace_jobs folder as one record: its result.json files' total size, newest mtime and one
        sha256 over their relative paths and contents, in sorted order.

        The files are the ones the source reads (harbor.list_trials): a FIFO, a folder or a dangling
        link among the trial folders is not opened (a FIFO would block the export)."""
        if trace_jobs not in self._seen:
            digest, size, mtime, count = hashlib.sha256(), 0, 0.0, 0
            for path in (Path(f.path) for f in harbor.list_trials(trace_jobs).files if f.problem is None):
                record = self.describe(path)
                if "error" in record:
                    del self._seen[path]
                    continue
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
                **file_origin(run, trace_jobs),
            }
        return self._seen[trace_jobs]


def file_origin(run: Run | None, path: Path) -> dict[str, Any]:
    """For a file (or folder) of a run given as a URL (Run.origin): its URL, version (ETag, blob id), the Hub
    commit and when it was fetched; else {}."""
    if run is None or run.origin is None:
        return {}
    try:
        rel = path.resolve().relative_to(run.path.resolve())
    except (OSError, ValueError):
        return {}
    return run.origin.of(rel.as_posix())


def run_record(run: Run) -> dict[str, Any]:
    """A run as an output's provenance names it: its name and folder, and for a run given as a URL the URL and
    the Hub commit its copy holds."""
    found = run.origin
    extra = {"url": found.url, **({"revision": found.revision} if found.revision else {})} if found else {}
    return {"name": run.name, "path": str(run.path), **extra}
