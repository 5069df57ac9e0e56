"""Harbor's trial folders: list `trace_jobs/<trial>/result.json` exactly, and say which files are no trial.

The listing uses os.scandir and one stat per trial folder; it never opens a file (a FIFO would
block the reader). DuckDB then reads the listed files in one pass (sql/sources/harbor_trials_src.sql),
and that SQL finds the problems only reading can show (not UTF-8, not JSON, not an object).
Warnings about both kinds come from the loaded rows (rlsql/duck/damagedfiles.py), one per run.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from rlsql.core.errors import RlsqlWarning
from rlsql.core.exactpaths import has_glob, unlistable_parent
from rlsql.core.sqltext import glob_cannot_name, glob_escaped

HARBOR_RESULT = "result.json"


class HarborFilesWarning(RlsqlWarning):
    """Result.json files skipped or read with empty values (`rlsql check` lists them itself)."""


class TrialFile(NamedTuple):
    """One trial folder's result.json: its folder name, its path and, when rlsql will not read it, why."""

    folder: str
    path: str
    problem: str | None = None


@dataclass
class Listing:
    """A trace_jobs folder: its trial files sorted by folder name, and the folders without a result.json yet."""

    files: list[TrialFile] = field(default_factory=list)
    in_flight: int = 0


def reader_path(path: str) -> str:
    """`path` as DuckDB's file readers must be given it to open exactly that file.

    DuckDB treats `*`, `?` and `[` as glob characters in every path (a list element too): `tr[1]`
    would read `tr1`. Each becomes a one-character class (sqltext.glob_escaped).
    """
    return glob_escaped(path)


def sql_name(folder: str) -> str:
    """A folder name as SQL text can carry it: one that is not valid UTF-8 (never read) is shown escaped."""
    try:
        folder.encode("utf-8")
    except UnicodeEncodeError:
        return shown(folder)
    return folder


def _kind(mode: int) -> str | None:
    """Why a stat result is not a file DuckDB can read whole, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file: not opened"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    return "a device, not a regular file: not opened"


def file_problem(folder: str, path: str, backslash_in_prefix: bool) -> tuple[str | bool | None, os.stat_result | None]:
    """Why `path` cannot be read as a trial (None when it can, False when it does not exist: in flight), and the
    file's stat when it got that far (its one stat: the trajectory listing keeps it for the cache's digest)."""
    if not folder.isascii():
        try:
            folder.encode("utf-8")
        except UnicodeEncodeError:
            return "its folder name is not valid UTF-8: DuckDB cannot be given the path", None
    if (backslash_in_prefix or "\\" in folder) and glob_cannot_name(path):
        # DuckDB's globbing takes `\` for a path separator: `b\x[1]` would read `b/x1`
        return (
            "its path holds a backslash and a glob character ([ ] * ?): DuckDB cannot read it as this exact file"
        ), None
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return ("a dangling symbolic link" if os.path.islink(path) else False), None
    except OSError as exc:
        return f"cannot read ({exc.strerror})", None
    kind = _kind(info.st_mode)
    if kind is not None:
        return kind, info
    # a file anyone may read needs no access() call (one syscall less per trial on a slow file system); root is
    # asked too: without CAP_DAC_OVERRIDE (a container's dropped capabilities) the kernel refuses root as well
    if not info.st_mode & stat.S_IROTH and not os.access(path, os.R_OK):
        return "cannot read (permission denied)", info
    if info.st_size == 0:
        return "empty file (being written?)", info
    return None, info


def list_trials(trace_jobs: Path, trial: str | None = None) -> Listing:
    """Every trial folder of `trace_jobs` (sorted by name) with its result.json classified; `trial`: that
    folder alone, looked at directly (`rlsql trial` reads one trial's row whatever the run's size).

    A folder without any result.json entry is a trial Harbor has not finished writing: counted in
    `in_flight`, not listed. Entries that are not folders (logs, Harbor's job files) are no trials.
    """
    listing = Listing()
    base = str(trace_jobs)
    backslash_in_prefix = "\\" in base
    folders, unlistable = trial_folders(trace_jobs, trial)
    for folder in folders:
        path = f"{base}/{folder}/{HARBOR_RESULT}"
        problem = file_problem(folder, path, backslash_in_prefix)[0]
        if problem is False:
            listing.in_flight += 1
            continue
        if problem is None and unlistable is not None and (unlistable != base or has_glob(folder)):
            problem = (
                f"DuckDB cannot look for it: its glob of {shown(unlistable)} fails on a name there "
                "starting with a backslash"
            )
        listing.files.append(TrialFile(folder, path, problem if isinstance(problem, str) else None))
    return listing


def trial_folders(trace_jobs: Path, trial: str | None = None) -> tuple[list[str], str | None]:
    """The trial folders of `trace_jobs`, sorted by name (`trial`: that one alone, looked at directly unless its
    name holds a glob character DuckDB would need listed), and the folder DuckDB cannot glob below
    (exactpaths.unlistable_parent; `trace_jobs` itself when a trial folder's name starts with a backslash)."""
    base = str(trace_jobs)
    unlistable = unlistable_parent(base)
    if trial is not None and (not trial or "/" in trial or trial in (".", "..")):
        return [], unlistable  # no trial folder has such a name
    if trial is not None and not (unlistable is None and has_glob(trial)):
        return ([trial] if os.path.isdir(f"{base}/{trial}") else []), unlistable
    try:
        with os.scandir(trace_jobs) as entries:
            found = [(e.name, _is_dir(e)) for e in entries]
    except OSError:
        return [], unlistable
    if unlistable is None and any(name.startswith("\\") for name, _ in found):
        unlistable = base  # only for the trial folders whose names hold a glob character
    return sorted(name for name, is_dir in found if is_dir and (trial is None or name == trial)), unlistable


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows a link to a folder, as a glob does
    except OSError:
        return False


def shown(path: str) -> str:
    """A path as one printable line: control characters (a newline in a folder name) escaped."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
