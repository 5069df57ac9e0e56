"""Answers kept for repeated questions: a named query's rows, stored after it is answered and printed
again while nothing they were computed from has changed.

The second `rlsql query turns_by_exception` over the same files is the commonest repeated question
(a dashboard refresh, a script run again, a notebook cell); the Parquet cache saves it the CSV parse,
this saves it the query as well, and the ~60 ms of importing DuckDB and the catalogue.

An answer's key is a hash of everything the rows follow from:
- the query's name and the `-p` values as given (a bad name or value never gets an answer stored, so
  it fails as before);
- rlsql's code and SQL (name, size and modification time of every file of the package and of `sql/`),
  and the DuckDB package installed;
- the `RLSQL_*` variables other than the cache's own, and `TZ`;
- every run as resolved (name, folder, each artifact's kind, path and parse prefix, the files that lost
  to a newer parse) and the size, modification time, change time, inode and device of each file read:
  CSVs, rl_config.yaml and each raw log (a log that grows is a new key).
Harbor's trace_jobs folder (thousands of result.json files) is not stat'ed on every query: an answer
that reads it is never stored.

An answer is stored only when the key computed after the query equals the one computed before it (no
input changed while it was read) and no input changed in the last RACY_SECONDS (a file written in the
same clock tick as its last stat would look unchanged: git's "racily clean" rule). Its warnings are
stored with it and said again. Answers live in `<cache folder>/answers/<key>.json`, written under a
temporary name and renamed; `cache status` counts them, `cache clear` removes them, RLSQL_CACHE=0 or
--no-cache turns them off with the rest of the cache, RLSQL_CACHE_ANSWERS=0 alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import hashlib
import importlib.machinery
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlsql import cache
from rlsql.logfiles import find_logs
from rlsql.runs import Run
from rlsql.sqlfolder import sql_root
from rlsql.version import __version__

ANSWERS_DIR = cache.ANSWERS_DIR
ANSWER_FORMAT = "rlsql-answer"
ANSWER_VERSION = 1
ANSWERS_ENV = cache.ANSWERS_ENV
#: larger results are not kept: printing them costs more than the query saved, and they would fill the folder
MAX_ROWS = 10_000
MAX_BYTES = 4 * 2**20
#: the folder keeps at most KEEP answers; a store beyond it removes the least recently used down to KEEP_AFTER
KEEP = 1000
KEEP_AFTER = 750
#: an input modified this recently may change again within its timestamp's granularity
RACY_SECONDS = 2.0
#: variables that choose where and whether rlsql caches, not what a query answers
#: (RLSQL_LOG_GROWTH_BYTES is rlsql/logcache.py's GROWTH_ENV, named here: that module imports DuckDB)
_CACHE_VARIABLES = {cache.CACHE_ENV, cache.AUTO_ENV, cache.MIN_BYTES_ENV, ANSWERS_ENV, cache.AHEAD_ENV,
                    "RLSQL_LOG_GROWTH_BYTES"}

_ANSWER_FILE = re.compile(r"^(?P<key>[0-9a-f]{32})\.json$")


def names_a_query(name: str) -> bool:
    """`name` is a named query or view (a file `sql/queries/NAME.sql` or `sql/views/NAME.sql`); anything
    else goes the long way, whose error names the closest match."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        return False
    root = sql_root()
    return (root / "queries" / f"{name}.sql").is_file() or (root / "views" / f"{name}.sql").is_file()


def enabled() -> bool:
    """Answers are kept in the cache's on and auto modes, unless RLSQL_CACHE_ANSWERS turns them off."""
    return cache.answers_wanted()


# --- the key ---------------------------------------------------------------------------------


def _tree_stamp(root: Path, suffixes: tuple[str, ...]) -> list[list]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(suffixes):
                s = os.stat(os.path.join(folder, name))
                found.append([os.path.relpath(os.path.join(folder, name), root), s.st_size, s.st_mtime_ns])
    return found


def code_stamp() -> list:
    """What rlsql's answers follow from in its own code: the package, the SQL files, DuckDB's build."""
    package = Path(__file__).resolve().parent
    # found on sys.path, not through sys.modules: the same stamp whether or not DuckDB is imported yet
    spec = importlib.machinery.PathFinder.find_spec("duckdb")
    duck: list = []
    if spec is not None and spec.origin:
        s = os.stat(spec.origin)
        duck = [spec.origin, s.st_size, s.st_mtime_ns]
    return [__version__, _tree_stamp(package, (".py",)), _tree_stamp(sql_root(), (".sql", ".j2")), duck]


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    return hashlib.sha256(json.dumps(code_stamp(), separators=(",", ":")).encode()).hexdigest()


def _file_stat(path: Path) -> list:
    return [str(path), *cache.opened_stat(path)]


