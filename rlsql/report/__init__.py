"""`rlsql report`: the run report as markdown (with PNG figures beside it) or one self-contained HTML page.

data.py fetches the rows (named queries and views only), figures.py draws them (matplotlib, an
optional extra), render.py lays them out through the Jinja templates in rlsql/templates/. This
module writes the files: into a staging folder beside the target, swapped in whole once every file
is written (a full disk leaves the previous report as it was), never into a run folder, and
replacing only a folder that rlsql wrote (it holds the REPORT_MARKER file).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from rlsql.errors import RlsqlError, UsageError
from rlsql.runs import Run

REPORT_FORMATS = ("md", "html")
#: the file that marks a folder as a report rlsql wrote (and may therefore replace)
REPORT_MARKER = ".rlsql-report.json"
#: staging and old-copy folders are named .NAME.<pid>.<suffix> beside the target
STAGING_SUFFIX = ".rlsql-staging"
OLD_SUFFIX = ".rlsql-old"


class Progress:
    """Progress on stderr: on a terminal one line redrawn in place at every step; otherwise one line
    per stage (checking, queries, each figure, writing), so a log shows where the time went."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if enabled is None else enabled
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.width = 0

    def __call__(self, label: str, stage: bool = False) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        if not self.tty:
            if stage:
                self.stream.write(f"rlsql: report: {label} ({elapsed:.1f} s)\n")
                self.stream.flush()
            return
        line = f"rlsql: report [{min(self.done, self.total)}/{self.total}] {elapsed:5.1f}s {label}"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def _write_bytes(target: Path, payload: bytes) -> None:
    with target.open("wb") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())


def _readable(path: Path) -> None:
    """Give a file the usual umask-based mode (a report is meant to be shared)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


def written_by_rlsql(folder: Path) -> bool:
    """True when `folder` holds the marker rlsql writes into every report folder."""
    marker = folder / REPORT_MARKER
    try:
        return marker.is_file() and json.loads(marker.read_text(encoding="utf-8")).get("written_by") == "rlsql"
    except (OSError, ValueError, AttributeError):
        return False


def check_target(out_dir: Path, runs: Sequence[Run]) -> None:
    """-o must be a new folder, an empty one, or a report folder rlsql wrote (never a run folder)."""
    from rlsql.atomic import refuse_run_folders

    refuse_run_folders(out_dir, runs)
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise UsageError(f"{out_dir}: exists and is not a folder; -o takes the folder to write the report into")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not written_by_rlsql(out_dir):
        raise UsageError(f"{out_dir}: the folder holds files rlsql did not write (no {REPORT_MARKER}); "
                         "rlsql replaces only a report folder it wrote: choose a new or empty folder")


def sweep_stale(parent: Path, name: str) -> None:
    """Remove staging folders of killed reports beside the target (only ours: named and marked)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(f".{name}.") or not entry.is_dir() or entry.is_symlink():
            continue
        pid = entry.name[len(name) + 2:].split(".", 1)[0]
        if not pid.isdigit() or _pid_alive(int(pid)):
            continue
        final = parent / name
        if entry.name.endswith(OLD_SUFFIX) and not final.exists() and written_by_rlsql(entry):
            os.rename(entry, final)  # killed between the two renames: put the old report back
        elif entry.name.endswith((STAGING_SUFFIX, OLD_SUFFIX)) and written_by_rlsql(entry):
            shutil.rmtree(entry, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def swap_in(staging: Path, out_dir: Path) -> None:
    """Put the finished staging folder at out_dir; the previous report (rlsql's, or an empty folder) goes."""
    old = None
    if out_dir.exists():
        if written_by_rlsql(out_dir):
            old = out_dir.with_name(f".{out_dir.name}.{os.getpid()}{OLD_SUFFIX}")
            os.rename(out_dir, old)
        else:
            out_dir.rmdir()  # check_target allowed it: empty
    os.rename(staging, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_report(runs: Sequence[Run], out_dir: Path, fmt: str = "md", progress: Progress | None = None,
                 params: dict[str, str] | None = None, per_run: bool = False, check: bool = True,
                 notify: Callable[[str], None] | None = None) -> list[Path]:
    """Write the report of `runs` into `out_dir`; returns the files written (the report file last).

    `params` are `-p` parameters of the queries the report runs; `per_run` adds the per-run
    sections when there are many runs; `notify` gets the one-line summary of the data caveats.
    """
    from rlsql.report import data as data_mod
    from rlsql.report import figures, render

    if fmt not in REPORT_FORMATS:
        raise UsageError(f"unknown report format {fmt!r}; choose one of {', '.join(REPORT_FORMATS)}")
    figures.require_matplotlib()
    out_dir = Path(os.path.abspath(out_dir))
    check_target(out_dir, runs)
    data_mod.bind_report_params(params or {})  # a bad parameter fails before any file is read
    progress = progress or Progress(data_mod.stage_count(check) + len(figures.FIGURES) + 1)
    staging = out_dir.with_name(f".{out_dir.name}.{os.getpid()}{STAGING_SUFFIX}")
    try:
        data = data_mod.gather(runs, progress, params, check)
        pngs = figures.draw_all(data, progress)
        progress("writing", stage=True)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(out_dir.parent, out_dir.name)
        try:
            staging.mkdir()
            # the marker first: a staging folder left by a kill is then recognisably ours
            (staging / REPORT_MARKER).write_text(json.dumps({"written_by": "rlsql", "format": fmt}) + "\n",
                                                 encoding="utf-8")
            names: list[str] = []
            if fmt == "md":
                for name, payload in pngs.items():
                    _write_bytes(staging / name, payload)
                    names.append(name)
                report = "report.md"
                text = render.render_markdown(data, list(pngs), per_run)
            else:
                report = "report.html"
                text = render.render_html(data, pngs, per_run)
            _write_bytes(staging / report, text.encode("utf-8"))
            names.append(report)
            for path in [staging, *staging.iterdir()]:
                _readable(path)
            swap_in(staging, out_dir)
        except OSError as exc:
            raise ReportWriteError(f"{out_dir}: cannot write the report: {exc.strerror or exc}; "
                                   "the previous report, if any, is unchanged") from exc
        if notify is not None and check:
            notify(render.caveat_line(data))
    finally:
        progress.close()
        if staging.exists() and written_by_rlsql(staging):
            shutil.rmtree(staging, ignore_errors=True)
    return [out_dir / name for name in names]


class ReportWriteError(RlsqlError):
    """The report could not be written (disk full, read-only folder): one line naming the folder, exit 1."""
