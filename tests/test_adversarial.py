"""Hostile folder names and damaged CSVs: every file rlsql reads is exactly the file it listed, and
every line of a CSV is either a row or a warning naming its file and line (issue 9, CSV part).

Expectations are computed by hand on tiny files, or by tests/oracle.py (plain Python).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlsql
from rlsql.inspection.check import check_runs
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS, refused_by_mode
from tests.test_cli import run_main

TRIALS = "20260301_000000_trial_results.csv"
METRICS = "20260301_000000_metrics_table.csv"
HEADER = "task_name,trial_name,n_episodes,exception_type,reward\n"


def write(folder: Path, name: str, body: bytes | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    return path


def trials(n: int, reward: str = "1.0") -> str:
    return HEADER + "".join(f"t,t__{i},2,,{reward}\n" for i in range(n))


def caught_query(name: str, runs, **params) -> tuple[list[dict], str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = rlsql.query(name, runs, **params).to_dicts()
    return rows, " | ".join(str(w.message) for w in caught)


def issues(run: Path) -> list[tuple[int | None, str]]:
    return [(i.line, i.problem) for i in check_runs(resolve_runs([run]))[0].issues if i.severity != "info"]


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# -- item 3: a path is a file, never a glob pattern ---------------------------------------------------

HOSTILE = ["run[1]", "run*", "run?", "r]un", "[x", "q'uote", 'dq"uote', "semi;colon", "new\nline", "**", "back\\slash"]


def test_glob_characters_in_folder_names_read_exactly_their_own_file(tmp_path: Path) -> None:
    root = tmp_path / "g"
    write(root / "run[1]", TRIALS, trials(1))
    write(root / "run1", TRIALS, trials(2, "0.0"))
    rows, _ = caught_query("reward_summary", [root])
    # by hand: run[1] has one trial (reward 1), run1 two (reward 0)
    assert [(r["run"], r["trials"], r["mean_reward"]) for r in rows] == [("run1", 2, 0.0), ("run[1]", 1, 1.0)]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_folder_name_beside_its_lookalikes(tmp_path: Path, name: str) -> None:
    root = tmp_path / "g"
    decoys = ["run1", "runx", "run", "x", "rxun", "a", "b"]
    for i, decoy in enumerate(decoys):
        write(root / decoy, TRIALS, trials(10 + i))
    write(root / name, TRIALS, trials(3))
    before = digest(root)
    rows, _ = caught_query("turn_stats", [root])
    want = {**{d: 10 + i for i, d in enumerate(decoys)}, name: 3}
    assert {r["run"]: r["trials"] for r in rows} == want
    assert {r.run: r.readable_rows["trials"] for r in check_runs(resolve_runs([root]))} == want
    assert digest(root) == before


def test_a_file_outside_the_list_is_an_error_not_filtered(tmp_path: Path, monkeypatch) -> None:
    # undo the escaping, so DuckDB expands `run[1]` to run1's file: the query must fail, naming it
    from rlsql.catalog.catalog import load_catalog
    from rlsql.core.sqltext import literal

    write(tmp_path / "run[1]", TRIALS, trials(1))
    write(tmp_path / "run1", TRIALS, trials(2))
    monkeypatch.setitem(load_catalog().env.filters, "file_lit", literal)
    # the read_csv macro (sources/_csv_reader.sql.j2) is imported, and Jinja keeps an imported template's
    # module with the filters it was made with: no template cache while the filter is swapped
    monkeypatch.setattr(load_catalog().env, "cache", None)
    with pytest.raises(
        rlsql.DataError,
        match=re.escape(f"{tmp_path / 'run1' / TRIALS}: DuckDB read this file, which is not one of the files listed"),
    ):
        rlsql.query("reward_summary", [tmp_path / "run[1]"])


def test_check_and_query_give_a_row_the_same_true_cause(tmp_path: Path) -> None:
    # a field too many shifts `Error` into reward: DuckDB records a cast error too, but the cause is the count
    run = write(tmp_path / "r", TRIALS, HEADER + "t,t__1,2,Agent,Error,1.0\nt,t__2,x,,1.0\nt,t__3,3,,1.0\n").parent
    _, warned = caught_query("reward_summary", [run])
    assert "line 2: 6 fields, expected 5; line 3: column n_episodes: 'x' is not a number" in warned
    found = issues(run)
    assert (2, "row skipped: 6 fields, expected 5") in found
    assert (3, "row skipped: column n_episodes: 'x' is not a number") in found


def test_a_row_with_a_bad_cell_is_skipped_by_every_query_whatever_columns_it_reads(tmp_path: Path) -> None:
    # t__2's n_episodes is no number: exception_distribution reads only exception_type, yet skips the row as the
    # trials view, its cached copy and `rlsql check` do (DuckDB casts only the columns a scan reads: it counted 3)
    run = write(tmp_path / "r", TRIALS, HEADER + "t,t__1,2,,1.0\nt,t__2,x,,1.0\nt,t__3,3,,1.0\n").parent
    by_type, warned = caught_query("exception_distribution", [run])
    assert [(r["exception_type"], r["trials"]) for r in by_type] == [("No exception", 2)]
    assert "skipped 1 unreadable row (line 3: column n_episodes: 'x' is not a number)" in warned
    listed, _ = caught_query("trials", [run])
    assert [r["trial_name"] for r in listed] == ["t__1", "t__3"]
    cached = rlsql.Settings.from_env().replace(cache_dir=tmp_path / "cache", cache="auto")
    built = subprocess.run(
        [sys.executable, "-m", "rlsql", "cache", "build", "--run", str(run)],
        env={**os.environ, "RLSQL_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        again = rlsql.query("exception_distribution", [run], settings=cached).to_dicts()
    assert [(r["exception_type"], r["trials"]) for r in again] == [("No exception", 2)]


def test_a_backslash_with_glob_characters_is_skipped_not_misread(tmp_path: Path) -> None:
    # DuckDB's glob leaves out names with a backslash, and `[` forces a path through the glob
    write(tmp_path / "b\\s[1]", TRIALS, trials(1))
    write(tmp_path / "b1", TRIALS, trials(2))
    rows, warned = caught_query("turn_stats", [tmp_path])
    assert {r["run"]: r["trials"] for r in rows} == {"b1": 2, "b\\s[1]": 0}
    assert "which DuckDB's reader cannot name exactly; file skipped" in warned
    assert any("cannot name exactly" in p for _, p in issues(tmp_path / "b\\s[1]"))


def test_a_glob_beside_a_backslash_folder_is_skipped_not_a_failed_query(tmp_path: Path) -> None:
    # DuckDB lists g/ to match the escaped `?`, and its listing fails on a name starting with `\`
    write(tmp_path / "g" / "?", TRIALS, trials(1))
    write(tmp_path / "g" / "\\", TRIALS, trials(3))
    rows, warned = caught_query("turn_stats", [tmp_path / "g"])
    assert {r["run"]: r["trials"] for r in rows} == {"\\": 3, "?": 0}
    assert "fails on a name there starting with a backslash; file skipped" in warned
    assert any("starting with a backslash" in p for _, p in issues(tmp_path / "g" / "?"))


# -- item 11: header oddities --------------------------------------------------------------------------


def header_case(tmp_path: Path, header: str) -> tuple[Path, Path]:
    bad = write(tmp_path / "bad", TRIALS, header + "t,t__1,2,,1.0\n").parent
    good = write(tmp_path / "good", TRIALS, trials(2)).parent
    return bad, good


@pytest.mark.parametrize(
    "header,problem",
    [
        ("task_name,trial_name,n_episodes,reward,reward\n", "header repeats column reward"),
        ("task_name,trial_name,n_episodes,,reward\n", "header has an empty column name (column 4)"),
        ("task_name;trial_name;n_episodes;exception_type;reward\n", "delimiter is not a comma"),
        ("task_name\ttrial_name\tn_episodes\texception_type\treward\n", "delimiter is not a comma"),
    ],
)
def test_header_that_cannot_be_read_skips_the_file_naming_line_1(tmp_path: Path, header: str, problem: str) -> None:
    bad, good = header_case(tmp_path, header)
    rows, warned = caught_query("turn_stats", [bad, good])
    assert [(r["run"], r["trials"]) for r in rows] == [("bad", 0), ("good", 2)]
    assert f"{bad / TRIALS}:1: {problem}" in warned and "file skipped" in warned
    assert any(
        line == 1 and p.startswith(problem) and p.endswith("; file skipped, no rows read") for line, p in issues(bad)
    )


def test_spaces_around_header_names_are_stripped_with_a_warning(tmp_path: Path) -> None:
    bad, _ = header_case(tmp_path, " task_name , trial_name,n_episodes ,exception_type, reward\n")
    rows, warned = caught_query("reward_summary", [bad])
    assert (rows[0]["trials"], rows[0]["trials_with_reward"], rows[0]["trials_with_turns"]) == (1, 1, 1)
    assert f"{bad / TRIALS}:1: spaces around column name(s)" in warned
    assert any(line == 1 and "spaces around column name(s)" in p for line, p in issues(bad))


# -- item 12: globs and unlistable folders ---------------------------------------------------------------


def test_glob_skips_files_with_a_notice(tmp_path: Path) -> None:
    write(tmp_path / "runs" / "a", TRIALS, trials(1))
    write(tmp_path / "runs", "README.md", "# notes\n")
    with pytest.warns(rlsql.RlsqlWarning, match=r"README\.md: not a folder, skipped"):
        runs = resolve_runs([str(tmp_path / "runs" / "*")])
    assert [r.name for r in runs] == ["a"]


def test_unlistable_sub_folder_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A folder the kernel refuses to list to this process (tests/conftest.py refused_by_mode: as root, without
    the capabilities that list anything), in a process of its own."""
    write(tmp_path / "runs" / "a", TRIALS, trials(1))
    locked = tmp_path / "runs" / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        done = subprocess.run(
            [*refused_by_mode(), sys.executable, "-m", "rlsql", "runs", "-r", str(tmp_path / "runs"), "-f", "json"],
            capture_output=True,
            text=True,
            env={**os.environ, "RLSQL_CACHE": "off"},
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert re.search(r"locked: cannot list the folder.*skipped", done.stderr), done.stderr
    assert [r["run"] for r in json.loads(done.stdout)] == ["a"]


def test_unlistable_sub_folder_is_skipped_with_a_warning_as_any_user(tmp_path: Path, monkeypatch) -> None:
    # root lists chmod 000 folders, so make listing fail the way it does for other users
    write(tmp_path / "runs" / "a", TRIALS, trials(1))
    (tmp_path / "runs" / "locked").mkdir()
    real = Path.iterdir

    def iterdir(self):
        if self.name == "locked":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    with pytest.warns(rlsql.RlsqlWarning, match=r"locked: cannot list the folder \(Permission denied\); skipped"):
        runs = resolve_runs([tmp_path / "runs"])
    assert [r.name for r in runs] == ["a"]


# -- item 15: parameters out of range, stray CR -----------------------------------------------------------


def test_integer_parameter_out_of_range_is_a_usage_error(capsys, monkeypatch) -> None:
    code, _, err = run_main(["query", "reward_curve", "-p", "span=2147483648"], capsys, monkeypatch)
    assert code == 2, err
    assert "span: 2147483648 is out of range (1 to 2147483647)" in err


def test_stray_cr_skips_its_file_with_file_and_line_and_the_other_runs_answer(tmp_path: Path) -> None:
    write(tmp_path / "a", TRIALS, trials(2))
    write(tmp_path / "b", TRIALS, HEADER + "t,t__1,2,,1.0\nt,t__2,3\r,,1.0\nt,t__3,4,,1.0\n")
    rows, said = caught_query("turn_stats", [tmp_path / "a", tmp_path / "b"])
    # by hand: run a's two trials of 2 turns; run b's file is skipped whole (no row of it is trusted)
    assert [(r["run"], r["trials"], r["mean"]) for r in rows] == [("a", 2, 2.0), ("b", 0, None)]
    assert f"{tmp_path / 'b' / TRIALS}:3: a carriage return (CR) inside a line" in said
    assert said.count("carriage return") == 1 and "file skipped" in said
    assert (3, "a carriage return (CR) inside a line: DuckDB cannot parse the file") in issues(tmp_path / "b")
    # the file fixed, the same Python session reads it again
    write(tmp_path / "b", TRIALS, HEADER + "t,t__1,2,,1.0\nt,t__2,4,,1.0\n")
    rows, said = caught_query("turn_stats", [tmp_path / "a", tmp_path / "b"])
    assert [(r["run"], r["trials"], r["mean"]) for r in rows] == [("a", 2, 2.0), ("b", 2, 3.0)]
    assert "carriage return" not in said


def test_stray_cr_through_the_cli_exits_0_with_one_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    write(tmp_path / "a", TRIALS, trials(2))
    bad = write(tmp_path / "b", TRIALS, HEADER + "t,t__1,2,,1.0\nt,t__2,3\r,,1.0\n")
    before = bad.read_bytes()
    monkeypatch.setenv("RLSQL_CACHE", "0")
    args = ["query", "turn_stats", "-r", str(tmp_path / "a"), "-r", str(tmp_path / "b"), "-f", "csv"]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    assert out.splitlines()[1].startswith("a,2,2.0"), out
    assert [line for line in err.splitlines() if "carriage return" in line] == [
        f"rlsql: warning: {bad}:3: a carriage return (CR) inside a line: DuckDB cannot parse the file; "
        "file skipped, no rows read"
    ]
    assert "Traceback" not in err and bad.read_bytes() == before


# -- item 6: integer cells out of range or fractional ------------------------------------------------------


def test_out_of_range_turns_are_a_bad_cell_not_a_failed_query(tmp_path: Path) -> None:
    run = write(
        tmp_path / "r", TRIALS, HEADER + "t,t__1,99999999999999999999,,1.0\nt,t__2,4,,0.0\nt,t__3,2.5,,1.0\n"
    ).parent
    rows, _ = caught_query("turn_stats", [run])
    # by hand: only t__2's 4 turns are an integer in range; the other two cells are bad, not rounded
    assert (rows[0]["trials"], rows[0]["max"], rows[0]["min"]) == (1, 4, 4)
    assert caught_query("reward_summary", [run])[0][0]["trials"] == 3  # the rows stay, their cell is empty
    found = issues(run)
    assert any(line == 2 and "n_episodes" in p for line, p in found), found
    assert any(line == 4 and "n_episodes" in p for line, p in found), found


def test_a_query_names_the_file_and_lines_of_bad_whole_number_cells(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r",
        TRIALS,
        HEADER + "t,t__1,99999999999999999999,,1.0\nt,t__2,4,,0.0\nt,t__3,2.5,,1.0\nt,t__4,3.0,,1.0\nt,t__5,nan,,1.0\n",
    )
    rows, said = caught_query("turn_stats", [path.parent])
    assert (rows[0]["trials"], rows[0]["min"], rows[0]["max"]) == (2, 3, 4)  # 4 and 3.0 only
    # by hand: lines 2 and 4 hold the bad cells; 3.0 is 3 and nan is empty (as in every numeric column)
    assert (
        f"{path}: 2 cells not a whole number up to 2**53, read as empty "
        "(line 2: column n_episodes: '99999999999999999999'; line 4: column n_episodes: '2.5')"
    ) in said
    assert said.count("whole number") == 1


@pytest.mark.parametrize("command", ["sql", "export", "report"])
def test_sql_export_and_report_name_bad_whole_number_cells_as_a_query_does(
    command: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    """One answer loop (rlsql/engine/answer.py) for every command: ad hoc SQL, export and report once read such a
    cell as empty without a word; now their second attempt names it as `rlsql query`'s does (line 3, by hand)."""
    path = write(tmp_path / "r", TRIALS, HEADER + "t,t__1,4,,1.0\nt,t__2,2.5,,0.0\n")
    run = str(path.parent)
    args = {
        "sql": ["sql", "SELECT count(n_episodes) AS n FROM trials", "-r", run],
        "export": ["export", "trials", "-r", run, "-o", str(tmp_path / "out")],
        "report": ["report", "-r", run, "-o", str(tmp_path / "report")],
    }[command]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    said = f"{path}: 1 cell not a whole number up to 2**53, read as empty (line 3: column n_episodes: '2.5')"
    assert err.count(said) == 1, err
    if command == "sql":
        assert out.splitlines()[-1].strip(" |") == "1"  # t__1's 4 only: 2.5 reads as empty


def test_a_query_names_the_line_of_a_bad_step(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r", METRICS, "log_file,trainer/global_step,reward/avg_raw_reward\nj,1,0.5\nj,2.5,0.7\nj,3,0.9\n"
    )
    rows, said = caught_query("reward_curve", [path.parent])
    assert [r["step"] for r in rows] == [1, 3]
    assert (
        f"{path}: 1 cell not a whole number up to 2**53, read as empty (line 3: column trainer/global_step: '2.5')"
        in said
    )


def test_out_of_range_step_does_not_crash_check(tmp_path: Path) -> None:
    run = write(
        tmp_path / "r",
        METRICS,
        "log_file,trainer/global_step,reward/avg_raw_reward\nj,1,0.5\nj,99999999999999999999,0.7\nj,3,0.9\n",
    ).parent
    found = issues(run)
    assert any(line == 3 and "trainer/global_step" in p for line, p in found), found
    rows, _ = caught_query("reward_curve", [run])
    assert [r["step"] for r in rows] == [1, 3]


def test_an_existing_folder_named_like_a_glob_is_that_folder(tmp_path: Path) -> None:
    write(tmp_path / "run[1]", TRIALS, trials(1))
    write(tmp_path / "run1", TRIALS, trials(2))
    assert [r.name for r in resolve_runs([str(tmp_path / "run[1]")])] == ["run[1]"]


# -- item 5: every line is a row or a warning --------------------------------------------------------------

LONG = 40 * 1024 * 1024  # beyond DuckDB's default 32 MB read buffer: such a line used to vanish silently


@pytest.fixture(scope="module")
def long_line_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("long") / "r"
    write(run, TRIALS, HEADER + "t,t__1,2,,1.0\nt,t__2,3,Agent" + "x" * LONG + ",0.0\nt,t__3,4,,1.0\n")
    return run


def test_a_line_longer_than_the_read_buffer_is_a_warning_with_its_line(long_line_run: Path) -> None:
    rows, warned = caught_query("turn_stats", [long_line_run])
    assert (rows[0]["trials"], rows[0]["max"]) == (2, 4)  # by hand: t__1 and t__3
    assert f"{long_line_run / TRIALS}: skipped 1 unreadable row (line 3: line size over maximum" in warned


@pytest.mark.parametrize("mib", [2.5, 10, 15.9, 24])
def test_a_line_near_the_16_mib_read_buffer_is_a_warning_not_a_lost_row(tmp_path: Path, mib: float) -> None:
    """rlsql reads with a 16 MiB buffer (rlsql/runs/csvfiles.py): a line over DuckDB's 2 MiB max_line_size is
    rejected and named, never dropped without a word or read as a row. 10 and 15.9 MiB fit the buffer
    whether or not the long-line guard saw them; 24 MiB is always found by the guard and read with a
    buffer twice its size (without the guard, a line of 16.2 MiB or more vanished: measured)."""
    run = tmp_path / "r"
    # 4,000 short rows either side: the long line falls inside the file, not at its start
    short = "".join(f"t,t__{i},2,,1.0\n" for i in range(4000))
    write(run, TRIALS, HEADER + short + "t,long,3,Agent" + "x" * int(mib * 2**20) + ",0.0\n" + short)
    rows, warned = caught_query("turn_stats", [run])
    assert (rows[0]["trials"], rows[0]["max"]) == (8000, 2)  # by hand: every short row, not the long one
    assert f"{run / TRIALS}: skipped 1 unreadable row (line 4002: line size over maximum" in warned


def test_check_reports_the_long_line(long_line_run: Path) -> None:
    found = issues(long_line_run)
    assert any(line == 3 and "line size" in p.lower() for line, p in found), found


def test_check_accounts_for_every_line_even_when_duckdb_drops_one(long_line_run: Path, monkeypatch) -> None:
    # without rlsql's buffer sizing DuckDB drops the long line without a word: check must still see it
    from rlsql.runs import csvfiles as csvread

    monkeypatch.setattr(csvread, "buffer_size", lambda paths: None)
    found = issues(long_line_run)
    assert any("3 data rows in the file, DuckDB read 2 and rejected 0" in p for _, p in found), found


# -- property test: random folder trees and names, answers equal the oracle's, no byte changes ----------

SOURCES = {
    name: sorted(p.name for p in (RUNS / name).iterdir() if p.is_file()) for name in ("tiny", "newest", "harbor_csv")
}
HOSTILE_CHARS = "[]*?'\";\n\\ ab1_-.é"
names = st.text(alphabet=HOSTILE_CHARS, min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))
stamps = st.sampled_from(["20250101_000000", "20260105_120000", "20261231_235959"])


@st.composite
def run_trees(draw) -> list[tuple[str, str, dict[str, str]]]:
    """[(folder name, fixture run, {file name written: fixture file copied})]."""
    folders = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    trees = []
    for folder in folders:
        source = draw(st.sampled_from(sorted(SOURCES)))
        files: dict[str, str] = {}
        for name in SOURCES[source]:
            target = name
            if name[:15].replace("_", "").isdigit() and draw(st.booleans()):
                target = draw(stamps) + name[15:]  # the same file under another parse time
            files[target] = name
        if draw(st.booleans()):  # an older parse of another fixture's trials: must lose to the newer one
            other = draw(st.sampled_from(sorted(SOURCES)))
            trials_file = next((n for n in SOURCES[other] if n.endswith("trial_results.csv")), None)
            if trials_file and not any(t.endswith("_trial_results.csv") and t[:15] <= "20000101_000000" for t in files):
                files["20000101_000000_trial_results.csv"] = f"{other}/{trials_file}"
        if draw(st.booleans()):  # a look-alike that is no artifact
            files["x_trial_results.csv"] = SOURCES[source][0]
        trees.append((folder, source, files))
    return trees


PROPERTY_QUERIES = ["reward_summary", "exception_distribution", "reward_curve", "vllm_summary"]


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trees=run_trees(), as_folder=st.booleans(), top=st.sampled_from(["g[1]*", "g"]))
def test_random_trees_answer_as_the_oracle_and_stay_untouched(tmp_path_factory, trees, as_folder, top) -> None:
    # a path with a backslash and a glob character is skipped on purpose (test above), not answered
    assume(not any("\\" in f"{top}/{folder}" and any(c in f"{top}/{folder}" for c in "[]*?") for folder, _, _ in trees))
    # ...and so is a globbed path beside a folder whose name starts with a backslash (next test)
    assume(
        not (
            any(folder.split("/")[0].startswith("\\") for folder, _, _ in trees)
            and any(c in f"{top}/{folder}" for folder, _, _ in trees for c in "[]*?")
        )
    )
    root = tmp_path_factory.mktemp("tree") / top
    run_dirs = []
    for folder, source, files in trees:
        run = root / folder
        run.mkdir(parents=True)
        for target, origin in files.items():
            shutil.copyfile(RUNS / origin if "/" in origin else RUNS / source / origin, run / target)
        run_dirs.append(run)
    before = digest(root)
    spec = [root] if as_folder else run_dirs
    for name in PROPERTY_QUERIES:
        if not any(
            oracle.find_artifacts(d)["vllm" if name == "vllm_summary" else "trials"] for d in run_dirs
        ) and name in ("vllm_summary", "reward_summary", "exception_distribution"):
            with pytest.raises(rlsql.DataError):
                rlsql.query(name, spec)
            continue
        if name == "reward_curve" and not any(oracle.find_artifacts(d)["metrics"] for d in run_dirs):
            continue
        got, _ = caught_query(name, spec)
        assert_rows_match(got, oracle.expected(name, run_dirs), f"{name} over {[t[0] for t in trees]}")
    assert digest(root) == before


def test_a_line_too_long_for_any_buffer_skips_the_file_naming_its_line(long_line_run: Path, monkeypatch) -> None:
    from rlsql.runs import csvfiles as csvread

    monkeypatch.setattr(csvread, "MAX_BUFFER", 64 * 1024 * 1024)  # the 40 MB line needs ~84 MB
    _, warned = caught_query("reward_summary", [long_line_run])
    assert f"{long_line_run / TRIALS}:3: a line of 40 MB, too long to read; file skipped" in warned
    assert (3, "a line of 40 MB, too long to read; file skipped, no rows read") in issues(long_line_run)
