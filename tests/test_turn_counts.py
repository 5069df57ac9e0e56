"""Medians and percentiles of turns, computed from counts per distinct value, against tests/oracle.py.

turn_stats, turns_by_exception, turns_by_outcome and turn_percentiles take their medians and
percentiles from how many trials have each turn count (sql/queries/*.sql) rather than from a sort.
These runs are built to hit what that arithmetic can get wrong: even and odd counts, ties across
the middle, a single trial, one value repeated, positions (n-1)*q that fall exactly on or between
values, negative and very large whole numbers, groups without any turn count, and many groups in
one run. Each is answered from the CSV in place and from a Parquet cache entry, and compared with
the oracle's plain-Python statistics (statistics.median, linear interpolation on sorted values).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

import rlsql
from tests import oracle
from tests.compare import assert_rows_match

QUERIES = ["turn_stats", "turns_by_exception", "turns_by_outcome", "turn_percentiles"]
HEADER = [
    "task_name",
    "trial_name",
    "n_episodes",
    "n_input_tokens",
    "n_output_tokens",
    "exception_type",
    "reward",
    "agent_duration_sec",
]
BIG = 2**53

# (turns, exception_type, reward) per trial; None is an empty cell
CASES: dict[str, list[tuple[int | None, str, float | None]]] = {
    "single": [(7, "", 1.0)],
    "pair": [(1, "", 1.0), (4, "", 0.0)],
    "even_ties": [(2, "", 1.0), (2, "", 0.0), (3, "", 1.0), (3, "", 0.0), (3, "", 1.0), (9, "", 0.0)],
    "odd_ties": [(5, "E", 1.0), (5, "E", 1.0), (5, "E", 0.0), (1, "E", 0.0), (8, "", 1.0)],
    "one_value": [(4, "", 1.0)] * 9 + [(4, "AgentTimeoutError", 0.0)] * 4,
    "empty_group": [(None, "DaytonaError", None), (None, "DaytonaError", 1.0), (3, "", 1.0), (6, "", None)],
    "no_turns": [(None, "", 1.0), (None, "NetworkError", 0.0)],
    "extremes": [(-3, "", 1.0), (0, "", 0.0), (BIG, "", 1.0), (BIG - 1, "X", 0.0), (-BIG, "X", 1.0), (12, "X", 0.0)],
}


def _random_case(seed: int) -> list[tuple[int | None, str, float | None]]:
    rng = random.Random(seed)
    types = ["", "AgentTimeoutError", "DaytonaError", "ContextLengthExceededError"][: rng.randint(1, 4)]
    spread = rng.choice([1, 3, 40, 1000])
    rows = []
    for _ in range(rng.randint(1, 61)):
        turns = None if rng.random() < 0.1 else rng.randint(0, spread)
        reward = rng.choice([None, 0.0, 1.0, 0.5])
        rows.append((turns, rng.choice(types), reward))
    return rows


CASES.update({f"random{seed}": _random_case(seed) for seed in range(12)})


def _write_run(folder: Path, rows: list[tuple[int | None, str, float | None]]) -> Path:
    folder.mkdir(parents=True)
    with (folder / "20260101_000000_trial_results.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(HEADER)
        for i, (turns, exception, reward) in enumerate(rows):
            out.writerow(
                [
                    f"t-{i % 5}",
                    f"t-{i % 5}__{i:07d}",
                    "" if turns is None else f"{turns}.0",
                    "10.0",
                    "5.0",
                    exception,
                    "" if reward is None else reward,
                    "1.5",
                ]
            )
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("turn-counts")
    return {name: _write_run(root / name, rows) for name, rows in CASES.items()}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", QUERIES)
def test_in_place_matches_oracle(name: str, case: str, runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSQL_CACHE", "off")
    got = rlsql.query(name, [runs[case]]).to_dicts()
    assert_rows_match(got, oracle.expected(name, [runs[case]]), f"{name} on {case}")


@pytest.mark.parametrize("name", QUERIES)
def test_cached_and_all_runs_match_oracle(
    name: str, runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case in one query (many runs, each its own groups), read from Parquet cache entries."""
    monkeypatch.setenv("RLSQL_CACHE", "on")
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    dirs = [runs[case] for case in CASES]
    got = rlsql.query(name, dirs).to_dicts()
    assert list((tmp_path / "cache").glob("*/*.parquet")), "the cache was not used"
    assert_rows_match(got, oracle.expected(name, dirs), f"{name} on every case, cached")


def test_the_oracle_sees_the_awkward_values(runs: dict[str, Path]) -> None:
    """The cases hold what they claim (so a pass above means something): an even count with ties across
    the middle, and values at +-2**53 that are read as whole numbers."""
    by_hand = oracle.expected("turn_stats", [runs["even_ties"]])[0]
    assert by_hand["trials"] == 6 and by_hand["median"] == 3.0  # sorted 2 2 3 3 3 9: (3 + 3) / 2
    pair = oracle.expected("turn_stats", [runs["pair"]])[0]
    assert pair["median"] == 2.5  # (1 + 4) / 2
    extremes = oracle.expected("turn_stats", [runs["extremes"]])[0]
    assert extremes["trials"] == 6 and extremes["max"] == BIG and extremes["min"] == -BIG
