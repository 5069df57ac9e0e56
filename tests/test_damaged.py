"""Damaged and odd input, each handled on purpose: a correct result with a warning naming file and
line, or a one-line error naming the file. Never a traceback, never a changed number without a warning.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlsql
from rlsql.cli import app as cli
from rlsql.inspection.check import check_runs
from rlsql.runs.folders import resolve_runs
from tests.conftest import RUNS

HEADER = "task_name,trial_name,n_episodes,exception_type,reward\n"


def trials_run(root: Path, body: bytes | str, name: str = "r") -> Path:
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    data = body.encode() if isinstance(body, str) else body
    (run / "20260301_000000_trial_results.csv").write_bytes(data)
    return run


def query_with_warnings(name: str, run: Path) -> tuple[list[dict], str]:
    with pytest.warns(rlsql.RlsqlWarning) as caught:
        rows = rlsql.query(name, [run]).to_dicts()
    return rows, " | ".join(str(w.message) for w in caught)


def test_truncated_last_line_is_skipped_with_its_line(tmp_path: Path) -> None:
    run = trials_run(tmp_path, HEADER + "t,t__1,2,,1.0\nt,t__2,4,,0.0\nt,t__3,")
    rows, warned = query_with_warnings("reward_summary", run)
    assert rows[0]["trials"] == 2 and rows[0]["mean_reward"] == 0.5  # by hand: (1.0 + 0.0) / 2
    assert "20260301_000000_trial_results.csv: skipped 1 unreadable row (line 4: 3 fields, expected 5)" in warned


def test_extra_and_missing_fields(tmp_path: Path) -> None:
    run = trials_run(tmp_path, HEADER + "t,t__1,2,,1.0,surplus\nt,t__2,4\nt,t__3,6,,1.0\n")
    rows, warned = query_with_warnings("turn_stats", run)
    assert (rows[0]["trials"], rows[0]["max"]) == (1, 6)
    assert "line 2: 6 fields, expected 5" in warned and "line 3: 3 fields, expected 5" in warned


def test_nan_inf_and_empty_cells_read_as_empty(tmp_path: Path) -> None:
    run = trials_run(tmp_path, HEADER + "t,t__1,nan,,1.0\nt,t__2,3,,inf\nt,t__3,,,0.0\nt,t__4,5,,NaN\n")
    rows = rlsql.query("reward_summary", [run]).to_dicts()
    # by hand: rewards 1.0 and 0.0 count (inf, NaN are empty); turns 3 and 5 count
    assert rows == [
        {
            "run": "r",
            "trials": 4,
            "trials_with_reward": 2,
            "mean_reward": 0.5,
            "success_rate": 0.5,
            "trials_with_turns": 2,
        }
    ]


def test_non_utf8_byte_skips_its_row(tmp_path: Path) -> None:
    run = trials_run(tmp_path, (HEADER + "t,t__1,2,,1.0\nt,t__2,3,Agent\xffError,0.0\n").encode("latin-1"))
    rows, warned = query_with_warnings("exception_distribution", run)
    assert [(r["exception_type"], r["trials"]) for r in rows] == [("No exception", 1)]
    assert "line 3: invalid encoding" in warned


def test_non_utf8_header_skips_the_file_with_a_warning(tmp_path: Path) -> None:
    bad = trials_run(tmp_path, b"task_name,tri\xffal_name,n_episodes\nt,t__1,2\n", name="bad")
    good = trials_run(tmp_path, HEADER + "t,t__1,2,,1.0\n", name="good")
    with pytest.warns(rlsql.RlsqlWarning, match=r"trial_results\.csv:1: header is not valid UTF-8.*file skipped"):
        rows = rlsql.query("turn_stats", [bad, good]).to_dicts()
    assert [(r["run"], r["trials"]) for r in rows] == [("bad", 0), ("good", 1)]


def test_zero_byte_file_warns_and_counts_nothing(tmp_path: Path) -> None:
    run = trials_run(tmp_path, b"")
    rows, warned = query_with_warnings("turn_stats", run)
    assert rows == [{"run": "r", "trials": 0, "mean": None, "median": None, "std": None, "min": None, "max": None}]
    assert "empty file" in warned


def test_config_that_does_not_parse_falls_back_with_a_warning(tmp_path: Path) -> None:
    run = trials_run(tmp_path, HEADER + "t,t__1,2,AgentTimeoutError,1.0\n")
    (run / "rl_config.yaml").write_text("terminal_bench:\n  harbor:\n    passthrough_exceptions: [AgentTimeoutError\n")
    rows, warned = query_with_warnings("exception_distribution", run)
    assert rows[0]["treatment"] == "zero"  # the trainer's default for AgentTimeoutError
    assert "rl_config.yaml:" in warned and "does not parse" in warned


def test_routing_keys_of_the_wrong_type(tmp_path: Path) -> None:
    run = trials_run(tmp_path, HEADER + "t,t__1,2,DaytonaError,\nt,t__2,2,Weird,0.0\n")
    (run / "rl_config.yaml").write_text(
        "harbor:\n  mask_exceptions: DaytonaError\n  zero_exceptions: [Weird]\n  default_error_treatment: 7\n"
    )
    rows, warned = query_with_warnings("exception_distribution", run)
    # mask_exceptions is a string: the default mask list applies (DaytonaError is in it)
    assert {r["exception_type"]: r["treatment"] for r in rows} == {"DaytonaError": "mask", "Weird": "zero"}
    assert "harbor.mask_exceptions should be a list" in warned
    assert "default_error_treatment should be one of" in warned


def test_vllm_rolls_over_new_year(tmp_path: Path) -> None:
    run = tmp_path / "ny"
    run.mkdir()
    (run / "20270101_020000_vllm_metrics_table.csv").write_text(
        "log_file,datetime_str,n_engines_reporting\njob,12-31 23:59:59,1\njob,01-01 00:00:01,1\njob,13-45 99:00:00,1\n"
    )
    con = rlsql.connect([run])
    got = con.execute("SELECT datetime_str, ts FROM vllm_seconds ORDER BY ts NULLS LAST").fetchall()
    assert [str(ts) for _, ts in got] == ["2026-12-31 23:59:59", "2027-01-01 00:00:01", "None"]
    problems = [i.problem for i in check_runs(resolve_runs([run]))[0].issues]
    assert any("not MM-DD HH:MM:SS" in p for p in problems)


def test_check_lists_every_problem_with_file_and_line(tmp_path: Path, capsys, monkeypatch) -> None:
    trials_run(tmp_path / "runs", HEADER + "t,t__1,abc,,1.0\nt,t__2,2,,1.0,x\nt,t__3,nan,,1.0\n", name="damaged")
    trials_run(tmp_path / "runs", b"", name="empty")
    monkeypatch.setattr(sys, "argv", ["rlsql", "check", "-r", str(tmp_path / "runs"), "-f", "json"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    out, err = capsys.readouterr()
    assert stop.value.code == 3 and "unusable run(s): empty" in err
    runs = {r["run"]: r for r in json.loads(out)["runs"]}
    damaged = {(i["line"], i["problem"].split(":")[0]) for i in runs["damaged"]["issues"] if i["line"]}
    assert damaged == {(2, "row skipped"), (3, "row skipped"), (4, "1 nan/inf cell(s) in column n_episodes")}
    assert runs["damaged"]["usable"] and runs["damaged"]["readable_rows"]["trials"] == 1
    assert any("nan/inf" in i["problem"] for i in runs["damaged"]["issues"])
    assert not runs["empty"]["usable"]


# -- property tests: random damage never crashes rlsql and never changes the input files ------------


def damaged_csv(draw_lines: list[str], cut: int, junk: bytes) -> bytes:
    body = (HEADER + "\n".join(draw_lines)).encode()
    body = body[: max(len(HEADER), cut)] if cut else body
    return body + junk


cells = st.one_of(
    st.just(""),
    st.integers(-3, 40).map(str),
    st.floats(allow_nan=True).map(str),
    st.sampled_from(["nan", "inf", "3.0", "AgentTimeoutError", "x,y", '"q"', "\r"]),
)
rows = st.lists(cells, min_size=0, max_size=7).map(",".join)


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(rows, max_size=12),
    cut=st.integers(0, 400),
    junk=st.sampled_from([b"", b"\xff\xfe", b"\n\n", b"\x00", b"t,t__z,1,,1.0"]),
)
def test_random_damage_never_crashes_and_never_writes(tmp_path: Path, lines, cut, junk) -> None:
    root = tmp_path / f"case{abs(hash((tuple(lines), cut, junk)))}"
    run = trials_run(root, damaged_csv(lines, cut, junk))
    shutil.copy(RUNS / "tiny" / "rl_config.yaml", run / "rl_config.yaml")
    before = digest(run)
    for name in ("turn_stats", "exception_treatment", "trial_phases"):
        try:
            rlsql.query(name, [run]).to_dicts()
        except rlsql.RlsqlError as exc:  # an expected error is fine; it must be one line
            assert "\n" not in str(exc)
    check_runs(resolve_runs([run]))
    assert digest(run) == before


# --- issue 42: one bad file in a fleet is a warning, the other runs answer -----------------------------------


NUL_HEADER = {
    "nul_in_header": b"task_name,trial\0_name,n_episodes,exception_type,reward\nt,t__1,2,,1.0\n",
    "zero_filled": b"\0" * 4096,  # what a crash leaves: the size written, the bytes never
}


@pytest.mark.parametrize("body", sorted(NUL_HEADER))
@pytest.mark.parametrize("command", ["query", "check", "runs", "report", "export", "cache build", "db build"])
def test_a_nul_in_one_csv_header_is_one_warning_and_the_fleet_answers(
    command: str, body: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    from tests.test_cli import run_main

    bad = trials_run(tmp_path / "runs", NUL_HEADER[body], name="bad")
    good = trials_run(tmp_path / "runs", HEADER + "t,t__1,2,,1.0\nt,t__2,4,,0.0\n", name="good")
    before = digest(tmp_path / "runs")
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "")
    runs = ["-r", str(bad), "-r", str(good)]
    out_file = tmp_path / "out"
    args = {
        "query": ["query", "reward_summary", "-f", "json", *runs],
        "check": ["check", *runs],
        "runs": ["runs", "-f", "json", *runs],
        "report": ["report", "-o", str(out_file.with_suffix(".html")), *runs],
        "export": ["export", "reward_summary", "-o", str(out_file), *runs],
        "cache build": ["cache", "build", "-f", "json", *runs],
        "db build": ["db", "build", str(out_file.with_suffix(".duckdb")), *runs],
    }[command]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert "Traceback" not in err and "\0" not in out + err, err
    named = [line for line in err.splitlines() if str(bad) in line]
    assert len(named) == 1 and "header holds a NUL byte" in named[0], err
    if command == "check":
        assert code == 3 and "good" in out  # check fails for a run with no readable rows, and lists the other
    else:
        assert code == 0, err
    if command == "query":
        assert {r["run"]: r["trials"] for r in json.loads(out)} == {"bad": 0, "good": 2}
    if command == "cache build":
        assert {r["run"]: r["state"] for r in json.loads(out)} == {
            "bad": "not cached (its header cannot be read)",
            "good": "built",
        }
    assert digest(tmp_path / "runs") == before


# --- issue 42: rows DuckDB's parser cannot reach are read line-bounded ----------------------------------------


def _trials_body(n: int) -> list[str]:
    return [HEADER] + [f"t,t__{i},{i % 7 + 1},,{i % 2}.0\n" for i in range(1, n + 1)]


@pytest.mark.parametrize("cache", ["off", "built"])
def test_an_unclosed_quote_loses_only_its_own_line(cache: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """`,"unterminated` appended to line 101 of 2,980 trials: DuckDB read 99 trials and warned about 1 row."""
    from tests.test_cli import run_main

    lines = _trials_body(2980)
    lines[100] = lines[100].rstrip("\n") + ',"unterminated\n'  # line 101: trial t__100
    run = trials_run(tmp_path / "runs", "".join(lines))
    before = digest(tmp_path / "runs")
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "")
    if cache == "built":
        code, out, err = run_main(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
        assert code == 0 and json.loads(out)[0]["rows"] == 2979, err
    code, out, err = run_main(["query", "reward_summary", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    # by hand: trials 1..2980 but t__100; rewards i % 2, so 1,490 ones among them, minus t__100's 0
    assert json.loads(out) == [
        {
            "run": "r",
            "trials": 2979,
            "trials_with_reward": 2979,
            "mean_reward": 1490 / 2979,
            "success_rate": 1490 / 2979,
            "trials_with_turns": 2979,
        }
    ]
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [
        f"rlsql: warning: {run / '20260301_000000_trial_results.csv'}: skipped 1 unreadable row "
        "(line 101: a quote that is not closed, or text after a closing quote)"
    ], err
    problems = [(i.line, i.problem) for i in check_runs(resolve_runs([run]))[0].issues]
    assert (101, "row skipped: a quote that is not closed, or text after a closing quote") in problems
    assert not [p for _, p in problems if "unaccounted" in p], problems
    assert digest(tmp_path / "runs") == before


def test_a_quoted_cell_over_two_lines_stays_one_row_before_a_quote_that_never_closes(tmp_path: Path) -> None:
    body = (
        HEADER + 't,t__1,2,"an error\nover two lines",1.0\n'  # a quoted cell that closes: one row
        't,t__2,3,,0.0,"never\n'  # line 4 never closes: it is rejected, the rows after it are read
        "t,t__3,4,,1.0\nt,t__4,5,,1.0\nt,t__5,6,,0.0\n"
    )
    run = trials_run(tmp_path, body)
    rows, warned = query_with_warnings("exception_distribution", run)
    # by hand: t__1 (exception "an error\nover two lines"), t__3, t__4 and t__5 (no exception) are read
    assert sorted((r["exception_type"], r["trials"]) for r in rows) == [
        ("No exception", 3),
        ("an error\nover two lines", 1),
    ]
    # (DuckDB numbers the line by records: a quoted cell over two lines counts as one, so it says line 3)
    assert "skipped 1 unreadable row (line " in warned and "a quote that is not closed" in warned


def test_a_crlf_row_appended_to_an_lf_file_is_read(tmp_path: Path) -> None:
    """A live CSV whose last row was appended with `\\r\\n`: DuckDB's parser failed the whole file."""
    run = trials_run(tmp_path, "".join(_trials_body(3)) + "t,t__4,9,,1.0\r\n")
    before = digest(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = rlsql.query("turn_stats", [run]).to_dicts()
    # by hand: turns 2, 3, 4 and the appended row's 9
    assert (rows[0]["trials"], rows[0]["max"], rows[0]["mean"]) == (4, 9, 4.5)
    assert not caught, [str(w.message) for w in caught]
    assert check_runs(resolve_runs([run]))[0].readable_rows["trials"] == 4
    assert digest(tmp_path) == before


def test_a_nested_folder_of_runs_is_named_in_one_warning(tmp_path: Path) -> None:
    """Issue 42 (the analyst's trial): `-r runs/` read runs/a and skipped runs/sweep/{b,c} without a word."""
    trials_run(tmp_path / "runs", HEADER + "t,t__1,2,,1.0\n", name="a")
    for name in ("b", "c"):
        trials_run(tmp_path / "runs" / "sweep", HEADER + "t,t__1,2,,1.0\n", name=name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = resolve_runs([tmp_path / "runs"])
    assert [r.name for r in runs] == ["a"]
    said = [str(w.message) for w in caught]
    assert said == [
        f"{tmp_path / 'runs'}: sub-folder(s) sweep (2 runs) hold runs one level deeper, not read; "
        f"give such a folder with its own -r (e.g. -r {tmp_path / 'runs' / 'sweep'})"
    ]
    assert [r.name for r in resolve_runs([tmp_path / "runs" / "sweep"])] == ["b", "c"]
