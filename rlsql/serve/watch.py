"""Noticing that a run's files grew or appeared: one look per poll at each run folder's files (and its
logs/ folder), and at Harbor's trace_jobs/ folder: each trial folder's result.json and its agent/
folder's files (the trajectories). Only directory listings and stat calls: nothing is read until a page asks
again, and then only the runs that changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rlsql.runs.folders import HARBOR_DIR

RESULT = "result.json"
#: a trial folder's sub-folder holding its trajectories
AGENT = "agent"
#: sub-folders of a run whose files count (raw training logs may lie in logs/)
WATCHED_FOLDERS = ("logs",)

Stamp = tuple[str, int, int]  # name, size, mtime_ns


def _files(folder: Path) -> frozenset[Stamp]:
    try:
        with os.scandir(folder) as entries:
            stamps = []
            for e in entries:
                try:
                    if e.is_file():
                        st = e.stat()
                        stamps.append((e.name, st.st_size, st.st_mtime_ns))
                except OSError:
                    continue  # gone between the listing and the stat: the next poll sees it
            return frozenset(stamps)
    except OSError:
        return frozenset()


def _stamp(path: str) -> tuple[int, int] | None:
    """A file's (size, mtime_ns), None when it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


@dataclass
class _Trial:
    """A trial folder: its agent/ folder's files, listed again only when that folder's mtime moves (a file
    added, renamed or removed); each looked at with one stat call (paths as strings: a thousand trials are
    looked at every second)."""

    agent: tuple[int, int] | None = None
    files: tuple[str, ...] = ()

    def look(self, folder: str) -> tuple:
        agent_folder = os.path.join(folder, AGENT)
        agent = _stamp(agent_folder)
        if agent != self.agent:
            self.agent = agent
            self.files = tuple(sorted(os.path.join(agent_folder, n) for n, _, _ in _files(Path(agent_folder))))
        return _stamp(os.path.join(folder, RESULT)), agent, tuple(_stamp(f) for f in self.files)


@dataclass
class _Harbor:
    """A run's trace_jobs/: its own mtime, its trial folders, and what each held at the last look (its
    result.json and its agent/ folder's trajectories)."""

    mtime_ns: int = -1
    trials: dict[str, _Trial] = field(default_factory=dict)
    stamps: dict[str, tuple] = field(default_factory=dict)

    def changed(self, trace_jobs: Path) -> bool:
        try:
            mtime = trace_jobs.stat().st_mtime_ns
        except OSError:
            mtime = -1
        if mtime != self.mtime_ns:
            self.mtime_ns = mtime
            listed = _subfolders(trace_jobs)
            self.trials = {
                os.path.join(trace_jobs, t): self.trials.get(os.path.join(trace_jobs, t)) or _Trial()
                for t in sorted(listed)
            }
        # every trial, finished or not: a trajectory rewritten after its result.json (a retry, a late copy)
        # makes the answers that read it stale as well
        stamps = {folder: trial.look(folder) for folder, trial in self.trials.items()}
        moved = stamps != self.stamps
        self.stamps = stamps
        return moved


def _subfolders(folder: Path) -> set[str]:
    try:
        with os.scandir(folder) as entries:
            return {e.name for e in entries if e.is_dir()}
    except OSError:
        return set()


@dataclass
class _RunState:
    path: Path
    stamps: tuple[frozenset[Stamp], ...] = ()
    harbor: _Harbor = field(default_factory=_Harbor)

    def look(self) -> bool:
        """Look at the files again; True when something grew, appeared, went or was rewritten."""
        stamps = (_files(self.path), *(_files(self.path / sub) for sub in WATCHED_FOLDERS))
        changed = stamps != self.stamps
        self.stamps = stamps
        return self.harbor.changed(self.path / HARBOR_DIR) | changed


class Watcher:
    """The runs' folders, polled: `poll()` returns the names of the runs whose files changed since the last."""

    def __init__(self, runs: dict[str, Path]):
        self._states = {name: _RunState(path) for name, path in runs.items()}
        for state in self._states.values():
            state.look()

    def poll(self) -> list[str]:
        return [name for name, state in self._states.items() if state.look()]
