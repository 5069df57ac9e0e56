"""Shared fixtures: the committed fixture runs and the installed console script."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
FIXTURE_RUNS = ["tiny", "calendar", "newest", "harbor", "harbor_csv"]

# Keep tests independent of a developer's ~/.cache (the SQL analysis cache is exercised on purpose elsewhere).
os.environ.setdefault("RLSQL_NO_CACHE", "1")
# ...and of a developer's Parquet cache: tests that use one point RLSQL_CACHE_DIR at a folder of their own
os.environ["RLSQL_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlsql-test-cache-")
# ...and off unless a test turns it on (tests/test_cache.py does): a large test CSV would otherwise be
# cached on first read, and a test that changes rlsql's limits between reads would get the earlier copy
os.environ["RLSQL_CACHE"] = "0"


@pytest.fixture(scope="session")
def runs_dir() -> Path:
    return RUNS


@pytest.fixture(scope="session")
def rlsql_exe() -> str:
    """The console script installed beside this interpreter (what a user runs)."""
    candidate = Path(sys.executable).parent / "rlsql"
    found = str(candidate) if candidate.exists() else shutil.which("rlsql")
    if not found:
        pytest.fail("the rlsql console script is not installed: pip install . first (see README)")
    return found
