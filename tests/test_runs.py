"""Finding runs and their artifacts (data-contract.md section 1, docs/semantics.md)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

import rlsql
from rlsql.core.errors import DataError, UsageError
from rlsql.runs.folders import Artifact, resolve_runs, sample_run_path, scan_folder

TRIALS_HEADER = (
    "task_name,trial_name,n_episodes,n_input_tokens,n_output_tokens,exception_type,reward,agent_duration_sec\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_newest_prefix_wins_and_splits_are_ignored(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write(run / "20260101_000000_trial_results.csv", TRIALS_HEADER + "t,t__old,9,1,1,,0.0,1\n")
    write(run / "20260102_000000_trial_results.csv", TRIALS_HEADER + "t,t__new,2,1,1,,1.0,1\n")
    write(run / "20260102_000000_metrics_table.csv", "log_file,reward/avg_raw_reward,global_step\njob_1,0.5,1\n")
    write(run / "20260102_000000_metrics_job_1.csv", "reward/avg_raw_reward,global_step\n0.5,1\n")
    write(run / "trial_results.csv", TRIALS_HEADER + "t,t__plain,7,1,1,,1.0,1\n")
    found = scan_folder(run)
    assert found is not None
    assert found.artifacts["trials"].path.name == "20260102_000000_trial_results.csv"
    assert found.artifacts["metrics"].path.name == "20260102_000000_metrics_table.csv"
    assert {p.name for p in found.ignored} == {"20260101_000000_trial_results.csv", "trial_results.csv"}
    assert rlsql.query("turn_stats", [run]).to_dicts()[0]["max"] == 2
    assert rlsql.query("run_overview", [run]).to_dicts()[0]["metric_blocks"] == 1


def test_unprefixed_names_are_read_when_alone(tmp_path: Path) -> None:
    run = tmp_path / "new"
    write(run / "metrics.csv", "log_file,reward/avg_raw_reward,global_step\njob,0.25,1\n")
    assert scan_folder(run).artifacts["metrics"].prefix is None


def test_folder_of_runs_glob_and_repeats(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write(tmp_path / "runs" / name / "rl_config.yaml", "trainer: {}\n")
    (tmp_path / "runs" / "not_a_run").mkdir()
    assert [r.name for r in resolve_runs([tmp_path / "runs"])] == ["a", "b", "c"]
    assert [r.name for r in resolve_runs([str(tmp_path / "runs" / "[ab]")])] == ["a", "b"]
    # the same run named twice is read once
    assert [r.name for r in resolve_runs([tmp_path / "runs" / "a", tmp_path / "runs"])] == ["a", "b", "c"]


def test_two_runs_with_one_name_are_named_by_their_parents(tmp_path: Path) -> None:
    write(tmp_path / "x" / "same" / "rl_config.yaml", "a: 1\n")
    write(tmp_path / "y" / "same" / "rl_config.yaml", "a: 1\n")
    runs = resolve_runs([tmp_path / "x" / "same", tmp_path / "y" / "same"])
    assert [r.name for r in runs] == ["x/same", "y/same"]
    # two aliases that clash are refused, naming the alias syntax
    with pytest.raises(UsageError, match="NAME=PATH"):
        resolve_runs([f"a={tmp_path / 'x' / 'same'}", f"a={tmp_path / 'y' / 'same'}"])


def test_a_file_is_not_a_run(tmp_path: Path) -> None:
    f = write(tmp_path / "20260101_000000_trial_results.csv", TRIALS_HEADER)
    with pytest.raises(DataError, match="not a folder"):
        resolve_runs([f])


def test_sample_run_is_packaged() -> None:
    assert (sample_run_path() / "rl_config.yaml").is_file()
    assert resolve_runs(None)[0].name == "calendar"


def test_vllm_year_falls_back_to_modification_time(tmp_path: Path) -> None:
    run = tmp_path / "r"
    f = write(
        run / "vllm_metrics.csv",
        "log_file,datetime_str,n_engines_reporting\njob,12-31 23:00:00,1\njob,01-01 01:00:00,1\n",
    )
    stamp = dt.datetime(2027, 1, 1, 12, 0, tzinfo=dt.UTC).timestamp()
    os.utime(f, (stamp, stamp))
    con = rlsql.connect([run])
    got = [r[0] for r in con.execute("SELECT ts FROM vllm_seconds ORDER BY ts").fetchall()]
    assert got == [dt.datetime(2026, 12, 31, 23, 0), dt.datetime(2027, 1, 1, 1, 0)]


@pytest.mark.parametrize(
    "prefix",
    [
        "20260105_120000",
        "20240229_235959",
        "20230229_000000",
        "20261301_000000",
        "20260230_000000",
        "20260105_240000",
        "20260105_236000",
        "20260105_235960",
        "20260105_235961",
        "00000105_000000",
        "99991231_235959",
        "20260100_000000",
    ],
)
def test_parse_prefix_dates_are_read_as_strptime_reads_them(prefix: str) -> None:
    """The parse time's date, read by hand (no _strptime at start-up): valid and invalid as strptime says."""
    try:
        expected = dt.datetime.strptime(prefix, "%Y%m%d_%H%M%S").date()
    except ValueError:
        with pytest.raises(ValueError):
            _ = Artifact("trials", Path("x"), prefix).prefix_date
        return
    assert Artifact("trials", Path("x"), prefix).prefix_date == expected
