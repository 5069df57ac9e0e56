"""A fleet of runs (issue 11): run names, the lazily bound connection, check's grouped pass."""

from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import asdict
from pathlib import Path

import duckdb
import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from rlsql.core.errors import DataError, UsageError
from rlsql.engine.sources import SourceContext
from rlsql.inspection.check import CsvProbes, ViewFindings, check_runs
from rlsql.runs.folders import resolve_runs, split_alias
from tests import oracle
from tests.compare import assert_rows_match, result_columns
from tests.conftest import FIXTURE_RUNS, RUNS


def run_folder(path: Path) -> Path:
    """A minimal run: a config only (enough for rlsql to call the folder a run)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "rl_config.yaml").write_text("trainer: {}\n", encoding="utf-8")
    return path


def names(specs: list) -> list[str]:
    return [r.name for r in resolve_runs(specs)]


# -- run names ---------------------------------------------------------------------------------


def test_name_equals_path_names_the_run(tmp_path: Path) -> None:
    run = run_folder(tmp_path / "2026-06-01-a3")
    (got,) = resolve_runs([f"baseline={run}"])
    assert (got.name, got.path) == ("baseline", run.resolve())
    # the name reaches the SQL: the runs view and every query say `baseline`
    con = rlsql.connect([f"lr3e-6={RUNS / 'tiny'}"])
    assert con.execute("SELECT run FROM runs").fetchall() == [("lr3e-6",)]
    assert {r[0] for r in con.execute("SELECT DISTINCT run FROM trials").fetchall()} == {"lr3e-6"}


def test_an_existing_folder_with_equals_in_its_name_is_a_path(tmp_path: Path) -> None:
    hive = run_folder(tmp_path / "run=1")
    assert names([str(hive)]) == ["run=1"]
    # relative too: `run=1` exists in the current folder, so it is that folder, not run `run` at `1`
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert names(["run=1"]) == ["run=1"]
        assert split_alias("run=1") == (None, "run=1")
    finally:
        os.chdir(cwd)
    # a Path object is always a path
    assert split_alias(Path("a=b")) == (None, Path("a=b"))
    # a left side that is not a plain name (a `/` in it) is a path, not an alias
    assert split_alias("x/y=z") == (None, "x/y=z")
    assert split_alias("a.b=z") == ("a.b", "z")


def test_an_alias_of_a_missing_folder_says_how_it_was_read(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"read as NAME=PATH: run 'name' at .*nowhere"):
        resolve_runs([f"name={tmp_path / 'nowhere'}"])


def test_an_alias_names_exactly_one_run(tmp_path: Path) -> None:
    run_folder(tmp_path / "runs" / "a")
    run_folder(tmp_path / "runs" / "b")
    with pytest.raises(UsageError, match=r"names one run, and .* holds 2"):
        resolve_runs([f"sweep={tmp_path / 'runs'}"])


def test_duplicate_folder_names_are_named_by_their_parents(tmp_path: Path) -> None:
    run_folder(tmp_path / "a" / "run1")
    run_folder(tmp_path / "b" / "run1")
    run_folder(tmp_path / "b" / "run2")
    assert names([tmp_path / "a", tmp_path / "b"]) == ["a/run1", "b/run1", "run2"]
    # as many parents as it takes: x/a/run1 and y/a/run1
    run_folder(tmp_path / "x" / "a" / "run1")
    run_folder(tmp_path / "y" / "a" / "run1")
    assert names([tmp_path / "x" / "a", tmp_path / "y" / "a"]) == ["x/a/run1", "y/a/run1"]
    # an alias takes its name; the other run keeps its folder name
    assert names([f"first={tmp_path / 'a' / 'run1'}", tmp_path / "b" / "run1"]) == ["first", "run1"]
    # an alias equal to another run's folder name: that run is named by its parent
    assert names([f"run1={tmp_path / 'a' / 'run1'}", tmp_path / "b" / "run1"]) == ["b/run1", "run1"]


def test_duplicates_reach_the_queries_under_their_names(tmp_path: Path) -> None:
    shutil.copytree(RUNS / "tiny", tmp_path / "week1" / "tiny")
    shutil.copytree(RUNS / "tiny", tmp_path / "week2" / "tiny")
    got = rlsql.query("turn_stats", [tmp_path / "week1", tmp_path / "week2"]).to_dicts()
    (want,) = oracle.expected("turn_stats", [RUNS / "tiny"])
    assert [r["run"] for r in got] == ["week1/tiny", "week2/tiny"]
    for row in got:
        assert_rows_match([{**row, "run": "tiny"}], [want], row["run"])


def test_a_symlinked_run_is_named_by_the_link(tmp_path: Path) -> None:
    real = run_folder(tmp_path / "2026-06-01T22-14-05")
    link = tmp_path / "latest"
    link.symlink_to(real, target_is_directory=True)
    (got,) = resolve_runs([link])
    assert (got.name, got.path) == ("latest", real.resolve())
    # found inside a folder of runs, the link's entry name too
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "best").symlink_to(real, target_is_directory=True)
    assert names([runs]) == ["best"]
    # one folder reached by its real name and by a link: read once, under its real name, in either order
    assert names([link, real]) == names([real, link]) == ["2026-06-01T22-14-05"]
    # ... and an alias wins over both
    assert names([link, f"chosen={real}"]) == ["chosen"]


def test_names_are_stable_across_commands(tmp_path: Path) -> None:
    for parent in ("a", "b"):
        for run in ("r1", "r2"):
            run_folder(tmp_path / parent / run)
    first = resolve_runs([tmp_path / "a", tmp_path / "b"])
    again = resolve_runs([tmp_path / "b", tmp_path / "a"])  # other order, same runs
    assert [(r.name, r.path) for r in first] == [(r.name, r.path) for r in again]
    assert [r.name for r in first] == ["a/r1", "a/r2", "b/r1", "b/r2"]
    # a relative path and an absolute one name the same folder the same way
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert names(["a/r1"]) == names([tmp_path / "a" / "r1"]) == ["r1"]
        assert names(["a/../a/r1"]) == ["r1"]
    finally:
        os.chdir(cwd)


def test_cli_accepts_names(tmp_path: Path, rlsql_exe: str) -> None:
    import subprocess

    out = subprocess.run(
        [rlsql_exe, "query", "turn_stats", "-r", f"mine={RUNS / 'tiny'}", "-f", "csv"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[1].startswith("mine,")


# -- the lazily bound connection --------------------------------------------------------------


def eager_connection(specs: list[Path]) -> duckdb.DuckDBPyConnection:
    """Every object created the plain way, each view bound over the real views below it; each source read once
    into a table (as views, every read of a view read the files again under every view between: 26 s of the
    test, against ~8 s)."""
    catalog = load_catalog()
    sources = SourceContext(resolve_runs(specs))
    con = duckdb.connect()
    for f in catalog.order:
        for statement in f.create_statements(sources.object_sql(catalog, f), as_table=f.kind == "source"):
            con.execute(statement)
    return con


def rounded(row: tuple) -> str:
    """A row as text, floats to 12 significant digits (a parallel sum may differ in the last bit)."""
    return repr(tuple(format(v, ".12g") if isinstance(v, float) else v for v in row))


def test_every_view_answers_as_if_created_eagerly() -> None:
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lazy = rlsql.connect(dirs)
        eager = eager_connection(dirs)
    catalog = load_catalog()
    objects = [f.name for f in catalog.order if f.kind != "macro"]
    # top of the tree first, then down: each statement creates what it names and nothing already there,
    # the sources an earlier statement created standing in while the new views are created over them
    for name in reversed(objects):
        sql = f'SELECT * FROM "{name}"'
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name in oracle.QUERIES:
                # its columns and types here; its rows through rlsql.connect():
                # test_connected_queries_match_the_oracle, against the oracle (computing them twice more
                # here cost ~5 CPU-s of the suite)
                assert lazy.execute(f"DESCRIBE {sql}").fetchall() == eager.execute(f"DESCRIBE {sql}").fetchall(), name
                continue
            # the columns and types of the rows read (what DESCRIBE would say, a view's columns all
            # nullable, without binding the stack of views below it a second time)
            got_cursor, want_cursor = lazy.execute(sql), eager.execute(sql)
            got, want = got_cursor.fetchall(), want_cursor.fetchall()
        assert result_columns(got_cursor) == result_columns(want_cursor), name
        assert sorted(map(rounded, got)) == sorted(map(rounded, want)), name
    # the small sources are tables read once (rlsql/engine/connection.py), everything else views
    listing = (
        "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal "
        "UNION ALL SELECT table_name, comment FROM duckdb_tables()"
    )
    comments = dict(lazy.execute(listing).fetchall())
    assert set(objects) <= set(comments)
    assert not any(v.startswith("__rlsql") for v in comments)  # no stand-in or waiting name is left
    assert all(comments[n] == catalog.files[n].description for n in objects)


def test_a_statement_creates_only_what_it_names() -> None:
    con = rlsql.connect([RUNS / "tiny", RUNS / "calendar"])
    assert con.created == set()  # connecting found the runs; nothing is created until a statement names it
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    assert con.created == {"runs"}
    assert con.execute("SELECT count(DISTINCT run) FROM reward_curve").fetchone() == (2,)
    assert {"reward_curve", "steps", "metrics_src", "ema_last"} <= con.created
    assert not con.created & {"trials_src", "harbor_trials_src", "trials", "vllm_src", "config_src"}
    # a statement that lists DuckDB's catalog sees every view: it gets them all first
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"trials", "vllm_seconds", "config", "run_table", "turn_stats"} <= views
    # a word of a statement that names a view counts (a quoted name, another case)
    other = rlsql.connect([RUNS / "tiny"])
    assert other.sql('SELECT count(*) FROM "Trials"').fetchall()[0][0] == len(oracle.read_trials(RUNS / "tiny"))
    assert "trials_src" in other.created and "metrics_src" not in other.created
    # a cursor shares the database and creates what it names the same way; create_all() makes the rest
    cursor = other.cursor()
    assert cursor.execute("SELECT count(*) FROM steps").fetchone() == (
        len(oracle.dedup_steps(oracle.read_metric_rows(RUNS / "tiny"))),
    )
    assert "metrics_src" in other.created
    other.create_all()
    assert other.created == set(load_catalog().files)


@pytest.fixture(scope="module")
def connected() -> duckdb.DuckDBPyConnection:
    """One rlsql.connect() over every fixture run, for all the queries below (as a user keeps one open)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        con = rlsql.connect([RUNS / r for r in FIXTURE_RUNS])
    yield con
    con.close()


