"""`rlsql serve` keeps the per-run queries' rows per run (rlsql/serve/state.py PER_RUN): after one run's file
changes, the fleet page computes that run's rows alone, and its rows are those of the oracle over every run."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from rlsql.cache.mirrors import resolve_runs
from rlsql.core.settings import Settings
from rlsql.engine import query
from rlsql.serve import pages, state
from rlsql.serve.state import Served
from tests import oracle
from tests.conftest import RUNS
from tests.test_serve import same_rows

NAMES = ("calendar", "harbor_csv", "newest", "tiny")
#: the compare page's queries kept per run that read the trainer metrics
COMPARED = ("reward_curve", "best_checkpoint", "step_time_stack", "step_signals")
#: the compare page's queries that read the trials alone (with Harbor's folders and the runs' listing)
TRIALS_ONLY = ("turn_histogram", "exception_treatment", "run_diff", "task_diff", "task_rates")


@pytest.fixture
def fleet(tmp_path: Path) -> list[Path]:
    """Copies of four fixture runs (a test changes them)."""
    for name in NAMES:
        shutil.copytree(RUNS / name, tmp_path / name)
    return [tmp_path / name for name in NAMES]


def served(dirs: list[Path]) -> Served:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newest has no config: said once per query, not what is tested here
        return Served(resolve_runs([str(d) for d in dirs]), Settings(), poll_seconds=0)


def append_step(run: Path) -> None:
    metrics = next(run.glob("*[0-9]_metrics_table.csv"))
    lines = metrics.read_text().splitlines()
    header = lines[0].split(",")
    cells = dict(zip(header, lines[-1].split(","), strict=True))
    step = int(float(cells["global_step"])) + 1
    cells.update({"global_step": str(step), "trainer/global_step": str(step), "reward/avg_raw_reward": "0.125"})
    with metrics.open("a") as fh:
        fh.write(",".join(cells[h] for h in header) + "\n")


def fleet_page(s: Served) -> pages.Fleet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pages.fleet(s, {})


@pytest.fixture
def asked(monkeypatch) -> list[tuple[str, tuple[str, ...]]]:
    """Each named query's statement as the server asks rlsql for it: (name, the runs it is over)."""
    seen: list[tuple[str, tuple[str, ...]]] = []
    real, real_batch = state.run_query, state.run_queries

    def recording(name, runs, *args, **kwargs):
        seen.append((name, tuple(r.name for r in runs)))
        return real(name, runs, *args, **kwargs)

    def recording_batch(names, runs, *args, **kwargs):
        seen.extend((name, tuple(r.name for r in runs)) for name in names)
        return real_batch(names, runs, *args, **kwargs)

    monkeypatch.setattr(state, "run_query", recording)
    monkeypatch.setattr(state, "run_queries", recording_batch)
    return seen


def over(asked: list[tuple[str, tuple[str, ...]]], name: str) -> list[tuple[str, ...]]:
    return [runs for n, runs in asked if n == name]


def expected_run_table(dirs: list[Path]) -> list[dict]:
    return [row for d in dirs for row in oracle.q_run_table(d.name, d, run_dirs=dirs)]


def seen_changed(s, asked) -> None:
    """The server notices that tiny changed (and only tiny), and the record of what is asked starts afresh."""
    assert s.refresh() == ["tiny"]
    asked.clear()


def test_one_changed_run_is_the_only_one_computed_again(fleet, asked) -> None:
    s = served(fleet)
    fleet_page(s)
    assert over(asked, "run_table") == [NAMES] and over(asked, "findings") == [NAMES]
    append_step(fleet[NAMES.index("tiny")])
    seen_changed(s, asked)
    page = fleet_page(s)
    assert over(asked, "run_table") == [("tiny",)] and over(asked, "findings") == [("tiny",)]
    # the page's rows: the oracle's over every run, and a fresh server's
    table = s.named("run_table", s.pick(None))
    assert table.columns[: len(expected_run_table(fleet)[0])] == list(expected_run_table(fleet)[0])
    assert same_rows(table.dicts(), expected_run_table(fleet))
    found = s.named("findings", s.pick(None))
    assert same_rows(found.dicts(), [row for d in fleet for row in oracle.q_findings(d.name, d)])
    fresh = fleet_page(served(fleet))
    assert page.table.columns == fresh.table.columns and page.table.rows == fresh.table.rows
    asked.clear()
    fleet_page(s)
    assert asked == []  # nothing changed since: every answer from memory


def test_a_config_change_that_changes_the_columns_recomputes_every_run(fleet, asked) -> None:
    """run_table's config columns depend on the set of runs: a key that now differs is a new column, so every
    run's row is computed again, and it has that column."""
    s = served(fleet)
    fleet_page(s)
    config = fleet[NAMES.index("tiny")] / "rl_config.yaml"
    config.write_text(config.read_text() + "\nextra_key: 7\n")
    seen_changed(s, asked)
    page = fleet_page(s)
    assert over(asked, "run_table") == [NAMES] and over(asked, "findings") == [("tiny",)]
    assert "extra_key" in page.table.columns
    assert same_rows(s.named("run_table", s.pick(None)).dicts(), expected_run_table(fleet))
    fresh = fleet_page(served(fleet))
    assert page.table.columns == fresh.table.columns and page.table.rows == fresh.table.rows


