"""`export --partition-by run` of items with about one row per run: one file per item, merged run by run.

Expectations come from the plain-Python oracle over the fixture files (rows), sha256 of the fixture
files (provenance), and lists written out by hand here (which items are merged, which partitioned).
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from rlsql.catalog.catalog import load_catalog
from rlsql.outputs.exportmerge import merged_by_run
from tests import oracle
from tests.compare import assert_rows_match, read_turns_export
from tests.conftest import RUNS
from tests.test_cli import one_error_line, run_main
from tests.test_writes import needs_root, tmpfs

# written out by hand from the `-- grain:` headers: run, or run x exception/treatment/outcome/phase/
# log file/span/config key -> one merged file; anything with steps, rows, seconds or trials -> a tree
MERGED_QUERIES = {
    "async_health", "best_checkpoint", "compare_runs", "exception_distribution", "exception_treatment",
    "reward_summary", "run_overview", "run_table", "timing_breakdown", "trial_phases", "turn_percentiles",
    "turn_stats", "turns_by_exception", "turns_by_outcome", "vllm_summary", "token_usage", "run_diff",
}  # fmt: skip
PARTITIONED_QUERIES = {
    "reward_curve",
    "step_timing",
    "tool_usage",
    "looping_trials",
    "task_diff",
    "findings",
    "group_curves",
}
#: the queries without a run column: `--partition-by run` writes them as one file, whole
ACROSS_RUNS = {"group_curves"}
#: the queries over agents' trajectories, which the CSV fixture runs lack: `--all` skips them with a warning
TRAJECTORY_QUERIES = {"token_usage", "tool_usage", "looping_trials"}
MERGED_VIEWS = {"config"}
PARTITIONED_VIEWS = {"trials", "steps", "metric_rows", "metrics_long", "vllm_seconds"}
# merged items the oracle computes, checked row for row run by run
CHECKED = ("turn_stats", "turns_by_exception", "run_table", "exception_treatment")


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _kv(path: Path) -> dict[str, str]:
    """Parquet key-value metadata, read by DuckDB."""
    rows = duckdb.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [str(path)]).fetchall()
    return dict(rows)


def _sources(path: Path) -> list[dict]:
    """A Parquet file's source files: the list beside it (`FILE.sources-HASH.json`, HASH the first 16 hex digits
    of its sha256), which its summary names and whose sha256 it holds."""
    summary = json.loads(_kv(path)["rlsql.sources"])
    listed = path.with_name(summary["list"])
    assert listed.name == f"{path.name}.sources-{_sha(listed)[:16]}.json" and summary["sha256"] == _sha(listed)
    return json.loads(listed.read_text())


def _sources_name(path: Path) -> str:
    return path.with_name(json.loads(_kv(path)["rlsql.sources"])["list"]).name


def _data(folder: Path) -> list[str]:
    """The visible entries of an export folder but the lists of source files beside its Parquet files."""
    return [n for n in _visible(folder) if not re.fullmatch(r".*\.parquet\.sources-[0-9a-f]{16}\.json", n)]


def _rows_of(path: Path, run: str) -> list[dict]:
    return [r for r in pq.read_table(path).to_pylist() if r["run"] == run]


def _export(out: Path, capsys, monkeypatch, *args: str) -> tuple[int, str]:
    code, _, err = run_main(["export", "--partition-by", "run", "-o", str(out), *args], capsys, monkeypatch)
    return code, err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy_run(name: str, dest: Path) -> Path:
    shutil.copytree(RUNS / name, dest)
    return dest


def _drop_trials(run: Path, keep: int) -> None:
    """Keep the first `keep` rows of a run's trials CSV (the run then has other figures)."""
    path = oracle.find_artifacts(run)["trials"]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: keep + 1]), encoding="utf-8")


