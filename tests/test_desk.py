"""The analyst's desk: `rlsql sql`, views wherever a query goes, `describe`, output formats and widths.

Expectations are computed here in plain Python over the fixture files (tests/oracle.py's readers)
or worked out by hand; nothing below derives an expected value from rlsql's own SQL.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlsql.cli import app as cli
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

ROOT = Path(__file__).resolve().parent.parent
CALENDAR = RUNS / "calendar"
TINY = RUNS / "tiny"


def run_main(args: list[str], capsys, monkeypatch, stdin: str | None = None, tty_width: int | None = None):
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    if tty_width is not None:
        # what a terminal of that width reports (shutil.get_terminal_size reads COLUMNS first)
        monkeypatch.setenv("COLUMNS", str(tty_width))
        monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and "bundled sample run" not in line]
    assert len(lines) == 1, f"expected one stderr line, got: {err!r}"
    assert "Traceback" not in err
    return lines[0]


# -- rlsql sql ----------------------------------------------------------------------------------------

FAILING_TASKS = (
    "SELECT task_name, exception_type, count(*) AS failures FROM trials "
    "WHERE outcome = 'Failure' OR exception_type <> 'No exception' "
    "GROUP BY ALL ORDER BY failures DESC, task_name, exception_type"
)


def expected_failing_tasks(run_dir: Path) -> list[dict]:
    counts: collections.Counter = collections.Counter()
    for trial in oracle.read_trials(run_dir):
        if trial["reward"] == 0 or trial["exception_type"] != oracle.NO_EXCEPTION:
            counts[(trial["task_name"], trial["exception_type"])] += 1
    rows = [{"task_name": t, "exception_type": e, "failures": n} for (t, e), n in counts.items()]
    return sorted(rows, key=lambda r: (-r["failures"], r["task_name"], r["exception_type"]))


def test_which_tasks_fail_most_is_one_command(capsys, monkeypatch) -> None:
    code, out, err = run_main(["sql", FAILING_TASKS, "-r", str(CALENDAR), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    want = expected_failing_tasks(CALENDAR)
    assert len(want) > 5 and want[0]["failures"] > want[-1]["failures"]  # the fixture has a real ranking
    assert json.loads(out) == want


def test_sql_on_tiny_by_hand(capsys, monkeypatch) -> None:
    # tiny's trials CSV: calendar-0001 raised DaytonaError without a reward, calendar-0002 succeeded
    code, out, _ = run_main(["sql", FAILING_TASKS, "-r", str(TINY), "-f", "csv"], capsys, monkeypatch)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {"task_name": "calendar-0001", "exception_type": "DaytonaError", "failures": "1"} in rows
    assert all(r["task_name"] != "calendar-0002" or r["exception_type"] != "No exception" for r in rows)


def test_sql_reads_stdin_and_file(tmp_path: Path, capsys, monkeypatch) -> None:
    query = "SELECT count(*) AS n FROM trials"
    want = len(oracle.read_trials(TINY))
    code, out, _ = run_main(["sql", "-", "-r", str(TINY), "-f", "csv"], capsys, monkeypatch, stdin=query)
    assert code == 0 and out == f"n\n{want}\n"
    script = tmp_path / "q.sql"
    script.write_text("-- how many trials\n" + query + "\n", encoding="utf-8")
    code, out, _ = run_main(["sql", "--file", str(script), "-r", str(TINY), "-f", "csv"], capsys, monkeypatch)
    assert code == 0 and out == f"n\n{want}\n"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("SELECT 1 AS a;", "1"),
        ("SELECT 1 AS a; -- why", "1"),
        ("SELECT 1 AS a -- why", "1"),
        ("SELECT 1 AS a\n-- why\n", "1"),
        ("SELECT 1 AS a /* why */ ;", "1"),
        ("SELECT 1 AS a;; -- why", "1"),
        ("SELECT ';' AS a", ";"),
        ("SELECT 'x -- y;' AS a;", "x -- y;"),
        ("CREATE TEMP TABLE t AS SELECT 2 AS a; SELECT a FROM t; -- the last", "2"),
    ],
)
def test_sql_ending_in_a_semicolon_or_a_comment(text: str, value: str, capsys, monkeypatch) -> None:
    """The last statement's text is wrapped by the outputs (a subquery): its closing `;` and a `-- comment` after
    it were a syntax error there. By hand: one column `a`, one row."""
    code, out, err = run_main(["sql", text, "-r", str(TINY), "-f", "csv"], capsys, monkeypatch)
    assert (code, err, out) == (0, "", f"a\n{value}\n"), text
    code, out, err = run_main(["sql", text, "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert (code, err, json.loads(out)) == (0, "", [{"a": int(value) if value.isdigit() else value}]), text


def test_sql_macros_and_typed_variables(capsys, monkeypatch) -> None:
    # -p span reaches reward_curve, typed INTEGER as its header declares; the rows match the oracle's span=2
    sql = "SELECT * FROM reward_curve ORDER BY run, step"
    code, out, err = run_main(["sql", sql, "-p", "span=2", "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("reward_curve", [TINY], span=2), "sql -p span=2")
    sql = "SELECT typeof(getvariable('span')) AS t FROM reward_curve LIMIT 1"
    code, out, _ = run_main(["sql", sql, "-p", "span=2", "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert json.loads(out) == [{"t": "INTEGER"}]
    # several statements: the last one's rows print; a variable no view declares is text
    sql = "SET VARIABLE extra = 1; SELECT getvariable('note') AS n, getvariable('extra') AS e"
    code, out, _ = run_main(["sql", sql, "-p", "note=hi", "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out) == [{"n": "hi", "e": 1}]
    # a macro of the catalog: rolling_mean over 3 points, window 2 -> 1, 1.5, 2.5
    sql = (
        "CREATE TEMP TABLE pts AS SELECT * FROM (VALUES ('a', 1, 1.0), ('a', 2, 2.0), ('a', 3, 3.0)) "
        "AS t(series, x, value); SELECT rolling_mean FROM rolling_mean('pts', span := 2)"
    )
    code, out, err = run_main(["sql", sql, "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert [row["rolling_mean"] for row in json.loads(out)] == [1.0, 1.5, 2.5]


@pytest.mark.parametrize(
    ("sql", "code", "needles"),
    [
        ("SELECT * FROM trialz", 1, ["trialz", "Did you mean", "trials"]),
        ("SELEC 1", 1, ["syntax error", "SELEC"]),
        ("SELECT nope FROM trials", 1, ["nope", "Candidate bindings"]),
        ("   ", 2, ["empty"]),
    ],
)
def test_sql_errors_are_one_line(sql, code, needles, capsys, monkeypatch) -> None:
    got, out, err = run_main(["sql", sql, "-r", str(TINY)], capsys, monkeypatch)
    assert got == code
    line = error_line(err)
    for needle in needles:
        assert needle in line, line
    assert out == ""


def test_sql_usage_errors(tmp_path: Path, capsys, monkeypatch) -> None:
    code, _, err = run_main(["sql", "-r", str(TINY)], capsys, monkeypatch)
    assert code == 2 and "rlsql sql -" in error_line(err)
    code, _, err = run_main(["sql", "--file", str(tmp_path / "none.sql"), "-r", str(TINY)], capsys, monkeypatch)
    assert code == 2 and "none.sql" in error_line(err)
    code, _, err = run_main(["sql", "SELECT 1", "-p", "Bad-Name=1", "-r", str(TINY)], capsys, monkeypatch)
    assert code == 2 and "Bad-Name" in error_line(err)


def test_sql_needs_only_what_it_reads(tmp_path: Path, capsys, monkeypatch) -> None:
    # a run with trials only: SQL over trials works; SQL over the trainer metrics says what is missing (exit 3)
    run = tmp_path / "trials_only"
    run.mkdir()
    shutil.copy(TINY / "20260105_120000_trial_results.csv", run / "trial_results.csv")
    code, out, _ = run_main(
        ["sql", "SELECT count(*) AS n FROM trials", "-r", str(run), "-f", "csv"], capsys, monkeypatch
    )
    assert code == 0 and out == f"n\n{len(oracle.read_trials(TINY))}\n"
    code, _, err = run_main(["sql", "SELECT * FROM steps", "-r", str(run)], capsys, monkeypatch)
    assert code == 3 and "trainer metrics" in error_line(err)


# -- views wherever a named query goes ------------------------------------------------------------------


def test_query_takes_a_view(capsys, monkeypatch) -> None:
    code, out, err = run_main(["query", "trials", "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    got = json.loads(out)
    want = oracle.read_trials(TINY)
    assert [r["trial_name"] for r in got] == [t["trial_name"] for t in want]
    assert [r["exception_type"] for r in got] == [t["exception_type"] for t in want]


def test_show_and_export_take_a_view(tmp_path: Path, capsys, monkeypatch) -> None:
    code, out, _ = run_main(["show", "training_progression"], capsys, monkeypatch)
    assert code == 0
    assert out == (ROOT / "sql" / "views" / "training_progression.sql").read_text(encoding="utf-8")
    code, _, err = run_main(
        ["export", "trial_rows", "-r", str(TINY), "-f", "csv", "-o", str(tmp_path / "out")], capsys, monkeypatch
    )
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "out" / "trial_rows.csv").open(encoding="utf-8")))
    assert [r["trial_name"] for r in rows] == [t["trial_name"] for t in oracle.read_trials(TINY)]


def test_completion_offers_views_and_queries() -> None:
    offered = cli._selectable_names("tri")
    on_disk = sorted(p.stem for folder in ("views", "queries") for p in (ROOT / "sql" / folder).glob("tri*.sql"))
    assert offered == on_disk
    assert {"trials", "trial_rows", "trial_phases"} <= set(offered)


def test_list_views_lists_every_view_file(capsys, monkeypatch) -> None:
    code, out, _ = run_main(["list", "--views", "-f", "json"], capsys, monkeypatch)
    assert code == 0
    names = [row["name"] for row in json.loads(out)]
    assert names == sorted(p.stem for p in (ROOT / "sql" / "views").glob("*.sql"))
    by_name = {row["name"]: row for row in json.loads(out)}
    # checkpoint_ema reads reward_curve (span) and checkpoint_settings (save_every): both parameters show
    assert "span INTEGER = 5" in by_name["checkpoint_ema"]["params"]
    assert "save_every INTEGER" in by_name["checkpoint_ema"]["params"]


def test_describe_a_view(capsys, monkeypatch) -> None:
    code, out, err = run_main(["describe", "trials", "-r", str(TINY), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    info = json.loads(out)
    assert info["kind"] == "view" and info["name"] == "trials" and len(info["fingerprint"]) == 16
    types = {c["name"]: c["type"] for c in info["columns"]}
    header = (TINY / "20260105_120000_trial_results.csv").read_text().splitlines()[0].split(",")
    assert set(header) <= set(types)  # every CSV column is a column of the view
    assert types["reward"] == "DOUBLE" and types["n_episodes"] == "BIGINT" and types["task_name"] == "VARCHAR"
    code, out, _ = run_main(["describe", "reward_curve", "-r", str(TINY)], capsys, monkeypatch)
    assert code == 0
    assert "param span INTEGER = 5" in out and "query reward_curve (version 1" in out


# -- output ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("best.csv", lambda text: next(csv.reader([text.splitlines()[0]]))[0] == "run"),
        ("best.json", lambda text: isinstance(json.loads(text), list)),
        ("best.jsonl", lambda text: all(json.loads(line) for line in text.splitlines())),
        ("best.md", lambda text: text.startswith("| run |")),
        ("best.txt", lambda text: text.split()[0] == "run" and "|" not in text),
    ],
)
def test_output_extension_picks_the_format(name, check, tmp_path: Path, capsys, monkeypatch) -> None:
    target = tmp_path / name
    code, _, err = run_main(["query", "turn_stats", "-r", str(TINY), "-o", str(target)], capsys, monkeypatch)
    assert code == 0, err
    assert check(target.read_text(encoding="utf-8")), target.read_text(encoding="utf-8")


def test_format_flag_beats_the_extension(tmp_path: Path, capsys, monkeypatch) -> None:
    target = tmp_path / "best.csv"
    code, _, _ = run_main(
        ["query", "turn_stats", "-r", str(TINY), "-o", str(target), "-f", "json"], capsys, monkeypatch
    )
    assert code == 0 and isinstance(json.loads(target.read_text(encoding="utf-8")), list)


@pytest.mark.parametrize("spelling", ["CSV", "Csv", "csv"])
def test_format_any_case(spelling, capsys, monkeypatch) -> None:
    code, out, _ = run_main(["query", "turn_stats", "-r", str(TINY), "-f", spelling], capsys, monkeypatch)
    assert code == 0 and out.splitlines()[0].startswith("run,")


def test_md_is_markdown(capsys, monkeypatch) -> None:
    code, out, _ = run_main(["query", "turn_stats", "-r", str(TINY), "-f", "md"], capsys, monkeypatch)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("| run |") and set(lines[1]) <= set("|-:")


def test_limit_says_how_many_more(capsys, monkeypatch) -> None:
    total = len(oracle.read_trials(CALENDAR))
    code, out, err = run_main(["query", "trials", "-r", str(CALENDAR), "-n", "3", "-f", "csv"], capsys, monkeypatch)
    assert code == 0
    assert len(out.splitlines()) == 4
    assert f"{total - 3:,} more rows (3 of {total:,} shown)" in err
    code, _, err = run_main(
        ["query", "trials", "-r", str(CALENDAR), "-n", str(total), "-f", "csv"], capsys, monkeypatch
    )
    assert code == 0 and "more row" not in err


def test_table_fits_a_terminal_and_never_a_pipe(capsys, monkeypatch) -> None:
    code, piped, _ = run_main(["list", "-f", "table"], capsys, monkeypatch)
    assert code == 0
    assert "\u2026" not in piped and max(len(line) for line in piped.splitlines()) > 300
    code, out, _ = run_main(["list", "-f", "table"], capsys, monkeypatch, tty_width=100)
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "\u2026" in out
    # the names column keeps its full width: the first cell of every row is a whole query name
    names = {p.stem for p in (ROOT / "sql" / "queries").glob("*.sql")}
    assert {line.split()[0] for line in lines[2:]} == names


def test_a_terminal_never_cuts_the_columns_that_name_a_row(capsys, monkeypatch) -> None:
    # 70 columns: turns_by_exception's five columns fit once its widest non-key column gives way; the run and
    # the exception type (its grain) stay whole, so every row can be told apart
    code, out, err = run_main(["query", "turns_by_exception", "-r", str(CALENDAR)], capsys, monkeypatch, tty_width=70)
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 70 and "\u2026" in lines[0]  # a cut header: it had to give way
    want = {r["exception_type"] for r in oracle.q_turns_by_exception("calendar", CALENDAR)}
    rows = lines[2:]
    assert len(rows) == len(want) > 5
    names = {line[len("calendar") :].strip().rsplit(None, 3)[0] for line in rows}
    assert names == want and all(line.startswith("calendar  ") for line in rows)


def test_a_table_too_wide_for_the_terminal_prints_one_field_per_line(capsys, monkeypatch) -> None:
    runs = [RUNS / name for name in ("tiny", "calendar", "newest")]
    args = ["query", "run_table", *(a for r in runs for a in ("-r", str(r)))]
    code, piped, _ = run_main([*args, "-f", "csv"], capsys, monkeypatch)
    assert code == 0
    header = next(csv.reader(io.StringIO(piped)))
    assert len(header) > 30  # run_table's columns and every config key: no 120-column terminal holds them
    code, out, err = run_main(args, capsys, monkeypatch, tty_width=120)
    assert code == 0
    assert "too wide for the terminal: one field per line; -f csv or -o FILE gives the table" in err
    records = out.split("-[ RECORD ")[1:]
    assert [r.split(" ]", 1)[0] for r in records] == ["1", "2", "3"]
    for record in records:
        fields = record.splitlines()[1:]
        # every column once, in order, named whole; the run named whole
        assert [f.split("|", 1)[0].strip() for f in fields] == header
        assert "\u2026" not in record
    assert sorted(r.splitlines()[1].split("|")[1].strip() for r in records) == sorted(p.name for p in runs)


def test_csv_and_json_are_never_cut_on_a_terminal(capsys, monkeypatch) -> None:
    for fmt in ("csv", "json", "markdown"):
        code, out, _ = run_main(["list", "-f", fmt], capsys, monkeypatch, tty_width=60)
        assert code == 0 and "\u2026" not in out


def test_mistyped_run_path_gets_a_suggestion(capsys, monkeypatch) -> None:
    code, _, err = run_main(["query", "turn_stats", "-r", str(RUNS / "calendr")], capsys, monkeypatch)
    assert code == 3
    line = error_line(err)
    assert "calendr" in line and f"did you mean {RUNS / 'calendar'}" in line


def test_runs_says_where_the_trials_come_from(tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "both"
    shutil.copytree(RUNS / "harbor_csv", run)  # the trials CSV and trace_jobs/
    code, _, err = run_main(["runs", "-r", str(run)], capsys, monkeypatch)
    assert code == 0
    assert "trials from the CSV 20260714_081500_trial_results.csv; trace_jobs/ fills the columns it lacks" in err
    code, _, err = run_main(["runs", "-r", str(RUNS / "harbor")], capsys, monkeypatch)
    assert code == 0 and "fills" not in err
    # --json-trials: trace_jobs/ is the trials file, the CSV is one file not read
    code, out, err = run_main(["--json-trials", "both", "runs", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and "fills" not in err
    (row,) = json.loads(out)
    assert (row["trials_file"], row["trials"], row["ignored_files"]) == ("trace_jobs", 59, 1)


# -- the declarative CLI ----------------------------------------------------------------------------------


def test_choices_agree_with_the_library() -> None:
    from rlsql.outputs.export import EXPORT_FORMATS
    from rlsql.outputs.formats import ExportFormat, ReportFormat
    from rlsql.outputs.report import REPORT_FORMATS

    assert [f.value for f in ExportFormat] == list(EXPORT_FORMATS)
    assert [f.value for f in ReportFormat] == list(REPORT_FORMATS)


def test_shared_options_are_declared_once() -> None:
    source = (ROOT / "rlsql" / "cli" / "app.py").read_text(encoding="utf-8")
    for flag in ('"--param"', '"--run"', '"--limit"', "parser=_parse_format"):
        assert source.count(flag) == 1, flag


def test_import_cli_loads_no_engine() -> None:
    code = (
        "import sys, rlsql.cli.app; "
        "print(sorted(m for m in ('duckdb', 'jinja2', 'yaml', 'sqlglot', 'rlsql.catalog.catalog', "
        "'rlsql.engine.query') "
        "if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_lazy_package_attributes() -> None:
    code = "import rlsql; r = rlsql.query('turn_stats'); print(type(r).__name__, rlsql.ExitCode.USAGE.value)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["QueryResult", "2"]
    proc = subprocess.run(
        [sys.executable, "-c", "import rlsql; rlsql.nothing"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 1 and "has no attribute 'nothing'" in proc.stderr
