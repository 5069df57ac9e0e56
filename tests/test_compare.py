"""Comparing runs: task_diff, run_diff and group_curves (docs/compare.md).

Fisher's test and Benjamini-Hochberg are checked against values worked out by hand on a hand-made pair
of runs, then against scipy over the fixture runs; a planted pair must show exactly the planted tasks;
group_curves is checked against pandas over a fleet; a real-sized pair against tests/oracle.py.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest
import scipy.stats as stats
import yaml

import rlsql
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import FIXTURE_RUNS, ROOT, RUNS


def write_trials(run: Path, outcomes: dict[str, list[float | None]]) -> Path:
    """A run folder holding only a trials CSV: task -> the rewards of its trials (None: no reward)."""
    run.mkdir(parents=True)
    lines = ["task_name,trial_name,exception_type,reward"]
    for task, rewards in outcomes.items():
        for i, reward in enumerate(rewards):
            cells = ("", "") if reward is None else ("", repr(reward))
            lines.append(f"{task},{task}__{i:07d},{cells[0]},{cells[1]}")
    (run / "20260101_000000_trial_results.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def trials(successes: int, failures: int) -> list[float | None]:
    return [1.0] * successes + [0.0] * failures


# -- by hand -----------------------------------------------------------------------------------------------
# Each task's 2x2 table [[successes_base, failures_base], [successes_run, failures_run]] and its p-value
# worked out from the hypergeometric probabilities C(n1, x) C(n2, k - x) / C(n1 + n2, k) of the tables
# with the same margins (x: the baseline's successes):
HAND = {
    # 5/5 against 0/5: only x = 5 and x = 0 are as unlikely as the observed table, 1/252 each
    "t1": ((5, 0), (0, 5), Fraction(2, 252)),
    # the mirror image (symmetric): the same p-value, the other sign
    "t2": ((0, 5), (5, 0), Fraction(2, 252)),
    # 3/3 against 0/3: P = 1, 9, 9, 1 (/20) for x = 0..3; the observed x = 3 ties x = 0: 2/20
    "t3": ((3, 0), (0, 3), Fraction(2, 20)),
    # one trial each, 1/1 against 0/1: both tables have P = 1/2, so p = 1
    "t4": ((1, 0), (0, 1), Fraction(1)),
    # all success, 4/4 against 2/2: one table has these margins, p = 1
    "t5": ((4, 0), (2, 0), Fraction(1)),
    # 4/5 against 0/3: P = 5, 30, 30, 5 (/70) for x = 1..4; observed x = 4: 10/70
    "t6": ((4, 1), (0, 3), Fraction(10, 70)),
}
# Benjamini-Hochberg over the six (m = 6), sorted by p then task: p * 6 / rank = 1/21, 1/42, 1/5, 3/14, 6/5, 1;
# the running minimum from the end, capped at 1: t1, t2 = 1/42 (tied p, one q), t3 = 1/5, t6 = 3/14, t4, t5 = 1
HAND_Q = {
    "t1": Fraction(1, 42),
    "t2": Fraction(1, 42),
    "t3": Fraction(1, 5),
    "t6": Fraction(3, 14),
    "t4": Fraction(1),
    "t5": Fraction(1),
}


def hand_pair(root: Path) -> list[Path]:
    base = {task: trials(*b) for task, (b, _, _) in HAND.items()}
    run = {task: trials(*r) for task, (_, r, _) in HAND.items()}
    base["only_base"] = trials(2, 2)  # a task the other run never ran: no row
    run["no_reward"] = [None, None]  # a task without a reward in the run...
    base["no_reward"] = trials(1, 1)  # ...is not shared
    run["t1"].append(None)  # a trial without a reward does not count
    return [write_trials(root / "a_base", base), write_trials(root / "b_run", run)]


def test_fisher_and_bh_equal_the_values_worked_out_by_hand(tmp_path: Path) -> None:
    runs = hand_pair(tmp_path)
    rows = rlsql.query("task_diff", runs).to_dicts()
    assert [r["task_name"] for r in rows] == ["t1", "t2", "t3", "t6", "t4", "t5"]  # by q_value, then task
    for r in rows:
        (s1, f1), (s2, f2), p = HAND[r["task_name"]]
        assert (r["run"], r["baseline"]) == ("b_run", "a_base")
        assert (r["trials_base"], r["successes_base"], r["trials_run"], r["successes_run"]) == (
            s1 + f1,
            s1,
            s2 + f2,
            s2,
        )
        assert r["delta"] == pytest.approx(s2 / (s2 + f2) - s1 / (s1 + f1), abs=1e-15)
        assert r["p_value"] == pytest.approx(float(p), rel=1e-9), r["task_name"]
        assert r["q_value"] == pytest.approx(float(HAND_Q[r["task_name"]]), rel=1e-9), r["task_name"]
    verdicts = {r["task_name"]: r["verdict"] for r in rows}
    assert verdicts == {"t1": "regressed", "t2": "improved", "t3": "same", "t4": "same", "t5": "same", "t6": "same"}
    # at alpha 0.21 t3 (q = 1/5) regresses too; t6 (q = 3/14 > 0.21) does not
    loose = {r["task_name"]: r["verdict"] for r in rlsql.query("task_diff", runs, alpha=0.21).to_dicts()}
    assert loose == {**verdicts, "t3": "regressed"}


def test_the_hand_values_are_scipys() -> None:
    """The figures above are what scipy.stats.fisher_exact and false_discovery_control give."""
    names = sorted(HAND)
    ps = [stats.fisher_exact([HAND[t][0], HAND[t][1]]).pvalue for t in names]
    assert ps == pytest.approx([float(HAND[t][2]) for t in names], rel=1e-12)
    assert list(stats.false_discovery_control(ps)) == pytest.approx([float(HAND_Q[t]) for t in names], rel=1e-12)


def test_run_diff_by_hand(tmp_path: Path) -> None:
    rows = rlsql.query("run_diff", hand_pair(tmp_path)).to_dicts()
    # deltas -1, +1, -1, -1, 0, -0.8 (t1..t6): mean -2.8/6; squared deviations sum to 10/3, so the sample
    # variance is 2/3 and sd / sqrt(6) = 1/3; successes 17 of 23 trials in the baseline, 7 of 19 in the run
    assert len(rows) == 1
    row = rows[0]
    assert (row["run"], row["baseline"], row["shared_tasks"], row["improved"], row["regressed"]) == (
        "b_run",
        "a_base",
        6,
        1,
        1,
    )
    assert row["mean_delta"] == pytest.approx(-2.8 / 6, rel=1e-12)
    assert row["ci_low"] == pytest.approx(-2.8 / 6 - 1.96 / 3, rel=1e-12)
    assert row["ci_high"] == pytest.approx(-2.8 / 6 + 1.96 / 3, rel=1e-12)
    assert row["success_base"] == pytest.approx(17 / 23, rel=1e-12)
    assert row["success_run"] == pytest.approx(7 / 19, rel=1e-12)


def test_the_baseline_parameter_and_a_baseline_naming_no_run(tmp_path: Path) -> None:
    runs = hand_pair(tmp_path)
    flipped = rlsql.query("task_diff", runs, baseline="b_run").to_dicts()
    assert {(r["run"], r["baseline"]) for r in flipped} == {("a_base", "b_run")}
    assert {r["task_name"]: r["verdict"] for r in flipped}["t1"] == "improved"
    # documented: a baseline that names none of the runs answers no rows (docs/compare.md)
    assert rlsql.query("task_diff", runs, baseline="no_such_run").rows == []
    assert rlsql.query("run_diff", runs, baseline="no_such_run").rows == []


def test_log_factorial_is_lgamma() -> None:
    con = rlsql.connect()
    for n in [*range(60), 100, 1_000, 45_711, 10**6]:
        got = con.execute("SELECT log_factorial(?)", [n]).fetchone()[0]
        assert got == pytest.approx(math.lgamma(n + 1), rel=1e-13, abs=1e-12), n


# -- against scipy -----------------------------------------------------------------------------------------
TRIAL_RUNS = [r for r in FIXTURE_RUNS if oracle.has_trials(RUNS / r)]


def test_p_and_q_values_equal_scipys_over_the_fixture_runs() -> None:
    compared = 0
    for baseline in TRIAL_RUNS:
        compared += _compare_with_scipy(
            rlsql.query("task_diff", [RUNS / r for r in TRIAL_RUNS], baseline=baseline).to_dicts()
        )
    assert compared > 50, "the fixture runs share tasks"


def _compare_with_scipy(rows: list[dict]) -> int:
    by_run: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        table = [
            [r["successes_base"], r["trials_base"] - r["successes_base"]],
            [r["successes_run"], r["trials_run"] - r["successes_run"]],
        ]
        assert r["p_value"] == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-6), r
        by_run[r["run"]].append(r)
    for run, group in by_run.items():
        qs = stats.false_discovery_control([r["p_value"] for r in group])
        assert [r["q_value"] for r in group] == pytest.approx(list(qs), rel=1e-6), run
    return len(rows)


# -- a planted pair ----------------------------------------------------------------------------------------
def planted_pair(
    root: Path, tasks: int, trials_per_task: int, broken: set[int], fixed: set[int], seed: int
) -> list[Path]:
    """Two runs of the same tasks at the same success rates, drawn independently, but for the planted
    tasks: `broken` always succeed in the baseline and never in the run, `fixed` the other way round."""
    rng = random.Random(seed)
    base: dict[str, list[float | None]] = {}
    run: dict[str, list[float | None]] = {}
    for t in range(tasks):
        rate = rng.random()
        name = f"task-{t:04d}"
        if t in broken or t in fixed:
            good, bad = trials(trials_per_task, 0), trials(0, trials_per_task)
            base[name], run[name] = (good, bad) if t in broken else (bad, good)
            continue
        base[name] = [1.0 if rng.random() < rate else 0.0 for _ in range(trials_per_task)]
        run[name] = [1.0 if rng.random() < rate else 0.0 for _ in range(trials_per_task)]
    return [write_trials(root / "baseline", base), write_trials(root / "candidate", run)]


def test_a_planted_pair_finds_exactly_the_planted_tasks(tmp_path: Path) -> None:
    broken, fixed = {3, 17, 42, 88, 120}, {9, 64, 101}
    runs = planted_pair(tmp_path, 150, 12, broken, fixed, seed=40)
    rows = rlsql.query("task_diff", runs, alpha=0.001).to_dicts()
    assert len(rows) == 150
    changed = {r["task_name"]: r["verdict"] for r in rows if r["verdict"] != "same"}
    assert changed == {**{f"task-{t:04d}": "regressed" for t in broken}, **{f"task-{t:04d}": "improved" for t in fixed}}
    summary = rlsql.query("run_diff", runs, alpha=0.001).to_dicts()
    assert [(s["shared_tasks"], s["improved"], s["regressed"]) for s in summary] == [(150, 3, 5)]


# -- group_curves against pandas over a fleet -----------------------------------------------------------------
def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("span", [5, 2])
def test_group_curves_equal_pandas_over_a_fleet(tmp_path: Path, span: int) -> None:
    import pandas as pd

    fleet = _bench("make_fleet").make_fleet(16, tmp_path / "fleet", vary=True)
    baseline = _bench("pandas_baseline")
    curves = []
    # the newest parser's copies name their file metrics.csv (and have no config: the NULL group)
    baseline.metrics = lambda run: pd.read_csv(baseline.newest(run, "metrics_table.csv", "metrics.csv"))
    for run in fleet:
        if not list(run.glob("*metrics*.csv")):
            continue  # harbor_csv's copies: no trainer metrics
        config = run / "rl_config.yaml"
        lr = yaml.safe_load(config.read_text())["fleet"]["lr"] if config.exists() else None
        curve = baseline.reward_curve(run, span=span)
        curves.append(curve.assign(value=None if lr is None else str(lr)))
    frame = pd.concat(curves).dropna(subset=["ema"])
    grouped = frame.groupby(["value", "step"], dropna=False)["ema"].agg(["count", "mean", "std", "min", "max"])
    want = []
    for (value, step), g in grouped.iterrows():
        std = None if g["count"] < 2 else float(g["std"])
        half = None if std is None else 1.96 * std / math.sqrt(g["count"])
        want.append(
            {
                "key": "fleet.lr",
                "value": None if pd.isna(value) else value,
                "step": int(step),
                "runs": int(g["count"]),
                "mean_ema": float(g["mean"]),
                "std_ema": std,
                "ci_low": None if half is None else g["mean"] - half,
                "ci_high": None if half is None else g["mean"] + half,
                "min_ema": float(g["min"]),
                "max_ema": float(g["max"]),
            }
        )
    want.sort(key=lambda r: (r["value"] is None, r["value"] or "", r["step"]))
    with pytest.warns(rlsql.RlsqlWarning):  # the copies without metrics are named
        got = rlsql.query("group_curves", fleet, key="fleet.lr", span=span).to_dicts()
    assert {r["value"] for r in want} >= {None, "1e-06", "2e-06"} and max(r["runs"] for r in want) >= 2
    assert_rows_match(got, want, f"group_curves span {span} over the fleet")


# -- a real-sized pair -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_real_sized_pair_equals_the_oracle(tmp_path: Path) -> None:
    """2,600 tasks and ~45,700 trials a run (the real preset's size), 40 tasks broken and 25 fixed."""
    rng = random.Random(2600)
    broken, fixed = set(rng.sample(range(2600), 40)), set()
    fixed = set(rng.sample(sorted(set(range(2600)) - broken), 25))
    runs = planted_pair(tmp_path, 2600, 17, broken, fixed, seed=7)
    for name in ("task_diff", "run_diff"):
        got = rlsql.query(name, runs).to_dicts()
        assert_rows_match(got, oracle.expected(name, runs), f"{name} on a real-sized pair")
    assert {
        r["task_name"] for r in rlsql.query("task_diff", runs, alpha=1e-4).to_dicts() if r["verdict"] != "same"
    } == {f"task-{t:04d}" for t in broken | fixed}


# -- the report ---------------------------------------------------------------------------------------------
def _report(runs: list[Path], out: Path, **params: str) -> str:
    from rlsql.outputs.report import build_report
    from rlsql.runs.folders import resolve_runs

    with pytest.warns(rlsql.RlsqlWarning):  # the hand-made runs have no trainer metrics: said once
        build_report(resolve_runs([str(r) for r in runs]), out, "md", params=params)
    return (out / "report.md").read_text(encoding="utf-8")


def test_the_report_compares_with_the_baseline_when_given_one(tmp_path: Path) -> None:
    runs = hand_pair(tmp_path / "runs")
    text = _report(runs, tmp_path / "with", baseline="a_base")
    section = text[text.index("## Compared with the baseline") :]
    assert "- [Compared with the baseline](#compared-with-the-baseline)" in text
    # run_diff's line (worked out by hand in test_run_diff_by_hand), then the two changed tasks, t1 and t2
    assert "| b_run | a_base | 6 | 1 | 1 | -0.4667 | -1.12 | 0.1867 | 0.7391 | 0.3684 |" in section
    task_rows = [line for line in section.splitlines() if line.startswith("| b_run | t")]
    assert [line.split(" | ")[1:3] for line in task_rows] == [["t1", "regressed"], ["t2", "improved"]]
    assert "with alpha=0.05, baseline=a_base" in text

    plain = _report(runs, tmp_path / "without")
    assert "Compared with the baseline" not in plain and "alpha=" not in plain

    nobody = _report(runs, tmp_path / "nobody", baseline="no_such_run")
    assert "No run is named no_such_run: nothing to compare with." in nobody


def test_alpha_past_one_is_a_usage_error(capsys, monkeypatch) -> None:
    """A false discovery rate above 1 is no rate: `-p alpha=2` called every changed task regressed or improved.
    It is refused before any file is read (the header's `max 1`), as a value below the minimum is."""
    from tests.test_cli import run_main

    for name in ("task_diff", "run_diff"):
        code, _, err = run_main(["query", name, "-r", str(RUNS / "tiny"), "-p", "alpha=2"], capsys, monkeypatch)
        assert code == 2 and err.strip() == "rlsql: error: parameter alpha: 2.0 is above the maximum 1", (name, err)
