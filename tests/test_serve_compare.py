"""rlsql serve's views of comparing runs (docs/serve.md, docs/compare.md): the compare page's run_diff line
and task grid, and the fleet page's group_curves bands. The figures are checked against tests/oracle.py and
against the hand-made pair of tests/test_compare.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests import oracle
from tests.conftest import ROOT
from tests.test_compare import hand_pair
from tests.test_serve import chart_specs, client, close, tables


def test_the_compare_page_shows_run_diff_and_the_task_grid(tmp_path: Path) -> None:
    runs = hand_pair(tmp_path)
    with client(runs) as c:
        page = c.get("/compare?run=a_base&run=b_run").text
    found = tables(page)
    # run_diff's line, as rlsql query run_diff prints it (worked out in test_compare.test_run_diff_by_hand)
    assert found["run_diff"] == [
        [
            "run",
            "baseline",
            "shared_tasks",
            "improved",
            "regressed",
            "mean_delta",
            "ci_low",
            "ci_high",
            "success_base",
            "success_run",
        ],
        ["b_run", "a_base", "6", "1", "1", "-0.4667", "-1.12", "0.1867", "0.7391", "0.3684"],
    ]
    grid = found["task_rates"]
    assert grid[0] == ["task", "a_base (baseline)", "b_run"]
    # the changed tasks first (t1 and t2, q = 1/42), then every other task of either run by name
    assert [row[0] for row in grid[1:]] == ["t1", "t2", "no_reward", "only_base", "t3", "t4", "t5", "t6"]
    assert grid[1][1:] == ["1", "0"] and grid[2][1:] == ["0", "1"]  # 5/5 -> 0/5, 0/5 -> 5/5
    assert grid[3][1:] == ["0.5", ""]  # the run's trials of no_reward have no reward: no rate
    assert grid[8][1:] == ["0.8", "0"]  # t6: 4/5 -> 0/3
    # each cell links to the task's trials in its run; the verdicts tint the run's cells
    assert '<td class="num regressed"><a href="/trials?run=b_run&amp;task=t1"' in page
    assert '<td class="num improved"><a href="/trials?run=b_run&amp;task=t2"' in page
    assert '<td class="num"><a href="/trials?run=a_base&amp;task=t1"' in page
    assert len(re.findall(r'class="num (?:regressed|improved)"', page)) == 2


def test_the_compare_page_takes_the_baseline_and_alpha(tmp_path: Path) -> None:
    runs = hand_pair(tmp_path)
    with client(runs) as c:
        page = c.get("/compare?run=a_base&run=b_run&baseline=b_run&alpha=0.21").text
    found = tables(page)
    assert found["run_diff"][1][:5] == ["a_base", "b_run", "6", "2", "1"]  # from b_run's side: t1 and t3 improved
    assert found["task_rates"][0] == ["task", "a_base", "b_run (baseline)"]
    assert len(re.findall(r'class="num improved"', page)) == 2


def test_the_fleet_page_draws_group_curves_as_bands(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from make_fleet import make_fleet
    finally:
        sys.path.remove(str(ROOT / "bench"))
    fleet = make_fleet(12, tmp_path / "fleet", vary=True)
    with client(fleet) as c:
        page = c.get("/?band=fleet.lr&span=3").text
        without = c.get("/").text
    assert "fleet-bands" not in chart_specs(without)
    spec = chart_specs(page)["fleet-bands"]
    want = oracle.expected("group_curves", fleet, key="fleet.lr", span=3)
    assert spec["x"] == sorted({r["step"] for r in want})
    series = {s["label"]: s["values"] for s in spec["series"]}
    for value in {r["value"] for r in want}:
        rows = {r["step"]: r for r in want if r["value"] == value}
        name = f"fleet.lr = {value if value is not None else '(no value)'}"
        runs = max(r["runs"] for r in rows.values())
        mean = series[f"{name} ({runs} run{'s' if runs != 1 else ''})"]
        low = series[f"{name} ci_low"]
        for i, step in enumerate(spec["x"]):
            assert close(mean[i], rows[step]["mean_ema"] if step in rows else None), (value, step)
            assert close(low[i], rows[step]["ci_low"] if step in rows else None), (value, step)


def test_a_baseline_outside_the_compared_runs_is_a_400_naming_them(tmp_path: Path) -> None:
    """task_diff answers no rows for a baseline it does not compare, which the page drew as "nothing changed"
    under a dropdown showing another run: the page says what is wrong instead."""
    runs = hand_pair(tmp_path)
    with client(runs) as c:
        response = c.get("/compare?run=a_base&run=b_run&baseline=nosuch")
    assert response.status_code == 400
    assert "baseline &#39;nosuch&#39; is not among the runs compared (a_base, b_run)" in response.text
