"""The committed fixture runs are exactly what fixtures/generate.py writes.

Hand-computed tests lean on every byte of fixtures/runs/tiny, so the generator must reproduce
the committed files exactly, and the sample run shipped in the package must be the calendar
fixture, not a drifted copy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "fixtures" / "generate.py"
RUNS = REPO / "fixtures" / "runs"
SAMPLE = REPO / "rlsql" / "runs" / "sample" / "calendar"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root`, keyed by its POSIX path relative to `root`."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_tree(got: Path, want: Path) -> None:
    """Same file names and byte-identical contents, naming the first difference."""
    got_files, want_files = tree(got), tree(want)
    assert sorted(got_files) == sorted(want_files), f"file lists differ: {got} vs {want}"
    changed = [name for name in want_files if got_files[name] != want_files[name]]
    assert not changed, f"regenerated files differ from the committed ones: {changed}"


def test_generator_reproduces_committed_fixtures(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(GENERATOR), str(tmp_path)], check=True, cwd=REPO)
    assert_same_tree(tmp_path / "fixtures" / "runs", RUNS)
    assert_same_tree(tmp_path / "rlsql" / "runs" / "sample" / "calendar", SAMPLE)
    assert (tmp_path / "rlsql" / "runs" / "sample" / "__init__.py").is_file()


def test_generator_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        subprocess.run([sys.executable, str(GENERATOR), str(root)], check=True, cwd=REPO)
    assert_same_tree(first / "fixtures" / "runs", second / "fixtures" / "runs")


def test_packaged_sample_is_the_calendar_fixture() -> None:
    assert_same_tree(SAMPLE, RUNS / "calendar")


def test_fixture_runs_exist() -> None:
    found = sorted(p.name for p in RUNS.iterdir() if p.is_dir())
    assert found == ["calendar", "harbor", "harbor_csv", "newest", "rawlogs", "rawlogs_csv", "tiny"]
