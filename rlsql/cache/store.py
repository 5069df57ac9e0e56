"""The cache's files: where the folder is, what an entry is, and proof of what rlsql wrote there.

Each cached file (a run's CSV, or a raw training log: rlsql/cache/logentries.py) may have one entry:
`<root>/<kk>/<key>.parquet` (the typed, numbered rows) and `<key>.json` (the record of the file it
was built from), where `key` is a hash of the file's absolute path and `kk` its first two
characters. The root carries a marker file (MARKER) that rlsql writes when it creates the folder,
or adopts an empty one; a non-empty folder without it is somebody else's and rlsql neither writes
nor deletes anything there. A cache folder inside a run folder is refused the same way: rlsql
never writes into a run folder. A folder rlsql cannot use costs every command that would have used
it one warning naming the folder, the reason and the fix (`usable_root`).

An entry is used only while its record matches the file as it is now: size, modification time,
change time (ctime, which no user-level tool can set back, so an edit that restores size and
mtime still shows) and inode. The Parquet file must have the size the record gives, Parquet's
magic number at both ends and the CRC-32 of its bytes recorded when it was written (`parquet_crc32`):
DuckDB neither writes nor checks Parquet's page checksums, and a few flipped bytes inside a copy read
as wrong numbers without an error. The check reads the whole copy (~2.6 GB/s; a 190 MB copy of 10M
trials: ~0.07 s, bench/RESULTS.md "Cache"), once per process while its stat is unchanged; a copy that
fails it is not read: its file answers, with one warning. `cache status` and `cache build` also read
its footer (row count, and the entry key rlsql stores in the footer's key-value metadata). An entry
that fails a read is answered from its file with a warning; nothing is recorded (a read never writes the
cache folder). The record carries the CSV's
SHA-256 (computed at build, ~0.4 s for a 680 MB CSV against ~1.5 s for the parse), so the copy can
always be traced to exact bytes; it is not recomputed on every read, which would cost most of
what the cache saves.

Entries are built in the foreground only: by `rlsql cache build`, or by a reading command given
`--cache` (RLSQL_CACHE=on). A query that reads an entry writes nothing; a build sets the modification
time of each record it writes or finds fresh, so after a build the folder keeps to its size limit
(Settings.cache_max_bytes) by removing the entries least recently built or confirmed by a build (`evict`).
Two builds into one folder run one after the other (`build_lock`).

This module keeps the files; rlsql/cache/csvcopies.py and logentries.py fill them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rlsql.catalog.catalog import sql_root
from rlsql.catalog.manifest import templates_digest
from rlsql.core.settings import Settings
from rlsql.core.sqltext import glob_escaped
from rlsql.duck.fileio import parquet_key_values, parquet_rows
from rlsql.duck.memorydb import DuckError, memory_connection
from rlsql.runs import writes
from rlsql.runs.folders import run_folder_at_or_above

CACHE_ENV = "RLSQL_CACHE_DIR"
#: the folder of the runs fetched from URLs (rlsql/cache/mirrors.py fills it): `<key>/` (the mirror) and
#: `<key>.json` (its record), counted against the size limit and cleared with the entries
REMOTE_DIR = "remote"
MIRROR_FORMAT = "rlsql-remote-mirror"
MIRROR_KEY = re.compile(r"^[0-9a-f]{16}$")
#: the mirror folders this process reads (rlsql/cache/mirrors.py adds them): an eviction by a build
#: later in the same command (`--cache`) never removes a run from under its query
MIRRORS_IN_USE: set[Path] = set()
MARKER = "rlsql-cache.json"
MARKER_FORMAT = "rlsql-parquet-cache"
ENTRY_FORMAT = "rlsql-parquet-cache-entry"
#: 3: whole-number columns stored checked, as BIGINT beside their bad cells (sources/_cache_csv.sql.j2)
ENTRY_VERSION = 3
#: the footer key-value pair that names the entry a Parquet file belongs to
FOOTER_KEY = "rlsql_cache_key"
PARQUET_MAGIC = b"PAR1"

_ENTRY_FILE = re.compile(r"^(?P<key>[0-9a-f]{24})\.(?P<ext>parquet|json)$")
_FOLDER = re.compile(r"^[0-9a-f]{2}$")
#: what earlier versions left when killed: mkstemp's `.<entry file>.<random>.tmp` and DuckDB's own
#: `tmp_` copy of that name, and this version's first scheme (`<entry file>.rlsql-tmp.<host>.<pid>.<token>`)
_LEGACY_TEMP = re.compile(
    r"^(?:(?:tmp_)?\.[0-9a-f]{24}\.(?:parquet|json)\.[A-Za-z0-9_]+\.tmp"
    r"|[0-9a-f]{24}\.(?:parquet|json)\.rlsql-tmp\.[A-Za-z0-9-]+\.\d+\.[0-9a-f]+)$"
)


class CacheUnavailable(Exception):
    """The cache folder cannot be used (foreign, inside a run folder, unwritable); the message says why."""


# --- the root and its marker -----------------------------------------------------------------


def has_marker(root: Path) -> bool:
    try:
        record = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("format") == MARKER_FORMAT


def run_folder_around(root: Path) -> Path | None:
    """The run folder that `root` is (or is inside), if any: rlsql never writes into one."""
    return run_folder_at_or_above(root)


def check_root(root: Path) -> None:
    """Raise CacheUnavailable unless `root` is, or may become, rlsql's cache folder."""
    inside = run_folder_around(root)
    if inside is not None:
        raise CacheUnavailable(
            f"cache folder {root} is inside run folder {inside}; "
            f"rlsql never writes into a run folder: set {CACHE_ENV} elsewhere"
        )
    if root.exists() and not has_marker(root):
        if not root.is_dir():
            raise CacheUnavailable(f"cache folder {root} is not a folder")
        try:
            # a marker's temporary is rlsql's own: a build killed while creating the folder left it
            foreign = any(not _marker_temp(f.name) for f in root.iterdir())
        except OSError as exc:
            raise CacheUnavailable(f"cannot list cache folder {root} ({exc.strerror})") from exc
        if foreign:
            raise CacheUnavailable(
                f"{root} is not an rlsql cache folder (no {MARKER}, and it holds files rlsql did not write); "
                f"set {CACHE_ENV} to a new or empty folder"
            )


