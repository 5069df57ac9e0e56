"""A Parquet cache of a run's CSVs, under rlsql's own cache folder (never inside a run folder).

Each CSV artifact is converted once into a Parquet file keyed by the CSV's fingerprint (absolute
path, size, modification time). The sources read the Parquet copy when it is fresh and fall back
to the CSV when the file changed, so a stale entry is never read. Building a large CSV costs one
full parse; every later query reads only the columns it needs from Parquet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlsql.atomic import atomic_path

CACHE_ENV = "RLSQL_CACHE_DIR"
#: set to 1 (or pass --cache to a command) to build missing entries on first use
AUTO_ENV = "RLSQL_CACHE"


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlsql" / "parquet"


def auto_build() -> bool:
    return os.environ.get(AUTO_ENV, "").lower() in {"1", "true", "yes", "on", "auto"}


@dataclass(frozen=True)
class Fingerprint:
    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> Fingerprint:
        stat = path.stat()
        return cls(str(path.resolve()), stat.st_size, stat.st_mtime_ns)

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.path}\0{self.size}\0{self.mtime_ns}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Entry:
    """One cached CSV: the Parquet file and the record of what it was built from."""

    parquet: Path
    meta: Path

    def read_meta(self) -> dict:
        try:
            return json.loads(self.meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}


def entry_for(fingerprint: Fingerprint, root: Path | None = None) -> Entry:
    folder = (root or cache_root()) / fingerprint.key[:2]
    return Entry(folder / f"{fingerprint.key}.parquet", folder / f"{fingerprint.key}.json")


def fresh_entry(path: Path) -> Entry | None:
    """The cached Parquet for this CSV when it was built from the file as it is now, else None."""
    entry = entry_for(Fingerprint.of(path))
    return entry if entry.parquet.is_file() and entry.meta.is_file() else None


def build_entry(path: Path, write: Callable[[Path], int]) -> tuple[Entry, int]:
    """Convert `path` into its cache entry; returns the entry and the rows written.

    `write(target)` writes the typed rows to the Parquet file `target` and returns their count.
    Both files of the entry are written atomically.
    """
    fingerprint = Fingerprint.of(path)
    entry = entry_for(fingerprint)
    entry.parquet.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with atomic_path(entry.parquet) as tmp:
        rows = write(tmp)
    record = {
        "source": fingerprint.path,
        "size": fingerprint.size,
        "mtime_ns": fingerprint.mtime_ns,
        "rows": rows,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(time.perf_counter() - started, 3),
        "parquet_bytes": entry.parquet.stat().st_size,
    }
    with atomic_path(entry.meta) as tmp:
        tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return entry, rows


def all_entries(root: Path | None = None) -> list[Entry]:
    root = root or cache_root()
    if not root.is_dir():
        return []
    return [Entry(meta.with_suffix(".parquet"), meta) for meta in sorted(root.glob("*/*.json"))]


def entry_state(entry: Entry) -> str:
    """fresh (the CSV is unchanged), stale (it changed) or orphaned (it is gone)."""
    meta = entry.read_meta()
    source = Path(meta.get("source", ""))
    if not source.is_file():
        return "orphaned"
    current = Fingerprint.of(source)
    return "fresh" if (current.size, current.mtime_ns) == (meta.get("size"), meta.get("mtime_ns")) else "stale"


def clear(entries: Sequence[Entry] | None = None) -> tuple[int, int]:
    """Delete entries (all by default); returns (files removed, bytes freed)."""
    if entries is None:
        root = cache_root()
        entries = all_entries(root)
    removed = freed = 0
    for entry in entries:
        for f in (entry.parquet, entry.meta):
            if f.is_file():
                freed += f.stat().st_size
                f.unlink()
                removed += 1
    root = cache_root()
    for folder in sorted(root.glob("*"), reverse=True) if root.is_dir() else []:
        if folder.is_dir() and not any(folder.iterdir()):
            shutil.rmtree(folder, ignore_errors=True)
    return removed, freed


def record_rejected(entry: Entry, rejected: int) -> None:
    """Remember how many CSV rows the build skipped, so every later use can say so."""
    meta = entry.read_meta()
    meta["rejected_rows"] = rejected
    with atomic_path(entry.meta) as tmp:
        tmp.write_text(json.dumps(meta, indent=2), encoding="utf-8")
