"""Every named query on every fixture run (and on all of them at once) against tests/oracle.py.

The oracle computes each figure in plain Python from the CSV files, straight from the spec; it
shares no code or SQL with rlsql.
"""

from __future__ import annotations

import warnings

import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import FIXTURE_RUNS, RUNS

QUERIES = [q.name for q in load_catalog().queries()]

# which artifact each query reads, written out here rather than taken from the catalog under test
NEEDS = {
    "run_overview": "metrics",
    "reward_curve": "metrics",
    "best_checkpoint": "metrics",
    "timing_breakdown": "metrics",
    "step_timing": "metrics",
    "async_health": "metrics",
    "turn_stats": "trials",
    "turn_percentiles": "trials",
    "turns_by_exception": "trials",
    "turns_by_outcome": "trials",
    "exception_distribution": "trials",
    "exception_treatment": "trials",
    "reward_summary": "trials",
    "trial_phases": "trials",
    "vllm_summary": "vllm",
    "compare_runs": "metrics",
    "run_table": "any",  # one row per run, whatever it has: a run without metrics has its trial figures
    "tool_usage": "trajectories",
    "token_usage": "trajectories",
    "looping_trials": "trajectories",
    "task_diff": "trials",
    "run_diff": "trials",
    "group_curves": "metrics",
    "findings": "any",  # every artifact is optional: a run lacking one has no row from the rules that read it
}


def test_catalogue_is_the_contract() -> None:
    assert sorted(QUERIES) == sorted(NEEDS)


def has_artifact(run: str, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "trials":  # a trials CSV, else Harbor's trace_jobs/*/result.json
        return oracle.has_trials(RUNS / run)
    if kind == "trajectories":  # trace_jobs/<trial>/agent/trajectory.json
        return bool(oracle.trajectory_files(RUNS / run)[0])
    return oracle.find_artifacts(RUNS / run).get(kind) is not None


@pytest.mark.parametrize("run", FIXTURE_RUNS)
@pytest.mark.parametrize("name", QUERIES)
def test_query_matches_oracle_on_each_run(name: str, run: str) -> None:
    if not has_artifact(run, NEEDS[name]):
        with pytest.raises(rlsql.DataError, match=run):
            rlsql.query(name, [RUNS / run])
        return
    got = rlsql.query(name, [RUNS / run]).to_dicts()
    want = oracle.expected(name, [RUNS / run])
    assert_rows_match(got, want, f"{name} on {run}")


@pytest.mark.parametrize("name", QUERIES)
def test_query_matches_oracle_on_all_runs_at_once(name: str) -> None:
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rlsql.query(name, dirs).to_dicts()
    want = oracle.expected(name, dirs)
    assert_rows_match(got, want, f"{name} on all fixture runs")
    lacking = [r for r in FIXTURE_RUNS if not has_artifact(r, NEEDS[name])]
    messages = [str(w.message) for w in caught if issubclass(w.category, rlsql.RlsqlWarning)]
    for run in lacking:
        assert any(repr(run) in m for m in messages), f"no warning that {run} lacks {NEEDS[name]}: {messages}"


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("reward_curve", {"span": 3}),
        ("reward_curve", {"span": 1}),
        ("best_checkpoint", {"span": 3}),
        ("best_checkpoint", {"save_every": 2}),
        ("best_checkpoint", {"save_every": 4, "span": 10}),
        ("best_checkpoint", {"save_every": 50}),
        ("run_table", {"keys": "trainer.hf_save_interval, generator.n_samples_per_prompt,no.such.key"}),
        ("run_table", {"span": 2, "save_every": 2}),
        ("task_diff", {"baseline": "harbor", "alpha": 0.5}),
        ("task_diff", {"baseline": "no-such-run"}),
        ("run_diff", {"baseline": "tiny", "alpha": 1}),
        ("run_diff", {"baseline": "no-such-run"}),
        ("group_curves", {"key": "trainer.epochs", "span": 3}),
        ("group_curves", {"key": "no.such.key"}),
    ],
)
def test_parameters_match_oracle(name: str, params: dict) -> None:
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    got = rlsql.query(name, dirs, **params).to_dicts()
    assert_rows_match(got, oracle.expected(name, dirs, **params), f"{name} {params}")


def test_sample_run_is_the_default() -> None:
    got = rlsql.query("turns_by_exception").to_dicts()
    want = oracle.expected("turns_by_exception", [RUNS / "calendar"])
    assert_rows_match(got, want, "turns_by_exception on the sample run")


def test_a_statement_over_little_input_runs_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """query_connection's threads: one for CSVs under LITTLE_INPUT_BYTES in all, DuckDB's default else."""
    from rlsql.engine import statements as connection
    from rlsql.runs.folders import resolve_runs

    tiny = resolve_runs([str(RUNS / "tiny")])
    trials_bytes = sum(p.stat().st_size for p in (RUNS / "tiny").glob("*_trial_results.csv"))

    def threads(runs, name: str) -> int:
        con, _ = connection.query_connection(runs, name)
        try:
            return con.execute("SELECT current_setting('threads')").fetchone()[0]
        finally:
            con.close()

    default = rlsql.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    assert threads(tiny, "turn_stats") == 1
    monkeypatch.setattr(connection, "LITTLE_INPUT_BYTES", trials_bytes)  # not fewer than it: the default
    assert threads(tiny, "turn_stats") == default
    monkeypatch.setattr(connection, "LITTLE_INPUT_BYTES", trials_bytes + 1)
    assert threads(tiny, "turn_stats") == 1
    # Harbor's result.json files (a folder, not one size) and raw logs: the default
    assert threads(resolve_runs([str(RUNS / "harbor")]), "turn_stats") == default
    assert threads(resolve_runs([str(RUNS / "rawlogs")]), "reward_curve") == default
