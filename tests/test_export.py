"""`rlsql export`: Parquet read back with pyarrow (types, rows, metadata), CSV/JSON, partitions, atomicity."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from tests import oracle
from tests.compare import assert_rows_match, read_turns_export
from tests.conftest import RUNS
from tests.test_cli import one_error_line, run_main

# written out here rather than imported, so a renamed key fails this test
METADATA_KEYS = {
    "rlsql.query.name", "rlsql.query.kind", "rlsql.query.version", "rlsql.query.fingerprint", "rlsql.query.params",
    "rlsql.version", "rlsql.duckdb_version", "rlsql.runs", "rlsql.sources", "rlsql.exported_at", "rlsql.columns",
}  # fmt: skip
# a partition keeps the item's identity, its own run's provenance and the column descriptions (where a reader of
# the file looks); the rest is in the tree's mark
PARTITION_KEYS = {
    "rlsql.query.name", "rlsql.query.version", "rlsql.query.fingerprint", "rlsql.query.params",
    "rlsql.runs", "rlsql.sources", "rlsql.exported_at", "rlsql.columns",
}  # fmt: skip
TREE_KEYS = {
    "rlsql.query.name", "rlsql.query.kind", "rlsql.query.version", "rlsql.query.fingerprint",
    "rlsql.version", "rlsql.duckdb_version", "rlsql.exported_at", "rlsql.columns",
}  # fmt: skip
TWO_RUNS = [RUNS / "calendar", RUNS / "tiny"]


def _metadata(path: Path) -> dict[str, str]:
    raw = pq.read_metadata(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if k.decode().startswith("rlsql.")}


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _list_name(path: Path) -> str:
    """The list of source files beside a Parquet file, by the rule: named by the first 16 hex digits of the
    sha256 of its bytes (checked here against the file that lies there)."""
    name = json.loads(pq.read_schema(path).metadata[b"rlsql.sources"])["list"]
    assert name == f"{path.name}.sources-{hashlib.sha256((path.parent / name).read_bytes()).hexdigest()[:16]}.json"
    return name


def _table_rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


def _metric_values(run_dir: Path) -> int:
    """metrics_long rows: recorded numeric cells, the step columns of metric_rows left out."""
    return sum(
        1
        for row in oracle.read_metric_rows(run_dir)
        for col, value in row.items()
        if col not in ("log_file", "step", "global_step") and isinstance(value, float)
    )


def test_parquet_rows_types_and_metadata(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "bi"
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    args = ["export", "reward_curve", "--views", "-p", "span=3", "-o", str(out)]
    for run in TWO_RUNS:
        args += ["-r", str(run)]
    code, stdout, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    assert stdout == ""  # the summary is a notice
    # each file's full list of source files beside it (the file holds a summary)
    names = ("reward_curve", "trials", "steps", "metric_rows", "metrics_long", "vllm_seconds", "config")
    assert _visible(out) == sorted([f"{n}.parquet" for n in names] + [_list_name(out / f"{n}.parquet") for n in names])

    # rows, counted from the CSVs by the oracle
    want_rows = {
        "trials": sum(len(oracle.read_trials(r)) for r in TWO_RUNS),
        "metric_rows": sum(len(oracle.read_metric_rows(r)) for r in TWO_RUNS),
        "steps": sum(len(oracle.dedup_steps(oracle.read_metric_rows(r))) for r in TWO_RUNS),
        "metrics_long": sum(_metric_values(r) for r in TWO_RUNS),
        "reward_curve": len(oracle.expected("reward_curve", TWO_RUNS, span=3)),
    }
    for name, rows in want_rows.items():
        assert pq.read_metadata(out / f"{name}.parquet").num_rows == rows, name
    curve = pq.read_table(out / "reward_curve.parquet")
    assert_rows_match(_table_rows(curve), oracle.expected("reward_curve", TWO_RUNS, span=3), "exported reward_curve")

    # the summary line counts what was written
    last = err.strip().splitlines()[-1]
    assert f"{sum(pq.read_metadata(p).num_rows for p in out.glob('*.parquet')):,} rows" in last
    assert "7 files" in last

    # types: declared, not sniffed
    trials = pq.read_schema(out / "trials.parquet")
    assert trials.field("run").type == pa.string()
    assert trials.field("n_episodes").type == pa.int64()
    assert trials.field("reward").type == pa.float64()
    assert curve.schema.field("step").type == pa.int64()
    assert curve.schema.field("ema").type == pa.float64()
    # a UTC instant (issue 42): tools read the same moment whatever their time zone
    assert pq.read_schema(out / "vllm_seconds.parquet").field("ts").type == pa.timestamp("us", tz="UTC")
    assert pq.ParquetFile(out / "trials.parquet").metadata.row_group(0).column(0).compression == "ZSTD"

    # every metadata key, checked against the files themselves
    catalog = load_catalog()
    for name, kind in [("reward_curve", "query"), ("trials", "view"), ("config", "view")]:
        meta = _metadata(out / f"{name}.parquet")
        assert set(meta) == METADATA_KEYS, name
        assert meta["rlsql.query.name"] == name
        assert meta["rlsql.query.kind"] == kind
        assert meta["rlsql.query.version"] == catalog.files[name].version
        assert meta["rlsql.query.fingerprint"] == catalog.files[name].fingerprint
        assert json.loads(meta["rlsql.query.params"]) == ({"span": 3} if name == "reward_curve" else {})
        assert meta["rlsql.version"] == rlsql.__version__
        assert meta["rlsql.duckdb_version"]
        assert [r["name"] for r in json.loads(meta["rlsql.runs"])] == ["calendar", "tiny"]
        exported = dt.datetime.fromisoformat(meta["rlsql.exported_at"])
        assert started <= exported <= dt.datetime.now(dt.UTC)
    for name, artifact in [("trials", "trials"), ("reward_curve", "metrics"), ("config", "config")]:
        summary = json.loads(_metadata(out / f"{name}.parquet")["rlsql.sources"])
        listed = (out / summary["list"]).read_bytes()
        assert summary["list"] == f"{name}.parquet.sources-{hashlib.sha256(listed).hexdigest()[:16]}.json"
        assert summary["sha256"] == hashlib.sha256(listed).hexdigest()
        sources = json.loads(listed)
        assert summary["runs"] == len({s["run"] for s in sources}) == 2
        assert summary["files"] == len(sources) and summary["bytes"] == sum(s["size"] for s in sources)
        assert [(s["run"], s["artifact"]) for s in sources if s["artifact"] == artifact] == [
            ("calendar", artifact),
            ("tiny", artifact),
        ]
        for source in sources:
            path = Path(source["path"])
            assert path == oracle.find_artifacts(RUNS / source["run"])[source["artifact"]].resolve()
            assert source["size"] == path.stat().st_size
            assert source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
            assert dt.datetime.fromisoformat(source["mtime"]).timestamp() == pytest.approx(path.stat().st_mtime)


def test_timestamps_are_utc_instants_and_paths_relative_to_a_root(tmp_path, capsys, monkeypatch) -> None:
    """From the analyst's trial (issue 42): an exported timestamp is the UTC instant (Parquet isAdjustedToUTC) the
    oracle reads from the trajectory's ISO 8601 text, and `--paths-relative-to` names the runs and source files
    from that folder."""
    out = tmp_path / "bi"
    run = RUNS / "harbor"
    code, _, err = run_main(
        ["export", "trajectory_steps", "-r", str(run), "-o", str(out), "--paths-relative-to", str(RUNS.parent)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    got = pq.read_table(out / "trajectory_steps.parquet").column("ts").to_pylist()
    want = [r["ts"] for r in oracle.expected_trajectory_view("trajectory_steps", [run])]
    assert got == [w.replace(tzinfo=dt.UTC) if w is not None else None for w in want] and any(got)
    meta = _metadata(out / "trajectory_steps.parquet")
    assert json.loads(meta["rlsql.runs"]) == [{"name": "harbor", "path": os.path.join("runs", "harbor")}]
    listed = json.loads((out / json.loads(meta["rlsql.sources"])["list"]).read_text())
    assert listed and all(not f["path"].startswith("/") and (RUNS.parent / f["path"]).exists() for f in listed)


def test_types_do_not_depend_on_the_data(tmp_path, capsys, monkeypatch) -> None:
    """A run whose columns are all empty or missing exports the same schema as a full one."""
    schemas = {}
    for run in ("tiny", "newest"):
        code, _, err = run_main(
            ["export", "trials", "turn_stats", "-r", str(RUNS / run), "-o", str(tmp_path / run)], capsys, monkeypatch
        )
        assert code == 0, err
        schemas[run] = [
            pq.read_schema(tmp_path / run / f"{n}.parquet").remove_metadata() for n in ("trials", "turn_stats")
        ]
    assert schemas["tiny"] == schemas["newest"]


def test_partition_by_run_and_replacing_a_tree(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "hive"
    code, _, err = run_main(
        ["export", "trials", "-r", str(RUNS), "--partition-by", "run", "-o", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    names = ["calendar", "harbor", "harbor_csv", "newest", "rawlogs", "rawlogs_csv", "tiny"]
    assert _visible(out / "trials") == [f"run={name}" for name in names]
    dataset = ds.dataset(out / "trials", format="parquet", partitioning="hive")
    table = dataset.to_table()
    for run in names:
        got = table.filter(ds.field("run") == run).num_rows
        assert got == len(oracle.read_trials(RUNS / run)), run
    catalog = load_catalog()
    exported_at = set()
    for part in (out / "trials").glob("run=*/data_0.parquet"):
        meta = _metadata(part)
        assert set(meta) == PARTITION_KEYS
        assert meta["rlsql.query.name"] == "trials"
        assert meta["rlsql.query.version"] == catalog.files["trials"].version
        assert meta["rlsql.query.fingerprint"] == catalog.files["trials"].fingerprint
        assert json.loads(meta["rlsql.query.params"]) == {}
        exported_at.add(meta["rlsql.exported_at"])
    # the shared record, once, in the tree's hidden mark
    shared = json.loads((out / "trials" / ".rlsql-export.json").read_text())["metadata"]
    assert set(shared) == TREE_KEYS
    assert shared["rlsql.query.kind"] == "view"
    assert shared["rlsql.query.fingerprint"] == catalog.files["trials"].fingerprint
    assert shared["rlsql.version"] == rlsql.__version__
    assert {shared["rlsql.exported_at"]} == exported_at
    columns = json.loads(shared["rlsql.columns"])
    assert columns["effective_treatment"].startswith("the treatment the trial really got")
    assert set(columns) == {"run", *pq.read_schema(part).names}
    # --replace-all replaces the whole tree: a run no longer exported leaves no partition behind
    code, _, err = run_main(
        ["export", "trials", "-r", str(RUNS / "tiny"), "--partition-by", "run", "-o", str(out), "--replace-all"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert _visible(out / "trials") == ["run=tiny"]
    assert _visible(out) == ["trials"]  # no temporary or old tree left
    assert not [p for p in out.rglob("*") if ".rlsql-tmp" in p.name]


def test_csv_and_json_with_sidecar(tmp_path, capsys, monkeypatch) -> None:
    want = oracle.expected("turns_by_exception", TWO_RUNS)
    for fmt in ("csv", "json"):
        args = ["export", "turns_by_exception", "-f", fmt, "-o", str(tmp_path)]
        for run in TWO_RUNS:
            args += ["-r", str(run)]
        code, _, err = run_main(args, capsys, monkeypatch)
        assert code == 0, err
        path = tmp_path / f"turns_by_exception.{fmt}"
        got = read_turns_export(path, fmt)
        assert_rows_match(got, want, fmt)
        sidecar = json.loads((tmp_path / f"turns_by_exception.{fmt}.meta.json").read_text())
        assert set(sidecar) == METADATA_KEYS


def test_missing_artifact_named_fails_all_skips(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "x"
    code, _, err = run_main(
        ["export", "vllm_summary", "turn_stats", "-r", str(RUNS / "newest"), "-o", str(out)], capsys, monkeypatch
    )
    assert code == 3
    assert "vllm_summary" in one_error_line(err)
    assert not out.exists()  # checked before anything is written
    code, _, err = run_main(["export", "--all", "-r", str(RUNS / "newest"), "-o", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert "skipping vllm_summary" in err
    # vllm_summary and the three queries over agents' trajectories have nothing to read in this run
    assert len([n for n in _visible(out) if n.endswith(".parquet")]) == len(load_catalog().queries()) - 4
    assert "vllm_summary.parquet" not in _visible(out)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["export", "-o", "OUT"], "--all"),
        (["export", "turn_stats", "-p", "span=3", "-o", "OUT"], "span"),
        (["export", "reward_curve", "-p", "span=0", "-o", "OUT"], "minimum"),
        (["export", "turn_statz", "-o", "OUT"], "turn_stats"),
        (["export", "turn_stats", "-f", "xlsx", "-o", "OUT"], "xlsx"),
        (["export", "turn_stats", "--partition-by", "step", "-o", "OUT"], "run"),
        (["export", "turn_stats", "--replace-all", "-r", str(RUNS / "tiny"), "-o", "OUT"], "--partition-by"),
        (["export", "turn_stats", "-r", str(RUNS / "tiny"), "-o", str(RUNS / "tiny" / "out")], "run folder"),
    ],
)
def test_bad_export_is_one_line(args, needle, tmp_path, capsys, monkeypatch) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    code, stdout, err = run_main(args, capsys, monkeypatch)
    assert code == 2 and stdout == ""
    assert needle in one_error_line(err)
    assert not (tmp_path / "out").exists() and not (RUNS / "tiny" / "out").exists()


def _big_run(folder: Path, copies: int) -> Path:
    """A run whose trials CSV is the calendar fixture's repeated `copies` times."""
    run = folder / "bigrun"
    run.mkdir()
    src = oracle.find_artifacts(RUNS / "calendar")["trials"]
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    with (run / src.name).open("w", encoding="utf-8") as fh:
        fh.write(lines[0])
        fh.writelines(lines[1:] * copies)
    return run


