"""Write output files atomically: a temporary name beside the target, then a rename.

An interrupted write leaves the previous file (if any) untouched and no half file behind.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from rlsql.errors import UsageError
from rlsql.runs import Run


def refuse_run_folders(target: Path, runs: Sequence[Run]) -> None:
    """rlsql never writes into a user's run folder."""
    resolved = target.resolve()
    for run in runs:
        if resolved == run.path or run.path in resolved.parents:
            raise UsageError(f"{target}: refusing to write inside run folder {run.path}; choose another path")


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto `target` when the block succeeds."""
    import tempfile  # late: it pulls in `random`, a cost every query would pay at start-up

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(target: Path, text: str) -> None:
    with atomic_path(target) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
