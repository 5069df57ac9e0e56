"""The Parquet cache of runs' CSVs: where it lives, what an entry is, and proof of what rlsql wrote.

Each CSV artifact may have one entry: `<root>/<kk>/<key>.parquet` (the typed, numbered rows) and
`<key>.json` (the record of the CSV it was built from), where `key` is a hash of the CSV's absolute
path and `kk` its first two characters. The root carries a marker file (MARKER) that rlsql writes
when it creates the folder, or adopts an empty one; a non-empty folder without it is somebody
else's and rlsql neither writes nor deletes anything there. A cache folder inside a run folder is
refused the same way: rlsql never writes into a run folder.

An entry is used only while its record matches the CSV as it is now: size, modification time,
change time (ctime, which no user-level tool can set back, so an edit that restores size and
mtime still shows) and inode. The Parquet file must have the size the record gives and Parquet's
magic number at both ends; `cache status` and `cache build` also read its footer (row count, and
the entry key rlsql stores in the footer's key-value metadata). An entry that fails a read is
marked damaged and read no more until `cache build` replaces it. The record carries the CSV's
SHA-256 (computed at build, ~0.4 s for a 680 MB CSV against ~1.5 s for the parse), so the copy can
always be traced to exact bytes; it is not recomputed on every read, which would cost most of
what the cache saves.

This module keeps the files; rlsql/cachebuild.py fills them and hands them to the sources.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rlsql.sqltext import glob_escaped

# rlsql.writes is imported where it is used: a kept answer (rlsql/answers.py) reads the cache's policy
# and folder without it (its socket and shutil imports are ~4 ms of a 50 ms answer)

CACHE_ENV = "RLSQL_CACHE_DIR"
#: `0` / `off`: never read or build entries; `1` / `on`: build an entry for every CSV before it is read;
#: unset or `auto`: read any fresh entry, and a CSV of at least RLSQL_CACHE_MIN_BYTES without one is
#: read in place and cached afterwards by a detached process (rlsql/cachebg.py)
AUTO_ENV = "RLSQL_CACHE"
MIN_BYTES_ENV = "RLSQL_CACHE_MIN_BYTES"
#: `0` / `off`: never keep or reuse query answers (rlsql/answers.py), whatever the cache's mode
ANSWERS_ENV = "RLSQL_CACHE_ANSWERS"
#: `0` / `off`: after a first question is kept, do not answer the other questions over the same files in
#: the background (rlsql/ahead.py)
AHEAD_ENV = "RLSQL_CACHE_AHEAD"
#: a CSV this big is cached after its first read by default (bench/RESULTS.md, issue 15)
DEFAULT_MIN_BYTES = 32 * 2**20

MARKER = "rlsql-cache.json"
#: the folder of kept query answers (rlsql/answers.py), beside the entry folders
ANSWERS_DIR = "answers"
MARKER_FORMAT = "rlsql-parquet-cache"
ENTRY_FORMAT = "rlsql-parquet-cache-entry"
#: 3: whole-number columns stored checked, as BIGINT beside their bad cells (sources/_cache_csv.sql.j2)
ENTRY_VERSION = 3
#: the footer key-value pair that names the entry a Parquet file belongs to
FOOTER_KEY = "rlsql_cache_key"
PARQUET_MAGIC = b"PAR1"

_KEY = re.compile(r"^[0-9a-f]{24}$")
_ENTRY_FILE = re.compile(r"^(?P<key>[0-9a-f]{24})\.(?P<ext>parquet|json)$")
_FOLDER = re.compile(r"^[0-9a-f]{2}$")
#: what earlier versions left when killed: mkstemp's `.<entry file>.<random>.tmp` and DuckDB's own
#: `tmp_` copy of that name, and this version's first scheme (`<entry file>.rlsql-tmp.<host>.<pid>.<token>`)
_LEGACY_TEMP = re.compile(r"^(?:(?:tmp_)?\.[0-9a-f]{24}\.(?:parquet|json)\.[A-Za-z0-9_]+\.tmp"
                          r"|[0-9a-f]{24}\.(?:parquet|json)\.rlsql-tmp\.[A-Za-z0-9-]+\.\d+\.[0-9a-f]+)$")


class CacheUnavailable(Exception):
    """The cache folder cannot be used (foreign, inside a run folder, unwritable); the message says why."""


# --- a file as a reader sees it -------------------------------------------------------------


def opened_stat(path: Path) -> list[int]:
    """[size, mtime_ns, ctime_ns, inode, device] of `path`, read by fstat after an open: on NFS an open
    revalidates the attributes the client caches (close-to-open consistency), so a change made on
    another host is seen as a reader opening the file would see it. For the kept answers' keys and
    the kept config rows (rlsql/answers.py, rlsql/configcache.py)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        s = os.fstat(fd)
    finally:
        os.close(fd)
    return [s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev]