def test_the_grain_picks_merged_or_partitioned(tmp_path, capsys, monkeypatch) -> None:
    catalog = load_catalog()
    assert {q.name for q in catalog.queries() if merged_by_run(q)} == MERGED_QUERIES
    assert {q.name for q in catalog.queries() if not merged_by_run(q)} == PARTITIONED_QUERIES
    out = tmp_path / "bi"
    runs = [RUNS / "tiny", RUNS / "calendar"]
    code, err = _export(out, capsys, monkeypatch, "--all", "--views", *[a for r in runs for a in ("-r", str(r))])
    assert code == 0, err
    items = (MERGED_QUERIES | PARTITIONED_QUERIES | MERGED_VIEWS | PARTITIONED_VIEWS) - TRAJECTORY_QUERIES
    merged = (MERGED_QUERIES | MERGED_VIEWS) - TRAJECTORY_QUERIES
    trees = PARTITIONED_QUERIES - TRAJECTORY_QUERIES - ACROSS_RUNS
    assert _data(out) == sorted([f"{n}.parquet" for n in merged | ACROSS_RUNS] + [*trees, *PARTITIONED_VIEWS])
    assert len(_data(out)) == len(items)
    assert set(_visible(out)) - set(_data(out)) == {_sources_name(out / f"{n}.parquet") for n in merged | ACROSS_RUNS}
    for n in merged:
        _sources(out / f"{n}.parquet")  # each named by its hash
    # a tree's partition names its own run only; a merged file names exactly the runs it holds
    for name in trees | PARTITIONED_VIEWS:
        for part in (out / name).glob("run=*/data_0.parquet"):
            run = part.parent.name.removeprefix("run=")
            meta = _kv(part)
            assert [r["name"] for r in json.loads(meta["rlsql.runs"])] == [run], (name, run)
            assert {s["run"] for s in json.loads(meta["rlsql.sources"])} == {run}, (name, run)
    for name in (MERGED_QUERIES - TRAJECTORY_QUERIES) | MERGED_VIEWS:
        meta = _kv(out / f"{name}.parquet")
        assert [r["name"] for r in json.loads(meta["rlsql.runs"])] == ["calendar", "tiny"], name
    # an item without a run column is one file over every run exported (it cannot be split by run)
    whole = pq.read_table(out / "group_curves.parquet").to_pylist()
    assert_rows_match(whole, oracle.expected("group_curves", runs), "group_curves over both runs, one file")
    # hive readers see the trees with `run` as a column; the merged files read as they are
    table = ds.dataset(out / "reward_curve", format="parquet", partitioning="hive").to_table()
    assert sorted(set(table.column("run").to_pylist())) == ["calendar", "tiny"]
    assert_rows_match(
        pq.read_table(out / "turn_stats.parquet").to_pylist(), oracle.expected("turn_stats", runs), "turn_stats merged"
    )