def _marker_temp(name: str) -> bool:
    parts = writes.parse_temp_name(name)
    return parts is not None and parts.final == MARKER


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
        writes.sweep(root)  # a killed creation's marker temporary (only an abandoned one of rlsql's names)
        write_json(
            root / MARKER,
            {
                "format": MARKER_FORMAT,
                "version": 1,
                "created_at": _now(),
                "note": "rlsql's Parquet cache: `rlsql cache clear` deletes only the entries rlsql wrote here",
            },
        )
    except OSError as exc:
        raise CacheUnavailable(f"cannot write cache folder {root} ({exc.strerror or exc})") from exc
    _checked.add(root)
    return root


def usable_root(settings: Settings, for_writing: bool) -> Path | None:
    """The cache folder a reading command uses, or None (read every file in place): None when the cache
    is off or there is no folder yet to read from; CacheUnavailable when the folder cannot be used
    (the caller warns: rlsql/cache/reading.py)."""
    root = settings.cache_dir
    if settings.cache == "off" or root is None:
        return None
    if for_writing:
        return ensure_root(root)
    if root not in _checked:
        check_root(root)
        _checked.add(root)
    return root if has_marker(root) else None


@contextlib.contextmanager
def build_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the root's marker for the block: two processes building entries into one
    folder take turns, so no record is paired with another build's Parquet file. Released when the
    process ends, however it ends."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX everywhere rlsql is tested
        yield
        return
    try:
        fd = os.open(root / MARKER, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise CacheUnavailable(f"cannot open cache folder {root} ({exc.strerror})") from exc
    try:
        with contextlib.suppress(OSError):  # a filesystem without locks: builds are then unguarded
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# --- entries ---------------------------------------------------------------------------------


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def temp_path(target: Path) -> Path:
    """The temporary name a cache file is written under before it is renamed onto `target`: rlsql's
    one scheme for every write (rlsql/runs/writes.py), which the next build or clear sweeps."""
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
            record.get("size"),
            record.get("mtime_ns"),
            record.get("ctime_ns"),
            record.get("inode"),
        )


def entry_key(name: Path | str) -> str:
    """The key of a file's entry (its path), or of a run's trajectory rows (a name with a NUL, which no path holds)."""
    return hashlib.sha256(f"rlsql-cache-v{ENTRY_VERSION}\0{name}".encode()).hexdigest()[:24]


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


def entry_for(csv: Path | str, root: Path) -> Entry:
    key = entry_key(csv)
    folder = root / key[:2]
    return Entry(folder / f"{key}.parquet", folder / f"{key}.json")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


#: the Parquet files whose bytes matched their checksum in this process, by (path, size, mtime, ctime, inode):
#: a long-lived process (serve, a notebook) reads a copy's bytes once, not on every answer
_verified: set[tuple[str, int, int, int, int]] = set()


