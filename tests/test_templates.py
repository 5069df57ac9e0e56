"""The SQL templates' discipline (issue 10, item 4), read from the files themselves: one place that calls
read_csv, every type pasted into SQL through the allow-list, the data-error marker spelled once (in Python),
and no `indent` filter that could put spaces inside a path literal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlsql.catalog.catalog import Catalog, sql_root
from rlsql.catalog.templates import jinja_env
from rlsql.core.errors import BAD_CELL_FUNCTION, BAD_CELL_MARK, DATA_ERROR_MARK, CatalogError
from rlsql.core.sqltext import SQL_TYPES, sql_type
from rlsql.runs import csvfiles as csvread

SQL = Path(__file__).resolve().parent.parent / "sql"
TEMPLATES = sorted(p for p in SQL.rglob("*") if p.suffix in (".sql", ".j2"))
READER = SQL / "sources" / "_csv_reader.sql.j2"


def test_read_csv_is_called_in_one_template() -> None:
    def sql_text(path: Path) -> str:
        """The template's own SQL: Jinja comments, statements and expressions (macro calls) taken out."""
        return re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", "", path.read_text(), flags=re.S)

    assert re.search(r"\bread_csv\s*\(", sql_text(READER))
    callers = [
        p.relative_to(SQL).as_posix() for p in TEMPLATES if p != READER and re.search(r"\bread_csv\s*\(", sql_text(p))
    ]
    assert callers == []
    users = {p.name for p in TEMPLATES if re.search(r"import read_(csv|lines|kept_lines)\b", p.read_text())}
    assert users == {
        "_read_csv.sql.j2",
        "_check_csv.sql.j2",
        "_cache_csv.sql.j2",
        "_rawlogs.sql.j2",
        "_log_cache.sql.j2",
        "_log_direct.sql.j2",
    }


def test_every_pasted_type_goes_through_the_allow_list() -> None:
    unchecked = [
        f"{p.relative_to(SQL)}: {m.group(0)}"
        for p in TEMPLATES
        for m in re.finditer(r"AS \{\{[^}]*\}\}\)", p.read_text())
        if "| sqltype" not in m.group(0)
    ]
    assert unchecked == []


def test_the_data_error_marker_is_spelled_in_python_only() -> None:
    marks = (DATA_ERROR_MARK.strip(), BAD_CELL_MARK, BAD_CELL_FUNCTION)
    spelled = [p.relative_to(SQL).as_posix() for p in TEMPLATES if any(m in p.read_text() for m in marks)]
    assert spelled == []
    # ...and once in Python: rlsql/core/errors.py, which every other module imports them from
    package = Path(__file__).resolve().parent.parent / "rlsql"
    spelled = [
        p.relative_to(package).as_posix()
        for p in sorted(package.rglob("*.py"))
        if p.name != "errors.py" and any(m in p.read_text() for m in marks)
    ]
    assert spelled == []
    assert "BAD_CELL_FUNCTION | ident" in (SQL / "sources" / "_read_csv.sql.j2").read_text()
    users = [p.name for p in TEMPLATES if "DATA_ERROR_MARK | lit" in p.read_text()]
    assert sorted(users) == ["_harbor_read.sql.j2", "_read_csv.sql.j2", "_trajectory_files.sql.j2"]


def test_no_template_indents_rendered_values() -> None:
    assert [p.name for p in TEMPLATES if "| indent" in p.read_text()] == []


def test_the_reader_macro_quotes_what_it_is_given() -> None:
    env = jinja_env(sql_root())
    macros = env.get_template("sources/_csv_reader.sql.j2").module
    types = {"n": "double", "we'ird": "VARCHAR"}
    text = str(macros.read_csv(["/runs/a[1]/x's.csv", "/runs/b.csv"], ["n", "we'ird"], types, 4096, "src"))
    assert text.startswith("read_csv(['/runs/a[[]1[]]/x''s.csv', '/runs/b.csv'], header = true")
    assert "filename = 'src'" in text and "buffer_size = 4096" in text
    # DuckDB's own max_line_size, stated with every buffer (rlsql/runs/csvfiles.py MAX_LINE says why)
    assert f"max_line_size = {csvread.MAX_LINE}," in text
    assert text.endswith("columns = {'n': 'DOUBLE', 'we''ird': 'VARCHAR'})")
    with pytest.raises(ValueError, match="not a type"):
        str(macros.read_csv("/runs/a.csv", ["n"], {"n": "DOUBLE); DROP TABLE x; --"}))


def test_sql_type_allow_list() -> None:
    assert sql_type(" bigint ") == "BIGINT"
    assert {sql_type(t.lower()) for t in SQL_TYPES} == SQL_TYPES
    for bad in ("TEXT", "DOUBLE)", "VARCHAR; SELECT 1", ""):
        with pytest.raises(ValueError):
            sql_type(bad)