def test_export_a_then_b_then_a_again(tmp_path, capsys, monkeypatch, export_clock) -> None:
    a = _copy_run("tiny", tmp_path / "runs" / "tiny")
    b = RUNS / "calendar"
    out = tmp_path / "bi"
    items = list(CHECKED)
    code, err = _export(out, capsys, monkeypatch, *items, "-r", str(a))
    assert code == 0, err
    export_clock()  # exported_at has whole seconds: the exports' stamps differ
    code, err = _export(out, capsys, monkeypatch, *items, "-r", str(b))
    assert code == 0, err
    assert _data(out) == sorted(f"{n}.parquet" for n in items)
    for name in items:
        path = out / f"{name}.parquet"
        for run in (a, b):
            assert_rows_match(_rows_of(path, run.name), oracle.expected(name, [run]), f"{name} {run.name}")
        meta = _kv(path)
        runs = json.loads(meta["rlsql.runs"])
        assert [(r["name"], r["path"]) for r in runs] == [("calendar", str(b)), ("tiny", str(a))]
        # tiny's record keeps the time of its own export; calendar's is the file's
        assert "exported_at" not in runs[0] and runs[1]["exported_at"] < meta["rlsql.exported_at"]
        trials = {s["run"]: s["sha256"] for s in _sources(path) if s["artifact"] == "trials"}
        assert trials == {
            "tiny": _sha(oracle.find_artifacts(a)["trials"]),
            "calendar": _sha(oracle.find_artifacts(b)["trials"]),
        }
    before = {
        n: (
            _rows_of(out / f"{n}.parquet", "calendar"),
            json.loads(_kv(out / f"{n}.parquet")["rlsql.runs"])[0],
            [s for s in _sources(out / f"{n}.parquet") if s["run"] == "calendar"],
        )
        for n in items
    }
    tiny_before = _rows_of(out / "turn_stats.parquet", "tiny")
    # tiny changes (fewer trials) and is exported again: its rows are replaced, calendar's stay as they were
    _drop_trials(a, 4)
    export_clock()
    code, err = _export(out, capsys, monkeypatch, *items, "-r", str(a))
    assert code == 0, err
    for name in items:
        path = out / f"{name}.parquet"
        assert_rows_match(_rows_of(path, "tiny"), oracle.expected(name, [a]), f"{name} tiny again")
        rows, record, sources = before[name]
        assert _rows_of(path, "calendar") == rows
        meta = _kv(path)
        runs = json.loads(meta["rlsql.runs"])
        assert (
            runs[0] == {**record, "exported_at": runs[0]["exported_at"]}
            and runs[0]["exported_at"] < meta["rlsql.exported_at"]
        )  # calendar's record carried over, now with its own time
        assert [s for s in _sources(path) if s["run"] == "calendar"] == sources
        assert "exported_at" not in runs[1]  # tiny: exported now
        tiny_trials = [s for s in _sources(path) if s["run"] == "tiny" and s["artifact"] == "trials"]
        assert [s["sha256"] for s in tiny_trials] == [_sha(oracle.find_artifacts(a)["trials"])]
    assert _rows_of(out / "turn_stats.parquet", "tiny") != tiny_before  # the re-export did change tiny's rows
    # --replace-all: the file holds the runs of this export only
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(b), "--replace-all")
    assert code == 0, err
    assert [r["name"] for r in json.loads(_kv(out / "turn_stats.parquet")["rlsql.runs"])] == ["calendar"]
    assert_rows_match(
        pq.read_table(out / "turn_stats.parquet").to_pylist(), oracle.expected("turn_stats", [b]), "after --replace-all"
    )
    assert not [p for p in out.rglob("*") if ".rlsql-tmp" in p.name]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_merge_with_their_sidecar(fmt, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "bi"
    for run in ("tiny", "calendar", "tiny"):
        code, err = _export(out, capsys, monkeypatch, "turns_by_exception", "trials", "-f", fmt, "-r", str(RUNS / run))
        assert code == 0, err
    assert _visible(out) == sorted([f"turns_by_exception.{fmt}", f"turns_by_exception.{fmt}.meta.json", "trials"])
    path = out / f"turns_by_exception.{fmt}"
    got = read_turns_export(path, fmt)
    # ordered by run, each run's rows in the query's order
    assert_rows_match(got, oracle.expected("turns_by_exception", [RUNS / "calendar", RUNS / "tiny"]), fmt)
    record = json.loads((out / f"turns_by_exception.{fmt}.meta.json").read_text())
    assert [r["name"] for r in json.loads(record["rlsql.runs"])] == ["calendar", "tiny"]
    assert {s["run"] for s in json.loads(record["rlsql.sources"])} == {"calendar", "tiny"}
    assert _visible(out / "trials") == ["run=calendar", "run=tiny"]  # trials: a tree, as before


def test_a_refused_merge_leaves_the_old_file(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "bi"
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "run_table", "-r", str(RUNS / "tiny"))
    assert code == 0, err
    before = {n: (out / n).read_bytes() for n in _visible(out)}
    # other parameter values than the file's rows were computed with: refused, nothing written
    code, err = _export(out, capsys, monkeypatch, "run_table", "-p", "span=9", "-r", str(RUNS / "calendar"))
    assert code == 2
    line = one_error_line(err)
    assert "run_table.parquet" in line and "params" in line and "--replace-all" in line
    assert {n: (out / n).read_bytes() for n in _visible(out)} == before
    code, err = _export(
        out, capsys, monkeypatch, "run_table", "-p", "span=9", "-r", str(RUNS / "calendar"), "--replace-all"
    )
    assert code == 0, err
    assert json.loads(_kv(out / "run_table.parquet")["rlsql.query.params"])["span"] == 9


@needs_root
def test_a_full_disk_during_a_merge_leaves_the_old_file(tmp_path, capsys, monkeypatch) -> None:
    mnt = tmp_path / "full"
    with tmpfs(mnt, size="256k"):
        out = mnt / "bi"
        code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "tiny"))
        assert code == 0, err
        before = (out / "turn_stats.parquet").read_bytes()
        mark = (out / ".rlsql-export.json").read_bytes()
        with pytest.raises(OSError), (mnt / "filler").open("wb", buffering=0) as fh:
            while True:
                fh.write(b"x" * 4096)
                os.fsync(fh.fileno())
        code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"))
        line = one_error_line(err)
        assert code == 4 and "space" in line.lower(), line
        assert (out / "turn_stats.parquet").read_bytes() == before
        assert (out / ".rlsql-export.json").read_bytes() == mark
        assert not [p for p in mnt.rglob("*") if ".rlsql-tmp" in p.name]
        (mnt / "filler").unlink()
        # the old file is still provably rlsql's: the next export merges into it
        code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"))
        assert code == 0, err
        assert pq.read_table(out / "turn_stats.parquet").column("run").to_pylist() == ["calendar", "tiny"]


