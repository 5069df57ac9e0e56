"""Raw training logs read in place answer like the parser's CSVs of the same run.

fixtures/runs/rawlogs holds three chained SLURM logs (console blocks, WANDB_MIRROR lines, batch
lines, vLLM lines crossing midnight, cut tails), Harbor's trial folders and rl_config.yaml;
fixtures/runs/rawlogs_csv holds the CSVs fixtures/rawlogs.py wrote from the same values (not by
parsing the logs). The views and named queries over the first must equal those over the second,
and the second must match tests/oracle.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from rlsql.runs.folders import resolve_runs
from rlsql.runs.logfiles import find_logs, short_name
from tests import oracle
from tests.compare import assert_rows_match, same_value
from tests.conftest import RUNS
from tests.test_cli import run_main

RAW, TWIN = RUNS / "rawlogs", RUNS / "rawlogs_csv"
FROM_LOGS_ENV = "RLSQL_FROM_LOGS"
#: the named queries a run of raw logs answers (the trajectory queries read agents' trajectories, which the
#: raw-log fixture has none of: tests/test_trajectories.py has them)
#: (nor the comparisons of a run with a baseline: one run alone has no row there, tests/test_compare.py)
QUERIES = [
    q.name
    for q in load_catalog().queries()
    if not any(f.artifact == "trajectories" for f in load_catalog().closure([q.name]))
    and q.name not in ("run_diff", "task_diff")
]
#: the run has 9 steps: the default save_every (20) would leave best_checkpoint without a candidate
PARAMS = {"best_checkpoint": {"save_every": 2}}
#: the twin's parse-time prefix (20260603_040000): the raw logs' last write, for the vLLM year
PARSED_AT = datetime(2026, 6, 3, 4, 0, 0, tzinfo=UTC).timestamp()


def copy_run(src: Path, dest: Path) -> Path:
    """A copy of the raw-log run whose logs were last written when the twin was parsed."""
    shutil.copytree(src, dest)
    for log in find_logs(dest):
        os.utime(log, (PARSED_AT, PARSED_AT))
    return dest


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_run(RAW, tmp_path_factory.mktemp("raw") / "rawlogs")


def rows(run: Path, sql: str) -> list[dict]:
    con = rlsql.connect([run])
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def without(rows: list[dict], *columns: str) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in columns} for row in rows]


# ---------------------------------------------------------------------------------------------
# the views
# ---------------------------------------------------------------------------------------------


def test_metric_rows_equal_the_parsed_table(raw: Path) -> None:
    got = rows(raw, "SELECT * FROM metric_rows ORDER BY row_no")
    want = rows(TWIN, "SELECT * FROM metric_rows ORDER BY row_no")
    assert len(want) == 11  # 3 + 5 + 3 rows: steps 3 and 7 are re-run after a resume
    assert [r["step"] for r in got] == [1, 2, 3, 3, 4, 5, 6, 7, 7, 8, 9]
    # same columns in the same order (the parser's first-appearance order), same values
    assert_rows_match(without(got, "run", "source_file"), without(want, "run", "source_file"), "metric_rows")
    assert {r["source_file"].rsplit("/", 1)[-1] for r in got} == {p.name for p in find_logs(RAW)}


def test_console_values_are_four_decimal_and_mirror_values_full_precision(raw: Path) -> None:
    got = {
        (r["log_file"], r["step"]): r["value"]
        for r in rows(raw, "SELECT log_file, step, value FROM metrics_long WHERE metric = 'async/staleness_mean'")
    }
    console = [v for (log, _), v in got.items() if log == "v2_agent_554408"]
    mirror = [v for (log, _), v in got.items() if log != "v2_agent_554408"]
    assert all(round(v, 4) == v for v in console)
    assert all(round(v, 4) != v for v in mirror)  # the WANDB_MIRROR lines win over the console blocks


def test_batch_errors_are_attributed_to_steps(raw: Path) -> None:
    sql = ('SELECT log_file, step, "batch_errors/total_batches" AS b, "batch_errors/total_failed" AS f, '
           '"batch_errors/avg_DaytonaError" AS d FROM metric_rows ORDER BY row_no')  # fmt: skip
    got, want = rows(raw, sql), rows(TWIN, sql)
    assert_rows_match(got, want, "batch_errors")
    assert all(r["b"] is not None for r in got)


def test_metrics_long_and_steps_equal(raw: Path) -> None:
    for view, order in (("metrics_long", "row_no, metric"), ("steps", "step")):
        got = rows(raw, f"SELECT * FROM {view} ORDER BY {order}")
        want = rows(TWIN, f"SELECT * FROM {view} ORDER BY {order}")
        assert got, view
        assert_rows_match(without(got, "run", "source_file"), without(want, "run", "source_file"), view)


def test_vllm_seconds_equal(raw: Path) -> None:
    got = rows(raw, "SELECT * FROM vllm_seconds ORDER BY log_file, ts")
    want = rows(TWIN, "SELECT * FROM vllm_seconds ORDER BY log_file, ts")
    assert len(want) == 54
    assert_rows_match(without(got, "run"), without(want, "run"), "vllm_seconds")
    # crossing midnight: job_554409 runs from 06-02 23:4x into 06-03
    days = {r["ts"].date().isoformat() for r in got if r["log_file"] == "job_554409"}
    assert days == {"2026-06-02", "2026-06-03"}


def test_vllm_line_variants(raw: Path) -> None:
    """The line without ip= counts as one more host; the Preemptions: line is read; cut lines are not."""
    text = (raw / "logs" / "calendar_x_long_slurm_name_part2_554409.out").read_text()
    local = next(line for line in text.splitlines() if "pid=3900)" in line)
    second = local.split(" INFO ")[1][:14]
    got = rows(raw, f"SELECT n_engines_reporting, unique_ips FROM vllm_seconds WHERE datetime_str = '{second}'")
    assert got == [{"n_engines_reporting": 2.0, "unique_ips": 2.0}]  # the local engine and one with Preemptions
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.endswith("Wai") and not text.endswith("\n")  # the fixture's cut line
    cut = last.split(" INFO ")[1][:14]
    assert rows(raw, f"SELECT count(*) AS n FROM vllm_seconds WHERE datetime_str = '{cut}'") == [{"n": 0}]


# ---------------------------------------------------------------------------------------------
# named queries, report, CLI
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", QUERIES)
def test_named_query_on_raw_logs_matches_the_oracle_on_the_twin(raw: Path, name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rlsql.query(name, [raw], **PARAMS.get(name, {})).to_dicts()
    want = oracle.expected(name, [TWIN], **PARAMS.get(name, {}))
    assert got, f"{name}: no rows from the raw logs"
    assert_rows_match(without(got, "run"), without(want, "run"), f"{name}: raw logs vs the oracle on the twin")
    assert not [w for w in caught if issubclass(w.category, rlsql.RlsqlWarning)], [str(w.message) for w in caught]


@pytest.mark.slow
def test_cli_query_and_report_on_a_folder_of_raw_logs_only(raw: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    assert not list(raw.glob("*.csv"))
    code, stdout, stderr = run_main(
        ["query", "reward_curve", "--run", str(raw), "--format", "csv"], capsys, monkeypatch
    )
    assert code == 0, stderr
    assert stderr == ""
    lines = stdout.splitlines()
    assert len(lines) == 10 and lines[-1].startswith("rawlogs,9,calendar_z_554410,")
    code, twin, stderr = run_main(["query", "reward_curve", "--run", str(TWIN), "--format", "csv"], capsys, monkeypatch)
    assert code == 0, stderr
    assert [line.split(",", 1)[1] for line in lines] == [line.split(",", 1)[1] for line in twin.splitlines()]
    for run, out in ((raw, tmp_path / "raw"), (TWIN, tmp_path / "twin")):
        code, _, stderr = run_main(["report", "--run", str(run), "--output", str(out)], capsys, monkeypatch)
        assert code == 0, stderr
    got, want = (tmp_path / "raw" / "report.md").read_text(), (tmp_path / "twin" / "report.md").read_text()

    # the same report, but for the line that names the run's files and rlsql check's notes (which
    # describe the files read: logs in one run, CSVs in the other)
    def body(text: str, name: str) -> list[str]:
        return [
            line
            for line in text.replace(name, "RUN").splitlines()
            if not line.startswith(("- **RUN** (", "| info |", "Data caveats: none in 1 run ("))
        ]

    assert body(got, "rawlogs") == body(want, "rawlogs_csv")
    assert "logs: logs" in got


# ---------------------------------------------------------------------------------------------
# discovery, names, precedence
# ---------------------------------------------------------------------------------------------


def test_log_short_names_follow_the_parser(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cases = {
        "calendar_z_554410.out": "calendar_z_554410",  # at most 30 characters: the stem
        "calendar_v2_agent_rl_run_8b_554408.out": "v2_agent_554408",  # _vN_word and a job id
        "calendar_x_long_slurm_name_part2_554409.out": "job_554409",  # a job id only
        "a_very_long_name_without_any_job_number_here.log": "me_without_any_job_number_here",  # the last 30
    }
    for name, want in cases.items():
        assert short_name(run / name, run) == want, name
    assert short_name(run / "logs" / "rl_v3_math_run_with_a_long_stem_123456.out", run) == "v3_math_123456"


def test_discovery_reads_the_folder_and_its_logs_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    for name in ("b.out", "a.log", "notes.txt", "logs/c.out", "logs/c.err"):
        (run / name).write_text("x\n")
    (run / "trace_jobs" / "t1").mkdir(parents=True)
    (run / "trace_jobs" / "t1" / "x.out").write_text("x\n")  # deeper folders are not searched
    assert [p.relative_to(run).as_posix() for p in find_logs(run)] == ["a.log", "b.out", "logs/c.out"]


def test_csvs_win_unless_from_logs(
    raw: Path, tmp_path: Path, rlsql_exe: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    both = tmp_path / "both"
    copy_run(raw, both)
    for table in TWIN.glob("*.csv"):
        shutil.copy(table, both / table.name)
    sql = "SELECT DISTINCT source_file FROM metric_rows"
    assert [r["source_file"] for r in rows(both, sql)] == [str(both / "20260603_040000_metrics_table.csv")]
    code, listing, stderr = run_main(["runs", "--run", str(both), "--format", "csv"], capsys, monkeypatch)
    assert code == 0, stderr
    assert "20260603_040000_metrics_table.csv" in listing
    monkeypatch.setenv(FROM_LOGS_ENV, "1")
    assert sorted(r["source_file"].rsplit("/", 1)[-1] for r in rows(both, sql)) == [p.name for p in find_logs(both)]
    assert rows(both, "SELECT DISTINCT source_file FROM vllm_src")[0]["source_file"].endswith(".out")
    monkeypatch.delenv(FROM_LOGS_ENV)
    flagged = subprocess.run([rlsql_exe, "--from-logs", "runs", "--run", str(both), "--format", "csv"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "logs/*.out|*.log: 3 logs (1 console, 2 WANDB_MIRROR)" in flagged
    assert "vLLM stat lines" in flagged


def test_runs_says_where_the_metrics_come_from(raw: Path, capsys, monkeypatch) -> None:
    code, listing, stderr = run_main(["runs", "--run", str(raw), "--format", "csv"], capsys, monkeypatch)
    assert code == 0, stderr
    assert "logs/*.out|*.log: 3 logs (1 console, 2 WANDB_MIRROR)" in listing


# ---------------------------------------------------------------------------------------------
# a run in progress
# ---------------------------------------------------------------------------------------------


def test_growing_log_shows_new_steps(raw: Path, tmp_path: Path) -> None:
    live = copy_run(raw, tmp_path / "live")
    log = live / "logs" / "calendar_z_554410.out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = rows(live, "SELECT step FROM steps ORDER BY step")
    assert [r["step"] for r in before] == list(range(1, 10))  # the cut mirror line of step 10 is ignored
    assert not caught, [str(w.message) for w in caught]
    # the writer keeps its file open and appends while rlsql reads
    with log.open("a", encoding="utf-8") as writer:
        writer.write('\n(skyrl_entrypoint pid=4242) WANDB_MIRROR kind=train step=10 metrics='
                     '{"reward/avg_raw_reward": 0.91234567, "reward/avg_pass_at_4": 1.0, "timing/step": 400.5, '
                     '"trainer/global_step": 10}\n(skyrl_entrypoint pid=4242) WANDB_MIRROR kind=train step=11 '
                     'metrics={"reward/avg_raw_reward": 0.9')  # fmt: skip
        writer.flush()
        during = rows(live, 'SELECT step, "reward/avg_raw_reward" AS r FROM steps WHERE step >= 9 ORDER BY step')
        assert [(r["step"], r["r"]) for r in during][1:] == [(10, 0.91234567)]
        writer.write('2, "trainer/global_step": 11}\n')
    after = rows(live, 'SELECT step, "reward/avg_raw_reward" AS r FROM steps WHERE step >= 10 ORDER BY step')
    assert [(r["step"], r["r"]) for r in after] == [(10, 0.91234567), (11, 0.92)]
    curve = rlsql.query("reward_curve", [live]).to_dicts()
    assert curve[-1]["step"] == 11 and same_value(curve[-1]["reward"], 0.92)


def test_partial_console_block_is_ignored(tmp_path: Path) -> None:
    run = tmp_path / "partial"
    run.mkdir()
    block = (
        "Step 1: {'async/staleness_mean': '1.5000',\n 'reward/avg_raw_reward': '0.2500',\n 'trainer/global_step': 1}\n"
    )
    (run / "train.out").write_text(block + "Step 2: {'async/staleness_mean': '1.2500',\n 'reward/avg_raw_")
    assert rows(run, 'SELECT step, "reward/avg_raw_reward" AS r FROM steps') == [{"step": 1, "r": 0.25}]
    with (run / "train.out").open("a") as writer:
        writer.write("reward': '0.5000',\n 'trainer/global_step': 2}\n")
    assert rows(run, "SELECT step, \"reward/avg_raw_reward\" AS r FROM steps ORDER BY step") == [
        {"step": 1, "r": 0.25}, {"step": 2, "r": 0.5}]  # fmt: skip


def test_check_says_where_each_artifact_came_from(
    raw: Path, tmp_path: Path, rlsql_exe: str, capsys, monkeypatch
) -> None:
    code, stdout, stderr = run_main(["check", "--run", str(raw), "--format", "csv"], capsys, monkeypatch)
    assert code == 0, stderr
    assert (
        "trainer metrics read from the training logs: logs/*.out|*.log: 3 logs (1 console, 2 WANDB_MIRROR); "
        "11 row(s)" in stdout
    )
    assert "vLLM engine stats read from the training logs" in stdout and "54 row(s)" in stdout
    assert "step 3 logged 2 times" in stdout
    # the cut last line of job_554409 is the only stat-looking line not read
    assert "part2_554409.out,,\"1 line(s) mention 'Avg prompt throughput'" in stdout
    both = copy_run(raw, tmp_path / "both")
    for table in TWIN.glob("*.csv"):
        shutil.copy(table, both / table.name)
    code, stdout, stderr = run_main(["check", "--run", str(both)], capsys, monkeypatch)
    assert code == 0, stderr
    assert "trainer metrics not read from the training logs: the run's CSV is used" in stdout
    # --from-logs in a process of its own: the flag holds for the process that was given it
    flagged = subprocess.run([rlsql_exe, "--from-logs", "check", "--run", str(both)],
                             capture_output=True, text=True, check=True)  # fmt: skip
    assert "not read: --from-logs reads the run's training logs instead" in flagged.stdout
    assert "trainer metrics read from the training logs" in flagged.stdout


def test_logs_in_a_folder_with_glob_characters(raw: Path, tmp_path: Path) -> None:
    odd = copy_run(raw, tmp_path / "we[ir]d*?" / "run [1]")
    got = rows(odd, "SELECT step, log_file FROM steps ORDER BY step")
    want = rows(raw, "SELECT step, log_file FROM steps ORDER BY step")
    assert got == want and len(got) == 9
    assert len(rows(odd, "SELECT * FROM vllm_seconds")) == 54


def test_a_result_json_being_written_is_left_out(raw: Path, tmp_path: Path) -> None:
    live = copy_run(raw, tmp_path / "live")
    before = rlsql.query("reward_summary", [live]).to_dicts()[0]["trials"]
    trial = live / "trace_jobs" / "calendar-9999__Zz9Zz9Z"
    trial.mkdir()  # in flight: no result.json yet, no row, no warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert rlsql.query("reward_summary", [live]).to_dicts()[0]["trials"] == before == 59
    assert not caught, [str(w.message) for w in caught]
    (trial / "result.json").write_text('{"task_name": "calendar-9999", "trial_name": "calendar-9999__Zz9')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        during = rlsql.query("reward_summary", [live]).to_dicts()[0]["trials"]
    assert during == 59  # cut off mid-write: no row, one warning for the run (not one per file or line)
    assert len(caught) == 1 and "calendar-9999__Zz9Zz9Z" in str(caught[0].message)
    (trial / "result.json").write_text(json.dumps({"task_name": "calendar-9999", "trial_name": "calendar-9999__Zz9Zz9Z",
                                                   "verifier_result": {"rewards": {"reward": 1.0}}}))  # fmt: skip
    assert rlsql.query("reward_summary", [live]).to_dicts()[0]["trials"] == 60


@pytest.mark.slow
def test_export_of_a_raw_log_run_records_the_logs(raw: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    for run, out in ((raw, tmp_path / "raw"), (TWIN, tmp_path / "twin")):
        code, _, stderr = run_main(
            ["export", "--all", "--views", "-r", str(run), "-o", str(out), "-f", "csv"], capsys, monkeypatch
        )
        assert code == 0, stderr
    for name in ("reward_curve", "vllm_summary", "timing_breakdown", "steps"):
        got, want = (list(csv.DictReader((tmp_path / side / f"{name}.csv").open())) for side in ("raw", "twin"))
        assert len(got) == len(want) > 0, name
        for g, w in zip(got, want, strict=True):
            assert list(g) == list(w), name
            for column in w:
                if column in ("run", "source_file"):
                    continue
                number = w[column] not in ("", "true", "false") and w[column].lstrip("-").replace(".", "", 1).isdigit()
                assert same_value(float(g[column]), float(w[column])) if number else g[column] == w[column], (
                    name,
                    column,
                    g[column],
                    w[column],
                )
    meta = json.loads((tmp_path / "raw" / "reward_curve.csv.meta.json").read_text())
    sources = json.loads(meta["rlsql.sources"])
    logs = [s["path"].rsplit("/", 1)[-1] for s in sources if s["artifact"] == "logs"]
    assert logs == [p.name for p in find_logs(raw)]


PARSER = os.environ.get("RLSQL_PARSER")


@pytest.mark.skipif(
    not PARSER,
    reason="set RLSQL_PARSER to a copy of scripts/analysis/parse_skyrl_metrics.py "
    "(open-thoughts/OpenThoughts-Agent; needs pandas, matplotlib) to run the public parser",
)
def test_the_public_parser_writes_the_twin(tmp_path: Path) -> None:
    """The twin is what the parser writes from the fixture logs, but for rlsql's documented choices:
    the mirror logs' full precision (the parser's default mode reads their 4-decimal console
    blocks) and the one second whose lines the parser's strict pattern drops (no ip=, Preemptions:)."""
    subprocess.run([sys.executable, PARSER, str(RAW / "logs"), str(tmp_path)], capture_output=True, text=True)

    def table(folder: Path, name: str) -> Path:  # `<15-char stamp>_<name>.csv`, exactly
        return next(p for p in folder.iterdir() if p.name[16:] == f"{name}.csv")

    parsed = {name: table(tmp_path, name) for name in ("metrics_table", "vllm_metrics_table")}
    got = list(csv.DictReader(parsed["metrics_table"].open()))
    want = list(csv.DictReader(table(TWIN, "metrics_table").open()))
    assert len(got) == len(want) == 11 and list(got[0]) == list(want[0])
    for g, w in zip(got, want, strict=True):
        for column, cell in w.items():
            if column == "log_file" or not cell:
                assert g[column] == cell, column
            else:
                assert float(g[column]) == pytest.approx(float(cell), abs=5e-5, rel=5e-5), column
    got_v = {(r["log_file"], r["datetime_str"]): r for r in csv.DictReader(parsed["vllm_metrics_table"].open())}
    twin_vllm = table(TWIN, "vllm_metrics_table")
    want_v = {(r["log_file"], r["datetime_str"]): r for r in csv.DictReader(twin_vllm.open())}
    text = (RAW / "logs" / "calendar_x_long_slurm_name_part2_554409.out").read_text()
    local = next(line for line in text.splitlines() if "pid=3900)" in line).split(" INFO ")[1][:14]
    assert set(want_v) - set(got_v) == {("job_554409", local)} and set(got_v) <= set(want_v)
    for key, row in got_v.items():
        for column, cell in row.items():
            if column not in ("log_file", "datetime_str"):
                assert same_value(float(cell), float(want_v[key][column])), (key, column)


