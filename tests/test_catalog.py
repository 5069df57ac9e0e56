"""The SQL catalog: headers, dependency order from the SQL itself, load-time errors, fingerprints."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import rlsql
from rlsql.catalog.catalog import Catalog, sql_root
from rlsql.core.errors import CatalogError


@pytest.fixture
def sql_copy(tmp_path: Path) -> Path:
    root = tmp_path / "sql"
    shutil.copytree(sql_root(), root)
    return root


def test_every_file_has_a_header_and_a_description() -> None:
    catalog = Catalog.load()
    assert len(catalog.queries()) == 24
    for f in catalog.files.values():
        assert f.description and f.version, f.path
        assert Path(f.path).stem == f.name


def test_order_puts_dependencies_first() -> None:
    catalog = Catalog.load()
    position = {f.name: i for i, f in enumerate(catalog.order)}
    for f in catalog.files.values():
        for dep in f.depends_on:
            assert position[dep] < position[f.name], f"{dep} must come before {f.name}"
    # spot checks written out by hand from the SQL
    assert "steps" in catalog.files["reward_curve"].depends_on
    assert "ema_last" in catalog.files["reward_curve"].depends_on
    assert "checkpoint_ema" in catalog.files["best_checkpoint"].depends_on
    assert "reward_curve" in {f.name for f in catalog.closure(["best_checkpoint"])}
    assert "metrics_src" in catalog.files["metric_rows"].depends_on


def test_closure_creates_only_what_a_query_needs() -> None:
    names = {f.name for f in Catalog.load().closure(["turn_stats"])}
    assert {"turn_stats", "trial_rows", "trials_src", "harbor_trials_src", "run_files"} <= names
    # turn statistics need no routing, so neither the config nor the per-trial routing join
    assert not names & {"vllm_src", "metrics_src", "exception_routing", "config", "trials"}
    routed = {f.name for f in Catalog.load().closure(["exception_distribution"])}
    assert {"exception_routing", "config_src", "route_exception", "trial_rows"} <= routed


def test_unknown_reference_fails_at_load(sql_copy: Path) -> None:
    (sql_copy / "views" / "broken.sql").write_text(
        "-- name: broken\n-- version: 1\n-- description: refers to nothing real\nSELECT * FROM no_such_view\n"
    )
    with pytest.raises(CatalogError, match="no_such_view"):
        Catalog.analyse(sql_copy)  # when the manifest is written (python -m rlsql.outputs.docs)


def test_cycle_fails_at_load(sql_copy: Path) -> None:
    for a, b in (("cyc_a", "cyc_b"), ("cyc_b", "cyc_a")):
        (sql_copy / "views" / f"{a}.sql").write_text(
            f"-- name: {a}\n-- version: 1\n-- description: half of a cycle\nSELECT * FROM {b}\n"
        )
    with pytest.raises(CatalogError, match="cycle"):
        Catalog.analyse(sql_copy)


def test_header_name_must_match_file(sql_copy: Path) -> None:
    (sql_copy / "views" / "named.sql").write_text("-- name: other\n-- version: 1\n-- description: x\nSELECT 1\n")
    for load in (Catalog.load, Catalog.analyse):
        with pytest.raises(CatalogError, match="differs from the file name"):
            load(sql_copy)


def test_fingerprint_ignores_comments_and_follows_logic(sql_copy: Path) -> None:
    before = Catalog.load(sql_copy)
    path = sql_copy / "views" / "steps.sql"
    text = path.read_text()
    path.write_text(text.replace("SELECT *", "-- a new comment\nSELECT   *"))
    commented = Catalog.analyse(sql_copy)
    assert commented.files["steps"].fingerprint == before.files["steps"].fingerprint
    assert commented.files["reward_curve"].fingerprint == before.files["reward_curve"].fingerprint
    path.write_text(text.replace("ORDER BY row_no", "ORDER BY row_no DESC"))
    changed = Catalog.analyse(sql_copy)
    assert changed.files["steps"].fingerprint != before.files["steps"].fingerprint
    # a parent's change reaches its children, not unrelated queries
    assert changed.files["best_checkpoint"].fingerprint != before.files["best_checkpoint"].fingerprint
    assert changed.files["turn_stats"].fingerprint == before.files["turn_stats"].fingerprint


def test_descriptions_reach_duckdb(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    comments = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    assert comments["turns_by_exception"].startswith("Agent turns per exception type")
    macros = dict(
        con.execute(
            "SELECT function_name, comment FROM duckdb_functions() WHERE function_name IN ('ema', 'ema_last')"
        ).fetchall()
    )
    assert macros["ema"].startswith("Table macro ema")


def test_macros_from_plain_sql(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    con.execute(
        "CREATE TABLE pts AS SELECT * FROM (VALUES ('a', 1, 1.0), ('a', 2, 0.0), ('a', 3, NULL),"
        " ('a', 4, 1.0), ('b', 1, 0.5)) t(series, x, value)"
    )
    # EMA with span 2 (alpha = 2/3), by hand: 1.0; 2/3*0 + 1/3*1 = 1/3; NULL skipped; 2/3*1 + 1/3*1/3 = 7/9
    got = con.execute("SELECT series, x, ema FROM ema('pts', span := 2)").fetchall()
    assert got[:3] == [("a", 1, 1.0), ("a", 2, pytest.approx(1 / 3)), ("a", 3, None)]
    assert got[3][2] == pytest.approx(7 / 9) and got[4] == ("b", 1, 0.5)
    # rolling mean over the last 2 rows: 1.0, 0.5, 0.0 (NULL ignored), 1.0 (only 1.0 of NULL, 1.0)
    rolled = [r[3] for r in con.execute("SELECT * FROM rolling_mean('pts', span := 2)").fetchall()]
    assert rolled == [1.0, 0.5, 0.0, 1.0, 0.5]


def test_views_read_parameters_from_variables(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    default = con.execute("SELECT ema FROM reward_curve ORDER BY step").fetchall()
    con.execute("SET VARIABLE span = ?", [1])  # span 1: alpha 1, the EMA is the reward itself
    rows = con.execute("SELECT reward, ema FROM reward_curve ORDER BY step").fetchall()
    assert all(r == pytest.approx(e) for r, e in rows if r is not None)
    assert default != [(e,) for _, e in rows]


def test_user_text_never_reaches_sql_unquoted(tmp_path: Path) -> None:
    run = tmp_path / "it's; DROP TABLE x; --"
    run.mkdir()
    (run / "20260101_000000_trial_results.csv").write_text(
        "task_name,trial_name,n_episodes,exception_type,reward\nt,t__1,2,,1.0\n"
    )
    result = rlsql.query("turn_stats", [run])
    assert result.rows == [("it's; DROP TABLE x; --", 1, 2.0, 2.0, None, 2, 2)]


def test_duckdb_shell_sees_same_views_through_connection(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    # a DuckDB connection in all but name (rlsql.engine.connection): relations, cursors and frames are DuckDB's own
    assert isinstance(con.sql("SELECT count(*) FROM trials"), duckdb.DuckDBPyRelation)
    assert con.execute("SELECT count(*) FROM trials").fetchone()[0] > 0
    assert con.cursor().execute("SELECT count(*) FROM steps").fetchone()[0] > 0


def test_the_manifest_describes_the_sql_files_and_a_stale_one_is_a_clear_error(sql_copy: Path) -> None:
    """The committed manifest equals a fresh sqlglot analysis of sql/ (the query path never parses SQL),
    and a catalogue whose files the manifest does not describe fails naming the file and the fix."""
    from rlsql.catalog import manifest

    loaded = Catalog.load(sql_copy)
    analysed = Catalog.analyse(sql_copy)
    assert {n: (f.depends_on, f.fingerprint) for n, f in loaded.files.items()} == {
        n: (f.depends_on, f.fingerprint) for n, f in analysed.files.items()
    }
    view = sql_copy / "views" / "trials.sql"
    view.write_text(view.read_text().replace("SELECT", "SELECT /* edited */", 1))
    with pytest.raises(CatalogError, match=r"sql/views/trials.sql: changed since .*python -m rlsql.outputs.docs"):
        Catalog.load(sql_copy)
    (sql_copy / manifest.NAME).write_text(
        manifest.render(manifest.build(Catalog.analyse(sql_copy).files.values(), sql_copy))
    )
    assert "/* edited */" in Catalog.load(sql_copy).files["trials"].rendered
    template = sql_copy / "sources" / "_csv_reader.sql.j2"
    template.write_text(template.read_text() + "\n")
    with pytest.raises(CatalogError, match="a template"):
        Catalog.load(sql_copy)


def test_loading_the_catalogue_does_not_import_sqlglot() -> None:
    import subprocess
    import sys

    code = "import sys, rlsql; rlsql.query('turn_stats'); print('sqlglot' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_sql_folder_is_the_one_importlib_finds() -> None:
    """catalog.sql_root finds the SQL files from its own location; importlib.resources, which packaging
    defines, must name the same folder (a checkout on sys.path has no rlsql.sql package: its sql/ then)."""
    from importlib import resources

    try:
        expected = Path(str(resources.files("rlsql.sql"))).resolve()
    except ModuleNotFoundError:
        expected = (Path(rlsql.__file__).resolve().parent.parent / "sql").resolve()
    assert sql_root().resolve() == expected
    assert (sql_root() / "queries" / "turn_stats.sql").is_file()