def test_concurrent_exports_keep_both_runs(tmp_path, capsys, monkeypatch) -> None:
    """Two processes export different runs into one folder at once: both runs' rows are in the merged
    file. The test holds the folder's lock until both are waiting for it, so they do overlap."""
    out = tmp_path / "bi"
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "trials", "-r", str(RUNS / "newest"))
    assert code == 0, err
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    fd = os.open(out / ".rlsql-export.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    procs = []
    try:
        for run in ("tiny", "calendar"):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "rlsql",
                        "--no-cache",
                        "export",
                        "turn_stats",
                        "trials",
                        "--partition-by",
                        "run",
                        "-r",
                        str(RUNS / run),
                        "-o",
                        str(out),
                    ],
                    cwd=tmp_path,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        deadline = time.monotonic() + 60
        for proc in procs:  # each says it waits for the lock (one line on stderr) before doing anything
            line = proc.stderr.readline()
            assert "waiting for another export" in line, line
            assert time.monotonic() < deadline
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        for proc in procs:
            rest = proc.communicate(timeout=120)[1]
            assert proc.returncode == 0, rest
    runs = ["calendar", "newest", "tiny"]
    table = pq.read_table(out / "turn_stats.parquet")
    assert table.column("run").to_pylist() == runs
    assert [r["name"] for r in json.loads(_kv(out / "turn_stats.parquet")["rlsql.runs"])] == runs
    assert_rows_match(table.to_pylist(), oracle.expected("turn_stats", [RUNS / r for r in runs]), "both exports")
    assert _visible(out / "trials") == [f"run={r}" for r in runs]


def test_a_run_renamed_or_removed(tmp_path, capsys, monkeypatch) -> None:
    """rlsql cannot tell a renamed run from a new one: the old name's rows stay until --replace-all, or until
    a run is exported under that name again (`-r NAME=PATH`)."""
    runs = tmp_path / "runs"
    a, b = _copy_run("tiny", runs / "a"), _copy_run("calendar", runs / "b")
    out = tmp_path / "bi"
    for run in (a, b):
        code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(run))
        assert code == 0, err
    shutil.rmtree(a)  # removed: its rows and record stay
    b.rename(runs / "b2")  # renamed: a new name, beside the old one
    b2 = runs / "b2"
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(b2))
    assert code == 0, err
    path = out / "turn_stats.parquet"
    assert [r["name"] for r in json.loads(_kv(path)["rlsql.runs"])] == ["a", "b", "b2"]
    assert pq.read_table(path).column("run").to_pylist() == ["a", "b", "b2"]
    # exported under its old name, the renamed run replaces its old rows
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", f"b={b2}")
    assert code == 0, err
    runs_now = json.loads(_kv(path)["rlsql.runs"])
    assert [(r["name"], r["path"]) for r in runs_now] == [("a", str(a)), ("b", str(b2)), ("b2", str(b2))]
    assert_rows_match(_rows_of(path, "b"), [{**r, "run": "b"} for r in oracle.expected("turn_stats", [b2])], "b")
    # --replace-all keeps only what is exported now
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(b2), "--replace-all")
    assert code == 0, err
    assert pq.read_table(path).column("run").to_pylist() == ["b2"]