def test_a_source_declaring_an_unknown_type_fails_at_load(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "sql"
    shutil.copytree(SQL, root)
    source = root / "sources" / "metrics_src.sql"
    source.write_text(
        re.sub(
            r"^-- other_columns: .*$",
            "-- other_columns: DOUBLE) AS x, (SELECT 1",
            source.read_text(),
            count=1,
            flags=re.M,
        ),
        encoding="utf-8",
    )
    assert "other_columns: DOUBLE)" in source.read_text()
    with pytest.raises(CatalogError, match="other_columns"):
        Catalog.load(root)


def test_reported_types_allow_list() -> None:
    from rlsql.core.sqltext import reported_type
    from rlsql.engine.statements import stub_select

    assert reported_type("timestamp with time zone") == "TIMESTAMP WITH TIME ZONE"
    assert reported_type("VARCHAR[][]") == "VARCHAR[][]"
    assert (
        stub_select([("d", "DATE"), ("x'y", "DOUBLE")])
        == """SELECT CAST(NULL AS DATE) AS "d", CAST(NULL AS DOUBLE) AS "x'y" WHERE false"""
    )
    # a STRUCT of plain field names (their case kept) and allowed types: trajectory_steps_src's calls
    assert (
        reported_type("STRUCT(call_index BIGINT, function_name varchar)[]")
        == "STRUCT(call_index BIGINT, function_name VARCHAR)[]"
    )
    for bad in (
        "STRUCT(a DECIMAL(18,3))",
        'STRUCT("a b" VARCHAR)',
        "STRUCT(a VARCHAR) AS x, (SELECT 1)",
        "STRUCT(a VARCHAR, b)",
        "DOUBLE) AS x, (SELECT 1",
        "VARCHAR []",
        "[]",
        "DECIMAL(18,3)",
        "STRUCT(a VARCHAR); DROP TABLE t; --(b VARCHAR)",
    ):
        with pytest.raises(ValueError, match="not a column type"):
            reported_type(bad)
        with pytest.raises(ValueError):
            stub_select([("c", bad)])


#: the bare names a template may paste: SQL text a macro or a `set` in the same template built from
#: filtered values (a macro's arguments, a `set` of filtered identifiers), never a value from outside
_BUILT_SQL = {
    "started",
    "finished",
    "json",
    "number",
    "part",
    "lines_sql",
    "read_names",
    "source_file_sql",
    "bad_sql",
    # sources/_atif.sql.j2's macro arguments (SQL expressions its callers spell: `atif.text("s.source")`)
    # and the trajectory sources' `set`s of constants: a field of a fixed list, a regular expression
    "j",
    "v",
    "t",
    "s",
    "k",
    "a",
    "members",
    "ns.e",
    "field",
    "naming",
    # queries/_findings.sql.j2's macro arguments, which the rule files spell (a kind, a severity, a metric,
    # a column, a SQL expression over getvariable()), and findings.sql's loop over its fixed list of kinds
    "alias",
    "count_col",
    "evidence",
    "expr",
    "firing",
    "kind",
    "kv_full_pct",
    "metric",
    "n",
    "order",
    "severity",
    "share_col",
    "threshold",
    "what",
    # sources/_tool_calls.sql.j2's `set` of a constant: the depth past which arguments read as empty
    "max_depth",
}


def test_every_pasted_value_goes_through_a_filter() -> None:
    """Each `{{ ... }}` in sql/ is a filtered value (lit, ident, sqltype, file_lit, lit_date), a macro call,
    a loop's separator, a constant the template spells, or SQL text it built (_BUILT_SQL): no value is
    pasted as it is."""
    unfiltered = []
    for p in TEMPLATES:
        for m in re.finditer(r"\{\{-?\s*(.*?)\s*-?\}\}", p.read_text(), flags=re.S):
            expr = m.group(1)
            if (
                re.search(r"\|\s*(lit|ident|sqltype|file_lit|lit_date)\s*$", expr)
                or re.fullmatch(r"(?:[a-z_]+\.)?[a-z_]+\(.*\)", expr, flags=re.S)
                or re.fullmatch(r"""(".*?"|'.*?') if (not )?loop\.(first|last)( else (".*?"|'.*?'))?""", expr)
                or expr in _BUILT_SQL
                # a constant the template spells (string literals joined by ~): a macro's text, filtered where used
                or re.fullmatch(r"'(?:[^'\\]|\\.)*'(?:\s*~\s*'(?:[^'\\]|\\.)*')*", expr)
            ):
                continue
            unfiltered.append(f"{p.relative_to(SQL)}: {{{{ {expr} }}}}")
    assert unfiltered == []