#: why an entry without a checksum is stale (not damaged): an older rlsql built it; `cache build` replaces it
NO_CHECKSUM = "its cache entry was built by an older rlsql, which recorded no checksum of its Parquet file"


def parquet_checksum(path: Path) -> str:
    """The CRC-32 of a file's bytes as 8 hex digits (a check against damage, not against tampering:
    whoever can write the cache folder can write the record too)."""
    crc = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _checksum_problem(parquet: Path, record: dict) -> str | None:
    wanted = record.get("parquet_crc32")
    if not wanted:
        return NO_CHECKSUM
    st = parquet.stat()
    key = (str(parquet), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if key in _verified:
        return None
    if parquet_checksum(parquet) != wanted:
        return "its Parquet file's bytes do not match the checksum recorded when it was built"
    _verified.add(key)
    return None


def parquet_looks_whole(entry: Entry, record: dict) -> str | None:
    """None when the Parquet file has the recorded size, the magic number at both ends and the recorded
    checksum of its bytes, else why not."""
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
    try:
        return _checksum_problem(entry.parquet, record)
    except OSError as exc:
        return f"its Parquet file cannot be read ({exc.strerror})"


@functools.cache
def _templates() -> str:
    return templates_digest(sql_root())


def sql_version(*parts: object) -> str:
    """What an entry's rows depend on besides its file, as 16 hex digits: the installed SQL templates (`*.j2`)
    and `parts` (a source's own SQL, the types it reads a CSV with, ...). An entry recorded with another
    version was built by an rlsql that reads the file another way: stale."""
    return hashlib.sha256(json.dumps([_templates(), *parts]).encode()).hexdigest()[:16]


#: why a copy whose CSV is unchanged is stale all the same (quick_state's `reading`)
READ_ANOTHER_WAY = "rlsql reads this CSV another way since its cache entry was built (another rlsql version)"


def quick_state(entry: Entry, csv: Path, reading: str | None = None) -> tuple[str, str]:
    """(state, why) from the record, the CSV's stat and the Parquet file's size and magic (no reading).

    state: missing, fresh, stale (the file changed, or with `reading`, the version of how this rlsql reads
    it, the record holds another), orphaned (it is gone) or damaged (a raw log's entry:
    rlsql/cache/logentries.py entry_state words these for a log).
    """
    record = entry.read_meta()
    if not record:
        return "missing", "no cache entry"
    if record.get("source") != str(csv):
        return "damaged", "its record names another file"
    try:
        current = Stat.of(csv)
    except OSError:
        return "orphaned", "the CSV is gone"
    if not current.matches(record):
        return "stale", "the CSV changed since its cache entry was built"
    if reading is not None and record.get("reading") != reading:
        return "stale", READ_ANOTHER_WAY
    if record.get("damaged"):
        return "damaged", f"its cache entry failed a read ({record['damaged']})"
    if not record.get("parquet_crc32"):
        return "stale", NO_CHECKSUM
    problem = parquet_looks_whole(entry, record)
    if problem:
        return "damaged", problem
    return "fresh", "fresh"


def footer_problem(entry: Entry, record: dict, con) -> str | None:
    """None when DuckDB reads the Parquet footer with the recorded rows and this entry's key."""
    try:
        exact = glob_escaped(entry.parquet)  # DuckDB globs a path it is given, even as a parameter
        rows = parquet_rows(con, exact)
        keys = parquet_key_values(con, exact)
    except DuckError as exc:
        return f"its Parquet footer does not read ({str(exc).splitlines()[0]})"
    if keys.get(FOOTER_KEY) != entry.key:
        return "its Parquet file belongs to another entry"
    if rows != record.get("rows"):
        return f"its Parquet file holds {rows} rows, not the {record.get('rows')} recorded"
    return None


def full_state(entry: Entry, con, reading: str | None = None) -> tuple[str, str]:
    """quick_state plus a read of the Parquet footer (for `cache status` and `cache build`)."""
    record = entry.read_meta()
    state, why = quick_state(entry, Path(record.get("source", "")), reading)
    if state == "fresh":
        problem = footer_problem(entry, record, con)
        if problem:
            return "damaged", problem
    return state, why


def touch(entry: Entry) -> None:
    """Record that a build (or a fetch of a run URL) just covered `entry` (its record's mtime), for `evict`'s
    order; never called by a read."""
    with contextlib.suppress(OSError):
        os.utime(entry.meta)


def evict(root: Path, limit: int, keep: frozenset[Path] = frozenset()) -> tuple[int, int]:
    """Remove the entries and mirrors least recently built, confirmed by a build or fetched (their record's
    mtime: `touch`) until their files total at most `limit` bytes (those in `keep`, an entry's Parquet file or
    a mirror's folder just made, stay); returns (entries and mirrors removed, bytes freed).

    Not the OS's access time: `cache status` and `cache build` read every copy they check (their footers, their
    checksums), which would count as uses, and many mounts keep no access time (noatime) or a day-old one
    (relatime); a query records nothing either, since a read never writes the cache folder."""
    sized: list[tuple[int, int, Entry | Mirror]] = []
    for entry in list_root(root).entries:
        try:
            sized.append((entry.meta.stat().st_mtime_ns, entry.parquet.stat().st_size, entry))
        except OSError:
            continue
    sized.extend((m.used_ns, m.size, m) for m in list_mirrors(root))
    total = sum(size for _, size, _ in sized)
    gone: list[Entry] = []
    freed = removed = 0
    for _, size, item in sorted(sized, key=lambda t: t[0]):
        if total <= limit:
            break
        if (item.parquet if isinstance(item, Entry) else item.folder) in keep | MIRRORS_IN_USE:
            continue
        if isinstance(item, Entry):
            gone.append(item)
        else:
            freed += delete_mirror(item)
        removed += 1
        total -= size
    if gone:
        freed += delete_entries(root, gone)[1]
    return removed, freed


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
    return writes.parse_temp_name(path.name) is not None or bool(_LEGACY_TEMP.match(path.name))


def _file_or_pipe(path: Path) -> bool:
    """A regular file, or a named pipe (an earlier version's log reads left them when killed); never a link."""
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
        if folder.name in (MARKER, REMOTE_DIR):
            continue  # the mirrors of runs given as URLs: rlsql/cache/mirrors.py lists them
        if _marker_temp(folder.name) and _file_or_pipe(folder):
            listing.leftovers.append(folder)
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
    try:
        return parquet_key_values(memory_connection(), glob_escaped(parquet)).get(FOOTER_KEY)
    except DuckError:
        return None


def sweep_leftovers(root: Path) -> int:
    """Delete the temporary files killed writes left in rlsql's entry folders; returns how many.

    rlsql's own scheme goes through writes.sweep (only names whose checksum holds and whose process
    is gone); the names earlier versions used are removed outright (no live process writes them).
    """
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


# --- mirrors of runs given as URLs -----------------------------------------------------------


def read_mirror_record(path: Path) -> dict:
    """A mirror's record (rlsql/cache/mirrors.py writes it) when it is one, else {}."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) and record.get("format") == MIRROR_FORMAT else {}


@dataclass(frozen=True)
class Mirror:
    """One mirror in the cache folder: its record, folder, URL, size, file count and last use (the record's mtime)."""

    record: Path
    folder: Path
    url: str
    fetched_at: str | None
    size: int
    files: int
    used_ns: int


def list_mirrors(root: Path) -> list[Mirror]:
    """The mirrors rlsql wrote under a marked `root` (a record of its format beside its folder); nothing else."""
    base = root / REMOTE_DIR
    if not has_marker(root):
        return []
    try:
        records = sorted(p for p in base.iterdir() if p.suffix == ".json" and MIRROR_KEY.match(p.stem))
    except OSError:
        return []
    found = []
    for path in records:
        record = read_mirror_record(path)
        if not record:
            continue
        folder = base / path.stem
        size = count = 0
        for f in folder.rglob("*"):
            with contextlib.suppress(OSError):
                if f.is_file() and not f.is_symlink():
                    size, count = size + f.stat().st_size, count + 1
        with contextlib.suppress(OSError):
            found.append(
                Mirror(
                    path, folder, str(record.get("url")), record.get("fetched_at"), size, count, path.stat().st_mtime_ns
                )
            )
    return found


def delete_mirror(mirror: Mirror) -> int:
    """Remove a mirror: its folder renamed away (so it vanishes whole) and deleted, then its record; returns
    the bytes freed."""
    if mirror.folder.is_dir() and not mirror.folder.is_symlink():
        gone = writes.temp_name(mirror.folder)
        with contextlib.suppress(OSError):
            os.rename(mirror.folder, gone)
            shutil.rmtree(gone, ignore_errors=True)
    mirror.record.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        mirror.record.parent.rmdir()  # only when empty
    return mirror.size


def sweep_mirrors(root: Path) -> int:
    """Remove what killed fetches left among the mirrors (rlsql's temporary names, of processes now gone)."""
    base = root / REMOTE_DIR
    if not base.is_dir():
        return 0
    swept = len(writes.sweep(base))
    for mirror in list_mirrors(root):
        for folder in [mirror.folder, *(p for p in mirror.folder.rglob("*") if p.is_dir())]:
            swept += len(writes.sweep(folder))
    return swept
