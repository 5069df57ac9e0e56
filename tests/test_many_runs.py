"""Hundreds of runs at once: mixed parser versions, optional files missing in some, a few damaged.

Every named query answers over a glob of the folder; the healthy runs' rows equal the oracle's,
and each damaged run is named in a warning.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

COPIES = {"tiny": 70, "newest": 70, "harbor_csv": 60, "calendar": 2, "harbor": 2}


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[str]]:
    root = tmp_path_factory.mktemp("many")
    healthy: list[Path] = []
    for source, count in COPIES.items():
        for i in range(count):
            target = root / f"{source}_{i:03d}"
            shutil.copytree(RUNS / source, target)
            healthy.append(target)
    damaged = [root / "tiny_007", root / "newest_009"]
    (damaged[0] / "20260105_120000_trial_results.csv").write_bytes(b"task_\xffname,trial_name\nx,y\n")
    with (damaged[1] / "metrics.csv").open("a") as fh:
        fh.write("job_x,1,2\n")  # too few fields: the row is skipped, the run's step counts change
    healthy = [p for p in healthy if p not in damaged]
    return root, healthy, [p.name for p in damaged]


# their config columns compare the runs with each other; the diffs pair each run with the first run (tiny_007, a
# damaged one, here) and group_curves groups runs: over the healthy runs alone in the test after this one
CROSS_RUN = ("compare_runs", "run_table", "task_diff", "run_diff", "group_curves")


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("task_diff", {"baseline": "harbor_000", "alpha": 0.5}),
        ("run_diff", {"baseline": "tiny_000"}),
        ("group_curves", {"key": "trainer.epochs", "span": 3}),
    ],
)
def test_the_comparisons_over_a_folder_of_runs(many, name: str, params: dict) -> None:
    _, healthy, _ = many
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = rlsql.query(name, healthy, **params).to_dicts()
    assert_rows_match(got, oracle.expected(name, healthy, **params), f"{name} over {len(healthy)} runs")


@pytest.mark.parametrize("name", [q.name for q in load_catalog().queries() if q.name not in CROSS_RUN])
def test_every_query_over_a_folder_of_runs(many, name: str) -> None:
    root, healthy, _ = many
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rlsql.query(name, [str(root / "*")]).to_dicts()
    names = {p.name for p in healthy}
    assert_rows_match([r for r in got if r["run"] in names], oracle.expected(name, healthy), f"{name} over {root}")
    messages = " ".join(str(w.message) for w in caught)
    reads_trials = name not in {
        "run_overview",
        "reward_curve",
        "best_checkpoint",
        "timing_breakdown",
        "step_timing",
        "async_health",
        "vllm_summary",
    }
    if reads_trials:
        assert "tiny_007" in messages and "header is not valid UTF-8" in messages
    elif name != "vllm_summary":
        assert "newest_009" in messages and "skipped 1 unreadable row" in messages


@pytest.mark.slow
def test_compare_runs_over_a_folder_of_runs(many) -> None:
    root, healthy, _ = many
    got = {r["run"]: r for r in rlsql.query("compare_runs", [root]).to_dicts()}
    assert len(got) == sum(COPIES.values())
    # compare_runs holds config differences across all the runs given, so compare the per-run figures
    want = {r["run"]: r for r in oracle.expected("compare_runs", healthy)}
    for run, row in want.items():
        assert_rows_match(
            [{k: v for k, v in got[run].items() if k != "differing_config"}],
            [{k: v for k, v in row.items() if k != "differing_config"}],
            f"compare_runs {run}",
        )
