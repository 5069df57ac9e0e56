"""The baselines rlsql is benchmarked against (bench/polars_baseline.py, bench/pandas_baseline.py and
the bare DuckDB statement of bench/duckdb_baseline.py) compute the same figures as rlsql's trial
queries: every figure checked against tests/oracle.py.

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
    return load_script("polars_baseline")


@pytest.fixture(scope="module")
def pandas_script() -> ModuleType:
    return load_script("pandas_baseline")


@pytest.fixture(scope="module")
def duckdb_script() -> ModuleType:
    return load_script("duckdb_baseline")


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


@pytest.mark.parametrize("run", CSV_RUNS)
@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_duckdb_baseline_matches_oracle(duckdb_script: ModuleType, name: str, run: str) -> None:
    out = io.StringIO()
    duckdb_script.write_csv(name, RUNS / run, out)
    assert_rows_match(parse_csv(out.getvalue()), oracle.expected(name, [RUNS / run]), f"duckdb {name} on {run}")


@pytest.mark.parametrize("script", ["polars_baseline", "pandas_baseline", "duckdb_baseline"])
def test_baseline_script_prints_the_figures(script: str) -> None:
    """As the benchmark runs it: a fresh process, CSV on stdout."""
    run = RUNS / "calendar"
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), "turns_by_exception", str(run)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert_rows_match(parse_csv(done.stdout), oracle.expected("turns_by_exception", [run]), script)


def test_baselines_refuse_a_run_without_a_trials_csv(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "pandas_baseline.py"), "turn_stats", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "trial_results.csv" in done.stderr


AWKWARD_CSV = """task_name,trial_name,n_episodes,exception_type,reward,trial_duration,agent_execution_duration
t1,a,3.0,,1.0,10,4
t1,b,,AgentTimeoutError,,20,
t2,c,nan,ContextLengthExceededError,0,,3
t2,d,2.5,,0.0,5,6
t3,e,4,,-1,7,2
t3,f,1.0,DaytonaError,1,8,
t3,g,7,AgentTimeoutError,0.5,9,nan
t4,h,2,AgentTimeoutError,,,
"""


@pytest.fixture(scope="module")
def awkward_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Empty and `nan` cells, a fractional turn count, a negative reward, passthrough without a
    reward, a column the old layout lacks, and an even count for the medians."""
    run = tmp_path_factory.mktemp("awkward") / "awkward"
    run.mkdir()
    (run / "20260105_120000_trial_results.csv").write_text(AWKWARD_CSV, encoding="utf-8")
    (run / "rl_config.yaml").write_text("trainer:\n  passthrough_exceptions: [AgentTimeoutError]\n", encoding="utf-8")
    return run


@pytest.mark.parametrize("script", ["polars_baseline", "pandas_baseline", "duckdb_baseline"])
@pytest.mark.parametrize("name", TRIAL_QUERIES)
def test_baselines_on_awkward_cells(script: str, name: str, awkward_run: Path) -> None:
    module = load_script(script)
    if script == "duckdb_baseline":
        out = io.StringIO()
        module.write_csv(name, awkward_run, out)
        text = out.getvalue()
    else:
        frame = module.STATISTICS[name](awkward_run)
        text = frame.write_csv() if script == "polars_baseline" else frame.to_csv(index=False)
    want = oracle.expected(name, [awkward_run])
    assert want, f"the oracle finds no rows for {name}: the awkward run does not exercise it"
    assert_rows_match(parse_csv(text), want, f"{script} {name} on the awkward run")