def _partly_written(folder: Path, prefix: str) -> bool:
    for path in folder.iterdir():
        try:
            if path.name.startswith(prefix) and path.stat().st_size > 0:
                return True
        except FileNotFoundError:  # renamed meanwhile
            pass
    return False


def test_sigkill_leaves_the_previous_export(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    code, _, err = run_main(["export", "trials", "-r", str(RUNS / "tiny"), "-o", str(out)], capsys, monkeypatch)
    assert code == 0, err
    before = (out / "trials.parquet").read_bytes()
    big = _big_run(tmp_path, 150)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsql", "export", "trials", "-r", str(big), "-o", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    try:
        # wait until DuckDB has written part of the new file under its temporary name
        while not _partly_written(out, ".trials.parquet."):
            assert proc.poll() is None, f"the export ended before it was killed: {proc.communicate()}"
            assert time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    # the earlier export is intact; what the killed one left is only a hidden temporary
    listed = _list_name(out / "trials.parquet")
    assert _visible(out) == ["trials.parquet", listed]
    assert (out / "trials.parquet").read_bytes() == before
    assert pq.read_metadata(out / "trials.parquet").num_rows == len(oracle.read_trials(RUNS / "tiny"))
    # (the folder's lock file stays: see writes.folder_lock)
    leftovers = [
        p.name
        for p in out.iterdir()
        if p.name not in ("trials.parquet", listed, ".rlsql-export.json", ".rlsql-export.lock")
    ]
    assert leftovers and all(name.startswith(".trials.parquet.") and name.endswith(".rlsql-tmp") for name in leftovers)
    # the next export into the folder clears what the killed process left
    code, _, err = run_main(["export", "trials", "-r", str(RUNS / "newest"), "-o", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        ".rlsql-export.json",
        ".rlsql-export.lock",
        "trials.parquet",
        _list_name(out / "trials.parquet"),
    ]
    assert pq.read_metadata(out / "trials.parquet").num_rows == len(oracle.read_trials(RUNS / "newest"))


# -- incremental partitioned exports (issue 11) -----------------------------------------------------


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _kv(path: Path) -> dict[str, str]:
    """The Parquet key-value metadata read by DuckDB (a reader independent of pyarrow)."""
    import duckdb

    rows = duckdb.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [str(path)]).fetchall()
    return dict(rows)


def test_partitions_grow_run_by_run(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "hive"
    inputs = {r: _tree_bytes(RUNS / r) for r in ("tiny", "calendar")}

    def export_run(*extra: str) -> None:
        code, _, err = run_main(
            ["export", "trials", "--partition-by", "run", "-o", str(out), *extra], capsys, monkeypatch
        )
        assert code == 0, err

    export_run("-r", str(RUNS / "tiny"))
    export_run("-r", str(RUNS / "calendar"))
    assert _visible(out / "trials") == ["run=calendar", "run=tiny"]
    for run in ("tiny", "calendar"):
        part = out / "trials" / f"run={run}" / "data_0.parquet"
        assert pq.read_metadata(part).num_rows == len(oracle.read_trials(RUNS / run))
        meta = _kv(part)
        # its own run's provenance only
        assert [r["name"] for r in json.loads(meta["rlsql.runs"])] == [run]
        sources = json.loads(meta["rlsql.sources"])
        assert sources and {s["run"] for s in sources} == {run}
        trials_source = next(s for s in sources if s["artifact"] == "trials")
        assert (
            trials_source["sha256"]
            == hashlib.sha256(oracle.find_artifacts(RUNS / run)["trials"].read_bytes()).hexdigest()
        )
    calendar = _tree_bytes(out / "trials" / "run=calendar")
    tiny = (out / "trials" / "run=tiny" / "data_0.parquet").stat().st_ino
    time.sleep(0.01)
    export_run("-r", str(RUNS / "tiny"))
    assert _visible(out / "trials") == ["run=calendar", "run=tiny"]
    assert _tree_bytes(out / "trials" / "run=calendar") == calendar  # untouched
    assert (out / "trials" / "run=tiny" / "data_0.parquet").stat().st_ino != tiny  # replaced
    dataset = ds.dataset(out / "trials", format="parquet", partitioning="hive").to_table()
    assert dataset.num_rows == sum(len(oracle.read_trials(RUNS / r)) for r in ("tiny", "calendar"))
    # --replace-all: today's whole-tree swap
    export_run("-r", str(RUNS / "tiny"), "--replace-all")
    assert _visible(out / "trials") == ["run=tiny"]
    assert not [p for p in out.rglob("*") if ".rlsql-tmp" in p.name]
    assert {r: _tree_bytes(RUNS / r) for r in ("tiny", "calendar")} == inputs


def test_one_row_partition_is_small(tmp_path, capsys, monkeypatch) -> None:
    """A partition's metadata names its own run: its size does not grow with the number of runs exported."""
    out = tmp_path / "hive"
    code, _, err = run_main(
        ["export", "trials", "--partition-by", "run", "-o", str(out), "-r", str(RUNS)], capsys, monkeypatch
    )
    assert code == 0, err
    for part in (out / "trials").glob("run=*/data_0.parquet"):
        run = part.parent.name.removeprefix("run=")
        assert [r["name"] for r in json.loads(_kv(part)["rlsql.runs"])] == [run]


def test_csv_partitions_carry_their_record_in_the_hidden_mark(tmp_path, capsys, monkeypatch, export_clock) -> None:
    out = tmp_path / "hive"
    for run in ("tiny", "calendar"):
        code, _, err = run_main(
            ["export", "trials", "-f", "csv", "--partition-by", "run", "-o", str(out), "-r", str(RUNS / run)],
            capsys,
            monkeypatch,
        )
        assert code == 0, err
        export_clock()  # exported_at has whole seconds: the two exports' stamps differ
    for run in ("tiny", "calendar"):
        part = out / "trials" / f"run={run}"
        assert _visible(part) == ["data_0.csv"]  # a reader of the tree sees data only
        with (part / "data_0.csv").open(newline="") as fh:
            assert sum(1 for _ in csv.DictReader(fh)) == len(oracle.read_trials(RUNS / run))
        record = json.loads((part / ".rlsql-export.json").read_text())["metadata"]
        assert set(record) == PARTITION_KEYS
        assert [r["name"] for r in json.loads(record["rlsql.runs"])] == [run]
        assert {s["run"] for s in json.loads(record["rlsql.sources"])} == {run}
    # the tree's shared record was rewritten by the second export (calendar's), not left at the first
    shared = json.loads((out / "trials" / ".rlsql-export.json").read_text())["metadata"]
    assert set(shared) == TREE_KEYS
    stamps = {
        run: json.loads((out / "trials" / f"run={run}" / ".rlsql-export.json").read_text())["metadata"][
            "rlsql.exported_at"
        ]
        for run in ("tiny", "calendar")
    }
    assert stamps["tiny"] != stamps["calendar"]
    assert shared["rlsql.exported_at"] == stamps["calendar"]
    assert json.loads(shared["rlsql.columns"])["trial_name"]


def test_run_table_exports_one_column_per_differing_config_key(tmp_path, capsys, monkeypatch) -> None:
    """A two-run sweep over the learning rate: run_table gets that one config column, in Parquet and CSV."""
    import shutil

    dirs = [tmp_path / "runs" / "lr1", tmp_path / "runs" / "lr3"]
    for run, lr in zip(dirs, ("1.0e-06", "3.0e-06"), strict=True):
        shutil.copytree(RUNS / "calendar", run)
        config = run / "rl_config.yaml"
        config.write_text(config.read_text(encoding="utf-8").replace("lr: 1.0e-06", f"lr: {lr}"), encoding="utf-8")
    want = oracle.expected("run_table", dirs)
    config_columns = [c for c in want[0] if c not in oracle.RUN_SUMMARY_COLUMNS]
    assert config_columns == ["trainer.policy.optimizer_config.lr"]
    # typed: every run's value is a number (run_table version 3), so a BI tool plots it as one
    assert [w["trainer.policy.optimizer_config.lr"] for w in want] == [1e-06, 3e-06]
    for fmt in ("parquet", "csv"):
        args = ["export", "run_table", "-f", fmt, "-o", str(tmp_path / fmt)]
        for run in dirs:
            args += ["-r", str(run)]
        code, _, err = run_main(args, capsys, monkeypatch)
        assert code == 0, err
        path = tmp_path / fmt / f"run_table.{fmt}"
        if fmt == "parquet":
            table = pq.read_table(path)
            assert table.column_names == list(want[0])
            assert all(table.schema.field(c).type == pa.float64() for c in config_columns)
            got = table.to_pylist()
            # the config columns share the `-- column: *:` description in the export's record, under `*`; every
            # headline column has its own
            described = json.loads(_metadata(path)["rlsql.columns"])
            assert described["*"].startswith("a chosen config key") and not set(config_columns) & set(described)
            assert set(described) == {*oracle.RUN_SUMMARY_COLUMNS, "*"}
        else:
            with path.open(newline="") as fh:
                rows = list(csv.DictReader(fh))
            assert list(rows[0]) == list(want[0])
            got = [{c: (float(r[c]) if r[c] else None) for c in config_columns} for r in rows]
            want = [{c: w[c] for c in config_columns} for w in want]
        assert_rows_match(got, want, f"run_table as {fmt}")


def test_run_table_keys_pick_the_columns_and_a_clashing_name_gets_a_prefix(tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    import shutil

    shutil.copytree(RUNS / "tiny", run)
    (run / "rl_config.yaml").write_text("steps: 7\nRun: x\ntrainer:\n  hf_save_interval: 2\n", encoding="utf-8")
    got = rlsql.query("run_table", [run], keys="steps, Run,trainer.hf_save_interval,,no.such.key")
    # sorted by key (code points: upper case first); a key named like a headline column (DuckDB compares names
    # without case) is `config.KEY`
    assert got.columns[-4:] == ["config.Run", "no.such.key", "config.steps", "trainer.hf_save_interval"]
    assert got.rows[0][-4:] == ("x", None, 7, 2)  # typed: 7 and 2 are BIGINT, `x` text, a key no run has text
    assert_rows_match(
        got.to_dicts(),
        oracle.expected("run_table", [run], keys="steps, Run,trainer.hf_save_interval,,no.such.key"),
        "run_table keys",
    )
