"""The baselines rlsql is benchmarked against (bench/polars_baseline.py, bench/pandas_baseline.py)
compute the same figures as rlsql's trial queries: every figure checked against tests/oracle.py.

A speed comparison is only fair if both sides answer the same question, so the scripts the
benchmark times are tested like rlsql is: on every fixture run with a trials CSV, value by value.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import FIXTURE_RUNS, ROOT, RUNS

BENCH = ROOT / "bench"
TRIAL_QUERIES = [
    "turn_stats",
    "turns_by_exception",
    "turns_by_outcome",
    "turn_percentiles",
    "exception_distribution",
    "exception_treatment",
    "reward_summary",
    "trial_phases",
]
# the scripts read a trials CSV (Harbor's result.json folders are rlsql's job, not a five-line script's)
CSV_RUNS = [r for r in FIXTURE_RUNS if oracle.find_artifacts(RUNS / r)["trials"] is not None]


def load_script(name: str) -> ModuleType:
    """A bench script as a module (bench/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cell(text: str) -> object:
    """A CSV cell as the oracle types it: empty is None, then int, float, else text."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_csv(text: str) -> list[dict[str, object]]:
    return [{k: cell(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]


@pytest.fixture(scope="module")
def polars_script() -> ModuleType:
    pytest.importorskip("polars", reason="polars is not installed: pip install -e '.[bench]'")
    return load_script("polars_baseline")


@pytest.fixture(scope="module")
def pandas_script() -> ModuleType:
    return load_script("pandas_baseline")


def test_fixtures_cover_both_trial_csv_layouts() -> None:
    # a timestamped newest-wins CSV and an unprefixed one, old (agent_duration_sec) and new phase columns
    assert {"tiny", "calendar", "newest", "harbor_csv"} <= set(CSV_RUNS)


@pytest.mark.parametrize("run", CSV_RUNS)
@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_polars_baseline_matches_oracle(polars_script: ModuleType, name: str, run: str) -> None:
    got = parse_csv(polars_script.STATISTICS[name](RUNS / run).write_csv())
    assert_rows_match(got, oracle.expected(name, [RUNS / run]), f"polars {name} on {run}")


@pytest.mark.parametrize("run", CSV_RUNS)
@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_pandas_baseline_matches_oracle(pandas_script: ModuleType, name: str, run: str) -> None:
    got = parse_csv(pandas_script.STATISTICS[name](RUNS / run).to_csv(index=False))
    assert_rows_match(got, oracle.expected(name, [RUNS / run]), f"pandas {name} on {run}")


@pytest.mark.parametrize("script", ["polars_baseline", "pandas_baseline"])
def test_baseline_script_prints_the_figures(script: str) -> None:
    """As the benchmark runs it: a fresh process, CSV on stdout."""
    if script == "polars_baseline":
        pytest.importorskip("polars", reason="polars is not installed: pip install -e '.[bench]'")
    run = RUNS / "calendar"
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), "turns_by_exception", str(run)],
        capture_output=True, text=True, check=True, timeout=120,
    )
    assert_rows_match(parse_csv(done.stdout), oracle.expected("turns_by_exception", [run]), script)


def test_baselines_refuse_a_run_without_a_trials_csv(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "pandas_baseline.py"), "turn_stats", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode != 0 and "trial_results.csv" in done.stderr
