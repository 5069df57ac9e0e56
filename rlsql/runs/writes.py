"""The one way rlsql writes to disk: a temporary name, fsync, a rename (or a folder swap), a sweep.

Every command that writes (`query -o`, `shell-init -o`, `export`, `db build`, and the report and the
cache through the same functions) goes through this module, so that:

- an output appears under its final name complete or not at all: it is written under
  `temp_name(target)` in the target's folder, fsynced, then renamed onto the target (one rename,
  atomic on POSIX); a folder is built under a temporary name and swapped in by `swap_dir`;
- a temporary left by a killed process is recognisable as rlsql's and removed by the next write
  into that folder (`sweep`): the name carries the host, the process id and a checksum over the
  final name, so a file rlsql did not name this way is never touched;
- files are created as any Unix tool creates them: mode 0666 minus the umask, and a file that is
  replaced keeps its mode;
- nothing is written into, replaces or deletes a run folder, given on the command line or not
  (`guard`, called by every write below), and an export only replaces what an earlier export wrote and
  marked (`read_mark`, `owns_file`);
- a target that is a FIFO or a character device (`-o /dev/stdout`, `db build /dev/null`) is written into
  as a shell's `>` does, from a file staged in rlsql's private folder (`output_kind`, `pour`), and a
  symbolic link is written through (`through_link`): nothing is ever renamed over either.

OSError while writing becomes `WriteError` (exit 4) naming the path, or `UsageError` (exit 2) when
the path itself is wrong (a folder where a file goes, an empty name).

Temporary names: `.FINAL.HOST-PID-NONCE-CHECK[.old].rlsql-tmp`, where HOST is 6 hex digits of the host
name's sha256, NONCE is random and CHECK is 8 hex digits of a sha256 over (FINAL, HOST, PID, NONCE,
role). DuckDB adds `.wal` (its log) and `.tmp` (its spill folder) to a database file's temporary;
the sweep knows those too.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rlsql.core.errors import ExitCode, RlsqlError, RlsqlWarning, UsageError
from rlsql.runs.folders import run_folder_at_or_above, scan_folder

TMP_SUFFIX = ".rlsql-tmp"
#: the file in a folder rlsql wrote (an export tree, one of its partitions, an export folder) that says so
MARK = ".rlsql-export.json"
MARK_FORMAT = "rlsql-export/1"
#: the empty file in an export folder that exports into it lock (`folder_lock`); never removed, since
#: removing a lock file lets a third process lock a new inode while the second holds the old one
LOCK = ".rlsql-export.lock"
#: a leftover of another host (a shared filesystem) is swept only when older than this, in seconds
FOREIGN_HOST_AGE = 24 * 3600
_TMP_NAME = re.compile(
    r"^\.(?P<final>.+)\.(?P<host>[0-9a-f]{6})-(?P<pid>\d+)-(?P<nonce>[0-9a-f]{8})-(?P<check>[0-9a-f]{8})"
    r"(?P<old>\.old)?\.rlsql-tmp(?P<duckdb>\.wal|\.tmp)?$"
)


class WriteError(RlsqlError):
    """An output could not be written: read-only or full filesystem, no permission."""

    exit_code = ExitCode.WRITE_FAILED


def write_failure(path: Path | str, exc: OSError) -> RlsqlError:
    """The one-line error for `exc` raised while writing `path`."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG, errno.EINVAL):
        return UsageError(f"{path}: cannot write there ({reason})")
    return WriteError(f"{path}: cannot write ({reason})")


#: the failures of the filesystem, as another library's message (DuckDB's) spells them
_DISK_ERRORS = tuple(
    os.strerror(code)
    for code in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.EFBIG, errno.EIO)
)


def disk_failure(target: Path, temporary: Path, message: str) -> WriteError | None:
    """A WriteError naming `target` when `message` (say DuckDB's) reports the filesystem failing on
    `temporary` (the name `target` was being written under, or a file inside it); else None."""
    if str(temporary) not in message and temporary.name not in message:
        return None
    reason = next((text for text in _DISK_ERRORS if text in message), None)
    return None if reason is None else WriteError(f"{target}: cannot write ({reason})")


@contextlib.contextmanager
def failures_named(path: Path | str) -> Iterator[None]:
    """Turn an OSError inside the block into the one-line error naming `path`."""
    try:
        yield
    except OSError as exc:
        raise write_failure(path, exc) from exc  # the target, not an internal temporary name