def reads_trial_folders(name: str, runs: Sequence[Run]) -> bool:
    """Whether `name` may read Harbor's trace_jobs folders of `runs` (whose thousands of result.json
    files are not stat'ed for a key: such an answer is never kept). A run whose trials CSV exists reads
    none of its result.json files: the CSV wins (rlsql/sources.py, harbor_context)."""
    harbor = any("harbor" in run.artifacts and "trials" not in run.artifacts for run in runs)
    trajectories = any("trajectories" in run.artifacts for run in runs)  # agents' trajectories: never stat'ed
    if not harbor and not trajectories:
        return False
    from rlsql.catalog import load_catalog  # on the way to storing only: the query has loaded it

    read = {f.artifact for f in load_catalog().closure([name]) if f.kind == "source"}
    return (harbor and "harbor" in read) or (trajectories and "trajectories" in read)


def inputs_of(runs: Sequence[Run]) -> list:
    """Every run's identity and the stat of each file a query over it may read (Harbor's trial folders
    by name only: see reads_trial_folders)."""
    described = []
    for run in runs:
        artifacts = []
        for kind in sorted(run.artifacts):
            artifact = run.artifacts[kind]
            item: list = [kind, str(artifact.path), artifact.prefix]
            if kind == "logs":
                item.append([_file_stat(p) for p in find_logs(run.path)])
            elif kind not in ("harbor", "trajectories"):
                item.append(_file_stat(artifact.path))
            artifacts.append(item)
        described.append([run.name, os.path.abspath(run.path), artifacts, [str(p) for p in run.ignored]])
    return described


def _environment() -> list:
    names = sorted(k for k in os.environ if k.startswith("RLSQL_") and k not in _CACHE_VARIABLES)
    return [[k, os.environ[k]] for k in names] + [["TZ", os.environ.get("TZ")]]


def key_of(name: str, params: dict[str, str], runs: Sequence[Run], inputs: list | None = None
           ) -> tuple[str, list] | None:
    """The answer key of `name` with `params` over `runs`, and the inputs it covers (`inputs`: inputs_of(runs)
    read already, for several keys over the same files); None if not keepable."""
    if inputs is None:
        try:
            inputs = inputs_of(runs)
        except OSError:
            return None  # a file vanished between the scan and now: answer it afresh (and fail there if it must)
    material = [ANSWER_FORMAT, ANSWER_VERSION, code_digest(), _environment(), name,
                sorted(params.items()), inputs]
    digest = hashlib.sha256(json.dumps(material, separators=(",", ":")).encode()).hexdigest()[:32]
    return digest, inputs


def _file_stats(inputs: list) -> list[list]:
    """The `_file_stat` of every file `inputs` covers (a run's logs are a list of them, a CSV or the
    config one, Harbor's folder none)."""
    found = []
    for _, _, artifacts, _ in inputs:
        for item in artifacts:
            if len(item) == 4:
                found.extend(item[3] if item[0] == "logs" else [item[3]])
    return found


def input_files(inputs: list) -> list[Path]:
    """The files `inputs` covers (what a key stat'ed)."""
    return [Path(s[0]) for s in _file_stats(inputs)]


def _newest_change_ns(inputs: list) -> int:
    return max((max(s[2], s[3]) for s in _file_stats(inputs)), default=0)


# --- values ----------------------------------------------------------------------------------


class _Unstorable(Exception):
    pass


