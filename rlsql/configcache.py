"""A run's rl_config.yaml, flattened, kept per file: a query that reads configs does not import and run
pyyaml for each of them again (~9 ms of a small query's start at the real run's size; ~0.2 CPU-s of a fleet
query over 1,000 runs, bench/RESULTS.md, "Questions answered ahead").

One JSON file per config under `sql-analysis-configs/` beside the SQL analysis cache (named by a
digest of the config's path; RLSQL_NO_CACHE=1 turns it off with the other analysis caches). An entry
holds what rlsql.config.config_rows made of the file (its leaves and the warnings it said) and is used
only while all of these are what they were when it was made:
- the file's size, modification time, change time, inode and device (`fstat` after `open`, as the
  kept answers read them, so an NFS client revalidates its cached attributes);
- rlsql's version, and the name, size and modification time of the code that flattens (rlsql/config.py)
  and of pyyaml's own module files (an upgrade parses the file again).
It is stored only when the file was unchanged while it was read and its last change is at least two
seconds old (a timestamp that coarse cannot prove a second change: the racy rule of the kept answers),
and when every warning said was exactly rlsql's own.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import json
import os
import time
import warnings
from pathlib import Path

from rlsql.cache import analysis_cache_file, opened_stat
from rlsql.errors import RlsqlWarning
from rlsql.version import __version__

FOLDER = "sql-analysis-configs"
FORMAT = "rlsql-config-leaves"
VERSION = 1
#: a config modified this recently may change again within its timestamp's granularity
RACY_SECONDS = 2.0
#: beyond this many entries (a fleet of fleets), the first store of a process removes the oldest half
LIMIT = 20_000
_pruned = False


@functools.lru_cache(maxsize=1)
def code_stamp() -> list:
    """The code a config's leaves follow from: rlsql's version, rlsql/config.py and pyyaml's modules
    (found on sys.path without importing pyyaml, which is what the entry saves)."""
    stamp: list = [__version__]
    own = Path(__file__).with_name("config.py")
    s = own.stat()
    stamp.append([own.name, s.st_size, s.st_mtime_ns])
    spec = importlib.machinery.PathFinder.find_spec("yaml")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for name in sorted(os.listdir(folder)):
            if name.endswith((".py", ".so")):
                s = os.stat(os.path.join(folder, name))
                stamp.append([name, s.st_size, s.st_mtime_ns])
    return stamp


def _entry_path(path: Path, for_writing: bool) -> Path | None:
    folder = analysis_cache_file(FOLDER, for_writing)
    if folder is None or folder.is_symlink():
        return None
    return folder / (hashlib.sha256(str(path).encode()).hexdigest()[:32] + ".json")


def _rows(run: str, leaves: list) -> list[dict]:
    return [{"run": run, "ordinal": ordinal, "key": key, "value": value, "value_json": value_json}
            for ordinal, (key, value, value_json) in enumerate(leaves, start=1)]


def _kept(path: Path, stat: list) -> dict | None:
    entry = _entry_path(path, for_writing=False)
    if entry is None:
        return None
    try:
        record = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (not isinstance(record, dict) or record.get("format") != FORMAT or record.get("version") != VERSION
            or record.get("path") != str(path) or record.get("stat") != stat
            or record.get("code") != code_stamp()):
        return None
    return record


def _store(path: Path, stat: list, leaves: list, said: list[str]) -> None:
    if time.time_ns() - max(stat[1], stat[2]) < RACY_SECONDS * 1e9:
        return
    entry = _entry_path(path, for_writing=True)
    if entry is None:
        return
    record = {"format": FORMAT, "version": VERSION, "path": str(path), "stat": stat,
              "code": code_stamp(), "leaves": leaves, "warnings": said}
    from rlsql import writes  # only to store

    with contextlib.suppress(OSError):
        entry.parent.mkdir(exist_ok=True)
        tmp = writes.temp_name(entry)
        try:
            # a temporary name and a rename, no fsync: a lost entry only means parsing the file again
            tmp.write_text(json.dumps(record, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, entry)
        finally:
            tmp.unlink(missing_ok=True)
        _prune(entry.parent)


def _prune(folder: Path) -> None:
    """Once per process: over LIMIT entries, remove the oldest-stored half (an entry is only ever
    parsed again; the folder must not grow without end)."""
    global _pruned
    if _pruned:
        return
    _pruned = True
    names = [e for e in os.scandir(folder) if e.name.endswith(".json") and len(e.name) == 37]
    if len(names) <= LIMIT:
        return
    names.sort(key=lambda e: e.stat().st_mtime_ns)
    for e in names[: len(names) // 2]:
        with contextlib.suppress(OSError):
            os.unlink(e.path)


def config_rows(run: str, path: Path) -> list[dict]:
    """rlsql.config.config_rows(run, path), from the kept entry while the file and the code are unchanged."""
    enabled = not os.environ.get("RLSQL_NO_CACHE")
    try:
        stat = opened_stat(path) if enabled else None
    except OSError:
        stat = None  # config_rows says what is wrong with it
    if stat is not None:
        record = _kept(path, stat)
        if record is not None:
            try:
                rows = _rows(run, record["leaves"])
                said = [str(m) for m in record["warnings"]]
            except (KeyError, TypeError, ValueError):
                pass
            else:
                for message in said:
                    warnings.warn(message, RlsqlWarning, stacklevel=2)
                return rows
    from rlsql import config  # pyyaml: imported only when an entry cannot answer

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = config.config_rows(run, path)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    if stat is None or any(w.category is not RlsqlWarning for w in caught):
        return rows
    with contextlib.suppress(OSError):
        if opened_stat(path) == stat:
            _store(path, stat, [[r["key"], r["value"], r["value_json"]] for r in rows],
                   [str(w.message) for w in caught])
    return rows