# --- where -----------------------------------------------------------------------------------


def _home() -> Path | None:
    """The user's home: $HOME when it is an absolute path, else the password database's entry."""
    home = os.environ.get("HOME", "")
    if not os.path.isabs(home):
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            return None
    return Path(home) if os.path.isabs(home) and Path(home) != Path("/") else None


def user_cache_base() -> Path | None:
    """$XDG_CACHE_HOME/rlsql (an absolute one: the XDG spec ignores relative values), else ~/.cache/rlsql."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "rlsql"
    home = _home()
    return home / ".cache" / "rlsql" if home is not None else None


def cache_root() -> Path | None:
    """$RLSQL_CACHE_DIR, else <user cache>/parquet; None when there is no home to put it in."""
    configured = os.environ.get(CACHE_ENV, "")
    if configured:
        return Path(configured).expanduser().absolute()
    base = user_cache_base()
    return base / "parquet" if base is not None else None


def analysis_cache_file(name: str, for_writing: bool) -> Path | None:
    """Where the SQL analysis cache (rlsql/catalog.py) keeps `name`: with RLSQL_CACHE_DIR set, inside
    that folder (only when it is rlsql's cache), else in the user cache folder."""
    if os.environ.get(CACHE_ENV):
        root = cache_root()
        if root is None:
            return None
        if for_writing:
            try:
                ensure_root(root)
            except CacheUnavailable:
                return None
        return root / name if has_marker(root) else None
    base = user_cache_base()
    return base / name if base is not None else None


# --- policy ----------------------------------------------------------------------------------

_disabled: contextvars.ContextVar[bool] = contextvars.ContextVar("rlsql_cache_disabled", default=False)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Read every CSV in place inside this block (persistent views, a retry after a bad entry)."""
    token = _disabled.set(True)
    try:
        yield
    finally:
        _disabled.reset(token)


#: the policy a caller chose for this process (the CLI's --cache / --no-cache); None: RLSQL_CACHE decides
_chosen: str | None = None


def choose(policy: str | None) -> None:
    """Set this process's cache policy ("on", "off" or "auto"), over RLSQL_CACHE; None gives the choice back."""
    global _chosen
    if policy not in (None, "on", "off", "auto"):
        raise ValueError(f"cache policy {policy!r}: choose on, off or auto")
    _chosen = policy


def mode() -> str:
    """off, on (cache every CSV read) or auto (cache CSVs of at least min_bytes())."""
    if _disabled.get():
        return "off"
    if _chosen is not None:
        return _chosen
    value = os.environ.get(AUTO_ENV, "").strip().lower()
    if value in {"0", "false", "no", "off"}:
        return "off"
    if value in {"1", "true", "yes", "on"}:
        return "on"
    return "auto"


def min_bytes() -> int:
    try:
        return max(0, int(os.environ.get(MIN_BYTES_ENV, "")))
    except ValueError:
        return DEFAULT_MIN_BYTES


def should_build(size: int) -> bool:
    current = mode()
    return current == "on" or (current == "auto" and size >= min_bytes())


def answers_wanted() -> bool:
    """Kept answers (rlsql/answers.py) are on unless the cache is off or RLSQL_CACHE_ANSWERS turns them off."""
    if os.environ.get(ANSWERS_ENV, "").strip().lower() in {"0", "false", "no", "off"}:
        return False
    return mode() != "off"


def ahead_wanted() -> bool:
    """Questions answered ahead (rlsql/ahead.py) are on with kept answers, unless RLSQL_CACHE_AHEAD turns them off."""
    if os.environ.get(AHEAD_ENV, "").strip().lower() in {"0", "false", "no", "off"}:
        return False
    return answers_wanted()


def describe_policy() -> str:
    current = mode()
    if current == "off":
        return f"the cache is off ({AUTO_ENV}=0 or --no-cache): every CSV is read in place"
    answers = ("; a repeated query is answered from its kept answer while its files are unchanged "
               "(RLSQL_CACHE_ANSWERS=0 turns that off)")
    if answers_wanted():
        answers += ("; after a first question, the other named queries over the same files are answered "
                    "and kept in the background (RLSQL_CACHE_AHEAD=0 turns that off)"
                    if ahead_wanted() else "; questions are not answered ahead (RLSQL_CACHE_AHEAD=0)")
    else:
        answers = "; kept answers are off (RLSQL_CACHE_ANSWERS=0)"
    if current == "on":
        return (f"every CSV read is cached before it is read, whatever its size ({AUTO_ENV}=1 or --cache); "
                f"{AUTO_ENV}=0 turns the cache off" + answers)
    return (f"CSVs (and runs' raw logs) of {min_bytes() / 2**20:g} MiB or more are cached after their first read, "
            "in the background "
            f"({MIN_BYTES_ENV}); {AUTO_ENV}=1 or --cache caches every CSV before it is read, "
            f"{AUTO_ENV}=0 or --no-cache turns the cache off" + answers)


# --- the root and its marker -----------------------------------------------------------------


def has_marker(root: Path) -> bool:
    try:
        record = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("format") == MARKER_FORMAT


def run_folder_around(root: Path) -> Path | None:
    """The run folder that `root` is (or is inside), if any: rlsql never writes into one.

    The walk up stops below the user's home and below top-level folders such as /tmp: a stray
    metrics.csv in ~ must not cost the default cache folder (~/.cache/rlsql/parquet) its use.
    """
    from rlsql.errors import DataError
    from rlsql.runs import scan_folder

    path = root
    while not path.exists() and path != path.parent:
        path = path.parent
    home = _home()
    for folder in (path, *path.parents):
        if folder == home or len(folder.parts) <= 2:
            break
        try:
            if folder.is_dir() and scan_folder(folder) is not None:
                return folder
        except (DataError, OSError):
            continue
    return None


def check_root(root: Path) -> None:
    """Raise CacheUnavailable unless `root` is, or may become, rlsql's cache folder."""
    inside = run_folder_around(root)
    if inside is not None:
        raise CacheUnavailable(f"cache folder {root} is inside run folder {inside}; "
                               f"rlsql never writes into a run folder: set {CACHE_ENV} elsewhere")
    if root.exists() and not has_marker(root):
        if not root.is_dir():
            raise CacheUnavailable(f"cache folder {root} is not a folder")
        try:
            foreign = any(root.iterdir())
        except OSError as exc:
            raise CacheUnavailable(f"cannot list cache folder {root} ({exc.strerror})") from exc
        if foreign:
            raise CacheUnavailable(
                f"{root} is not an rlsql cache folder (no {MARKER}, and it holds files rlsql did not write); "
                f"set {CACHE_ENV} to a new or empty folder"
            )


#: roots this process has checked: the walk up for run folders is done once per root, not per file
_checked: set[Path] = set()


def ensure_root(root: Path) -> Path:
    """`root`, created (with its marker) when missing or empty; CacheUnavailable when it cannot be."""
    if root in _checked and has_marker(root):
        return root
    check_root(root)
    if has_marker(root):
        _checked.add(root)
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
        write_json(root / MARKER, {"format": MARKER_FORMAT, "version": 1, "created_at": _now(),
                                   "note": "rlsql's Parquet cache: `rlsql cache clear` deletes only the "
                                           "entries rlsql wrote here"})
    except OSError as exc:
        raise CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    _checked.add(root)
    return root


# --- entries ---------------------------------------------------------------------------------


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def temp_path(target: Path) -> Path:
    """The temporary name a cache file is written under before it is renamed onto `target`: rlsql's
    one scheme for every write (rlsql/writes.py), which the next build or clear sweeps."""
    from rlsql import writes

    return writes.temp_name(target)


def write_json(target: Path, record: dict) -> None:
    """Written under a temporary name and renamed, without fsync: a cache file lost to a crash is
    caught by the checks below and rebuilt, so it need not cost every build a disk flush."""
    tmp = temp_path(target)
    try:
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class Stat:
    """What identifies a CSV's content without reading it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> Stat:
        s = path.stat()
        return cls(s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)

    def matches(self, record: dict) -> bool:
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode) == (
            record.get("size"), record.get("mtime_ns"), record.get("ctime_ns"), record.get("inode"))


def entry_key(csv: Path) -> str:
    return hashlib.sha256(f"rlsql-cache-v{ENTRY_VERSION}\0{csv}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Entry:
    """One cached CSV: the Parquet file and the record of what it was built from."""

    parquet: Path
    meta: Path

    @property
    def key(self) -> str:
        return self.meta.stem

    def read_meta(self) -> dict:
        """The record when it is one rlsql wrote for this entry, else {}."""
        try:
            record = json.loads(self.meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(record, dict) or record.get("format") != ENTRY_FORMAT or record.get("key") != self.key:
            return {}
        return record


def entry_for(csv: Path, root: Path) -> Entry:
    key = entry_key(csv)
    folder = root / key[:2]
    return Entry(folder / f"{key}.parquet", folder / f"{key}.json")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def parquet_looks_whole(entry: Entry, record: dict) -> str | None:
    """None when the Parquet file has the recorded size and the magic number at both ends, else why not."""
    try:
        size = entry.parquet.stat().st_size
        if size != record.get("parquet_bytes"):
            return f"its Parquet file is {size:,} bytes, not the {record.get('parquet_bytes'):,} it was written with"
        with entry.parquet.open("rb") as fh:
            head = fh.read(4)
            fh.seek(-4, os.SEEK_END)
            tail = fh.read(4)
    except OSError as exc:
        return f"its Parquet file cannot be read ({exc.strerror})"
    except TypeError:
        return "its record has no Parquet size"
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        return "its Parquet file is not Parquet (no magic number)"
    return None


def quick_state(entry: Entry, csv: Path) -> tuple[str, str]:
    """(state, why) from the record, the CSV's stat and the Parquet file's size and magic (no reading).

    state: missing, fresh, stale (the CSV changed), orphaned (it is gone) or damaged (a raw log's entry:
    rlsql/logcache.py entry_state words these for a log).
    """
    record = entry.read_meta()
    if not record:
        return "missing", "no cache entry"
    if record.get("source") != str(csv):
        return "damaged", "its record names another file"
    if record.get("unbuilt"):
        return "unbuilt", unbuilt_why(record)
    try:
        current = Stat.of(csv)
    except OSError:
        return "orphaned", "the CSV is gone"
    if not current.matches(record):
        return "stale", "the CSV changed since its cache entry was built"
    if record.get("damaged"):
        return "damaged", f"its cache entry failed a read ({record['damaged']})"
    problem = parquet_looks_whole(entry, record)
    if problem:
        return "damaged", problem
    return "fresh", "fresh"


def footer_problem(entry: Entry, record: dict, con) -> str | None:
    """None when DuckDB reads the Parquet footer with the recorded rows and this entry's key."""
    import duckdb

    try:
        exact = glob_escaped(entry.parquet)  # DuckDB globs a path it is given, even as a parameter
        rows = con.execute("SELECT sum(num_rows) FROM parquet_file_metadata(?)", [exact]).fetchone()[0]
        keys = dict(con.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [exact]).fetchall())
    except duckdb.Error as exc:
        return f"its Parquet footer does not read ({str(exc).splitlines()[0]})"
    if keys.get(FOOTER_KEY) != entry.key:
        return "its Parquet file belongs to another entry"
    if rows != record.get("rows"):
        return f"its Parquet file holds {rows} rows, not the {record.get('rows')} recorded"
    return None