def _encode(value: Any) -> Any:
    """A cell as JSON that decodes to an equal value of the same type (floats round-trip through repr)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else {"$f": repr(value)}
    if isinstance(value, decimal.Decimal):
        return {"$dec": str(value)}
    if isinstance(value, dt.datetime):
        return {"$ts": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"$td": [value.days, value.seconds, value.microseconds]}
    uuid = sys.modules.get("uuid")  # a UUID cell exists only once DuckDB has imported the module
    if uuid is not None and isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$dict": {k: _encode(v) for k, v in value.items()}}
    raise _Unstorable(type(value).__name__)


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    if tag == "$f":
        return float(inner)
    if tag == "$dec":
        return decimal.Decimal(inner)
    if tag == "$ts":
        return dt.datetime.fromisoformat(inner)
    if tag == "$date":
        return dt.date.fromisoformat(inner)
    if tag == "$time":
        return dt.time.fromisoformat(inner)
    if tag == "$td":
        return dt.timedelta(days=inner[0], seconds=inner[1], microseconds=inner[2])
    if tag == "$uuid":
        import uuid

        return uuid.UUID(inner)
    if tag == "$tuple":
        return tuple(_decode(v) for v in inner)
    if tag == "$dict":
        return {k: _decode(v) for k, v in inner.items()}
    raise ValueError(f"unknown tag {tag}")


# --- the files -------------------------------------------------------------------------------


def _folder(create: bool) -> Path | None:
    root = cache.cache_root()
    if root is None:
        return None
    try:
        if create:
            cache.ensure_root(root)
        elif not cache.has_marker(root):
            return None
    except cache.CacheUnavailable:
        return None
    folder = root / ANSWERS_DIR
    # a link there is not rlsql's folder (as for the entry folders): neither read through nor written
    return None if folder.is_symlink() else folder


def _read(path: Path, key: str) -> dict | None:
    """The answer rlsql stored at `path` for `key`, else None (missing, damaged or not rlsql's)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != ANSWER_FORMAT or record.get("key") != key:
        return None
    return record


class Answer:
    """Rows and the warnings said while they were computed."""

    def __init__(self, columns: list[str], rows: list[tuple], warnings: list[str]):
        self.columns = columns
        self.rows = rows
        self.warnings = warnings


def is_kept(key: str) -> bool:
    """Whether an answer is stored under `key` (not read: look_up proves it rlsql's when it is used)."""
    folder = _folder(create=False)
    return folder is not None and (folder / f"{key}.json").is_file()


def look_up(key: str) -> Answer | None:
    folder = _folder(create=False)
    if folder is None:
        return None
    path = folder / f"{key}.json"
    record = _read(path, key)
    if record is None:
        return None
    try:
        rows = [tuple(_decode(cell) for cell in row) for row in record["rows"]]
        answer = Answer(list(record["columns"]), rows, [str(w) for w in record["warnings"]])
    except (KeyError, TypeError, ValueError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: the last to be evicted
    return answer


def store(key: str, inputs: list, name: str, runs: Sequence[Run], answer: Answer, key_after: str | None) -> bool:
    """Keep `answer` under `key` when it can be trusted again (see the module's docstring); True if kept."""
    if key_after != key or len(answer.rows) > MAX_ROWS or reads_trial_folders(name, runs):
        return False
    if time.time_ns() - _newest_change_ns(inputs) < RACY_SECONDS * 1e9:
        return False
    try:
        rows = [[_encode(cell) for cell in row] for row in answer.rows]
    except _Unstorable:
        return False
    record = {"format": ANSWER_FORMAT, "version": ANSWER_VERSION, "key": key, "query": name,
              "stored_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "code": code_digest(), "inputs": inputs,
              "columns": answer.columns, "warnings": answer.warnings, "rows": rows}
    text = json.dumps(record, separators=(",", ":"))
    if len(text) > MAX_BYTES:
        return False
    folder = _folder(create=True)
    if folder is None:
        return False
    target = folder / f"{key}.json"
    try:
        folder.mkdir(exist_ok=True)
        if target.exists() and _read(target, key) is None:
            return False  # a file there that rlsql cannot prove it wrote is left alone
        _write(target, text)
        _evict(folder)
    except OSError:
        return False  # a full or read-only cache costs the next query its answer, nothing more
    return True


def _write(target: Path, text: str) -> None:
    # a temporary name and a rename, without fsync: a lost answer is only recomputed (as cache.write_json)
    from rlsql import writes  # only to store: a kept answer is read without it

    tmp = writes.temp_name(target)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def listing(folder: Path) -> tuple[list[Path], list[Path], int]:
    """rlsql's answers in `folder` (name in the scheme, record proves it), leftovers of killed writes,
    and how many other files there are (never touched)."""
    from rlsql import writes

    answers, leftovers, foreign = [], [], 0
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return answers, leftovers, foreign
    for path in entries:
        match = _ANSWER_FILE.match(path.name)
        if match and path.is_file() and not path.is_symlink() and _read(path, match["key"]) is not None:
            answers.append(path)
        elif path.is_file() and not path.is_symlink() and (parts := writes.parse_temp_name(path.name)) is not None:
            if not writes.writer_alive(parts):  # a live one is a write (or a claim, rlsql/ahead.py) under way
                leftovers.append(path)
        else:
            foreign += 1
    return answers, leftovers, foreign


def _evict(folder: Path) -> None:
    names = [e for e in os.scandir(folder) if _ANSWER_FILE.match(e.name)]
    if len(names) <= KEEP:
        return
    names.sort(key=lambda e: e.stat().st_mtime_ns)
    for e in names[: len(names) - KEEP_AFTER]:
        path = Path(e.path)
        if _read(path, path.stem) is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def is_stale(path: Path) -> bool:
    """An answer whose inputs changed, vanished, or whose code is not this rlsql's (it can never be read)."""
    record = _read(path, path.stem)
    if record is None or record.get("code") != code_digest():
        return True
    try:
        return any(_file_stat(Path(s[0])) != s for s in _file_stats(record["inputs"]))
    except (OSError, KeyError, TypeError, ValueError):
        return True


def summary(root: Path) -> tuple[list[Path], list[Path], int]:
    """The answers kept under cache folder `root` (see `listing`); nothing when it is not rlsql's."""
    folder = root / ANSWERS_DIR
    if not cache.has_marker(root) or folder.is_symlink():
        return [], [], 0  # a link there is somebody else's: never listed, so never cleared through
    return listing(folder)


def clear(root: Path, stale_only: bool) -> tuple[int, int]:
    """Delete the answers rlsql kept (all, or the stale ones) and leftovers of killed writes; (files, bytes)."""
    answers, leftovers, _ = summary(root)
    removed = freed = 0
    for path in [p for p in answers if not stale_only or is_stale(p)]:
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            continue
        removed += 1
        freed += size
    if leftovers:
        from rlsql import writes

        removed += len(writes.sweep(root / ANSWERS_DIR))
    with contextlib.suppress(OSError):
        (root / ANSWERS_DIR).rmdir()  # only when empty
    return removed, freed
