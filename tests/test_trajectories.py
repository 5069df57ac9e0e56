"""Agents' trajectories (docs/trajectories.md): the views and named queries against tests/oracle.py, which reads
the ATIF files with plain json from the contract alone; the awkward cases (damaged files, bad counts, canonical
arguments, names that are no segment, trials in flight, runs without trajectories) checked here by hand."""

from __future__ import annotations

import json
import random
import re
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.core.errors import RlsqlWarning
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import FIXTURE_RUNS, RUNS

VIEWS = ["trajectory_steps", "tool_calls", "tool_call_names", "tool_call_arguments"]
QUERIES = ["tool_usage", "token_usage", "looping_trials"]
#: the runs whose trace_jobs hold trajectories (one reads its trials from result.json, one from a CSV)
WITH_TRAJECTORIES = ["harbor", "harbor_csv"]


def rows_of(name: str, runs: list[Path], **params) -> tuple[list[dict], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = rlsql.query(name, runs, **params).to_dicts()
    return rows, [str(w.message) for w in caught if issubclass(w.category, RlsqlWarning)]


def expected(name: str, runs: list[Path], **params) -> list[dict]:
    if name in VIEWS:
        return oracle.expected_trajectory_view(name, runs)
    return oracle.expected(name, runs, **params)


def test_fixture_runs_hold_the_trajectories() -> None:
    for run in WITH_TRAJECTORIES:
        files, trials, without = oracle.trajectory_files(RUNS / run)
        assert len(files) > 15 and trials > without, run
    assert oracle.trajectory_files(RUNS / "harbor")[2] > 0  # trial folders without a trajectory
    assert all(not oracle.trajectory_files(RUNS / r)[0] for r in FIXTURE_RUNS if r not in WITH_TRAJECTORIES)
    # both trial sources: result.json files beside the trajectories, and a trials CSV with trace_jobs beside it
    assert (RUNS / "harbor" / "trace_jobs").is_dir() and not list(RUNS.glob("harbor/*_trial_results.csv"))
    assert list(RUNS.glob("harbor_csv/*_trial_results.csv"))
    assert list(RUNS.glob("harbor_csv/trace_jobs/*/result.json"))  # the CSV and the JSON it was parsed from


@pytest.mark.parametrize("run", WITH_TRAJECTORIES)
@pytest.mark.parametrize("name", VIEWS + QUERIES)
def test_each_run_matches_the_oracle(name: str, run: str) -> None:
    got, _ = rows_of(name, [RUNS / run])
    want = expected(name, [RUNS / run])
    assert want, f"the oracle has no {name} rows for {run}: the fixture does not exercise it"
    assert_rows_match(got, want, f"{name} on {run}")


@pytest.mark.parametrize("name", VIEWS + QUERIES)
def test_all_fixture_runs_at_once_match_the_oracle(name: str) -> None:
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    got, messages = rows_of(name, dirs)
    assert_rows_match(got, expected(name, dirs), f"{name} on all fixture runs")
    for run in FIXTURE_RUNS:
        if run not in WITH_TRAJECTORIES:
            assert any(f"run {run!r} has no agent trajectories" in m for m in messages), (run, messages)


@pytest.mark.parametrize("min_repeats", [2, 3, 4, 5])
def test_looping_trials_min_repeats(min_repeats: int) -> None:
    dirs = [RUNS / r for r in WITH_TRAJECTORIES]
    got, _ = rows_of("looping_trials", dirs, min_repeats=min_repeats)
    want = oracle.expected("looping_trials", dirs, min_repeats=min_repeats)
    assert_rows_match(got, want, f"looping_trials min_repeats={min_repeats}")
    assert all(r["repeats"] >= min_repeats for r in got)


def test_min_repeats_below_two_is_refused() -> None:
    with pytest.raises(rlsql.UsageError, match="min_repeats"):
        rlsql.query("looping_trials", [RUNS / "harbor"], min_repeats=1)


def test_a_run_without_trajectories_is_a_clear_error() -> None:
    for name in VIEWS + QUERIES:
        with pytest.raises(rlsql.DataError, match=r"agent trajectories of run 'tiny'.*trace_jobs/\*/agent/trajectory"):
            rlsql.query(name, [RUNS / "tiny"])


def test_the_awkward_cases_are_in_the_rows() -> None:
    """What the fixtures were written to hold, seen in rlsql's rows (values the oracle also computes)."""
    steps, _ = rows_of("trajectory_steps", [RUNS / "harbor"])
    calls, _ = rows_of("tool_calls", [RUNS / "harbor"])
    by_trial: dict[str, list[dict]] = {}
    for s in steps:
        by_trial.setdefault(s["trial_name"], []).append(s)
    loop = by_trial["calendar-0005__bu8dLSg"]
    assert sorted({s["segment"] for s in loop}) == [0, 1, 2]  # summarisation file and cont-01/cont-0 not read
    assert [s["turn"] for s in loop if s["turn"] is not None] == [1, 2, 3, 4, 5, 6]
    assert any(s["copied"] and s["source"] == "agent" and s["turn"] is None for s in loop)
    gap = by_trial["calendar-0003__32FpgNy"]
    assert sorted({s["segment"] for s in gap}) == [0, 1, 3]
    assert gap[0]["message_chars"] == len("Task: the calendar in the screenshot.")  # the image part counts 0
    assert "calendar-0099__inflght" in by_trial  # a trajectory without result.json is read
    offsets = {s["ts"] for s in by_trial["calendar-0004__sdoyP4h"]}  # first segment read, cont-1 damaged
    assert offsets and all(s["segment"] == 0 for s in by_trial["calendar-0004__sdoyP4h"])
    assert None in {s["ts"] for s in by_trial["calendar-0006__P3FRRu2"]}  # 'Wed Jun 10 07:31:05 UTC 2026'
    bad = by_trial["calendar-0003__8d5Frkd"]
    assert bad[1]["prompt_tokens"] is None and bad[1]["completion_tokens"] is None and bad[1]["cached_tokens"] == 10
    assert bad[2]["prompt_tokens"] == 2**53  # exactly 2**53 is a count
    search = [c for c in calls if c["function_name"] == "search_calendar"]
    # four calls, the first, second and fourth the same but for the order of their keys
    assert [c["arguments"] == search[0]["arguments"] for c in search] == [True, True, False, True]
    assert search[0]["arguments"] == (
        '{"query":{"limit":10,"where":{"room":"Zürich","size":[1,2.0,{"a":null,"b":true}]}},"verbose":1.0}'
    )


def test_damaged_files_are_each_named_once_and_the_rest_read() -> None:
    damaged = [p for _, _, p in oracle.trajectory_files(RUNS / "harbor")[0] if oracle.read_trajectory(p) is None]
    assert len(damaged) == 8
    for name in VIEWS + QUERIES:
        rows, messages = rows_of(name, [RUNS / "harbor"])
        assert rows
        for path in damaged:
            named = [m for m in messages if str(path) in m]
            assert len(named) == 1, (name, path, messages)
            assert "skipped, not an ATIF trajectory" in named[0]


def test_a_continuation_numbered_past_the_largest_segment_is_one_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    """Issue 42, item 8: `trajectory.cont-3000000000.json` stopped every trajectory query of the run and `rlsql
    trial` (its number does not fit the INTEGER segment); it is a damaged file: one warning, the rest read."""
    import shutil

    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    trial = "calendar-0001__G7Xfn9r"
    far = run / "trace_jobs" / trial / "agent" / "trajectory.cont-3000000000.json"
    shutil.copyfile(run / "trace_jobs" / trial / "agent" / "trajectory.json", far)
    for name in VIEWS + QUERIES:
        rows, messages = rows_of(name, [run])
        assert_rows_match(rows, expected(name, [run]), name)
        assert len([m for m in messages if str(far) in m and "continuation number" in m]) == 1, (name, messages)
    code, out, err = _trial([trial, "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code in (0, None), err
    got = json.loads(out)
    assert [d["file"] for d in got["damaged_files"]] == [str(far)]
    assert {s["segment"] for s in got["steps"]} == {0}


def test_a_trial_folder_removed_while_the_query_reads_is_skipped_with_a_warning(tmp_path: Path, monkeypatch) -> None:
    """Issue 42, item 7: a trial folder removed (a clean-up, a retry) after DuckDB listed the files and before it
    opened them failed the whole query (`Cannot open file`). Made deterministic: the first damaged file the
    statement meets (DAMAGED_FUNCTION, called as the file streams past) removes the last trial's agent/ folder,
    which one reader (READERS = 1) opens after it. The answer is the oracle's without that trial."""
    import shutil

    from rlsql.duck import damagedfiles
    from rlsql.runs import trajectories

    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    last = sorted(t for t, _, _ in oracle.trajectory_files(run)[0])[-1]
    doomed = run / "trace_jobs" / last / "agent"
    monkeypatch.setattr(trajectories, "READERS", 1)

    def record_damaged(con):  # damagedfiles.record_damaged, and the clean-up racing the read
        seen: dict = {}
        damagedfiles._RECORDERS[con] = seen

        def damaged(run_name: str, path: str, problem: str) -> str:
            shutil.rmtree(doomed, ignore_errors=True)
            seen.setdefault(path, (run_name, problem))
            return problem

        con.create_function(
            trajectories.DAMAGED_FUNCTION, damaged, ["VARCHAR", "VARCHAR", "VARCHAR"], "VARCHAR", side_effects=True
        )
        return seen

    monkeypatch.setattr(damagedfiles, "record_damaged", record_damaged)
    monkeypatch.setenv("RLSQL_CACHE", "off")
    rows, messages = rows_of("tool_usage", [run])
    assert not doomed.exists()  # the clean-up ran, during the read
    assert_rows_match(rows, oracle.expected("tool_usage", [run]), "tool_usage without the removed trial")
    removed = [m for m in messages if "removed while rlsql read it" in m]
    assert len(removed) == 1 and f"trial {last!r} skipped" in removed[0], messages


def test_a_file_over_the_size_limit_is_named_and_the_rest_read(tmp_path: Path, monkeypatch) -> None:
    """RLSQL_TRAJECTORY_MAX_BYTES: a larger file is skipped with one warning naming it (never opened: a 3 GB file
    must not fail its run's queries); every other trial is read, as the oracle reads it."""
    agent = tmp_path / "run" / "trace_jobs"
    sizes = {}
    for trial, words in (("t__small", 10), ("t__large", 400)):
        (agent / trial / "agent").mkdir(parents=True)
        path = agent / trial / "agent" / "trajectory.json"
        path.write_text(
            json.dumps(
                {
                    "agent": {"name": "a", "version": "1"},
                    "steps": [
                        {"step_id": 1, "source": "user", "message": "word " * words},
                        {
                            "step_id": 2,
                            "source": "agent",
                            "message": "ok",
                            "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}],
                        },
                    ],
                }
            )
        )
        sizes[trial] = path.stat().st_size
    monkeypatch.setenv("RLSQL_TRAJECTORY_MAX_BYTES", str(sizes["t__small"] + 100))
    assert sizes["t__large"] > sizes["t__small"] + 100
    for name in ["trajectory_steps", "tool_calls", "tool_call_arguments"]:
        rows, messages = rows_of(name, [tmp_path / "run"])
        assert {r["trial_name"] for r in rows} == {"t__small"}, name
        named = [m for m in messages if "t__large" in m]
        assert len(named) == 1 and f"{sizes['t__large']:,} bytes, over the limit" in named[0], messages
    monkeypatch.delenv("RLSQL_TRAJECTORY_MAX_BYTES")
    rows, messages = rows_of("trajectory_steps", [tmp_path / "run"])
    assert {r["trial_name"] for r in rows} == {"t__small", "t__large"} and not messages


def _calls_run(root: Path, arguments: dict[str, str]) -> Path:
    """A run with one trial per entry: its one tool call's arguments written as the given JSON text."""
    for trial, text in arguments.items():
        agent = root / "trace_jobs" / trial / "agent"
        agent.mkdir(parents=True)
        (agent / "trajectory.json").write_text(
            '{"agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "agent", "message": "m", '
            f'"tool_calls": [{{"tool_call_id": "c1", "function_name": "f", "arguments": {text}}}]}}]}}'
        )
    return root


def test_arguments_nested_past_the_depth_limit_read_as_empty_with_a_warning(tmp_path: Path) -> None:
    """Issue 42 item 10: arguments nesting objects and arrays more than 100 deep are NULL and the file is named
    once (the other calls and files read); 100 deep is still canonical text, as the oracle writes it."""
    nested = {depth: '{"a": ' * (depth - 1) + '["[{", "\\"", 1]' + "}" * (depth - 1) for depth in (100, 101)}
    run = _calls_run(
        tmp_path / "run",
        {
            "t__100": nested[100],
            "t__101": nested[101],
            "t__wide": "[" + ", ".join(['{"x": [1, {"y": [2]}]}'] * 300) + "]",
        },
    )
    _, want = oracle.trajectory_rows(run)
    assert [c["arguments"] is None for c in want] == [False, True, False]
    for name in ("tool_calls", "tool_call_arguments"):
        got, messages = rows_of(name, [run])
        assert [(g["trial_name"], g["arguments"]) for g in got] == [(w["trial_name"], w["arguments"]) for w in want]
        assert (
            len(messages) == 1
            and "t__101/agent/trajectory.json: steps[0].tool_calls[0].arguments: nested more "
            "than 100 deep, read as empty"
            in messages[0]
            and "skipped" not in messages[0]
        ), messages


def test_arguments_nested_5000_deep_stay_within_a_gigabyte(tmp_path: Path) -> None:
    """A 35 KB file whose arguments nest 5,000 deep took 1.5 GB (the walk of the canonical text costs the square of
    the depth): under an address-space limit of 1 GB (RLIMIT_AS, the same on any machine) the query answers."""
    import resource
    import subprocess
    import sys

    run = _calls_run(tmp_path / "run", {"t__deep": '{"a": ' * 5000 + "1" + "}" * 5000, "t__ok": '{"b": [1]}'})

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    done = subprocess.run(
        [sys.executable, "-m", "rlsql", "query", "tool_calls", "-r", str(run), "-f", "json"],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [(r["trial_name"], r["arguments"]) for r in json.loads(done.stdout)] == [
        ("t__deep", None),
        ("t__ok", '{"b":[1]}'),
    ]
    assert "t__deep/agent/trajectory.json: steps[0].tool_calls[0].arguments: nested more than 100 deep" in done.stderr


def test_bad_token_counts_are_named_in_a_warning() -> None:
    _, messages = rows_of("token_usage", [RUNS / "harbor_csv"])
    named = [m for m in messages if "calendar-0003__8d5Frkd/agent/trajectory.json" in m]
    assert len(named) == 1, messages
    assert "steps[1].metrics.prompt_tokens: 9007199254740994" in named[0]
    assert "steps[1].metrics.completion_tokens: -5" in named[0]


def test_rlsql_sql_sees_the_views() -> None:
    from rlsql.engine.query import run_sql
    from rlsql.runs.folders import resolve_runs

    result = run_sql(
        "SELECT count(*) AS n FROM trajectory_steps JOIN trials USING (run, trial_name)",
        resolve_runs([RUNS / "harbor_csv"]),
    )
    steps, _ = oracle.trajectory_rows(RUNS / "harbor_csv")
    in_csv = {t["trial_name"] for t in oracle.read_trials(RUNS / "harbor_csv")}
    assert result.rows == [(sum(1 for s in steps if s["trial_name"] in in_csv),)]


def test_check_counts_trials_without_a_trajectory_and_names_damaged_files() -> None:
    from rlsql.inspection.check import check_runs
    from rlsql.runs.folders import resolve_runs

    reports = {r.run: r for r in check_runs(resolve_runs([str(RUNS / "harbor"), str(RUNS / "harbor_csv")]))}
    for run in WITH_TRAJECTORIES:
        files, trials, without = oracle.trajectory_files(RUNS / run)
        damaged = sorted(str(p) for _, _, p in files if oracle.read_trajectory(p) is None)
        issues = reports[run].issues
        counted = [i.problem for i in issues if i.problem.startswith(f"{trials - without} of {trials} trial folders")]
        assert len(counted) == 1 and f"{without} have none" in counted[0], [i.problem for i in issues]
        named = sorted(i.file for i in issues if i.severity == "warning" and "not an ATIF trajectory" in i.problem)
        assert named == damaged
        assert reports[run].readable_rows["trajectories"] == len(files) - len(damaged)
        bad = sorted(i.problem for i in issues if i.file.endswith("calendar-0003__8d5Frkd/agent/trajectory.json"))
        assert bad == [
            "steps[1].metrics.completion_tokens: -5 is not a whole number from 0 to 2**53: read as empty",
            "steps[1].metrics.prompt_tokens: 9007199254740994 is not a whole number from 0 to 2**53: read as empty",
        ]
    assert len([i for i in reports["harbor"].issues if "not an ATIF trajectory" in i.problem]) == 8


def test_check_names_each_trajectory_defect_in_one_line(tmp_path: Path) -> None:
    """From the analyst's trial (issue 42): an unparsable timestamp, a source_call_id naming no call, a continuation
    gap, a trial in flight and a trial folder without agent/ each get one line of `rlsql check`; the expectations
    are worked out here from the files with plain json (the oracle's timestamp rule)."""
    import shutil

    from rlsql.inspection.check import check_runs
    from rlsql.runs.folders import resolve_runs

    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    files = oracle.trajectory_files(run)[0]
    readable = [(t, seg, p) for t, seg, p in files if oracle.read_trajectory(p) is not None]
    # plant an observation answering no call in the first readable file's first step with an observation
    planted = next(p for _, _, p in readable if any(s.get("observation") for s in oracle.read_trajectory(p)["steps"]))
    doc = json.loads(planted.read_text(encoding="utf-8"))
    step = next(s for s in doc["steps"] if s.get("observation"))
    step["observation"]["results"].append({"source_call_id": "call_nobody", "content": "x"})
    planted.write_text(json.dumps(doc), encoding="utf-8")
    trace_jobs = run / "trace_jobs"

    orphans, stamps, gaps = {}, {}, {}
    for _, _, path in readable:
        doc = oracle.read_trajectory(path)
        assert doc is not None
        for s in doc["steps"]:
            ids = {c.get("tool_call_id") for c in s.get("tool_calls") or [] if isinstance(c, dict)}
            results = (s.get("observation") or {}).get("results") or []
            found = [
                r["source_call_id"]
                for r in results
                if isinstance(r.get("source_call_id"), str) and r["source_call_id"] not in ids
            ]
            orphans.setdefault(str(path), []).extend(found)
            if isinstance(s.get("timestamp"), str) and oracle._utc(s["timestamp"]) is None:
                stamps.setdefault(str(path), []).append(s["timestamp"])
    for t in sorted({t for t, _, _ in files}):
        numbers = [seg for tt, seg, _ in files if tt == t]
        if set(range(max(numbers))) - set(numbers):
            gaps[t] = sorted(set(range(max(numbers))) - set(numbers))
    in_flight = sorted(t for t in {t for t, _, _ in files} if not (trace_jobs / t / "result.json").exists())
    no_agent = sorted(t.name for t in trace_jobs.iterdir() if t.is_dir() and not (t / "agent").is_dir())

    (report,) = check_runs(resolve_runs([str(run)]))
    lines = [(i.severity, i.file, i.problem) for i in report.issues]
    got_orphans = [(f, p) for _, f, p in lines if "source_call_id names no tool call" in p]
    assert got_orphans == [
        (
            f,
            f"{len(ids)} observation result(s) whose source_call_id names no tool call of their "
            f"step (e.g. {ids[0]!r}): counted for no call",
        )
        for f, ids in sorted(orphans.items())
        if ids
    ]
    assert str(planted) in dict(got_orphans)
    got_stamps = [(f, p) for _, f, p in lines if "timestamp is not ISO 8601" in p]
    assert (
        got_stamps
        == [
            (f, f"{len(v)} step(s) whose timestamp is not ISO 8601 (e.g. {v[0]!r}): ts is empty")
            for f, v in sorted(stamps.items())
            if v
        ]
        and got_stamps
    )
    got_gaps = [f for _, f, p in lines if p.startswith("continuation gap")]
    assert got_gaps == [str(trace_jobs / t / "agent") for t in gaps] and got_gaps
    got_flight = [f for _, f, p in lines if "a trial in flight): its steps are read" in p]
    assert got_flight == [str(trace_jobs / t) for t in in_flight] and got_flight
    got_no_agent = [f for _, f, p in lines if p == "no agent/ folder: the trial has no trajectory"]
    assert got_no_agent == [str(trace_jobs / t) for t in no_agent[:10]]
    assert any(p == f"{len(no_agent) - 10} more trial folders have no agent/ folder" for _, _, p in lines)


def _first_repeat(pairs_text: str) -> tuple[str, str] | None:
    """(object, key) of the first object of the levels rlsql reads that writes a key twice, found with json's
    object_pairs_hook (which sees every pair before json.loads keeps the last)."""

    def pairs(items):
        return {"__pairs__": items, **dict(items)}

    doc = json.loads(pairs_text, object_pairs_hook=pairs)

    def repeated(obj) -> str | None:
        if not isinstance(obj, dict):
            return None
        keys = [k for k, _ in obj["__pairs__"]]
        return next((k for i, k in enumerate(keys) if k in keys[:i]), None)

    steps = doc.get("steps") if isinstance(doc.get("steps"), list) else []
    levels = [("the document", [doc]), ("agent", [doc.get("agent")])]
    levels += [(f"steps[{i}]", [s]) for i, s in enumerate(steps)]
    levels += [("a step's metrics", [s.get("metrics") for s in steps if isinstance(s, dict)])]
    levels += [("a tool call", [c for s in steps if isinstance(s, dict) for c in s.get("tool_calls") or []])]
    for where, objects in levels:
        for obj in objects:
            if (key := repeated(obj)) is not None:
                return where, key
    return None


def test_check_names_a_key_written_twice_which_json_reads_last(tmp_path: Path) -> None:
    """Issue 42, item 4: DuckDB reads a repeated key's first value, Python's json and Harbor the last. rlsql check
    names each such file, the object and the key (found here with json's own object_pairs_hook)."""
    import shutil

    from rlsql.inspection.check import check_runs
    from rlsql.runs.folders import resolve_runs

    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    readable = [p for _, seg, p in oracle.trajectory_files(run)[0] if seg == 0 and oracle.read_trajectory(p)]
    edits = [
        ('"step_id": 2,', '"step_id": 2, "step_id": 7,'),
        ('"function_name":', '"function_name": "rm", "function_name":'),
        ('"prompt_tokens":', '"prompt_tokens": 1, "prompt_tokens":'),
    ]
    for path, (old, new) in zip(readable, edits, strict=False):
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    want = sorted((str(p), *found) for p in readable if (found := _first_repeat(p.read_text(encoding="utf-8"))))
    assert len(want) == 3
    (report,) = check_runs(resolve_runs([str(run)]))
    got = sorted(i.file for i in report.issues if "twice: rlsql reads the first value" in i.problem)
    assert got == [w[0] for w in want]
    for path, where, key in want:
        assert any(i.file == path and i.problem.startswith(f"{where} writes key {key!r} twice") for i in report.issues)
    # what the warning says: the view holds the first value, json.loads the last
    doc = json.loads(readable[0].read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RlsqlWarning)  # the fixture's damaged files, named elsewhere
        rows = rlsql.query("trajectory_steps", [run]).to_dicts()
    steps = [r for r in rows if r["trial_name"] == readable[0].parts[-3]]
    assert doc["steps"][1]["step_id"] == 7 and [r["step_id"] for r in steps if r["segment"] == 0][1] == 2


def test_runs_says_how_many_trials_have_a_trajectory() -> None:
    from rlsql.inspection.inventory import inventory
    from rlsql.runs.folders import resolve_runs

    columns, rows = inventory(resolve_runs([str(RUNS)]))
    got = {row[0]: row[columns.index("trajectories")] for row in rows}
    for run, count in got.items():
        files, _, _ = oracle.trajectory_files(RUNS / run)
        assert count == (len({trial for trial, _, _ in files}) or None), run


# -- canonical arguments: rlsql's SQL against Python's json.dumps over many raw JSON texts -----------------------


def _value(rng: random.Random, depth: int):
    r = rng.random()
    if depth > 3 or r < 0.45:
        return rng.choice(
            [
                1,
                -1,
                0,
                1.0,
                1e5,
                1.5e-7,
                2**70,
                -(2**65),
                0.1,
                1e16,
                123.456,
                True,
                False,
                None,
                "a\nb",
                'é"\\',
                "\x01\x0b\x1f\x7f",
                "ü\u2028\u2029",
                "",
                "tab\t",
                3.14e-300,
                -0.0,
                "😀",
                "\\u000B",
                "/",
                2**53 + 1,
                12345678.9,
            ]
        )
    if r < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["b", "a", "é", "A", "a b", '"', "z", "aa", "ä", "\x0b", "😀", "Z", ""]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


#: raw argument texts whose exact form matters: number literals, a repeated key, escapes, deep nesting
LITERALS = [
    '{"n": 1E400, "m": -1e999, "k": 1e22, "j": 2.5e-5, "i": 18446744073709551616, "h": -0, "g": 1E2}',
    '{"b": 1, "a": 2, "b": 3}',
    '{"x": {"b": 1, "a": {"d": [1, {"z": 1, "y": [2]}], "c": 1.50}}}',
    '{"s": "\\u00e9\\ud83d\\ude00\\n\\u000b"}',
    '{"deep": ' + "[" * 40 + "1" + "]" * 40 + "}",
    '{"nan": NaN, "inf": Infinity}',
    '"a string"',
    "[3, 1, 2]",
    "12.0",
    '{"": {"": []}}',
]


def test_arguments_are_canonical_json(tmp_path: Path) -> None:
    rng = random.Random(26)
    texts = list(LITERALS)
    for _ in range(400):
        value = _value(rng, 0)
        text = json.dumps(
            value if isinstance(value, dict | list) else {"v": value},
            ensure_ascii=rng.random() < 0.5,
            indent=rng.choice([None, 2]),
        )
        texts.append(text)
    calls = ",\n".join(
        f'{{"tool_call_id": "c{i}", "function_name": "f", "arguments": {t}}}' for i, t in enumerate(texts)
    )
    agent = tmp_path / "run" / "trace_jobs" / "t__1" / "agent"
    agent.mkdir(parents=True)
    (agent / "trajectory.json").write_text(
        '{"agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "agent", "message": "",'
        f' "tool_calls": [{calls}]}}]}}',
        encoding="utf-8",
    )
    got, _ = rows_of("tool_calls", [tmp_path / "run"])
    want = [oracle.canonical(json.loads(t)) for t in texts]
    assert len(got) == len(want)
    wrong = [
        (texts[i], g["arguments"], w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if g["arguments"] != w
    ]
    assert not wrong, wrong[:5]


# -- rlsql trial: the transcript -----------------------------------------------------------------------------


def _trial(args: list[str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    from tests.test_cli import run_main

    return run_main(["trial", *args], capsys, monkeypatch)


def test_trial_json_holds_every_step_in_order(capsys, monkeypatch) -> None:
    trial = "calendar-0005__bu8dLSg"
    code, out, _ = _trial([trial, "-r", str(RUNS / "harbor"), "-f", "json"], capsys, monkeypatch)
    assert code in (0, None)
    got = json.loads(out)
    steps, calls = oracle.trajectory_rows(RUNS / "harbor")
    want = [s for s in steps if s["trial_name"] == trial]
    keys = ["segment", "step_id", "turn", "source", "prompt_tokens", "completion_tokens", "cached_tokens", "copied"]
    assert [{k: s[k] for k in keys} for s in got["steps"]] == [{k: s[k] for k in keys} for s in want]
    facts = {t["trial_name"]: t for t in oracle.read_trials(RUNS / "harbor")}[trial]
    assert got["trial"]["reward"] == facts["reward"] and got["trial"]["n_episodes"] == facts["n_episodes"]
    shown = [(c["function_name"], json.loads(c["arguments"])) for s in got["steps"] for c in s["tool_calls"]]
    assert shown == [(c["function_name"], json.loads(c["arguments"])) for c in calls if c["trial_name"] == trial]
    first = json.loads((RUNS / "harbor" / "trace_jobs" / trial / "agent" / "trajectory.json").read_text())
    assert got["steps"][1]["message"] == first["steps"][1]["message"]
    assert got["steps"][1]["observations"][0]["content"] == first["steps"][1]["observation"]["results"][0]["content"]


def test_trial_titles_give_every_step_time_to_the_millisecond(capsys, monkeypatch) -> None:
    """Harbor writes `07:00:27.250000+00:00` and `07:00:52+00:00` in one file: the titles read 07:00:27.250 and
    07:00:52.000 (once 07:00:27.250000 and 07:00:52), worked out here from the file's own strings."""
    trial = "calendar-0001__G7Xfn9r"
    raw = json.loads((RUNS / "harbor" / "trace_jobs" / trial / "agent" / "trajectory.json").read_text())
    stamps = [s["timestamp"] for s in raw["steps"]]
    assert any("." in t for t in stamps) and any("." not in t for t in stamps)  # both kinds, or this shows nothing
    want = []
    for t in stamps:
        day, clock = t.removesuffix("+00:00").split("T")
        whole, _, fraction = clock.partition(".")
        want.append(f"{day} {whole}.{(fraction + '000')[:3]} UTC")
    _, out, _ = _trial([trial, "-r", str(RUNS / "harbor"), "-f", "md"], capsys, monkeypatch)
    assert re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.\d]* UTC", out)[: len(want)] == want


def test_trial_folds_copied_context_and_marks_segments(capsys, monkeypatch) -> None:
    trial = "calendar-0005__bu8dLSg"
    _, out, _ = _trial([trial, "-r", str(RUNS / "harbor"), "-f", "md"], capsys, monkeypatch)
    assert "## Segment 0: trajectory.json" in out and "## Segment 2: trajectory.cont-2.json" in out
    assert "4 steps of context copied from earlier segments (folded" in out
    assert "summarization" not in out
    _, full, _ = _trial([trial, "-r", str(RUNS / "harbor"), "-f", "md", "--full"], capsys, monkeypatch)
    assert "copied context" in full and "folded" not in full
    _, terminal, _ = _trial([trial, "-r", str(RUNS / "harbor")], capsys, monkeypatch)
    assert "segment 1: trajectory.cont-1.json" in terminal and "turn 6" in terminal


def _traceback_of(trial: str) -> str | None:
    """The fixture trial's traceback, read with plain json from its result.json."""
    info = json.loads((RUNS / "harbor" / "trace_jobs" / trial / "result.json").read_text())["exception_info"]
    return info and info.get("exception_traceback")


def test_trial_shows_the_exception_traceback_of_its_result_json(capsys, monkeypatch) -> None:
    trial, calm = "calendar-0001__G7Xfn9r", "calendar-0005__bu8dLSg"
    want = _traceback_of(trial)
    assert want and want.startswith("Traceback") and _traceback_of(calm) is None
    run = str(RUNS / "harbor")
    _, out, _ = _trial([trial, "-r", run, "-f", "json"], capsys, monkeypatch)
    assert json.loads(out)["exception_traceback"] == want
    _, md, _ = _trial([trial, "-r", run, "-f", "md"], capsys, monkeypatch)
    assert f"exception traceback (result.json):\n\n```text\n{want.rstrip()}\n```" in md
    _, terminal, _ = _trial([trial, "-r", run], capsys, monkeypatch)
    assert "exception traceback (result.json)" in terminal and want.splitlines()[-1] in terminal
    _, out, _ = _trial([calm, "-r", run, "-f", "json"], capsys, monkeypatch)
    assert json.loads(out)["exception_traceback"] is None
    _, md, _ = _trial([calm, "-r", run, "-f", "md"], capsys, monkeypatch)
    assert "traceback" not in md


def _expected_repeats(trial: str) -> list[tuple[dict | None, int]]:
    """Per call of `trial` (in order): the first call it repeats (same function, same canonical arguments, copied
    context left out) and how many times the trial makes it, from the oracle's tool_calls rows."""
    _, calls = oracle.trajectory_rows(RUNS / "harbor")
    mine = [c for c in calls if c["trial_name"] == trial]
    counts: dict[tuple, int] = {}
    for c in mine:
        if not c["copied"]:
            counts[(c["function_name"], c["arguments"])] = counts.get((c["function_name"], c["arguments"]), 0) + 1
    seen: dict[tuple, dict] = {}
    out: list[tuple[dict | None, int]] = []
    for c in mine:
        key = (c["function_name"], c["arguments"])
        if c["copied"]:
            out.append((None, 1))
            continue
        out.append((seen.get(key), counts[key]))
        seen.setdefault(key, {"segment": c["segment"], "step_id": c["step_id"]})
    return out


def test_trial_marks_repeated_calls_and_pairs_observations_with_calls(capsys, monkeypatch) -> None:
    trial, run = "calendar-0005__bu8dLSg", str(RUNS / "harbor")
    _, out, _ = _trial([trial, "-r", run, "-f", "json", "--full"], capsys, monkeypatch)
    got = [(c["repeat_of"], c["times"]) for s in json.loads(out)["steps"] for c in s["tool_calls"]]
    want = _expected_repeats(trial)
    assert got == want
    # by hand from the files: `cat notes.txt` (first at step 2) made 4 times, `ls` (first at step 3) twice
    assert [(f["step_id"], t) for f, t in want if f] == [(2, 4), (2, 4), (2, 4), (3, 2)]
    assert max(t for _, t in want) == oracle.expected("looping_trials", [RUNS / "harbor"])[0]["repeats"] == 4
    _, md, _ = _trial([trial, "-r", run, "-f", "md"], capsys, monkeypatch)
    assert md.count("*same call as step 2, x4*") == 1  # in segment 0; the later ones name the segment
    assert md.count("*same call as step 2 of segment 0, x4*") == 2
    _, terminal, _ = _trial([trial, "-r", run], capsys, monkeypatch)
    assert "[same call as step 2, x4]" in terminal.replace("\n", " ").replace("  ", " ")
    assert "← (answers call_1_1) " in terminal and "(call_1_1)" in terminal


def test_trial_cuts_long_texts_unless_full(tmp_path: Path, capsys, monkeypatch) -> None:
    agent = tmp_path / "run" / "trace_jobs" / "t__long" / "agent"
    agent.mkdir(parents=True)
    long = "x" * 5000
    (agent / "trajectory.json").write_text(
        json.dumps(
            {
                "agent": {"name": "a", "version": "1"},
                "steps": [
                    {"step_id": 1, "source": "user", "message": long},
                    {
                        "step_id": 2,
                        "source": "agent",
                        "message": "ok",
                        "observation": {"results": [{"content": long + "y"}]},
                    },
                ],
            }
        )
    )
    _, out, _ = _trial(["t__long", "-r", str(tmp_path / "run"), "-f", "json"], capsys, monkeypatch)
    got = json.loads(out)
    assert got["steps"][0]["message"] == "x" * 600 + "… [4,400 more characters]"
    assert got["steps"][1]["observations"][0]["content"].endswith("[4,401 more characters]")
    assert got["trial"] is None  # no trials row: in flight
    _, out, _ = _trial(["t__long", "-r", str(tmp_path / "run"), "-f", "json", "--full"], capsys, monkeypatch)
    assert json.loads(out)["steps"][0]["message"] == long


@pytest.mark.parametrize("run", WITH_TRAJECTORIES)
def test_trial_looks_at_its_own_folder_alone(run: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """`rlsql trial` costs one trial's files whatever the run's size: trace_jobs is never listed whole (finding the
    run looks at its first entries only), no other trial folder is looked into, and its trials row is the one
    the oracle reads (from result.json or the CSV)."""
    import contextlib
    import os
    import shutil

    trial = "calendar-0005__bu8dLSg" if run == "harbor" else "calendar-0001__G7Xfn9r"
    copy = tmp_path / run
    shutil.copytree(RUNS / run, copy)
    trace_jobs = str(copy / "trace_jobs")
    entries, listed = [], []
    real_scandir, real_listdir = os.scandir, os.listdir

    @contextlib.contextmanager
    def counted(path):
        with real_scandir(path) as it:
            yield (entries.append(e.name) or e for e in it) if os.fspath(path) == trace_jobs else it

    monkeypatch.setattr(os, "scandir", counted)
    monkeypatch.setattr(os, "listdir", lambda path=".": listed.append(os.fspath(path)) or real_listdir(path))
    code, out, _ = _trial([trial, "-r", str(copy), "-f", "json"], capsys, monkeypatch)
    monkeypatch.undo()
    assert code in (0, None)
    assert len(entries) < len(real_listdir(trace_jobs)), "trace_jobs listed whole"
    inside = [p for p in listed if p.startswith(trace_jobs)]
    assert inside and all(p.startswith(f"{trace_jobs}/{trial}/") for p in inside), inside
    got = json.loads(out)
    want = {t["trial_name"]: t for t in oracle.read_trials(RUNS / run)}[trial]
    for k in (
        "task_name",
        "reward",
        "exception_type",
        "exception_message",
        "n_episodes",
        "n_input_tokens",
        "n_output_tokens",
        "trial_duration",
        "agent_execution_duration",
        "verifier_duration",
    ):
        assert got["trial"][k] == want[k], k
    steps, _ = oracle.trajectory_rows(RUNS / run)
    assert [s["step_id"] for s in got["steps"]] == [s["step_id"] for s in steps if s["trial_name"] == trial]


def test_a_wrong_trial_name_gets_a_did_you_mean(capsys, monkeypatch) -> None:
    code, _, err = _trial(["calendar-0005__bu8dLSx", "-r", str(RUNS / "harbor")], capsys, monkeypatch)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "did you mean calendar-0005__bu8dLSg" in lines[0]
    code, _, err = _trial(["nothing-like-it", "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code != 0 and "no agent trajectories" in err


def test_a_trial_without_a_trajectory_shows_its_trials_row_and_why(capsys, monkeypatch) -> None:
    """From the analyst's trial (issue 42): a trial folder without agent/ got "no trial ... did you mean" naming
    other trials; it is the trial's trials row and one line saying there is no agent/ folder."""
    trace_jobs = RUNS / "harbor" / "trace_jobs"
    trial = sorted(
        t.name
        for t in trace_jobs.iterdir()
        if t.is_dir() and not (t / "agent").exists() and (t / "result.json").is_file()
    )[0]
    facts = {t["trial_name"]: t for t in oracle.read_trials(RUNS / "harbor")}[trial]
    code, out, err = _trial([trial, "-r", str(RUNS / "harbor"), "-f", "json"], capsys, monkeypatch)
    assert code in (0, None) and "did you mean" not in err, err
    got = json.loads(out)
    assert got["steps"] == []
    assert got["no_trajectory"] == f"{trace_jobs / trial}: no agent/ folder, so no trajectory to show"
    assert got["trial"]["n_episodes"] == facts["n_episodes"]
    assert got["trial"]["exception_type"] == facts["exception_type"]
    code, out, err = _trial([trial, "-r", str(RUNS / "harbor")], capsys, monkeypatch)
    words = " ".join(out.split())  # rich wraps at the terminal's width
    assert code in (0, None) and "no agent/ folder, so no trajectory" in words, err
    assert f"turns {facts['n_episodes']}" in words


def test_trial_names_its_damaged_file_and_reads_the_rest(capsys, monkeypatch) -> None:
    _, out, _ = _trial(["calendar-0004__sdoyP4h", "-r", str(RUNS / "harbor"), "-f", "json"], capsys, monkeypatch)
    got = json.loads(out)
    assert [d["file"].rsplit("/", 1)[1] for d in got["damaged_files"]] == ["trajectory.cont-1.json"]
    assert got["steps"] and {s["segment"] for s in got["steps"]} == {0}


# -- hostile text: issue 42, items 18 and 19 --------------------------------------------------------------------

#: what an agent can write into its trajectory: a fence that closes report.md's, a heading and HTML that would
#: land outside any block, escape sequences that retitle the window and clear the screen, a lone CR
HOSTILE = "ok ```\n# heading\n<img src=x onerror=alert(1)>\n\x1b]0;pwned\x07\x1b[2J\x9b31m end\rover"


def _hostile_run(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the harbor run whose longest looping trial (which the report shows) says HOSTILE everywhere."""
    import shutil

    run = tmp_path / "harbor"
    shutil.copytree(RUNS / "harbor", run)
    trial = oracle.expected("looping_trials", [RUNS / "harbor"])[0]["trial_name"]
    path = run / "trace_jobs" / trial / "agent" / "trajectory.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for step in doc["steps"]:
        step["message"] = HOSTILE
        if step.get("observation"):
            for result in step["observation"]["results"]:
                result["content"] = "````" + HOSTILE
    doc["steps"][0]["reasoning_content"] = HOSTILE
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = run / "trace_jobs" / trial / "result.json"
    facts = json.loads(result.read_text(encoding="utf-8"))
    facts["exception_info"] = {
        "exception_type": "HostileError",
        "exception_message": "m",
        "exception_traceback": HOSTILE,
    }
    result.write_text(json.dumps(facts), encoding="utf-8")
    return run, trial


def _rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer (markdown-it, which rich brings) makes of `markdown`, raw HTML allowed."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def _agent_text_contained(html: str) -> None:
    assert "<img" not in html and "<h1>heading" not in html, html
    assert "\x1b" not in html and "\x9b" not in html and "\x07" not in html
    assert "\\x1b]0;pwned\\x07" in html  # shown, not dropped


def test_trial_markdown_keeps_agent_text_inside_its_blocks(tmp_path: Path, capsys, monkeypatch) -> None:
    run, trial = _hostile_run(tmp_path)
    code, out, err = _trial([trial, "-r", str(run), "-f", "md"], capsys, monkeypatch)
    assert code in (0, None), err
    html = _rendered(out)
    _agent_text_contained(html)
    assert html.count('<code class="language-text">ok ```\n# heading\n&lt;img src=x onerror=alert(1)&gt;') >= 3
    assert '<p>exception traceback (result.json):</p>\n<pre><code class="language-text">ok ```' in html


def test_trial_on_a_terminal_shows_escape_sequences_escaped(tmp_path: Path, capsys, monkeypatch) -> None:
    run, trial = _hostile_run(tmp_path)
    code, out, err = _trial([trial, "-r", str(run), "--full"], capsys, monkeypatch)
    assert code in (0, None), err
    assert not any((ord(ch) < 32 and ch != "\n") or 0x7F <= ord(ch) < 0xA0 for ch in out), repr(out[:400])
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m end\\rover" in out
    assert out.index("exception traceback") < out.index("\\x1b]0;pwned")  # the traceback's, escaped as the rest


def test_report_keeps_agent_text_inside_its_blocks(tmp_path: Path) -> None:
    from rlsql.outputs.report import build_report
    from rlsql.runs.folders import resolve_runs

    run, trial = _hostile_run(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RlsqlWarning)
        build_report(resolve_runs([str(run)]), tmp_path / "r", "md", notify=lambda _: None)
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    start = text.index(f"### {trial}")
    section = text[start : text.index("\n## ", start)]  # the transcripts, up to the report's next section
    html = _rendered(section)
    _agent_text_contained(html)
    assert html.count("<h3>") == 3 and "<h1>" not in html and "<h2>" not in html  # the transcripts' headings only


# -- the report's "What the agent did" -----------------------------------------------------------------------


def test_report_says_what_the_agent_did(tmp_path: Path) -> None:
    from rlsql.outputs.report import build_report
    from rlsql.runs.folders import resolve_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RlsqlWarning)
        build_report(resolve_runs([str(RUNS / "harbor")]), tmp_path / "r", "md", notify=lambda _: None)
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    section = text[text.index("## What the agent did") : text.index("## Runs and files")]
    for row in oracle.expected("tool_usage", [RUNS / "harbor"]):
        assert f"| {row['function_name']} | {row['calls']} | {row['trials']} | {row['success_trials']} |" in section
    loops = oracle.expected("looping_trials", [RUNS / "harbor"])
    longest = loops[0]
    assert f"### {longest['trial_name']} ({longest['function_name']} repeated {longest['repeats']} times" in section
    for row in loops:
        assert f"| {row['trial_name']} | {row['outcome']} |" in section
    outcomes = [r["outcome"] for r in oracle.expected("token_usage", [RUNS / "harbor"])]
    assert [
        line.split("|")[1].strip()
        for line in section.splitlines()
        if line.startswith("| ")
        and line.split("|")[1].strip() in ("Success", "Failure", "No reward")
        and "agent_steps" not in line
    ][: len(outcomes)] == outcomes
    assert section.count("```text") == 3  # the two longest loops and the failure with the most turns
    failures = sorted(
        (
            t
            for t in oracle.read_trials(RUNS / "harbor")
            if t["reward"] == 0
            and t["n_episodes"]
            and (RUNS / "harbor" / "trace_jobs" / t["trial_name"] / "agent" / "trajectory.json").is_file()
            and t["trial_name"] not in {r["trial_name"] for r in loops[:2]}
        ),
        key=lambda t: (-t["n_episodes"], t["trial_name"]),
    )
    assert f"### {failures[0]['trial_name']} (a failure with {failures[0]['n_episodes']} turns)" in section


def test_a_trajectory_query_answer_is_never_kept(tmp_path: Path, capsys, monkeypatch) -> None:
    """Kept answers are keyed by the stat of each file a query reads; the trajectories are thousands of files
    below trace_jobs, which no key covers: an edited trajectory must show in the next answer."""
    import shutil

    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "auto")
    run = tmp_path / "harbor_csv"
    shutil.copytree(RUNS / "harbor_csv", run)
    first = _json_query(["tool_usage", "-r", str(run)], capsys, monkeypatch)
    path = run / "trace_jobs" / "calendar-0005__bu8dLSg" / "agent" / "trajectory.json"
    path.write_text(path.read_text().replace('"function_name": "bash_command"', '"function_name": "shell"'))
    second = _json_query(["tool_usage", "-r", str(run)], capsys, monkeypatch)
    assert second != first and any(r["function_name"] == "shell" for r in second)
    assert_rows_match(second, oracle.expected("tool_usage", [run]), "tool_usage after an edit")
    assert not list((tmp_path / "cache").glob("answers/*.json"))


def _json_query(args: list[str], capsys, monkeypatch) -> list[dict]:
    from tests.test_cli import run_main

    code, out, err = run_main(["query", *args, "-f", "json"], capsys, monkeypatch)
    assert code in (0, None), err
    return json.loads(out)


# -- the cached copies of the trajectory rows (rlsql/cache/trajcopies.py) -----------------------------------------


def _cli(args: list[str], capsys, monkeypatch) -> tuple[int | None, str, str]:
    from tests.test_cli import run_main

    return run_main(args, capsys, monkeypatch)


def _damaged(run: Path) -> list[str]:
    return sorted(str(p) for _, _, p in oracle.trajectory_files(run)[0] if oracle.read_trajectory(p) is None)


def _built_cache(tmp_path: Path, runs: list[Path], capsys, monkeypatch) -> list[dict]:
    """`rlsql cache build` of `runs` into a cache folder of this test's; its rows for the trajectories."""
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "auto")
    args = ["cache", "build", "-f", "json"] + [a for run in runs for a in ("-r", str(run))]
    code, out, err = _cli(args, capsys, monkeypatch)
    assert code in (0, None), err
    return [r for r in json.loads(out) if r["artifact"] == "trajectories"]


@pytest.mark.parametrize("name", VIEWS + QUERIES)
def test_queries_from_the_cached_copies_match_the_oracle_and_warn_as_in_place(
    name: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    runs = [RUNS / r for r in WITH_TRAJECTORIES]
    built = _built_cache(tmp_path, runs, capsys, monkeypatch)
    # every run's two sources, bad token counts and damaged files included
    assert sorted((r["run"], r["state"], r["file"].rsplit(" ", 1)[1]) for r in built) == [
        (run, "built", f"({source})")
        for run in WITH_TRAJECTORIES
        for source in ("tool_calls_src", "trajectory_steps_src")
    ]
    code, out, err = _cli(
        ["query", name, "-f", "json", "-v", *[a for r in runs for a in ("-r", str(r))]], capsys, monkeypatch
    )
    assert code in (0, None), err
    read = [line for line in err.splitlines() if "read from the cache" in line]
    assert read and not [line for line in err.splitlines() if "src read in place" in line], err
    as_json = [{k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in r.items()} for r in expected(name, runs)]
    assert_rows_match(json.loads(out), as_json, f"{name} from the cached copies")
    for path in _damaged(RUNS / "harbor"):  # each damaged file named once, as a read in place names it
        assert err.count(path) == 1 and "skipped, not an ATIF trajectory" in err, (path, err)
    if name in ("trajectory_steps", "token_usage"):  # they read the token counts
        bad = [line for line in err.splitlines() if "not a whole number up to 2**53" in line]
        assert len(bad) == 1, err  # both runs hold the trial: one warning, the second file "more like it"
        assert "steps[1].metrics.prompt_tokens: 9007199254740994" in bad[0] and "completion_tokens: -5" in bad[0]
        for run in WITH_TRAJECTORIES:
            assert bad[0].count(f"/{run}/trace_jobs/calendar-0003__8d5Frkd/agent/trajectory.json") == 1, bad
    else:  # no count read, no warning about one: as in place (issue 42: the copy warned where the files did not)
        assert "not a whole number" not in err, err


def test_a_changed_trajectory_makes_its_copy_stale_until_built_again(tmp_path: Path, capsys, monkeypatch) -> None:
    import shutil

    run = tmp_path / "harbor_csv"
    shutil.copytree(RUNS / "harbor_csv", run)
    _built_cache(tmp_path, [run], capsys, monkeypatch)
    path = run / "trace_jobs" / "calendar-0005__bu8dLSg" / "agent" / "trajectory.json"
    path.write_text(path.read_text().replace('"function_name": "bash_command"', '"function_name": "shell"'))
    code, out, err = _cli(["query", "tool_usage", "-r", str(run), "-f", "json", "-v"], capsys, monkeypatch)
    assert code in (0, None), err
    # (tool_usage counts the calls from the steps' source: tool_call_names)
    assert "trajectory_steps_src read in place (the trajectory files changed since its cache entry was built)" in err
    edited = json.loads(out)
    assert any(r["function_name"] == "shell" for r in edited)
    assert_rows_match(edited, oracle.expected("tool_usage", [run]), "tool_usage after an edit")
    code, out, err = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {r["file"].rsplit(" ", 1)[1]: r["state"] for r in json.loads(out) if "/trace_jobs (" in r["file"]}
    assert states == {"(tool_calls_src)": "stale", "(trajectory_steps_src)": "stale"}
    # a new trial's trajectory makes it stale too
    assert [r["state"] for r in _built_cache(tmp_path, [run], capsys, monkeypatch)] == ["built", "built"]
    new = run / "trace_jobs" / "calendar-0100__new1234" / "agent"
    new.mkdir(parents=True)
    shutil.copy(path, new / "trajectory.json")
    code, out, err = _cli(["query", "tool_calls", "-r", str(run), "-f", "json", "-v"], capsys, monkeypatch)
    assert code in (0, None) and "tool_calls_src read in place (the trajectory files changed" in err
    assert_rows_match(json.loads(out), oracle.expected_trajectory_view("tool_calls", [run]), "a trial added")
    assert [r["state"] for r in _built_cache(tmp_path, [run], capsys, monkeypatch)] == ["built", "built"]
    _, out, err = _cli(["query", "tool_calls", "-r", str(run), "-f", "json", "-v"], capsys, monkeypatch)
    assert "tool_calls_src read from the cache" in err
    assert_rows_match(json.loads(out), oracle.expected_trajectory_view("tool_calls", [run]), "built again")


def test_a_copy_built_by_another_rlsql_is_stale_until_built_again(tmp_path: Path, capsys, monkeypatch) -> None:
    """A copy holds the source's rows, not the files': one whose record names another version of the source's
    SQL (an older rlsql wrote it, before a column was added or a figure's rule changed) is not read, the files
    are, and `cache status` calls it stale."""
    from rlsql.cache import trajcopies

    runs = [RUNS / "harbor_csv"]
    assert [r["state"] for r in _built_cache(tmp_path, runs, capsys, monkeypatch)] == ["built", "built"]
    entry = trajcopies.entry_of(runs[0] / "trace_jobs", "trajectory_steps_src", tmp_path / "cache")
    record = json.loads(entry.meta.read_text())
    entry.meta.write_text(json.dumps({**record, "sql": "0123456789abcdef"}))  # as another version recorded it
    code, out, err = _cli(["query", "tool_call_names", "-r", str(runs[0]), "-f", "json", "-v"], capsys, monkeypatch)
    assert code in (0, None), err
    assert (
        "trajectory_steps_src read in place (rlsql's SQL for the source changed since its cache entry was built" in err
    ), err
    assert_rows_match(json.loads(out), oracle.expected_trajectory_view("tool_call_names", runs), "read in place")
    code, out, err = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {r["file"].rsplit(" ", 1)[1]: r["state"] for r in json.loads(out) if "/trace_jobs (" in r["file"]}
    assert states == {"(tool_calls_src)": "fresh", "(trajectory_steps_src)": "stale"}
    built = {r["file"].rsplit(" ", 1)[1]: r["state"] for r in _built_cache(tmp_path, runs, capsys, monkeypatch)}
    assert built["(trajectory_steps_src)"] == "built"
    _, out, err = _cli(["query", "tool_call_names", "-r", str(runs[0]), "-f", "json", "-v"], capsys, monkeypatch)
    assert "trajectory_steps_src read from the cache" in err, err
    assert_rows_match(json.loads(out), oracle.expected_trajectory_view("tool_call_names", runs), "from the copy")


def test_a_copy_that_fails_to_read_is_answered_from_the_files(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = [RUNS / "harbor"]
    built = {r["file"].rsplit(" ", 1)[1]: r for r in _built_cache(tmp_path, runs, capsys, monkeypatch)}
    from rlsql.cache import store, trajcopies

    entry = trajcopies.entry_of(RUNS / "harbor" / "trace_jobs", "tool_calls_src", tmp_path / "cache")
    data = bytearray(entry.parquet.read_bytes())
    assert len(data) == built["(tool_calls_src)"]["parquet_bytes"]
    footer = int.from_bytes(data[-8:-4], "little")
    for i in range(len(data) - 8 - footer, len(data) - 8):  # the footer scrambled; its size and magic kept
        data[i] ^= 0x5A
    entry.parquet.write_bytes(bytes(data))
    code, out, err = _cli(["query", "looping_trials", "-r", str(runs[0]), "-f", "json"], capsys, monkeypatch)
    assert code in (0, None), err
    # the checksum of its bytes (issue 42) finds the damage before DuckDB reads the copy: one warning, the files
    # answer, and the read writes nothing into the cache (status finds the damage by the same check)
    damaged = [line for line in err.splitlines() if "its cached copy" in line]
    assert len(damaged) == 1 and "checksum" in damaged[0] and "answered from the file" in damaged[0], err
    assert_rows_match(json.loads(out), oracle.expected("looping_trials", runs), "looping_trials past a damaged copy")
    assert not store.Entry(entry.parquet, entry.meta).read_meta().get("damaged")
    code, out, err = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {r["file"].rsplit(" ", 1)[1]: r["state"] for r in json.loads(out) if "/trace_jobs (" in r["file"]}
    assert states == {"(tool_calls_src)": "damaged", "(trajectory_steps_src)": "fresh"}


def test_cache_flag_builds_the_copy_before_the_query_reads_it(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    runs = [RUNS / "harbor_csv"]
    code, out, err = _cli(
        ["--cache", "query", "looping_trials", "-r", str(runs[0]), "-f", "json", "-v"], capsys, monkeypatch
    )
    assert code in (0, None), err
    assert "tool_calls_src cached now" in err and "tool_calls_src read from the cache" in err, err
    assert_rows_match(json.loads(out), oracle.expected("looping_trials", runs), "looping_trials under --cache")
    code, out, err = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    entries = [(r["file"].rsplit(" ", 1)[1], r["state"]) for r in json.loads(out) if "/trace_jobs (" in r["file"]]
    assert entries == [("(tool_calls_src)", "fresh")]  # (and the trials CSV's copy)


def test_cache_flag_builds_only_the_copies_the_query_reads(tmp_path: Path, capsys, monkeypatch) -> None:
    """`--cache` is a build, at the command level, of the files the query's closure reads: a query of the trials
    CSV builds that CSV's copy and no trajectory copy (68 s at 45,000 trials), then answers from it."""
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    run = RUNS / "harbor_csv"
    trials = oracle.find_artifacts(run)["trials"]
    assert trials is not None
    code, out, err = _cli(["--cache", "query", "turn_stats", "-r", str(run), "-f", "json", "-v"], capsys, monkeypatch)
    assert code in (0, None), err
    assert f"{trials.name}: read from the cache" in err, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "turn_stats under --cache")
    code, out, err = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    assert [(Path(r["file"]).name, r["state"]) for r in json.loads(out)] == [(trials.name, "fresh")], out


def test_trajectories_read_in_place_earn_the_hint(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", "1")  # the fixture's files are small
    run = RUNS / "harbor"
    size = sum(p.stat().st_size for _, _, p in oracle.trajectory_files(run)[0])
    code, _, err = _cli(["query", "tool_usage", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    hints = [line for line in err.splitlines() if line.startswith("rlsql: hint:")]
    assert code in (0, None) and len(hints) == 1, err
    assert f"({run / 'trace_jobs'})" in hints[0] and "later trajectory queries read a copy of their rows" in hints[0]
    assert f"read {size / 2**20:,.0f} MiB in place" in hints[0]
    _built_cache(tmp_path, [run], capsys, monkeypatch)
    _, _, err = _cli(["query", "tool_usage", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert "trace_jobs" not in "".join(line for line in err.splitlines() if line.startswith("rlsql: hint:"))


def test_a_copy_answers_under_the_name_the_run_has_now(tmp_path: Path, capsys, monkeypatch) -> None:
    """The copy is keyed by the folder, and a run's name depends on how it is given (NAME=PATH, or a parent
    folder's name beside another run of the same name): the rows carry the name of this query's run."""
    runs = [RUNS / "harbor_csv"]
    _built_cache(tmp_path, runs, capsys, monkeypatch)
    for name in ("tool_calls", "trajectory_steps"):
        code, out, err = _cli(["query", name, "-r", f"renamed={runs[0]}", "-f", "json", "-v"], capsys, monkeypatch)
        assert code in (0, None) and f"{name}_src read from the cache" in err, err
        want = [{**r, "run": "renamed"} for r in oracle.expected_trajectory_view(name, runs)]
        want = [{k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in r.items()} for r in want]
        assert_rows_match(json.loads(out), want, f"{name} from a copy, the run renamed")


def test_flipped_bytes_in_a_trajectory_copy_are_found_before_use(tmp_path: Path, capsys, monkeypatch) -> None:
    """Issue 42 item 1: three bytes flipped inside a copy of the trajectory rows (size and magic numbers kept)
    read as wrong numbers without an error; the checksum finds it, the files answer, with one warning."""
    import shutil

    run = tmp_path / "harbor_csv"
    shutil.copytree(RUNS / "harbor_csv", run)
    _built_cache(tmp_path, [run], capsys, monkeypatch)
    code, out, _ = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    steps = next(Path(r["parquet"]) for r in json.loads(out) if r["file"].endswith("(trajectory_steps_src)"))
    data = bytearray(steps.read_bytes())
    for offset in (len(data) // 3, len(data) // 3 + 1, len(data) // 3 + 2):
        data[offset] ^= 0x5A
    steps.write_bytes(bytes(data))
    for name in ("trajectory_steps", "token_usage", "tool_usage"):
        code, out, err = _cli(["query", name, "-r", str(run), "-f", "json"], capsys, monkeypatch)
        assert code in (0, None), err
        as_json = [
            {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in r.items()} for r in expected(name, [run])
        ]
        assert_rows_match(json.loads(out), as_json, f"{name} over a copy with flipped bytes")
        damaged = [line for line in err.splitlines() if "cached copy" in line]
        assert len(damaged) == 1 and str(steps) in damaged[0] and "checksum" in damaged[0], err
    code, out, _ = _cli(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {r["file"].rsplit(" ", 1)[1]: r["state"] for r in json.loads(out) if "/trace_jobs (" in r["file"]}
    assert states == {"(tool_calls_src)": "fresh", "(trajectory_steps_src)": "damaged"}


def test_a_transcripts_header_says_none_for_an_empty_reward_and_turn_count() -> None:
    """A trial without a reward (or a turn count) read `reward None` in `rlsql trial`'s header: Python's word,
    not the trials file's. Its empty cells read `none`."""
    from rlsql.outputs.transcript import Transcript, _header

    facts = {"outcome": None, "reward": None, "exception_type": "AgentTimeoutError", "n_episodes": None}
    assert _header(Transcript("run", "t1", facts))[0] == (
        "outcome No reward, reward none, exception AgentTimeoutError, turns none"
    )