def full_state(entry: Entry, con) -> tuple[str, str]:
    """quick_state plus a read of the Parquet footer (for `cache status` and `cache build`)."""
    record = entry.read_meta()
    state, why = quick_state(entry, Path(record.get("source", "")))
    if state == "fresh":
        problem = footer_problem(entry, record, con)
        if problem:
            return "damaged", problem
    return state, why


def builder_of(entry: Entry, other_than: int | None = None) -> int | None:
    """The pid of a live process on this host (other than `other_than`) building `entry`'s Parquet file
    (its claim: the file's temporary name, rlsql/writes.py), if any."""
    from rlsql import writes

    return writes.claimant(entry.parquet, other_than)


def claim_for(entry: Entry, pid: int) -> None:
    """Claim `entry` in the name of process `pid`: a reader that starts a builder does so the moment it
    starts it, so that a second read in the ~0.3 s before the builder's own claim starts no other one."""
    from rlsql import writes

    with contextlib.suppress(OSError):
        entry.parquet.parent.mkdir(exist_ok=True)
        writes.claim(entry.parquet, pid)  # a builder that died before removing its claim: gone for good


def drop_claims_of(entry: Entry, pid: int) -> None:
    """Remove the claims made in the name of `pid` (the builder, once it is done with `entry`)."""
    from rlsql import writes

    writes.drop_claims(entry.parquet, pid)


