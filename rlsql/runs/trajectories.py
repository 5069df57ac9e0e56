"""Agents' trajectories (ATIF) in Harbor's trial folders: list them exactly, render the sources' context,
and say which files are damaged.

A trial's trajectory is `trace_jobs/<trial>/agent/trajectory.json` (segment 0) and, after a context
summarisation, `trajectory.cont-N.json` (segment N: a positive integer without leading zeros); any
other `trajectory.*.json` (Harbor's `trajectory.summarization-N-summary.json`) is no segment. The
listing is os.scandir over the trial folders and their `agent/` folders; a file is stat'ed (never
opened: a FIFO would block the reader) to tell a regular file from what DuckDB must not be handed.
DuckDB then reads the listed files in place (sql/sources/_trajectory_files.sql.j2): it finds what only
reading shows (not UTF-8, not JSON, not an ATIF shape). Trials come from a trials CSV or from
result.json files: trajectories are read either way, and a trajectory without a result.json beside it
(a trial in flight) is read too.

A damaged file is left out with one warning naming it: in rlsql's own query connections the sources
call DAMAGED_FUNCTION (a Python function rlsql/duck/damagedfiles.py registers) for each such file, and it says
them after the statement ran, so no file is read twice to find them.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlsql.core.errors import RlsqlError, RlsqlWarning
from rlsql.runs.folders import Run

AGENT_DIR = "agent"
FIRST_SEGMENT = "trajectory.json"
_SEGMENT = re.compile(r"^trajectory\.cont-([1-9][0-9]*)\.json$")
#: the largest continuation number: `segment` is an INTEGER in every trajectory view; a file numbered past it
#: is a damaged file (one warning), never a failed query
MAX_SEGMENT = 2**31 - 1
#: the SQL function the trajectory sources call for a damaged file (rlsql's query connections only)
DAMAGED_FUNCTION = "rlsql_damaged_trajectory"
#: damaged files named one warning each, per run; the rest in one more warning
SHOWN_FILES = 10
#: how many read_blob calls a run's files are shared between (DuckDB runs each on one thread)
READERS = max(1, os.cpu_count() or 1)
#: what `rlsql check` and the docs call a file the sources skip
SKIPPED = "skipped, not an ATIF trajectory"
#: how a file's problem ends when the file is read but one value of it is not (tool-call arguments nested past
#: the sources' depth limit): its warning does not say the file was skipped
READ_AS_EMPTY = "read as empty"
#: why a trial folder has no trajectory to read (_trial_files)
NO_AGENT = "no agent/ folder"
NO_TRAJECTORY = "no agent/trajectory.json"


#: a run's fresh cached rows of the source being rendered, given its trace_jobs folder and listing, or None
Copies = Callable[[Run, Path, "TrajectoryListing"], "dict | None"]


class TrajectoryFilesWarning(RlsqlWarning):
    """A trajectory file left out: not readable, not JSON, not an ATIF shape (`rlsql check` names them too)."""


@dataclass(frozen=True)
class SegmentFile:
    """One trajectory file: its trial folder, segment number, path and, when rlsql will not read it, why."""

    trial: str
    segment: int
    path: str
    problem: str | None = None
    #: (size, mtime_ns, ctime_ns, inode) from the listing's stat, None where it got no stat (a cached copy's key)
    signature: tuple[int, int, int, int] | None = None


@dataclass
class TrajectoryListing:
    """A trace_jobs folder's trajectory files (trial folders by name, segments by number), and the trial
    folders without a trajectory (no agent/ folder, or no agent/trajectory.json in it)."""

    files: list[SegmentFile] = field(default_factory=list)
    trials: int = 0
    without: int = 0
    #: the trial folders without an agent/ folder (one of the `without`), by name
    no_agent: list[str] = field(default_factory=list)


def segments_of(names: Sequence[str]) -> list[tuple[int, str]]:
    """(segment, name) of the trajectory files among an agent/ folder's entry names, by segment."""
    found = [(0, FIRST_SEGMENT)] if FIRST_SEGMENT in names else []
    found += sorted((int(m.group(1)), n) for n in names if (m := _SEGMENT.match(n)))
    return found