@pytest.mark.parametrize("name", sorted(oracle.QUERIES))
def test_connected_queries_match_the_oracle(name: str, connected: duckdb.DuckDBPyConnection) -> None:
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    cursor = connected.execute(f'SELECT * FROM "{name}"')
    columns = [d[0] for d in cursor.description]
    got = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    assert_rows_match(got, oracle.expected(name, dirs), f"{name} through rlsql.connect")


# -- check: one grouped pass --------------------------------------------------------------------


def mixed_fleet(root: Path) -> Path:
    """Every fixture run kind, twice, plus damage only the view findings see."""
    runs = root / "runs"
    for kind in FIXTURE_RUNS:
        for copy in ("1", "2"):
            shutil.copytree(RUNS / kind, runs / f"{kind}_{copy}")
    # a vLLM stamp that does not parse (line 3), and one step logged twice with no step number
    vllm = next((runs / "tiny_2").glob("*_vllm_metrics_table.csv"))
    lines = vllm.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace("01-04 23:59:59", "13-45 99:00:00", 1)
    vllm.write_text("".join(lines), encoding="utf-8")
    metrics = next((runs / "tiny_1").glob("*_metrics_table.csv"))
    text = metrics.read_text(encoding="utf-8").splitlines(keepends=True)
    metrics.write_text("".join([*text, text[1]]), encoding="utf-8")
    # a row with a field too many (line 4) in one of the two calendar trials CSVs, which are probed together
    trials = next((runs / "calendar_2").glob("*_trial_results.csv"))
    rows = trials.read_text(encoding="utf-8").splitlines(keepends=True)
    rows[3] = rows[3].rstrip("\n") + ",extra\n"
    trials.write_text("".join(rows), encoding="utf-8")
    # one Harbor trial fewer in the second copy, so the two Harbor counts differ
    shutil.rmtree(sorted((runs / "harbor_2" / "trace_jobs").iterdir())[0])
    return runs


