"""`rlsql report`: the run report as markdown (with PNG figures beside it) or one self-contained HTML page.

data.py fetches the rows (named queries and views only), figures.py draws them (matplotlib, an
optional extra), render.py lays them out through the Jinja templates in rlsql/templates/. This
module writes the files: into a staging folder beside the target, swapped in whole once every file
is written (a full disk leaves the previous report as it was), never into a run folder, and
replacing only a folder that rlsql wrote (its mark, rlsql.runs.writes.MARK, says kind "report").
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rlsql.core.errors import UsageError
from rlsql.runs.folders import Run
from rlsql.runs.writes import (
    MARK,
    failures_named,
    fsync_tree,
    guard_folder,
    read_mark,
    swap_dir,
    sweep,
    temp_name,
    write_mark,
)

if TYPE_CHECKING:
    from rlsql.engine.copies import Copies

REPORT_FORMATS = ("md", "html")
#: the `kind` in the mark (rlsql.runs.writes.MARK) of a report folder: only such a folder is ever replaced
REPORT_KIND = "report"


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
    """One file of the staging folder (fsynced with the whole tree before the swap)."""
    with target.open("xb") as fh:  # new or fail: never through a link someone put there
        fh.write(payload)


def written_by_rlsql(folder: Path) -> bool:
    """True when `folder` holds the mark rlsql writes into every report folder (rlsql.runs.writes.MARK)."""
    mark = read_mark(folder)
    return mark is not None and mark.get("kind") == REPORT_KIND


def check_target(out_dir: Path, runs: Sequence[Run]) -> None:
    """-o must be a new folder, an empty one, or a report folder rlsql wrote (never at, in or around a run)."""
    guard_folder(out_dir)
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise UsageError(f"{out_dir}: exists and is not a folder; -o takes the folder to write the report into")
    with failures_named(out_dir):
        foreign = out_dir.is_dir() and any(out_dir.iterdir()) and not written_by_rlsql(out_dir)
    if foreign:
        raise UsageError(
            f"{out_dir}: the folder holds files rlsql did not write (no report mark {MARK}); "
            "rlsql replaces only a report folder it wrote: choose a new or empty folder"
        )


def write_folder(out_dir: Path, files: dict[str, bytes], fmt: str) -> None:
    """Write `files` into a staging folder beside `out_dir`, then swap it in whole (rlsql.runs.writes.swap_dir).

    The staging folder has a name rlsql.runs.writes.temp_name made, so the next rlsql that writes beside it
    removes it if this process is killed; a full disk leaves the previous report as it was.
    """
    staging = None
    try:
        with failures_named(out_dir):
            out_dir.parent.mkdir(parents=True, exist_ok=True)
            sweep(out_dir.parent)
            staging = temp_name(out_dir)
            staging.mkdir()  # 0777 minus the umask; the files below 0666 minus it, as a shell makes them
            write_mark(staging, {"kind": REPORT_KIND, "report_format": fmt, "files": sorted(files)}, staged=True)
            for name, payload in files.items():
                _write_bytes(staging / name, payload)
            fsync_tree(staging)
            if out_dir.is_dir() and not written_by_rlsql(out_dir):
                out_dir.rmdir()  # check_target let it through: an empty folder
            swap_dir(staging, out_dir)
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def build_report(
    runs: Sequence[Run],
    out_dir: Path,
    fmt: str = "md",
    progress: Progress | None = None,
    params: dict[str, str] | None = None,
    per_run: bool = False,
    check: bool = True,
    notify: Callable[[str], None] | None = None,
    copies: Copies | None = None,
) -> list[Path]:
    """Write the report of `runs` into `out_dir`; returns the files written (the report file last).

    `params` are `-p` parameters of the queries the report runs; `per_run` adds the per-run
    sections when there are many runs; `notify` gets the one-line summary of the data caveats; `copies`: the
    fresh cached copies the command hands in, read instead of the files (rlsql/engine/copies.py).
    """
    from rlsql.outputs.report import data as data_mod
    from rlsql.outputs.report import figures, render

    if fmt not in REPORT_FORMATS:
        raise UsageError(f"unknown report format {fmt!r}; choose one of {', '.join(REPORT_FORMATS)}")
    figures.require_matplotlib()
    out_dir = Path(os.path.abspath(out_dir))
    check_target(out_dir, runs)
    data_mod.bind_report_params(params or {})  # a bad parameter fails before any file is read
    tables = per_run or len(runs) <= figures.FEW_RUNS  # the comparison layout reads less
    progress = progress or Progress(data_mod.stage_count(check, tables) + len(figures.FIGURES) + 1)
    try:
        from rlsql.engine.answer import Answer

        # the report's rows are one answer (rlsql/engine/answer.py): a cached copy that fails to read costs a
        # second pass over the CSVs, never a failed report
        answering = Answer(copies)
        data = answering.run(
            lambda bad_cells: data_mod.gather(runs, progress, params, check, tables, bad_cells, answering.copies)
        )
        drawn = figures.draw_all(data, progress)
        progress("writing", stage=True)
        files: dict[str, bytes] = {}
        if fmt == "md":
            files.update({name: png for name, (png, _note) in drawn.items()})
            report = "report.md"
            notes = {name: note for name, (_png, note) in drawn.items()}
            files[report] = render.render_markdown(data, notes, per_run).encode("utf-8")
        else:
            report = "report.html"
            files[report] = render.render_html(data, drawn, per_run).encode("utf-8")
        write_folder(out_dir, files, fmt)
        if notify is not None and check:
            notify(render.caveat_line(data))
    finally:
        progress.close()
    names = [name for name in files if name != report] + [report]
    return [out_dir / name for name in names]