def list_trajectories(trace_jobs: Path, trial: str | None = None) -> TrajectoryListing:
    """Every trial folder's trajectory files, classified by harbor.py's rules (one stat per file, none
    opened); trial folders sorted by name, segments by number. `trial`: that trial folder's alone, looked at
    directly (`rlsql trial`: one trial's files cost the same in a run of 45,000 as in one of 3,000)."""
    from rlsql.core.settings import current
    from rlsql.runs.harbor import trial_folders

    listing = TrajectoryListing()
    limit = current().trajectory_max_bytes
    base = str(trace_jobs)
    folders, unlistable = trial_folders(trace_jobs, trial)
    for folder in folders:
        listing.trials += 1
        files = _trial_files(base, folder, unlistable, limit)
        if isinstance(files, str):
            listing.without += 1
            if files == NO_AGENT:
                listing.no_agent.append(folder)
        else:
            listing.files.extend(files)
    return listing


def _trial_files(base: str, folder: str, unlistable: str | None, limit: int) -> list[SegmentFile] | str:
    """The trajectory files of trial folder `folder` of `base`, else why it has none (NO_AGENT, or
    NO_TRAJECTORY: no trajectory.json); a file of more than `limit` bytes is refused (DuckDB would hold a
    few times its size while parsing it), as is a continuation numbered past MAX_SEGMENT."""
    from rlsql.core.exactpaths import has_glob
    from rlsql.runs import harbor

    agent = f"{base}/{folder}/{AGENT_DIR}"
    try:
        names = [n for n in os.listdir(agent) if n.startswith("trajectory")]
    except OSError:
        return NO_AGENT
    segments = segments_of(names)
    if not segments or segments[0][0] != 0:
        return NO_TRAJECTORY  # no trajectory.json: continuations alone are no trajectory to read
    files = []
    for segment, name in segments:
        path = f"{agent}/{name}"
        problem, info = harbor.file_problem(folder, path, "\\" in base)  # harbor.py's rules, one set
        if problem is None and unlistable is not None and (unlistable != base or has_glob(folder)):
            problem = (
                f"DuckDB cannot look for it: its glob of {harbor.shown(unlistable)} fails on a name "
                "there starting with a backslash"
            )
        if problem is None and segment > MAX_SEGMENT:
            problem = f"its continuation number is past {MAX_SEGMENT:,}, the largest segment"
        if problem is None and info is not None and info.st_size > limit:
            problem = f"{info.st_size:,} bytes, over the limit of {limit:,} (RLSQL_TRAJECTORY_MAX_BYTES): not read"
        signature = None if info is None else (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        files.append(SegmentFile(folder, segment, path, problem if isinstance(problem, str) else None, signature))
    return files


def trace_jobs_of(run: Run) -> Path | None:
    artifact = run.artifact("trajectories")
    return artifact.path if artifact is not None else None


def render_context(runs: Sequence[Run], record: bool, trial: str | None = None, copies: Copies | None = None) -> dict:
    """The trajectory sources' context: per run with trajectories, its listed files (`trial`: only that trial's).

    For each run: `prefix` (its trace_jobs), `reader_prefix`, `read` and `read_files` (the files DuckDB reads:
    their trial folders, escaped for DuckDB's glob so that no path is taken as a pattern, and their file
    names, each '/'-joined: no name holds a '/'), `guarded`, `names` and `guarded_files` (those of them whose
    trial folder's name holds a glob character, escaped and as they are: the only paths DuckDB's glob could
    take for another file). `refused`: the files rlsql does not hand DuckDB (run, trial,
    segment, path, why). `record`: the sources call DAMAGED_FUNCTION for each damaged file (rlsql/duck/damagedfiles.py).
    `copies` (the engine's sources, for all trials): a run's cached rows (rlsql/cache/trajcopies.py) when
    fresh, read instead of its files; `copies` in the context lists them.
    """
    from rlsql.runs import harbor

    files: list[dict] = []
    refused: list[dict] = []
    copied: list[dict] = []
    for run in runs:
        trace_jobs = trace_jobs_of(run)
        if trace_jobs is None:
            continue
        listing = list_trajectories(trace_jobs, trial)
        copy = copies(run, trace_jobs, listing) if copies is not None and trial is None else None
        if copy is not None:
            copied.append(copy)
            continue
        chosen = listing.files
        prefix = str(trace_jobs)
        readable = [f for f in chosen if f.problem is None]
        refused.extend(
            {
                "run": run.name,
                "trial": harbor.sql_name(f.trial),
                "segment": f.segment if f.segment <= MAX_SEGMENT else None,
                "path": f"{prefix}/{harbor.sql_name(f.trial)}/{AGENT_DIR}/{Path(f.path).name}",
                "problem": f.problem,
            }
            for f in chosen
            if f.problem
        )
        # in as many parts as there are cores: DuckDB reads one read_blob's files on one thread, and the
        # parts of a UNION ALL side by side (10,000 trials: the parse 1.1 s -> 0.6 s on 2 cores)
        parts = min(READERS, len(readable))
        for chunk in (readable[i::parts] for i in range(parts)):
            globbed = [f for f in chunk if harbor.reader_path(f.trial) != f.trial]
            files.append(
                {
                    "run": run.name,
                    "prefix": prefix,
                    "reader_prefix": harbor.reader_path(prefix),
                    "read": "/".join(harbor.reader_path(f.trial) for f in chunk),
                    "read_files": "/".join(Path(f.path).name for f in chunk),
                    "guarded": "/".join(harbor.reader_path(f.trial) for f in globbed),
                    "names": "/".join(f.trial for f in globbed),
                    "guarded_files": "/".join(Path(f.path).name for f in globbed),
                }
            )
    return {
        "files": files,
        "refused": refused,
        "copies": copied,
        "record_damaged": record,
        "DAMAGED_FUNCTION": DAMAGED_FUNCTION,
        "READ_AS_EMPTY": READ_AS_EMPTY,
    }


#: DuckDB's message for a file its glob found and it then could not open
_CANNOT_OPEN = re.compile(r'Cannot open file "(?P<path>[^"]+/agent/trajectory[^"/]*\.json)"')


def removed_while_read(exc: BaseException) -> str | None:
    """The trajectory file a DuckDB error (`exc` or its cause) says it could not open because it is gone
    (a trial folder removed by a clean-up or a retry between DuckDB's listing and its read), else None."""
    cause = exc.__cause__ if isinstance(exc, RlsqlError) else exc
    found = _CANNOT_OPEN.search(str(cause)) if cause is not None else None
    if found is None or os.path.lexists(found["path"]):
        return None
    return found["path"]


def warn_removed(path: str) -> None:
    """One warning for a trajectory file removed while a statement read it: its trial is answered without it."""
    from rlsql.runs.harbor import shown

    trial = path.rsplit("/", 3)[-3]
    warnings.warn(
        f"{shown(path)}: removed while rlsql read it; trial {shown(trial)!r} skipped (answered again "
        "from the files there now)",
        TrajectoryFilesWarning,
        stacklevel=3,
    )


def trajectory_counts(runs: Sequence[Run]) -> dict[str, tuple[int, int, int]]:
    """run -> (trial folders, trial folders with a trajectory, trajectory files listed) for `rlsql runs`
    and `rlsql check`: counted from the listing, no file opened."""
    counts = {}
    for run in runs:
        trace_jobs = trace_jobs_of(run)
        if trace_jobs is None:
            continue
        listing = list_trajectories(trace_jobs)
        counts[run.name] = (listing.trials, listing.trials - listing.without, len(listing.files))
    return counts