# --- marks: a CSV the background builder could not cache ---------------------------------------------

#: `unbuilt` kinds: the CSV changed while it was read (a run still writing it), or DuckDB could not convert it
CHANGED = "changed"
UNCONVERTIBLE = "unconvertible"
#: a CSV that changed during a build is tried again only once nobody has written it for this long, or
#: twice as long as that build took (a live trials CSV otherwise costs a wasted conversion per read)
QUIET_SECONDS = 60.0


def mark_unbuilt(entry: Entry, csv: Path, kind: str, reason: str, seconds: float) -> None:
    """Record in `entry`'s record (with no Parquet file) why the builder left `csv` uncached: the next
    reads start no builder for it until retry_due() says so. `cache build` ignores the mark."""
    try:
        now = Stat.of(csv)
    except OSError:
        return
    with contextlib.suppress(OSError):
        entry.meta.parent.mkdir(exist_ok=True)
        entry.parquet.unlink(missing_ok=True)  # a stale copy of ours: it would never be read again
        write_json(entry.meta, {
            "format": ENTRY_FORMAT, "version": ENTRY_VERSION, "key": entry.key, "source": str(csv),
            "unbuilt": kind, "reason": reason, "size": now.size, "mtime_ns": now.mtime_ns,
            "ctime_ns": now.ctime_ns, "inode": now.inode, "seconds": round(seconds, 3), "marked_at": _now(),
        })


