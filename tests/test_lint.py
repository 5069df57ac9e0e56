"""ruff and mypy are part of the test command, so CI keeps the code lint- and type-clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    """The type checker configured in pyproject.toml ([tool.mypy]) over rlsql/."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
