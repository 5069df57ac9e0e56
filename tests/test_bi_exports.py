"""Types and descriptions for BI tools (issue 27, item 4).

- run_table's config columns are typed when every run's value is a number or a boolean (version 3),
  checked against tests/oracle.py's own reading of the rule and against values written by hand;
- every exported column's description is where each reader looks: pyarrow (the schema's metadata), polars
  (read_parquet_metadata), pandas (DataFrame.attrs) and DuckDB (parquet_kv_metadata; column comments in a
  `db build` file), compared with the `-- column:` lines of the SQL files read here with a regex;
- a Parquet file's provenance is a summary of its sources, whose full list lies beside it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rlsql
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.test_cli import one_error_line, run_main

SQL = Path(__file__).resolve().parent.parent / "sql"


def header_docs(path: Path) -> dict[str, str]:
    """column -> description from a SQL file's `-- column: NAME: text` lines (and their `--   ` continuations)."""
    docs: dict[str, str] = {}
    last = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("--"):
            break
        if m := re.fullmatch(r"-- column: (.+?): (.*)", line):
            last = m[1]
            docs[last] = m[2].strip()
        elif (m := re.fullmatch(r"--   (.*)", line)) and last is not None:
            docs[last] += " " + m[1].strip()
        else:
            last = None
    return docs


# -- typed config columns -----------------------------------------------------------------------------------

#: per run, the `x:` block appended to the tiny run's config: every kind of value the rule tells apart
CONFIGS = {
    "a": {
        "lr": "1.0e-06",
        "steps": "3",
        "mix": "2",
        "flag": "true",
        "name": "alpha",
        "yaml11": "3e-6",
        "gap": "null",
        "leading": "'007'",
        "big": "123456789012345678901",
        "nanish": ".nan",
    },
    "b": {
        "lr": "2.5e-06",
        "steps": "4",
        "mix": "2.5",
        "flag": "false",
        "name": "beta",
        "yaml11": "5e-6",
        "gap": "7",
        "leading": "'008'",
        "big": "1",
        "nanish": "1.5",
    },
    "c": {
        "lr": "3.0e-06",
        "steps": "-5",
        "mix": "7",
        "flag": "no",
        "name": "12",
        "yaml11": "1e-5",
        "leading": "'009'",
        "big": "2",
        "nanish": "2.5",
    },
}
#: the type each key gets (docs/semantics.md, run_table), worked out by hand
TYPES = {
    "x.lr": "DOUBLE",
    "x.steps": "BIGINT",
    "x.mix": "DOUBLE",
    "x.flag": "BOOLEAN",
    "x.name": "VARCHAR",
    "x.yaml11": "DOUBLE",
    "x.gap": "BIGINT",
    "x.leading": "VARCHAR",
    "x.big": "VARCHAR",
    "x.nanish": "VARCHAR",
}


def config_runs(folder: Path, configs: dict[str, dict[str, str]] = CONFIGS) -> list[Path]:
    runs = []
    for name, values in configs.items():
        run = folder / name
        shutil.copytree(RUNS / "tiny", run)
        with (run / "rl_config.yaml").open("a", encoding="utf-8") as fh:
            fh.write("\nx:\n" + "".join(f"  {k}: {v}\n" for k, v in values.items()))
        runs.append(run)
    return runs


def test_config_columns_are_typed_when_every_value_is_one(tmp_path: Path) -> None:
    runs = config_runs(tmp_path)
    result = rlsql.query("run_table", runs)
    con = rlsql.connect(runs)
    types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE run_table)").fetchall())
    assert {k: types[k] for k in TYPES} == TYPES
    got = {k: [row[k] for row in result.to_dicts()] for k in TYPES}
    # by hand: a YAML null is NULL in a typed column, a missing key too; YAML 1.1 reads `3e-6` as text, which
    # is a number; `007`, a 21-digit integer and `.nan` keep the column text; `no` is YAML 1.1's false
    assert got["x.lr"] == [1e-06, 2.5e-06, 3e-06]
    assert got["x.steps"] == [3, 4, -5] and all(type(v) is int for v in got["x.steps"])
    assert got["x.mix"] == [2.0, 2.5, 7.0] and all(type(v) is float for v in got["x.mix"])
    assert got["x.flag"] == [True, False, False]
    assert got["x.name"] == ["alpha", "beta", "12"]
    assert got["x.yaml11"] == [3e-06, 5e-06, 1e-05]
    assert got["x.gap"] == [None, 7, None]
    assert got["x.leading"] == ["007", "008", "009"]
    assert got["x.big"] == ["123456789012345678901", "1", "2"]
    assert got["x.nanish"] == ["nan", "1.5", "2.5"]
    want = oracle.expected("run_table", runs)
    assert_rows_match(result.to_dicts(), want, "run_table typed")
    for row, w in zip(result.to_dicts(), want, strict=True):
        assert {k: type(row[k]) for k in TYPES} == {k: type(w[k]) for k in TYPES}


