"""Markdown and table files rendered by DuckDB (rlsql/outputs/rows.py, `_copy_lines`) are byte for byte what
the Python formatter writes (formats.display, markdown_cell, to_table), for every type the SQL renders and
every awkward cell: NaN, infinities, -0.0, floats past 1e15 and below 0.001, exact binary ties, `|` and
backticks, line breaks, trailing Unicode whitespace, NULLs.

The reference is the Python path itself, forced (`_copy_lines` off); its figures are checked by hand in
test_attacks_writes.py and below (Python's own `format` is the rule the module docstring states).
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsql.outputs.formats import OutputFormat
from rlsql.outputs.rows import Output

COLUMNS = "s1 VARCHAR, i BIGINT, h HUGEINT, d DOUBLE, f FLOAT, b BOOLEAN, day DATE, ts TIMESTAMP, s2 VARCHAR"
EDGE_FLOATS = [
    0.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    1e300,
    -2.5331407049791268e303,
    1e15,
    1e15 + 0.5,
    -(2.0**53) - 2,
    999999999999999.9,
    1.03125,
    2.5,
    0.00005,
    0.001,
    -0.001,
    0.00099995,
    5e-324,
    1.234e-05,
    123.45675,
    1.7976931348623157e308,
]
PIECES = [*"ab |`<>&\\\"',;\t\x0b\x0c\x1c\x85\xa0\u2003\u3000é👍\x01\n\r\x1b\x7f\x9b\x00", "\r\n", "\\|"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def maybe(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), strategy)


ROW = st.tuples(
    maybe(TEXT),
    maybe(st.integers(-(2**63), 2**63 - 1)),
    maybe(st.integers(-(2**120), 2**120)),
    maybe(st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(), st.integers(-(10**6), 10**6).map(lambda n: n / 64))),
    maybe(st.floats(width=32)),
    maybe(st.booleans()),
    maybe(st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31))),
    maybe(st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31))),
    maybe(TEXT),
)


def written(con: duckdb.DuckDBPyConnection, fmt: OutputFormat, target: Path, monkeypatch, in_python: bool) -> bytes:
    with monkeypatch.context() as patch:
        if in_python:
            patch.setattr(Output, "_copy_lines", lambda self, con, sql, relation: None)
        else:  # the DuckDB path must be the one taken
            patch.setattr(Output, "_render", lambda self, con, sql: pytest.fail("rendered in Python"))
        out = Output(fmt, target)
        out.write_query(con, "SELECT * FROM t ORDER BY k")
        out.commit()
    return target.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, max_size=12))
def test_duckdb_renders_markdown_and_tables_as_python_does(rows, tmp_path: Path, monkeypatch) -> None:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (k INTEGER, {COLUMNS})")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(n, *r) for n, r in enumerate(rows)])
    for fmt in (OutputFormat.MARKDOWN, OutputFormat.TABLE):
        python = written(con, fmt, tmp_path / f"python.{fmt}", monkeypatch, in_python=True)
        duck = written(con, fmt, tmp_path / f"duckdb.{fmt}", monkeypatch, in_python=False)
        assert duck == python, (fmt, rows)


def test_floats_read_as_pythons_format_writes_them(tmp_path: Path, monkeypatch) -> None:
    """By hand from the rule (format(x, ".4f") without its trailing zeros, ".4g" below 0.001): the DuckDB path
    alone, so that a defect shared by both paths still shows."""
    con = duckdb.connect()
    values = [1e300, 1e15 + 0.5, 1.03125, 2.5, -0.0, 0.00012345, math.nan, -math.inf]
    con.execute("CREATE TABLE t (k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(values)))
    text = written(con, OutputFormat.MARKDOWN, tmp_path / "x.md", monkeypatch, in_python=False).decode()
    cells = [line.split(" | ")[1].rstrip(" |") for line in text.splitlines()[2:]]
    assert cells == [format(1e300, ".0f"), "1000000000000000.5", "1.0312", "2.5", "0", "0.0001234", "nan", "-inf"]


def test_control_characters_are_shown_not_sent_to_the_terminal(tmp_path: Path, monkeypatch) -> None:
    """Issue 42, item 18: a cell holding an escape sequence (a trajectory's text, a CSV cell) reached the terminal
    raw, able to retitle the window or clear the screen. Worked out by hand, both paths."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k INTEGER, s VARCHAR)")
    con.execute("INSERT INTO t VALUES (1, ?)", ["a\x1b]0;pwned\x07b\x1b[2J\tc\rd\x9be"])
    want = "a\\x1b]0;pwned\\x07b\\x1b[2J\\tc\\rd\\x9be"
    for in_python in (True, False):
        table = written(con, OutputFormat.TABLE, tmp_path / "t.txt", monkeypatch, in_python).decode()
        assert table.splitlines()[2].split(None, 1)[1] == want, in_python
        md = written(con, OutputFormat.MARKDOWN, tmp_path / "t.md", monkeypatch, in_python).decode()
        assert md.splitlines()[2] == f"| 1 | {want.replace(chr(92) + 'r', ' ')} |", in_python  # a CR breaks a line
        assert not any(ord(ch) < 32 and ch != "\n" for ch in table + md)


def test_the_whitespace_a_table_line_loses_is_pythons() -> None:
    from rlsql.outputs.rows import WHITESPACE

    assert sorted(WHITESPACE) == [c for c in map(chr, range(0x110000)) if c.isspace()]


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl", "markdown", "table"])
def test_columns_sharing_a_name_keep_their_own_values(tmp_path: Path, fmt: str) -> None:
    """`SELECT 1 AS a, 2 AS a, 3 AS a_1`: the outputs select columns by name, and the second `a` read the
    first's value (1, 1). Each keeps its own value; the later `a` is named `a_2` (`a_1` is another column's)."""
    con = duckdb.connect()
    out = tmp_path / f"rows.{fmt}"
    output = Output(OutputFormat(fmt), out)
    output.write_query(con, "SELECT 1 AS a, 2 AS a, 3 AS a_1")
    output.commit()
    text = out.read_text()
    want = {
        "csv": "a,a_2,a_1\n1,2,3\n",
        "json": '[\n\t{"a":1,"a_2":2,"a_1":3}\n]\n',
        "jsonl": '{"a":1,"a_2":2,"a_1":3}\n',
        "markdown": "| a | a_2 | a_1 |\n|---:|---:|---:|\n| 1 | 2 | 3 |\n",
        "table": "a  a_2  a_1\n-  ---  ---\n1    2    3\n",
    }
    assert text == want[fmt]