# -- temporary names and the sweep -----------------------------------------------------------------


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def _check(final: str, host: str, pid: str, nonce: str, old: bool) -> str:
    text = f"rlsql-tmp\0{final}\0{host}\0{pid}\0{nonce}\0{'old' if old else 'new'}"
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def temp_name(target: Path, old: bool = False, pid: int | None = None) -> Path:
    """A hidden name beside `target` that only this process (or process `pid`) uses and that `sweep` can
    prove is rlsql's.

    `old=True` names the place a folder being replaced waits during `swap_dir`.
    """
    host, owner, nonce = _host(), str(os.getpid() if pid is None else pid), os.urandom(4).hex()
    check = _check(target.name, host, owner, nonce, old)
    return target.with_name(f".{target.name}.{host}-{owner}-{nonce}-{check}{'.old' if old else ''}{TMP_SUFFIX}")


@dataclass(frozen=True)
class TempName:
    final: str
    host: str
    pid: int
    old: bool


def parse_temp_name(name: str) -> TempName | None:
    """The parts of a name `temp_name` made, or None for any other name (including look-alikes)."""
    match = _TMP_NAME.match(name)
    if not match:
        return None
    old = bool(match["old"])
    if match["check"] != _check(match["final"], match["host"], match["pid"], match["nonce"], old):
        return None
    return TempName(match["final"], match["host"], int(match["pid"]), old)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _abandoned(entry: Path, parts: TempName) -> bool:
    if parts.host == _host():
        return parts.pid != os.getpid() and not _pid_alive(parts.pid)
    try:  # another machine's process: its id means nothing here, only age does
        return time.time() - entry.lstat().st_mtime > FOREIGN_HOST_AGE
    except OSError:
        return False


def sweep(folder: Path) -> list[Path]:
    """Remove what killed rlsql processes left in `folder`; put back a folder caught mid-swap.

    Only names `temp_name` made (checksum verified) of processes that are gone are touched.
    Returns what was removed or restored. Unreadable folders and entries are left alone.
    """
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    done = []
    for entry in entries:
        parts = parse_temp_name(entry.name)
        if parts is None or not _abandoned(entry, parts):
            continue
        final = folder / parts.final
        try:
            if parts.old and not final.exists() and not final.is_symlink():
                os.rename(entry, final)  # killed between the two renames of a swap: the old folder goes back
            elif entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue
        done.append(entry)
    return done


def private_root() -> Path:
    """The folder under which rlsql processes of this user keep their own temporaries (not created here)."""
    return Path(tempfile.gettempdir()) / f"rlsql-{os.getuid()}"


def _ours(folder: Path) -> bool:
    """A real folder (not a link) of this user that no one else can write into."""
    try:
        st = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


@functools.cache
def private_folder() -> Path:
    """rlsql's private folder for this process (`$TMPDIR/rlsql-UID/`, made 0700; a folder of its own when
    another user's or a link holds that name): DuckDB's spill and what is staged for a stream go there.
    What killed processes left there is swept once."""
    root = private_root()
    with contextlib.suppress(OSError):  # unwritable: mkdtemp below says so, or DuckDB does on a spill
        root.mkdir(mode=0o700, exist_ok=True)
    if not _ours(root):  # someone else's (or a link) at that name: a private folder of our own
        root = Path(tempfile.mkdtemp(prefix="rlsql-spill-"))
    sweep(root)
    return root


def private_temp(name: str) -> Path:
    """A temporary name of this process in private_folder()."""
    return temp_name(private_folder() / name)


# -- modes -----------------------------------------------------------------------------------------

_UMASK: int | None = None