def _old_tree(out: Path, name: str, runs: list[str]) -> None:
    """A partition tree as an older rlsql wrote it for an item that is now merged (marks and all)."""
    tree = out / name
    tree.mkdir(parents=True)
    (tree / ".rlsql-export.json").write_text(
        json.dumps({"format": "rlsql-export/1", "name": name, "partition_by": "run", "file_format": "parquet"})
    )
    for run in runs:
        part = tree / f"run={run}"
        part.mkdir()
        (part / "data_0.parquet").write_bytes(b"PAR1")
        (part / ".rlsql-export.json").write_text(
            json.dumps({"format": "rlsql-export/1", "name": name, "partition": "run", "value": run})
        )


def test_an_older_tree_of_a_merged_item(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "bi"
    _old_tree(out, "turn_stats", ["tiny"])
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"))
    assert code == 2
    assert "turn_stats" in one_error_line(err) and "--replace-all" in err
    assert _visible(out) == ["turn_stats"]
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"), "--replace-all")
    assert code == 0, err
    assert _visible(out) == ["turn_stats.parquet", _sources_name(out / "turn_stats.parquet")]
    _sources(out / "turn_stats.parquet")
    # a folder of someone else's under that name is never removed, --replace-all or not
    (out / "turn_stats.parquet").unlink()
    (out / "turn_stats").mkdir()
    (out / "turn_stats" / "notes.txt").write_text("mine")
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"), "--replace-all")
    assert code == 2
    assert (out / "turn_stats" / "notes.txt").read_text() == "mine"


def test_run_table_merged_keeps_the_file_config_columns(tmp_path, capsys, monkeypatch) -> None:
    """A learning-rate sweep exported whole, then one run re-exported alone (where no key differs): its row
    still has its learning rate in the file's column, not NULL."""
    dirs = [tmp_path / "runs" / "lr1", tmp_path / "runs" / "lr3"]
    for run, lr in zip(dirs, ("1.0e-06", "3.0e-06"), strict=True):
        _copy_run("calendar", run)
        config = run / "rl_config.yaml"
        config.write_text(config.read_text(encoding="utf-8").replace("lr: 1.0e-06", f"lr: {lr}"), encoding="utf-8")
    out = tmp_path / "bi"
    code, err = _export(out, capsys, monkeypatch, "run_table", "-r", str(dirs[0]), "-r", str(dirs[1]))
    assert code == 0, err
    config = dirs[0] / "rl_config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("lr: 1.0e-06", "lr: 5.0e-06"), encoding="utf-8")
    _drop_trials(dirs[0], 10)
    code, err = _export(out, capsys, monkeypatch, "run_table", "-r", str(dirs[0]))
    assert code == 0, err
    want = oracle.expected("run_table", dirs)
    assert [w["trainer.policy.optimizer_config.lr"] for w in want] == [5e-06, 3e-06]
    table = pq.read_table(out / "run_table.parquet")
    assert table.column_names == list(want[0])
    assert_rows_match(table.to_pylist(), want, "run_table merged")


def _csv_rows(path: Path) -> list[dict]:
    """A CSV's rows, number-looking cells as floats (to compare within rounding), the rest as the text."""

    def cell(text: str) -> object:
        try:
            return float(text)
        except ValueError:
            return text

    with path.open(newline="") as fh:
        return [{k: cell(v) for k, v in row.items()} for row in csv.DictReader(fh)]


# their figures compare a run with the other runs exported with it: not the same over one run as over two
SET_DEPENDENT = {"compare_runs", "run_table", "run_diff"}


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_merged_run_by_run_equals_one_export_of_both(fmt, tmp_path, capsys, monkeypatch) -> None:
    """Every merged item exported run by run (and one run again) holds what one unpartitioned export of both
    runs holds, value for value, in each format: the read-back of CSV and JSON keeps the types and texts.
    The queries over agents' trajectories over the two Harbor runs (the CSV runs have none)."""
    items = sorted((MERGED_QUERIES | MERGED_VIEWS) - SET_DEPENDENT - TRAJECTORY_QUERIES)
    _merged_equals_flat(items, [RUNS / "calendar", RUNS / "rawlogs"], fmt, tmp_path / "csv", capsys, monkeypatch)
    items = sorted(MERGED_QUERIES & TRAJECTORY_QUERIES)
    assert items, "no merged query over trajectories left to check"
    _merged_equals_flat(items, [RUNS / "harbor", RUNS / "harbor_csv"], fmt, tmp_path / "harbor", capsys, monkeypatch)


def _merged_equals_flat(items, runs, fmt, tmp_path, capsys, monkeypatch) -> None:
    suffix = f".{fmt}"
    for run in (*runs, runs[0]):
        code, err = _export(tmp_path / "merged", capsys, monkeypatch, *items, "-f", fmt, "-r", str(run))
        assert code == 0, err
    code, _, err = run_main(
        ["export", *items, "-f", fmt, "-o", str(tmp_path / "flat"), *[a for r in runs for a in ("-r", str(r))]],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    for name in items:
        merged, flat = tmp_path / "merged" / f"{name}{suffix}", tmp_path / "flat" / f"{name}{suffix}"
        # values to the last few ulps: DuckDB's mean over one run's rows and over two runs' may add in
        # another order (vllm_summary over rawlogs differed in the 16th digit)
        if fmt == "parquet":
            assert_rows_match(pq.read_table(merged).to_pylist(), pq.read_table(flat).to_pylist(), name)
            assert pq.read_schema(merged).remove_metadata() == pq.read_schema(flat).remove_metadata(), name
        elif fmt == "json":
            assert_rows_match(json.loads(merged.read_text()), json.loads(flat.read_text()), name)
        else:
            assert_rows_match(_csv_rows(merged), _csv_rows(flat), name)


def test_a_merge_into_an_unpartitioned_file(tmp_path, capsys, monkeypatch, export_clock) -> None:
    """An unpartitioned export's NAME.parquet is the merged file's name: a partitioned export of another run
    adds its rows; the earlier runs' records get the time of the export that wrote them."""
    out = tmp_path / "bi"
    code, _, err = run_main(
        ["export", "turn_stats", "-o", str(out), "-r", str(RUNS / "tiny"), "-r", str(RUNS / "calendar")],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    first = _kv(out / "turn_stats.parquet")["rlsql.exported_at"]
    export_clock()
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "newest"))
    assert code == 0, err
    meta = _kv(out / "turn_stats.parquet")
    runs = json.loads(meta["rlsql.runs"])
    assert [(r["name"], r.get("exported_at")) for r in runs] == [("calendar", first), ("newest", None), ("tiny", first)]
    assert meta["rlsql.exported_at"] > first
    three = [RUNS / "calendar", RUNS / "newest", RUNS / "tiny"]
    assert_rows_match(
        pq.read_table(out / "turn_stats.parquet").to_pylist(), oracle.expected("turn_stats", three), "flat then merged"
    )


def test_a_merge_stopped_after_its_new_list_keeps_the_old_list_the_old_file_names(
    tmp_path, capsys, monkeypatch
) -> None:
    """The window a kill -9 once hit: the new list of sources written, the new file not yet renamed. The old
    file must still find its own list (it names it by hash), and the next export removes the list no file
    names. The stop is a failure of the COPY, after which the new list is removed too."""
    import rlsql.outputs.export as export

    out = tmp_path / "out"
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "tiny"))
    assert code == 0, err
    old_name, old_bytes = _sources_name(out / "turn_stats.parquet"), (out / "turn_stats.parquet").read_bytes()

    def stopped(*args, **kwargs):
        raise duckdb.IOException("stopped here, as by a kill")

    with monkeypatch.context() as patched:
        patched.setattr(export, "_copy", stopped)
        code, err = _export(out, capsys, patched, "turn_stats", "-r", str(RUNS / "calendar"))
    assert code != 0
    assert (out / "turn_stats.parquet").read_bytes() == old_bytes
    lists = sorted(p.name for p in out.glob("turn_stats.parquet.sources*"))
    # a COPY that fails removes the list written for it (issue 42: no list named by no file); a kill in that
    # window leaves it, and the next export removes every list its file does not name (below)
    assert lists == [old_name]
    assert {s["run"] for s in _sources(out / "turn_stats.parquet")} == {"tiny"}
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-r", str(RUNS / "calendar"))
    assert code == 0, err
    assert sorted(pq.read_table(out / "turn_stats.parquet").column("run").to_pylist()) == ["calendar", "tiny"]
    assert {s["run"] for s in _sources(out / "turn_stats.parquet")} == {"calendar", "tiny"}
    assert [p.name for p in out.glob("turn_stats.parquet.sources*")] == [_sources_name(out / "turn_stats.parquet")]