def unbuilt_why(record: dict) -> str:
    if record.get("unbuilt") == CHANGED:
        return "it changed while it was being cached (a run in progress?)"
    return f"it could not be cached ({record.get('reason') or 'DuckDB could not convert it'})"


def retry_due(record: dict, csv: Path) -> bool:
    """Whether a read should start a builder again for a CSV marked unbuilt.

    Not convertible: only once the CSV is no longer the one that failed (its stat changed). Changed while
    read: once nobody has written it for QUIET_SECONDS (or twice the discarded build's time, if longer),
    whatever its stat: a CSV that keeps growing has a new stat at every read.
    """
    try:
        now = Stat.of(csv)
    except OSError:
        return False
    if record.get("unbuilt") == UNCONVERTIBLE:
        return not now.matches(record)
    quiet = max(QUIET_SECONDS, 2 * float(record.get("seconds") or 0))
    return time.time() - now.mtime_ns / 1e9 >= quiet


# --- clearing while a builder runs -------------------------------------------------------------------

_CLEARED = "cleared_ns"


def note_cleared(root: Path) -> None:
    """Stamp the root's marker with the time of a `cache clear`: a builder that started before it does not
    put its entry in place afterwards (cleared_since), so clear does not need to stop it."""
    try:
        record = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(record, dict) and record.get("format") == MARKER_FORMAT:
        record[_CLEARED] = time.time_ns()
        with contextlib.suppress(OSError):
            write_json(root / MARKER, record)