def umask() -> int:
    """The process umask (read once: setting it back at once is the only portable way to read it)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


def _mode_for(target: Path) -> int:
    """A replaced file keeps its mode; a new one gets 0666 minus the umask, as `>` in a shell does."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~umask()


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (some filesystems refuse: then there is nothing to do)."""
    with contextlib.suppress(OSError):
        _fsync_path(folder)


# -- targets ---------------------------------------------------------------------------------------


def guard(target: Path) -> None:
    """Refuse to write, replace or delete `target` when it is a run folder or lies inside one: any folder
    rlsql recognises as a run by what it holds (rlsql.runs.folders.scan_folder), given on the command
    line or not. Every write below calls it, so every command gets the rule."""
    if str(target) == "":
        raise UsageError("the output path is empty; give a file or folder name")
    absolute = Path(os.path.abspath(target))
    run = run_folder_at_or_above(absolute if absolute.is_dir() and not absolute.is_symlink() else absolute.parent)
    if run is not None:
        where = "is run folder" if run == absolute else f"is inside run folder {run}"
        raise UsageError(f"{target}: {where}; rlsql never writes into a run folder: choose another path")


def guard_folder(target: Path) -> None:
    """guard(), and for a folder rlsql would replace or fill: none of its sub-folders is a run folder (a
    folder of runs is not an output folder)."""
    guard(target)
    try:
        subs = [p for p in target.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return  # new (or unreadable: the write itself says so)
    for sub in sorted(subs):
        try:
            found = scan_folder(sub)
        except RlsqlError:
            continue
        if found is not None:
            raise UsageError(
                f"{target}: holds run folder {sub}; rlsql never writes among a user's runs: choose another path"
            )


#: what `-o` can be besides a regular file or a new name: written into as a shell's `>` writes
STDOUT = Path("-")


def output_kind(target: Path) -> str:
    """How `-o target` is written: "stdout" (`-`), "stream" (a FIFO or a character device such as
    /dev/null: written into in place, never renamed over), or "file" (a regular file or a new name:
    written under a temporary name and renamed). Anything else (a folder, a socket, a block device) is
    a UsageError; a symbolic link is classified by what it points to."""
    if target == STDOUT:
        return "stdout"
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return "file"
    except OSError as exc:
        raise write_failure(target, exc) from exc
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    what = "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise UsageError(f"{target}: is {what}; rlsql writes a file there (or into a FIFO, a device, or - for stdout)")


def through_link(target: Path) -> Path:
    """The path a write to `target` replaces: a symbolic link's destination (written through, as `>` does:
    the link stays), else `target` itself."""
    return target.resolve() if target.is_symlink() else target


def pour(staged: Path, target: Path) -> None:
    """Copy the complete file `staged` into the FIFO or device `target`, opened as a shell's `>` opens it."""
    with failures_named(target), staged.open("rb") as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


# -- writing files ---------------------------------------------------------------------------------


def stage(target: Path) -> Path:
    """The temporary name `target` is written under (beside it; its folder made, a killed writer's
    leftovers there swept): `commit` renames it onto `target`. Refused where `guard` refuses."""
    if str(target) == "":
        raise UsageError("the output path is empty; give a file name")
    guard(target)
    with failures_named(target):
        if target.is_dir():
            raise UsageError(f"{target}: is a folder; give a file name")
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep(target.parent)
    return temp_name(target)


def commit(tmp: Path, target: Path, mark: bool = False) -> None:
    """Put the staged file `tmp` in `target`'s place: fsynced, given `target`'s mode, renamed onto it.

    `mark=True` records the file in its folder's mark before the rename (see `record_file`), so a
    later export may replace it.
    """
    with failures_named(target):
        os.chmod(tmp, _mode_for(target))
        _fsync_path(tmp)
        if mark:
            record_file(target.parent, target.name, tmp)
        os.replace(tmp, target)
        fsync_dir(target.parent)