@pytest.mark.slow
def test_kill_9_during_a_merge_leaves_the_old_file_or_the_new(tmp_path, capsys, monkeypatch) -> None:
    """SIGKILL an export of a big run into a folder holding a small run's merged files, at seeded moments
    over the export's whole run: the file is always whole, holds the small run's row, and the big run's
    row either not at all or complete; the next export sweeps what the killed ones left."""
    import random

    from tests.test_writes import _big_run, _kill_when

    rng = random.Random(11)
    runs = tmp_path / "runs"
    runs.mkdir()
    big = _big_run(runs, 40, "big")
    small = _copy_run("tiny", runs / "small")
    out = tmp_path / "out"
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "trials", "-r", str(small))
    assert code == 0, err
    want = {"small": oracle.expected("turn_stats", [small]), "big": oracle.expected("turn_stats", [big])}
    args = ["export", "turn_stats", "trials", "--partition-by", "run", "-r", str(big), "-o", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "rlsql", *args[:-2], "-o", str(tmp_path / "timing")],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    whole = time.monotonic() - started
    for _ in range(4):
        delay, begun = rng.uniform(0.2, 1.0) * whole, []

        def ready(pid: int, delay=delay, begun=begun) -> bool:
            begun.append(begun[0] if begun else time.monotonic())
            return time.monotonic() - begun[0] >= delay

        try:
            _kill_when(args, tmp_path, ready)
        except AssertionError as exc:  # finished before the moment drawn: a whole export, checked below too
            assert "ended before it was killed" in str(exc)
        table = pq.read_table(out / "turn_stats.parquet")
        rows = {r["run"]: r for r in table.to_pylist()}
        assert_rows_match([rows["small"]], want["small"], "small after a kill")
        if "big" in rows:
            assert_rows_match([rows["big"]], want["big"], "big after a kill")
        assert [r["name"] for r in json.loads(_kv(out / "turn_stats.parquet")["rlsql.runs"])] == sorted(rows)
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "trials", "-r", str(big))
    assert code == 0, err
    assert pq.read_table(out / "turn_stats.parquet").column("run").to_pylist() == ["big", "small"]
    assert not [p for p in out.rglob("*") if ".rlsql-tmp" in p.name]
    # the lists the killed exports wrote and no file names went with the next one: one list, the file's
    assert [p.name for p in out.glob("turn_stats.parquet.sources*")] == [_sources_name(out / "turn_stats.parquet")]


def test_a_merged_json_file_without_rows_takes_the_next_runs(tmp_path, capsys, monkeypatch) -> None:
    """A merged item with no row for one run (run_diff over a run alone: nothing to compare) was written as `[]`,
    which names no column: merging the next run's export into it failed (Binder Error: no column "run")."""
    out = tmp_path / "bi"
    for run in ("calendar", "rawlogs"):
        code, err = _export(out, capsys, monkeypatch, "run_diff", "-f", "json", "-r", str(RUNS / run))
        assert code == 0, err
    assert json.loads((out / "run_diff.json").read_text()) == []  # neither run alone compares with another
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-f", "json", "-r", str(RUNS / "tiny"))
    assert code == 0, err
    code, err = _export(out, capsys, monkeypatch, "turn_stats", "-f", "json", "-r", str(RUNS / "calendar"))
    assert code == 0, err
    got = json.loads((out / "turn_stats.json").read_text())
    assert_rows_match(got, oracle.expected("turn_stats", [RUNS / "calendar", RUNS / "tiny"]), "turn_stats merged")