def test_a_stray_log_in_a_folder_of_runs_does_not_hide_them(raw: Path, tmp_path: Path) -> None:
    parent = tmp_path / "runs"
    copy_run(raw, parent / "a")
    shutil.copytree(TWIN, parent / "b")
    (parent / "rsync.log").write_text("sent 1,234 bytes\n")
    assert [r.name for r in resolve_runs([parent])] == ["a", "b"]
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "train.out").write_text("nothing yet\n")
    (alone / "checkpoints").mkdir()
    # a log that holds no training log's lines does not make a run folder (a folder beside a stray .log)
    with pytest.raises(rlsql.DataError, match="no run artifacts"):
        resolve_runs([alone])
    (alone / "train.out").write_text(
        "(TerminalBenchGenerator pid=5, ip=10.0.0.2) Batch generation complete: "
        "4/4 successful, 0 failed instances, 0 masked (excluded from baseline)\n"
    )
    assert [r.name for r in resolve_runs([alone])] == ["alone"]  # its sub-folder is no run: the run of its logs


@pytest.mark.parametrize("name", ["reward_curve", "timing_breakdown", "vllm_summary", "run_overview", "async_health"])
def test_raw_log_and_csv_runs_in_one_query(raw: Path, name: str) -> None:
    """Columns of a log run and of CSV runs of other parser versions line up by name."""
    together = rlsql.query(name, [raw, RUNS / "calendar", RUNS / "tiny"]).to_dicts()
    alone = [
        row
        for run in ("calendar", raw, "tiny")
        for row in rlsql.query(name, [run if isinstance(run, Path) else RUNS / run]).to_dicts()
    ]
    key = ("run",)
    assert_rows_match(sorted(together, key=lambda r: [r[k] for k in key]),
                      sorted(alone, key=lambda r: [r[k] for k in key]), name)  # fmt: skip


def test_a_log_duckdb_cannot_name_is_skipped_with_the_reason(raw: Path, tmp_path: Path) -> None:
    odd = copy_run(raw, tmp_path / "back\\slash[1]" / "run")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        con = rlsql.connect([odd])
        rows_read = con.execute("SELECT count(*) FROM metric_rows").fetchone()[0]
    assert rows_read == 0
    messages = [str(w.message) for w in caught if issubclass(w.category, rlsql.RlsqlWarning)]
    assert any("backslash" in m and "log skipped" in m for m in messages), messages
