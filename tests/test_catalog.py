"""The SQL catalog: headers, dependency order from the SQL itself, load-time errors, fingerprints."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import rlsql
from rlsql.catalog import Catalog, sql_root
from rlsql.errors import CatalogError


@pytest.fixture
def sql_copy(tmp_path: Path) -> Path:
    root = tmp_path / "sql"
    shutil.copytree(sql_root(), root)
    return root


def test_every_file_has_a_header_and_a_description() -> None:
    catalog = Catalog.load()
    assert len(catalog.queries()) == 20
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
        Catalog.load(sql_copy)


def test_cycle_fails_at_load(sql_copy: Path) -> None:
    for a, b in (("cyc_a", "cyc_b"), ("cyc_b", "cyc_a")):
        (sql_copy / "views" / f"{a}.sql").write_text(
            f"-- name: {a}\n-- version: 1\n-- description: half of a cycle\nSELECT * FROM {b}\n"
        )
    with pytest.raises(CatalogError, match="cycle"):
        Catalog.load(sql_copy)


def test_header_name_must_match_file(sql_copy: Path) -> None:
    (sql_copy / "views" / "named.sql").write_text("-- name: other\n-- version: 1\n-- description: x\nSELECT 1\n")
    with pytest.raises(CatalogError, match="differs from the file name"):
        Catalog.load(sql_copy)


def test_fingerprint_ignores_comments_and_follows_logic(sql_copy: Path) -> None:
    before = Catalog.load(sql_copy)
    path = sql_copy / "views" / "steps.sql"
    text = path.read_text()
    path.write_text(text.replace("SELECT *", "-- a new comment\nSELECT   *"))
    commented = Catalog.load(sql_copy)
    assert commented.files["steps"].fingerprint == before.files["steps"].fingerprint
    assert commented.files["reward_curve"].fingerprint == before.files["reward_curve"].fingerprint
    path.write_text(text.replace("ORDER BY row_no", "ORDER BY row_no DESC"))
    changed = Catalog.load(sql_copy)
    assert changed.files["steps"].fingerprint != before.files["steps"].fingerprint
    # a parent's change reaches its children, not unrelated queries
    assert changed.files["best_checkpoint"].fingerprint != before.files["best_checkpoint"].fingerprint
    assert changed.files["turn_stats"].fingerprint == before.files["turn_stats"].fingerprint


def test_descriptions_reach_duckdb(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    comments = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    assert comments["turns_by_exception"].startswith("Agent turns per exception type")
    macros = dict(con.execute(
        "SELECT function_name, comment FROM duckdb_functions() WHERE function_name IN ('ema', 'ema_last')"
    ).fetchall())
    assert macros["ema"].startswith("Table macro ema")


def test_macros_from_plain_sql(runs_dir: Path) -> None:
    con = rlsql.connect([runs_dir / "tiny"])
    con.execute("CREATE TABLE pts AS SELECT * FROM (VALUES ('a', 1, 1.0), ('a', 2, 0.0), ('a', 3, NULL),"
                " ('a', 4, 1.0), ('b', 1, 0.5)) t(series, x, value)")
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
    # a DuckDB connection in all but name (rlsql.lazyconn): relations, cursors and frames are DuckDB's own
    assert isinstance(con.sql("SELECT count(*) FROM trials"), duckdb.DuckDBPyRelation)
    assert con.execute("SELECT count(*) FROM trials").fetchone()[0] > 0
    assert con.cursor().execute("SELECT count(*) FROM steps").fetchone()[0] > 0


def test_compiled_templates_are_reused_and_an_edited_template_is_compiled_again(sql_copy: Path, tmp_path: Path,
                                                                               monkeypatch) -> None:
    """The template code cache (catalog._CodeCache): a second catalogue renders from the stored code without
    compiling, to the text a catalogue without the cache renders; an edit of a template compiles it again."""
    import jinja2

    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RLSQL_NO_CACHE", "1")
    plain = Catalog.load(sql_copy)
    expected = {name: f.rendered for name, f in plain.files.items() if f.kind != "source"}
    monkeypatch.delenv("RLSQL_NO_CACHE")
    first = Catalog.load(sql_copy)
    assert {name: f.rendered for name, f in first.files.items() if f.kind != "source"} == expected
    stored = list((tmp_path / "cache").glob("sql-analysis-*-jinja/*.code"))
    assert len(stored) >= len(expected)

    compiled: list[str] = []
    real_compile = jinja2.Environment.compile

    def counting_compile(self, source, *args, **kwargs):
        compiled.append(source)
        return real_compile(self, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting_compile)
    second = Catalog.load(sql_copy)
    assert compiled == []  # every template came from the stored code
    assert {name: f.rendered for name, f in second.files.items() if f.kind != "source"} == expected

    view = sql_copy / "views" / "trials.sql"
    view.write_text(view.read_text().replace("SELECT", "SELECT /* edited */", 1))
    third = Catalog.load(sql_copy)
    assert len(compiled) == 1 and "/* edited */" in compiled[0]
    assert "/* edited */" in third.files["trials"].rendered


def _renders(catalog: Catalog, runs) -> dict[str, str]:
    from rlsql.sources import SourceContext

    context = SourceContext(runs)
    texts = {name: f.rendered for name, f in catalog.files.items() if f.kind != "source"}
    for name in ("trials_src", "run_files", "harbor_trials_src", "metrics_src", "vllm_src"):
        texts[name] = context.render(catalog, catalog.files[name])
    return texts


def test_rendered_sql_comes_back_from_the_cache_and_follows_the_files_and_templates(sql_copy: Path, tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """The rendered cache (catalog._RenderedCache): a warm catalogue gives the texts a catalogue without caches
    renders, without running Jinja; a changed CSV header or an edited imported template renders again."""
    import warnings

    from rlsql.runs import resolve_runs

    run = tmp_path / "tiny"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "tiny", run)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    warnings.simplefilter("ignore")

    def fresh(cached: bool) -> dict[str, str]:
        if cached:
            monkeypatch.delenv("RLSQL_NO_CACHE", raising=False)
        else:
            monkeypatch.setenv("RLSQL_NO_CACHE", "1")
        return _renders(Catalog.load(sql_copy), resolve_runs([run]))

    expected = fresh(cached=False)
    assert fresh(cached=True) == expected  # the first: rendered by Jinja, stored
    with monkeypatch.context() as m:
        m.setattr(Catalog, "_template", lambda self, f: pytest.fail(f"{f.name} was rendered by Jinja"))
        assert fresh(cached=True) == expected  # the second: every text from the cache

    trials = next(run.glob("*_trial_results.csv"))
    lines = trials.read_text().splitlines()
    trials.write_text("\n".join([lines[0] + ",extra_column", *(line + ",1" for line in lines[1:])]) + "\n")
    changed = fresh(cached=False)
    assert "extra_column" in changed["trials_src"]
    assert fresh(cached=True) == changed

    reader = sql_copy / "sources" / "_csv_reader.sql.j2"
    reader.write_text(reader.read_text().replace("header = true,", "header = TRUE,", 1))
    edited = fresh(cached=False)
    assert edited["trials_src"] != changed["trials_src"]
    assert fresh(cached=True) == edited


def test_a_context_value_the_rendered_cache_cannot_name_is_rendered_every_time() -> None:
    from rlsql.catalog import _canonical, _Uncacheable

    assert _canonical({"a": [1, 2.0, None, True, Path("/x")]}) != _canonical({"a": [1, 2, None, True, "/x"]})
    with pytest.raises(_Uncacheable):
        _canonical({"f": object()})


def test_the_sql_folder_is_the_one_importlib_finds() -> None:
    """rlsql/sqlfolder.py finds the SQL files from its own location; importlib.resources, which packaging
    defines, must name the same folder (a checkout on sys.path has no rlsql.sql package: its sql/ then)."""
    from importlib import resources

    try:
        expected = Path(str(resources.files("rlsql.sql"))).resolve()
    except ModuleNotFoundError:
        expected = (Path(rlsql.__file__).resolve().parent.parent / "sql").resolve()
    assert sql_root().resolve() == expected
    assert (sql_root() / "queries" / "turn_stats.sql").is_file()