@contextlib.contextmanager
def atomic_path(target: Path, mark: bool = False) -> Iterator[Path]:
    """Yield a temporary path for a writer (DuckDB, matplotlib) to create; when the block succeeds it is put
    in `target`'s place: beside a regular file (or a new name, or a link's destination) and renamed onto it
    (`stage`, `commit`); in the private folder and poured into a FIFO or a device (`pour`). On failure
    nothing is left."""
    if target != STDOUT and output_kind(target) == "stream":
        if mark:
            raise UsageError(f"{target}: is not a regular file; an export writes files and folders")
        guard(target)
        with failures_named(target):
            tmp = private_temp(target.name or "output")
        try:
            yield tmp
            pour(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return
    target = through_link(target)
    tmp = stage(target)
    try:
        yield tmp
        commit(tmp, target, mark)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_file(target: Path, binary: bool = False, mark: bool = False) -> Iterator[IO[Any]]:
    """An open file whose contents replace `target` when the block succeeds (see `atomic_path`)."""
    # "x": the temporary is new or the write fails (never through a link someone put there)
    with (
        atomic_path(target, mark) as tmp,
        failures_named(target),
        tmp.open("xb") if binary else tmp.open("x", encoding="utf-8", newline="") as fh,
    ):
        yield fh


def write_text(target: Path, text: str, mark: bool = False) -> None:
    with atomic_file(target, mark=mark) as fh:
        fh.write(text)


# -- folders ---------------------------------------------------------------------------------------


def swap_dir(staging: Path, target: Path) -> None:
    """Put the folder `staging` (complete, fsynced) in the place of `target`, whose old folder is removed.

    On Linux one `renameat2(RENAME_EXCHANGE)` swaps the two at once; the old folder is then under
    the staging name, which `sweep` removes if rlsql is killed before it does. Elsewhere (or where
    the filesystem refuses it) two renames: target -> its `.old` temporary, staging -> target. A
    failure between them puts the old folder back; a SIGKILL between them leaves the `.old` folder,
    which the next `sweep` of the parent renames back. A reader finds the old folder or the new one.
    """
    with failures_named(target):
        if target.exists() and _exchange(staging, target):
            fsync_dir(target.parent)
            shutil.rmtree(staging, ignore_errors=True)
            return
        old = temp_name(target, old=True)
        moved = False
        try:
            if target.exists():
                os.rename(target, old)
                moved = True
            os.rename(staging, target)
            moved = False
            fsync_dir(target.parent)
        finally:
            if moved:
                os.rename(old, target)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 with RENAME_EXCHANGE); False where that is unsupported."""
    import ctypes  # late: only a folder swap needs it

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def remove_dir(target: Path) -> None:
    """Remove a folder rlsql wrote: renamed away first, so it vanishes at once and whole."""
    guard_folder(target)
    gone = temp_name(target, old=False)
    with failures_named(target):
        os.rename(target, gone)
    shutil.rmtree(gone, ignore_errors=True)


def fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            _fsync_path(path)
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        fsync_dir(path)


# -- one writer at a time in a folder --------------------------------------------------------------


@contextlib.contextmanager
def folder_lock(folder: Path, waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive `flock` on `folder/LOCK` for the block: two exports into one folder run one
    after the other, so neither reads a file or mark the other is about to replace (a merged file
    would lose the other's runs). `waiting` is told once when another process holds the lock.

    The lock goes with the open file, so a killed holder releases it. Without fcntl (Windows) there
    is no lock: exports into one folder must not run at once there.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX everywhere rlsql is tested
        yield
        return
    path = folder / LOCK
    guard(path)
    with failures_named(path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666 & ~umask())
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting(f"waiting for another export into {folder} to finish")
            with failures_named(path):
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise write_failure(path, exc) from exc
            # a filesystem without locks (some NFS mounts): the export still runs, unguarded
            warnings.warn(
                f"{path}: cannot lock ({exc.strerror}); do not run two exports into this folder at once",
                RlsqlWarning,
                stacklevel=3,
            )
        yield
    finally:
        os.close(fd)


# -- the mark of what an export wrote --------------------------------------------------------------


def write_mark(folder: Path, record: dict[str, Any], staged: bool = False) -> None:
    """Record in `folder` that rlsql wrote it (or, for an export folder, which of its files).

    `staged=True`: `folder` is still under a temporary name (it is fsynced and renamed whole later),
    so the mark is written in place, without a rename or fsync of its own.
    """
    text = json.dumps({"format": MARK_FORMAT, **record}, indent=2) + "\n"
    if staged:
        with failures_named(folder):
            (folder / MARK).write_text(text, encoding="utf-8")
    else:
        write_text(folder / MARK, text)


def read_mark(folder: Path) -> dict[str, Any] | None:
    """The mark `write_mark` left in `folder`, or None when there is none (or it is not rlsql's)."""
    try:
        record = json.loads((folder / MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("format") == MARK_FORMAT else None


def file_identity(path: Path) -> list[int]:
    """What identifies a file rlsql wrote: inode, size and modification time (a rename keeps all three)."""
    st = path.stat()
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def owns_file(folder: Path, name: str) -> bool:
    """Is `folder/name` a file an export wrote (recorded in the folder's mark, unchanged since)?"""
    mark = read_mark(folder)
    if mark is None:
        return False
    try:
        identity = file_identity(folder / name)
    except OSError:
        return False
    return identity in mark.get("files", {}).get(name, [])


def remove_file(folder: Path, name: str) -> bool:
    """Remove `folder/name` if an export wrote it (owns_file), and its record from the folder's mark."""
    if not owns_file(folder, name):
        return False
    (folder / name).unlink()
    mark = read_mark(folder) or {"files": {}}
    mark.get("files", {}).pop(name, None)
    write_mark(folder, {k: v for k, v in mark.items() if k != "format"})
    return True


def record_file(folder: Path, name: str, staged: Path) -> None:
    """Before `staged` is renamed to `folder/name`: add its identity to the folder's mark.

    The file's previous identity stays accepted too, so a kill between this record and the rename
    leaves a file the next export still recognises.
    """
    mark = read_mark(folder) or {"files": {}}
    files = mark.setdefault("files", {})
    accepted = [i for i in files.get(name, []) if (folder / name).exists() and i == file_identity(folder / name)]
    files[name] = [*accepted, file_identity(staged)]
    write_mark(folder, {k: v for k, v in mark.items() if k != "format"})