def test_check_over_a_fleet_equals_each_run_checked_alone(tmp_path: Path) -> None:
    runs = mixed_fleet(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = {r.run: r.as_dict() for r in check_runs(resolve_runs([runs]))}
        alone = {}
        for folder in sorted(runs.iterdir()):
            (report,) = check_runs(resolve_runs([folder]))
            alone[report.run] = report.as_dict()
    assert together == alone

    # and the damage was found, against the run it is in (the comparison above is not vacuous)
    def problems(run: str) -> list[str]:
        return [i["problem"] for i in together[run]["issues"]]

    assert "1 row(s) whose datetime_str is not MM-DD HH:MM:SS (e.g. '13-45 99:00:00'): no timestamp" in problems(
        "tiny_2"
    )
    assert not any("datetime_str" in p for p in problems("tiny_1"))
    assert any(p.startswith("step 1 logged") for p in problems("tiny_1"))
    assert any(i["line"] == 4 and i["problem"].startswith("row skipped:") for i in together["calendar_2"]["issues"])
    assert not any(i["problem"].startswith("row skipped:") for i in together["calendar_1"]["issues"])
    assert together["calendar_2"]["readable_rows"]["trials"] == together["calendar_1"]["readable_rows"]["trials"] - 1
    trials = len(oracle.read_harbor_trials(RUNS / "harbor" / "trace_jobs"))
    assert together["harbor_1"]["readable_rows"]["harbor"] == trials
    assert together["harbor_2"]["readable_rows"]["harbor"] == trials - 1


def test_check_falls_back_to_one_query_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When a grouped query or scan fails, each run or file is asked alone (as check worked before grouping)."""
    runs = mixed_fleet(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grouped = [r.as_dict() for r in check_runs(resolve_runs([runs]))]
        monkeypatch.setattr(ViewFindings, "_all", lambda self, key: None)
        monkeypatch.setattr(CsvProbes, "_probe", lambda self, *args: None)
        per_run = [r.as_dict() for r in check_runs(resolve_runs([runs]))]
    assert grouped == per_run


def test_check_issues_stay_in_run_order(tmp_path: Path) -> None:
    runs = mixed_fleet(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports = check_runs(resolve_runs([runs]))
    assert [r.run for r in reports] == sorted(p.name for p in runs.iterdir())
    for report in reports:
        assert {i.run for i in report.issues} <= {report.run}
        assert all(asdict(i)["run"] == report.run for i in report.issues)


def test_csvs_of_one_header_are_probed_in_one_scan(tmp_path: Path) -> None:
    runs = mixed_fleet(tmp_path)
    probes = CsvProbes(duckdb.connect(), resolve_runs([runs]))
    damaged = next((runs / "calendar_2").glob("*_trial_results.csv"))
    clean = next((runs / "calendar_1").glob("*_trial_results.csv"))
    got, want = probes.get(damaged), probes.get(clean)
    assert got is not None and want is not None  # both answered by the grouped scan
    assert [line for _, line, _ in got[1]] == [4] and want[1] == []
    assert got[0]["rows"] == want[0]["rows"] - 1 == len(oracle.read_trials(RUNS / "calendar")) - 1


def test_run_table_columns_are_the_keys_config_diff_lists() -> None:
    """The config keys run_table lays out in Python are those config_diff finds in SQL, on the fixture runs."""
    dirs = [RUNS / r for r in FIXTURE_RUNS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        con = rlsql.connect(dirs)
        listed = [r[0] for r in con.execute("SELECT DISTINCT key FROM config_diff ORDER BY key").fetchall()]
        columns = [d[0] for d in con.execute("SELECT * FROM run_table").description]
    assert listed, "the fixture runs' configs differ in some key"
    assert columns[len(oracle.RUN_SUMMARY_COLUMNS) :] == listed


def test_a_failed_creation_leaves_no_stand_in_behind(monkeypatch) -> None:
    """A statement whose objects fail to be created leaves the sources earlier statements created real (not
    their empty stand-ins) and no waiting name; the next statement creates what is missing."""
    from rlsql.core.errors import DataError
    from rlsql.engine.sources import SourceContext

    con = rlsql.connect([RUNS / "tiny"])
    rows = len(oracle.read_metric_rows(RUNS / "tiny"))
    assert con.execute("SELECT count(*) FROM metrics_src").fetchone() == (rows,)
    real = SourceContext.object_sql

    def failing(self, catalog, f):
        if f.name == "steps":
            raise DataError("steps: made to fail here")
        return real(self, catalog, f)

    monkeypatch.setattr(SourceContext, "object_sql", failing)
    with pytest.raises(DataError, match="made to fail"):
        con.execute("SELECT count(*) FROM steps")  # metrics_src stands in while steps is created: then fails
    monkeypatch.setattr(SourceContext, "object_sql", real)
    assert con.execute("SELECT count(*) FROM metrics_src").fetchone() == (rows,)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert not any(v.startswith("__rlsql") for v in views)
    assert con.execute("SELECT count(*) FROM steps").fetchone() == (
        len(oracle.dedup_steps(oracle.read_metric_rows(RUNS / "tiny"))),
    )
