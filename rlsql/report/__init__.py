"""`rlsql report`: the run report as markdown (with PNG figures beside it) or one self-contained HTML page.

data.py fetches the rows (named queries and views only), figures.py draws them (matplotlib, an
optional extra), render.py lays them out through the Jinja templates in rlsql/templates/. This
module writes the files: into a folder it creates, never into a run folder, each file atomically.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rlsql.errors import UsageError
from rlsql.runs import Run

REPORT_FORMATS = ("md", "html")


class Progress:
    """A one-line progress indicator on stderr, redrawn in place; silent when stderr is not a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.width = 0

    def __call__(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        line = f"rlsql: report [{min(self.done, self.total)}/{self.total}] {elapsed:5.1f}s {label}"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def _write_bytes(target: Path, payload: bytes) -> None:
    from rlsql.atomic import atomic_path

    with atomic_path(target) as tmp, tmp.open("wb") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())


def _readable(path: Path) -> None:
    """mkstemp creates 0600 files; a report is meant to be shared: give it the usual umask-based mode."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def build_report(runs: Sequence[Run], out_dir: Path, fmt: str = "md", progress: Progress | None = None) -> list[Path]:
    """Write the report of `runs` into `out_dir` (created); returns the files written."""
    from rlsql.atomic import refuse_run_folders, write_text
    from rlsql.cachebuild import with_cache_fallback
    from rlsql.report import data as data_mod
    from rlsql.report import figures, render

    if fmt not in REPORT_FORMATS:
        raise UsageError(f"unknown report format {fmt!r}; choose one of {', '.join(REPORT_FORMATS)}")
    figures.require_matplotlib()
    refuse_run_folders(out_dir, runs)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a folder; -o takes the folder to write the report into")
    progress = progress or Progress(data_mod.stage_count() + len(figures.FIGURES) + 1)
    try:
        # a cached copy that fails to read costs a second pass over the CSVs, never a failed report
        data = with_cache_fallback(lambda: data_mod.gather(runs, progress))
        pngs = figures.draw_all(data, progress)
        progress("writing")
        out_dir.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if fmt == "md":
            for name, png in pngs.items():
                _write_bytes(out_dir / name, png)
                written.append(out_dir / name)
            target = out_dir / "report.md"
            write_text(target, render.render_markdown(data, list(pngs)))
        else:
            target = out_dir / "report.html"
            write_text(target, render.render_html(data, pngs))
        written.append(target)
        for path in written:
            _readable(path)
    finally:
        progress.close()
    return written