def cleared_since(root: Path, started_ns: int) -> bool:
    try:
        record = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # the marker is gone: the folder was emptied under the builder
    return not isinstance(record, dict) or int(record.get(_CLEARED) or 0) >= started_ns


def mark_damaged(entry: Entry, reason: str) -> None:
    """Record that a read of this entry failed, so it is not read again until rebuilt."""
    record = entry.read_meta()
    if record:
        record["damaged"] = reason
        with contextlib.suppress(OSError):
            write_json(entry.meta, record)


# --- listing, sweeping, deleting -------------------------------------------------------------


@dataclass
class Listing:
    """What a cache folder holds: rlsql's entries (verified), leftovers of killed writes, foreign files."""

    entries: list[Entry]
    leftovers: list[Path]
    foreign: int


def _is_temporary(path: Path) -> bool:
    from rlsql import writes

    return writes.parse_temp_name(path.name) is not None or bool(_LEGACY_TEMP.match(path.name))


def _file_or_pipe(path: Path) -> bool:
    """A regular file, or a named pipe (logcache.piped_read's, left by a killed build); never a link."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISFIFO(mode)


def list_root(root: Path) -> Listing:
    """rlsql's entries under a marked root: names in rlsql's scheme with a record rlsql wrote (or, for a
    Parquet file whose record is gone, the entry key in its own footer). Everything else is foreign."""
    listing = Listing([], [], 0)
    if not has_marker(root):
        return listing
    try:
        top = sorted(root.iterdir())
    except OSError:
        return listing
    for folder in top:
        if folder.name in (MARKER, ANSWERS_DIR) or folder.name.startswith("sql-analysis-"):
            continue
        if not (_FOLDER.match(folder.name) and folder.is_dir() and not folder.is_symlink()):
            listing.foreign += 1
            continue
        try:
            files = sorted(folder.iterdir())
        except OSError:
            continue
        keys = set()
        for f in files:
            match = _ENTRY_FILE.match(f.name)
            if match and match["key"][:2] == folder.name and f.is_file() and not f.is_symlink():
                keys.add(match["key"])
            elif _is_temporary(f) and _file_or_pipe(f):
                listing.leftovers.append(f)
            else:
                listing.foreign += 1
        for key in sorted(keys):
            entry = Entry(folder / f"{key}.parquet", folder / f"{key}.json")
            if entry.read_meta() or (not entry.meta.exists() and _footer_key(entry.parquet) == key):
                listing.entries.append(entry)
            else:
                listing.foreign += entry.parquet.exists() + entry.meta.exists()
    return listing


def _footer_key(parquet: Path) -> str | None:
    """The entry key stored in a Parquet file's footer, if it is readable and has one."""
    if not parquet.is_file():
        return None
    import duckdb

    from rlsql.duckconn import memory_connection

    try:
        rows = memory_connection().execute(
            "SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = ?",
            [glob_escaped(parquet), FOOTER_KEY],
        ).fetchall()
    except duckdb.Error:
        return None
    return rows[0][0] if rows else None


def sweep_leftovers(root: Path) -> int:
    """Delete the temporary files killed writes left in rlsql's entry folders; returns how many.

    rlsql's own scheme goes through writes.sweep (only names whose checksum holds and whose process
    is gone); the names earlier versions used are removed outright (no live process writes them).
    """
    from rlsql import writes

    listing = list_root(root)
    swept = 0
    for folder in sorted({p.parent for p in listing.leftovers}):
        swept += len(writes.sweep(folder))
    for path in listing.leftovers:
        if _LEGACY_TEMP.match(path.name):
            with contextlib.suppress(OSError):
                path.unlink()
                swept += 1
    return swept


def delete_entries(root: Path, entries: list[Entry]) -> tuple[int, int]:
    """Delete entries listed by list_root (and their emptied folders); returns (files removed, bytes freed)."""
    removed = freed = 0
    for entry in entries:
        for f in (entry.parquet, entry.meta):
            try:
                size = f.stat().st_size
                f.unlink()
            except FileNotFoundError:
                continue
            freed += size
            removed += 1
    for folder in {e.parquet.parent for e in entries}:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: a foreign file keeps its folder
    return removed, freed