def test_exported_config_columns_keep_their_types(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = config_runs(tmp_path / "runs")
    out = tmp_path / "bi"
    code, _, err = run_main(
        ["export", "run_table", "-o", str(out), *[a for r in runs for a in ("-r", str(r))]], capsys, monkeypatch
    )
    assert code == 0, err
    schema = pq.read_schema(out / "run_table.parquet")
    arrow = {"DOUBLE": pa.float64(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_(), "VARCHAR": pa.string()}
    assert {k: schema.field(k).type for k in TYPES} == {k: arrow[t] for k, t in TYPES.items()}
    assert_rows_match(
        pq.read_table(out / "run_table.parquet").to_pylist(), oracle.expected("run_table", runs), "run_table.parquet"
    )


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_a_merge_types_a_column_by_every_run_in_the_file(fmt: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """a and b exported together (x.lr DOUBLE, x.n BIGINT), then c alone (x.lr `auto`, x.n 5.5): the merged file's
    x.lr is text (the doubles as their text), x.n DOUBLE, as one export of the three gives them."""
    configs = {"a": {"lr": "1.0e-05", "n": "3"}, "b": {"lr": "2.0e-05", "n": "4"}, "c": {"lr": "auto", "n": "5.5"}}
    a, b, c = config_runs(tmp_path / "runs", configs)
    out = tmp_path / "bi"
    for runs in ([a, b], [c]):
        code, _, err = run_main(
            [
                "export",
                "run_table",
                "-f",
                fmt,
                "--partition-by",
                "run",
                "-o",
                str(out),
                *[x for r in runs for x in ("-r", str(r))],
            ],
            capsys,
            monkeypatch,
        )
        assert code == 0, err
    source = {"parquet": "read_parquet(?)", "csv": "read_csv(?)", "json": "read_json(?)"}[fmt]
    path = str(out / f"run_table.{fmt}")
    rows = duckdb.execute(f'SELECT run, "x.lr", "x.n" FROM {source} ORDER BY run', [path]).fetchall()
    assert rows == [("a", "1e-05", 3.0), ("b", "2e-05", 4.0), ("c", "auto", 5.5)]
    want = {w["run"]: (w["x.lr"], w["x.n"]) for w in oracle.expected("run_table", [a, b, c])}
    assert want == {"a": ("1e-05", 3.0), "b": ("2e-05", 4.0), "c": ("auto", 5.5)}
    if fmt == "parquet":
        schema = pq.read_schema(path)
        assert (schema.field("x.lr").type, schema.field("x.n").type) == (pa.string(), pa.float64())


# -- descriptions where each reader looks -------------------------------------------------------------------


def _own_docs(name: str, columns: list[str]) -> dict[str, str]:
    """What rlsql.columns holds for `columns` of item `name`: each column's own description, and the one for
    the columns an item passes through (config keys, metrics) under `*`."""
    folder = "queries" if (SQL / "queries" / f"{name}.sql").exists() else "views"
    docs = header_docs(SQL / folder / f"{name}.sql")
    own = {c: docs[c] for c in columns if c in docs}
    if len(own) < len(columns):
        own["*"] = docs["*"]
    return own


def test_every_reader_shows_the_descriptions(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = config_runs(tmp_path / "runs")
    flat, lake = tmp_path / "flat", tmp_path / "lake"
    for out, extra in ((flat, []), (lake, ["--partition-by", "run"])):
        code, _, err = run_main(
            [
                "export",
                "run_table",
                "turn_stats",
                "trials",
                "steps",
                "-o",
                str(out),
                *extra,
                *[a for r in runs for a in ("-r", str(r))],
            ],
            capsys,
            monkeypatch,
        )
        assert code == 0, err
    files = {
        "run_table": flat / "run_table.parquet",
        "turn_stats": flat / "turn_stats.parquet",
        "trials": flat / "trials.parquet",
        "steps (a partition)": lake / "steps" / "run=a" / "data_0.parquet",
        "trials (a partition)": lake / "trials" / "run=b" / "data_0.parquet",
    }
    for label, path in files.items():
        name = label.split()[0]
        columns = [c for c in pq.read_schema(path).names]
        if "partition" in label:
            columns = ["run", *columns]  # the partition column is the folder's
        want = _own_docs(name, columns)
        assert len(want) > 3, label
        # pyarrow: the schema's key-value metadata
        assert json.loads(pq.read_schema(path).metadata[b"rlsql.columns"]) == want, label
        # polars: the file's key-value metadata
        assert json.loads(pl.read_parquet_metadata(path)["rlsql.columns"]) == want, label
        # pandas: DataFrame.attrs (read from PANDAS_ATTRS)
        assert pd.read_parquet(path).attrs == {"rlsql.columns": want}, label
        # DuckDB: parquet_kv_metadata
        # every row fetched: a result left open on DuckDB's process-wide connection fails its next statement
        [(doc,)] = duckdb.execute(
            "SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = 'rlsql.columns'", [str(path)]
        ).fetchall()
        assert json.loads(doc) == want, label
    # a hive tree read whole by pandas carries them too
    assert (
        pd.read_parquet(lake / "trials").attrs["rlsql.columns"]["effective_treatment"]
        == header_docs(SQL / "views" / "trials.sql")["effective_treatment"]
    )


def test_db_build_comments_every_column_of_every_view_and_table(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = config_runs(tmp_path / "runs")
    for materialize in ([], ["--materialize"]):
        db = tmp_path / f"runs{len(materialize)}.duckdb"
        code, _, err = run_main(
            ["db", "build", str(db), *materialize, *[a for r in runs for a in ("-r", str(r))]], capsys, monkeypatch
        )
        assert code == 0, err
        con = duckdb.connect(str(db), read_only=True)
        rows = con.execute(
            "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal "
            "AND NOT table_name LIKE '%\\_src' ESCAPE '\\' AND table_name NOT IN ('runs', 'run_files')"
        ).fetchall()
        con.close()
        assert len(rows) > 300
        for table, column, comment in rows:
            if table == "rlsql_metadata":
                assert comment, (table, column)
                continue
            folder = "queries" if (SQL / "queries" / f"{table}.sql").exists() else "views"
            docs = header_docs(SQL / folder / f"{table}.sql")
            assert comment == docs.get(column, docs.get("*")), (materialize, table, column)


# -- provenance that does not dwarf the data ----------------------------------------------------------------


def test_a_file_summarises_its_sources_and_lists_them_beside_it(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = [RUNS / "calendar", RUNS / "tiny", RUNS / "harbor_csv"]
    out = tmp_path / "bi"
    code, _, err = run_main(
        ["export", "run_table", "trials", "-o", str(out), *[a for r in runs for a in ("-r", str(r))]],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    for name in ("run_table", "trials"):
        path = out / f"{name}.parquet"
        summary = json.loads(pq.read_schema(path).metadata[b"rlsql.sources"])
        listed = out / summary["list"]
        sha = hashlib.sha256(listed.read_bytes()).hexdigest()
        sources = json.loads(listed.read_text())
        # named by its contents (the first 16 hex digits of its sha256): a list never changes under a file
        assert listed.name == f"{name}.parquet.sources-{sha[:16]}.json"
        assert summary == {
            "list": listed.name,
            "sha256": sha,
            "runs": 3,
            "files": sum(s.get("files", 1) for s in sources),
            "bytes": sum(s["size"] for s in sources),
        }
        # every file read, by hand: each run's CSVs and config, harbor_csv's trace_jobs/ (trials reads it)
        for source in sources:
            if source["artifact"] == "harbor":
                assert name == "trials" and source["files"] == 59
                continue
            file = Path(source["path"])
            assert source["size"] == file.stat().st_size
            assert source["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()
        assert len(json.dumps(summary)) < 300
    # a merge reads the list back; one that is gone or changed cannot be trusted: refused, nothing written
    lake = tmp_path / "lake"
    code, _, err = run_main(
        ["export", "turn_stats", "--partition-by", "run", "-o", str(lake), "-r", str(runs[0])], capsys, monkeypatch
    )
    assert code == 0, err
    first = json.loads(pq.read_schema(lake / "turn_stats.parquet").metadata[b"rlsql.sources"])["list"]
    foreign = lake / "turn_stats.parquet.sources-0123456789abcdef.json"  # a name like a list's, someone else's
    foreign.write_text("mine\n")
    code, _, err = run_main(
        ["export", "turn_stats", "--partition-by", "run", "-o", str(lake), "-r", str(runs[1])], capsys, monkeypatch
    )
    assert code == 0, err
    listed = lake / json.loads(pq.read_schema(lake / "turn_stats.parquet").metadata[b"rlsql.sources"])["list"]
    assert sorted({s["run"] for s in json.loads(listed.read_text())}) == ["calendar", "tiny"]
    # the list the file named before is gone (rlsql wrote it); the other file stays as it was
    assert listed.name != first and not (lake / first).exists() and foreign.read_text() == "mine\n"
    assert sorted(p.name for p in lake.glob("turn_stats.parquet.sources*")) == sorted([listed.name, foreign.name])
    before = (lake / "turn_stats.parquet").read_bytes()
    for damage in ("changed", "gone"):  # the file's rows of calendar and tiny cannot be traced: not merged
        if damage == "changed":
            listed.write_text(listed.read_text().replace("calendar", "calendar2"))
        else:
            listed.unlink()
        code, _, err = run_main(
            ["export", "turn_stats", "--partition-by", "run", "-o", str(lake), "-r", str(runs[2])], capsys, monkeypatch
        )
        assert code == 2, damage
        line = one_error_line(err)
        assert (
            "turn_stats.parquet: its provenance names a list of its source files that is missing or changed "
            f"({listed.name})" in line
        )
        assert "--replace-all" in line
        assert (lake / "turn_stats.parquet").read_bytes() == before
        assert listed.exists() == (damage == "changed")
