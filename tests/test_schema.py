"""Every view's and query's schema: the same types whichever fixture runs it binds over, and the types chosen.

The expected types are written out by hand (issue 16: timestamps as TIMESTAMP, counts as BIGINT).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from tests.conftest import RUNS

SELECTABLE = [f.name for f in load_catalog().files.values() if f.kind in ("view", "query")]

EXPECTED = {
    ("trials", "started_at"): "TIMESTAMP",
    ("trials", "finished_at"): "TIMESTAMP",
    ("trial_rows", "started_at"): "TIMESTAMP",
    ("trials", "n_episodes"): "BIGINT",
    ("trials", "reward"): "DOUBLE",
    ("metric_rows", "step"): "BIGINT",
    ("metric_rows", "trainer/global_step"): "BIGINT",
    ("metric_rows", "global_step"): "BIGINT",
    ("metric_rows", "async/discarded_count"): "BIGINT",
    ("metric_rows", "generate/max_num_tokens"): "BIGINT",
    ("metric_rows", "generate/min_num_tokens"): "BIGINT",
    ("metric_rows", "generate/avg_num_tokens"): "DOUBLE",
    ("metric_rows", "batch_errors/total_batches"): "BIGINT",
    ("metric_rows", "batch_errors/avg_AgentTimeoutError"): "DOUBLE",
    ("trials", "n_input_tokens"): "BIGINT",
    ("steps", "trainer/global_step"): "BIGINT",
    ("vllm_seconds", "ts"): "TIMESTAMP",
    ("vllm_seconds", "n_engines_reporting"): "BIGINT",
    ("vllm_seconds", "total_running_requests"): "BIGINT",
    ("vllm_seconds", "total_waiting_requests"): "BIGINT",
    ("vllm_seconds", "min_running_requests"): "BIGINT",
    ("vllm_seconds", "max_running_requests"): "BIGINT",
    ("vllm_seconds", "avg_running_requests_per_engine"): "DOUBLE",
    ("vllm_summary", "seconds"): "BIGINT",
    ("vllm_summary", "stat_lines"): "BIGINT",
    ("vllm_summary", "max_total_running"): "BIGINT",
    ("run_overview", "total_steps"): "BIGINT",
    ("run_overview", "max_step"): "BIGINT",
    ("run_overview", "distinct_steps"): "BIGINT",
    ("turn_stats", "trials"): "BIGINT",
}


@pytest.fixture(scope="module")
def schemas(bound_columns) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """name -> run set -> (column, type), as `rlsql describe` binds them (conftest.bound_columns)."""
    return bound_columns


@pytest.mark.parametrize("name", SELECTABLE)
def test_types_do_not_depend_on_the_runs(name: str, schemas) -> None:
    # these pass each run's own metric columns through; run_table has a column per config key that differs
    # between the runs (one run alone: none)
    metric_columns = name in ("metric_rows", "steps", "run_table")
    by_label = schemas[name]
    reference = dict(by_label["all"])
    for label, columns in by_label.items():
        for column, ctype in columns:
            assert reference.get(column) == ctype, (
                f"{name}.{column} over {label}: {ctype}, over all runs: {reference.get(column)}"
            )
        if not metric_columns:
            assert [c for c, _ in columns] == list(reference), f"{name}: other columns over {label}"


def test_the_chosen_types(schemas) -> None:
    for (name, column), want in EXPECTED.items():
        got = dict(schemas[name]["all"])[column]
        assert got == want, f"{name}.{column}: {got}, expected {want}"


def test_result_json_stamps_are_utc_timestamps(tmp_path) -> None:
    # one trial folder with an offset of +02:00 and one without: the first is moved to UTC, the second kept
    import shutil

    run = tmp_path / "stamps"
    shutil.copytree(RUNS / "harbor", run)
    trials = sorted((run / "trace_jobs").iterdir())
    first, second = trials[0] / "result.json", trials[1] / "result.json"
    data = json.loads(first.read_text())
    data["started_at"], data["finished_at"] = "2026-07-14T08:00:00+02:00", "2026-07-14T08:30:00.5+02:00"
    first.write_text(json.dumps(data))
    data = json.loads(second.read_text())
    data["started_at"], data["finished_at"] = "2026-07-14T09:00:00", "not a time"
    second.write_text(json.dumps(data))
    rows = {r["trial_name"]: r for r in rlsql.query("trials", [run]).to_dicts()}
    one, two = rows[trials[0].name], rows[trials[1].name]
    assert one["started_at"] == dt.datetime(2026, 7, 14, 6, 0, 0)
    assert one["finished_at"] == dt.datetime(2026, 7, 14, 6, 30, 0, 500000)
    assert two["started_at"] == dt.datetime(2026, 7, 14, 9, 0, 0)
    assert two["finished_at"] is None


def test_a_count_that_is_not_whole_reads_as_empty(tmp_path) -> None:
    # the BIGINT counts of vllm_seconds: `3.0` is 3; a fraction or 1e30 is NULL (never rounded, never a failed cast)
    import csv
    import shutil

    run = tmp_path / "counts"
    shutil.copytree(RUNS / "tiny", run)
    path = run / "20260105_120000_vllm_metrics_table.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    fields = list(rows[0])
    rows[0]["total_running_requests"], rows[1]["total_running_requests"] = "2.5", "1e30"
    rows[2]["total_running_requests"] = "7.0"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        writer.writerows(rows)
    got = [
        r["total_running_requests"] for r in rlsql.query("vllm_seconds", [run]).to_dicts() if r["row_no"] in (1, 2, 3)
    ]
    assert sorted(got, key=lambda v: (v is not None, v)) == [None, None, 7]
