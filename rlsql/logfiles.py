"""Find a run's raw training logs and name them as the log parser does (docs/semantics.md "Raw training logs").

Names and folder listings only; rlsql/rawlogs.py and the SQL sources read the lines. Kept free of
rlsql's other modules so runs.py can use it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

#: the file endings of SLURM/Ray console logs (the parser's default glob is `*.out`)
LOG_SUFFIXES = (".out", ".log")
#: a run folder's sub-folder of logs, read as well as the folder itself (one level, not recursive)
LOGS_DIR = "logs"
#: set (to anything but empty or 0) to read trainer metrics and vLLM stats from the logs even when
#: the parser's CSVs are present (`rlsql --from-logs ...`)
FROM_LOGS_ENV = "RLSQL_FROM_LOGS"

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


#: set by a caller for this process (the CLI's --from-logs); None: RLSQL_FROM_LOGS decides
_requested: bool | None = None


def request_from_logs(on: bool | None = True) -> None:
    """Prefer the raw logs over the parser's CSVs in this process (None gives the choice back to the env)."""
    global _requested
    _requested = on


def from_logs_requested() -> bool:
    if _requested is not None:
        return _requested
    return os.environ.get(FROM_LOGS_ENV, "") not in ("", "0")