def test_the_compare_page_computes_the_changed_run_alone(fleet, asked, monkeypatch) -> None:
    """The compare page's per-run queries: after one of its runs' metrics changed, that run alone, and the
    queries reading its trials alone not at all; the rows are those of every query computed whole (one
    statement over both runs, nothing kept per run)."""
    s = served(fleet)
    both = ["calendar", "tiny"]
    connections: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    real_connection = query.queries_connection

    def connecting(runs, names, *args, **kwargs):
        connections.append((tuple(r.name for r in runs), tuple(names)))
        return real_connection(runs, names, *args, **kwargs)

    monkeypatch.setattr(query, "queries_connection", connecting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages.compare_page(s, both, {})
        append_step(fleet[NAMES.index("tiny")])
        seen_changed(s, asked)
        connections.clear()
        pages.compare_page(s, both, {})
    # one connection over the changed run answers the five (compare_runs with both runs' configs: Served.warm)
    assert [(runs, sorted(names)) for runs, names in connections] == [(("tiny",), sorted((*COMPARED, "compare_runs")))]
    for name in COMPARED:
        assert over(asked, name) == [("tiny",)], name
    for name in TRIALS_ONLY:
        assert over(asked, name) == [], name
    assert over(asked, "compare_runs") == [("tiny",)]  # its row with both runs' configs (SourceContext.peers)
    runs = s.pick(both)
    kept = {name: s.named(name, runs) for name in (*COMPARED, "compare_runs")}
    monkeypatch.setattr(state, "PER_RUN", frozenset())
    whole = served(fleet)
    for name, answer in kept.items():
        fresh = whole.named(name, whole.pick(both))
        assert (answer.columns, answer.rows) == (fresh.columns, fresh.rows), name
        assert answer.rows, name


def test_a_changed_run_lacking_what_a_query_reads_keeps_its_row(fleet, asked) -> None:
    """harbor_csv has no trainer metrics: run_table (optional: true) gives it a row of its trial figures, alone
    as over the fleet. After its trials changed, the fleet page asks that run alone again, and has its row."""
    s = served(fleet)
    fleet_page(s)
    trials = next((fleet[NAMES.index("harbor_csv")]).glob("*_trial_results.csv"))
    lines = trials.read_text().splitlines()
    trials.write_text("\n".join([*lines, lines[-1]]) + "\n")
    assert s.refresh() == ["harbor_csv"]
    asked.clear()
    page = fleet_page(s)
    assert over(asked, "run_table") == [("harbor_csv",)]
    assert "harbor_csv" in [row[0] for row in page.table.rows]
    assert same_rows(s.named("run_table", s.pick(None)).dicts(), expected_run_table(fleet))


def append_trial(run: Path, task: str, reward: float) -> None:
    trials = next(run.glob("*_trial_results.csv"))
    header = trials.read_text().splitlines()[0].split(",")
    cells = dict.fromkeys(header, "")
    cells.update({"task_name": task, "trial_name": f"{task}__appended", "n_episodes": "2.0", "reward": str(reward)})
    with trials.open("a") as fh:
        fh.write(",".join(cells[h] for h in header) + "\n")


def test_kept_and_recomputed_answers_are_those_of_the_changed_files(fleet, asked) -> None:
    """Answers are kept per run and per kind of file: after a metrics row, task_diff (trials only) is kept and
    reward_curve computed again; after a trial row, the other way round. Each time both equal the oracle over
    the files as they are now."""
    s = served(fleet)
    both = ["calendar", "tiny"]
    dirs = [fleet[NAMES.index(n)] for n in both]
    tiny = fleet[NAMES.index("tiny")]

    def check() -> None:
        runs = s.pick(both)
        curve = s.named("reward_curve", runs)
        assert same_rows(curve.dicts(), [row for d in dirs for row in oracle.q_reward_curve(d.name, d)])
        diff = s.named("task_diff", runs, {"baseline": "calendar"})
        want = oracle.q_task_diff("tiny", tiny, baseline="calendar", run_dirs=dirs)
        assert want and same_rows(diff.dicts(), want)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages.compare_page(s, both, {})
        append_step(tiny)
        seen_changed(s, asked)
        pages.compare_page(s, both, {})
        assert over(asked, "reward_curve") == [("tiny",)] and over(asked, "task_diff") == []
        check()
        append_trial(tiny, "calendar-0002", 0.0)  # one more trial of a shared task, failed: its rate falls
        seen_changed(s, asked)
        pages.compare_page(s, both, {})
        assert over(asked, "task_diff") == [tuple(both)] and over(asked, "reward_curve") == []
        check()
    rows = s.named("task_diff", s.pick(both), {"baseline": "calendar"}).dicts()
    assert [(r["trials_run"], r["successes_run"]) for r in rows if r["task_name"] == "calendar-0002"] == [(3, 2)]


def test_compare_runs_kept_per_run_follows_every_runs_config(fleet, asked) -> None:
    """compare_runs is kept per run, each row's differing_config against every run compared: after a metrics
    row its changed run alone is computed again (with both runs' configs); after a config key is added to one
    run, both rows are (the other run now lacks that key). Each time the rows equal the oracle's."""
    s = served(fleet)
    both = ["calendar", "tiny"]
    dirs = [fleet[NAMES.index(n)] for n in both]
    tiny = fleet[NAMES.index("tiny")]

    def check() -> list[dict]:
        rows = s.named("compare_runs", s.pick(both)).dicts()
        assert same_rows(rows, [row for d in dirs for row in oracle.q_compare_runs(d.name, d, run_dirs=dirs)])
        return rows

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages.compare_page(s, both, {})
        append_step(tiny)
        seen_changed(s, asked)
        pages.compare_page(s, both, {})
        assert over(asked, "compare_runs") == [("tiny",)]
        check()
        config = tiny / "rl_config.yaml"
        config.write_text(config.read_text() + "\nextra_key: 7\n")
        seen_changed(s, asked)
        pages.compare_page(s, both, {})
        assert over(asked, "compare_runs") == [tuple(both)]
        rows = check()
    assert "extra_key=<missing>" in rows[0]["differing_config"] and "extra_key=7" in rows[1]["differing_config"]
