"""Find a run's raw training logs and name them as the log parser does (docs/semantics.md "Raw training logs").

Names and folder listings only; rlsql/engine/rawlogs.py and the SQL sources read the lines. Kept free of
rlsql's other modules so runs.py can use it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import warnings
from pathlib import Path

from rlsql.core.errors import RlsqlWarning

#: the file endings of SLURM/Ray console logs (the parser's default glob is `*.out`)
LOG_SUFFIXES = (".out", ".log")
#: a run folder's sub-folder of logs, read as well as the folder itself (one level, not recursive)
LOGS_DIR = "logs"
#: what a SkyRL training log holds that another program's `.log` does not: a console metric block, a
#: WANDB_MIRROR line, the Harbor generator's batch lines, a vLLM stat line (docs/semantics.md "Raw training logs")
TRAINING_MARKS = (
    b"{'async/",
    b"'trainer/global_step'",
    b"WANDB_MIRROR",
    b"Batch generation complete",
    b"Exception breakdown",
    b"Avg prompt throughput",
)
#: the terminal control sequences Ray, vLLM and progress bars print, removed from a log line before it is read:
#: CSI sequences (colours `ESC[36m`, erase-line `ESC[K`, cursor moves `ESC[1A`), OSC sequences (window
#: titles, ended by BEL or ESC \\) and two-byte escapes; RE2 (DuckDB) and Python's re read it alike
TERMINAL_CODES = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
#: how much of each end of a log is looked at for TRAINING_MARKS (a live run's log shows one within seconds)
MARK_WINDOW = 1 << 20

_VERSION = re.compile(r"_(v\d+_[a-z]+)")
_JOB_ID = re.compile(r"_(\d{6})\.")


def find_logs(run_dir: Path) -> list[Path]:
    """The log files of `run_dir`: `*.out` / `*.log` in the folder and in its `logs/` folder.

    Ordered by path relative to the run folder, compared part by part (the parser's
    `sorted(paths)` within one folder).
    """
    found: list[Path] = []
    for folder in (run_dir, run_dir / LOGS_DIR):
        try:
            with os.scandir(folder) as entries:
                found.extend(Path(e.path) for e in entries if e.name.endswith(LOG_SUFFIXES) and e.is_file())
        except OSError:
            continue
    return sorted(found, key=lambda p: p.relative_to(run_dir).parts)


def has_training_lines(logs: list[Path]) -> bool:
    """Whether any of `logs` is a training log: one of TRAINING_MARKS in its first or last MARK_WINDOW
    bytes. A folder's stray `rsync.log` or `first.out` does not make it a run folder. A log that cannot be read
    is named in a warning when no other log holds those lines (else the read of the logs names it)."""
    unreadable: list[str] = []
    for path in logs:
        try:
            with path.open("rb") as fh:
                head = fh.read(MARK_WINDOW)
                size = os.fstat(fh.fileno()).st_size
                tail = b""
                if size > MARK_WINDOW:
                    fh.seek(max(MARK_WINDOW, size - MARK_WINDOW))
                    tail = fh.read(MARK_WINDOW)
        except OSError as exc:
            unreadable.append(f"{path}: cannot read ({exc.strerror}); log skipped")
            continue
        if any(mark in head or mark in tail for mark in TRAINING_MARKS):
            return True
    for problem in unreadable:
        warnings.warn(problem, RlsqlWarning, stacklevel=2)
    return False


def logs_folder(run_dir: Path, logs: list[Path]) -> Path:
    """Where a run's logs sit: its `logs/` folder when every log is there, else the run folder."""
    inside = all(p.parent == run_dir / LOGS_DIR for p in logs)
    return run_dir / LOGS_DIR if inside else run_dir


def short_name(path: Path, run_dir: Path) -> str:
    """The parser's `log_file` value: the stem when at most 30 characters; else `<vN_word>_<job id>`
    when the stem has `_vN_word` and the path `_<6 digits>.`; else `job_<6 digits>`; else the
    stem's last 30 characters. The path searched is relative to the run folder (the parser
    searches the path it was given, which may include folders above)."""
    stem = path.stem
    if len(stem) <= 30:
        return stem
    version = _VERSION.search(stem)
    job = _JOB_ID.search(path.relative_to(run_dir).as_posix())
    if version and job:
        return f"{version.group(1)}_{job.group(1)}"
    if job:
        return f"job_{job.group(1)}"
    return stem[-30:]


def newest_log_date(logs: list[Path]) -> dt.date | None:
    """The UTC date of the newest log's last write: the vLLM year is read against it (the logs were
    written no later than that), as a CSV's parse-time prefix serves for parsed runs."""
    stamps = []
    for path in logs:
        try:
            stamps.append(path.stat().st_mtime)
        except OSError:
            continue
    return dt.datetime.fromtimestamp(max(stamps), tz=dt.UTC).date() if stamps else None
