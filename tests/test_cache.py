"""The Parquet cache: same results with and without it, a changed CSV is never read from it, it lives
outside the run folders, and `rlsql cache build|status|clear` say what they did."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rlsql
from rlsql.cache.copies import CacheCopies
from rlsql.catalog.catalog import load_catalog
from rlsql.cli import app as cli
from rlsql.engine.statements import open_connection
from rlsql.runs.folders import resolve_runs
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS

CSV_RUNS = ["tiny", "calendar", "newest"]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(folder))
    # set (not deleted) so that monkeypatch restores it after `--cache` sets it inside the CLI
    monkeypatch.setenv("RLSQL_CACHE", "")
    return folder


def cli_run(args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rlsql", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def source_sql(runs: list[Path], view: str) -> str:
    con = open_connection(resolve_runs(runs), [view], load=frozenset(), copies=CacheCopies())
    return con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]


def test_queries_give_the_same_rows_from_the_cache(cache_dir: Path, capsys, monkeypatch) -> None:
    runs = [RUNS / r for r in CSV_RUNS]
    before = {r: digest(RUNS / r) for r in CSV_RUNS}
    run_args = [arg for r in runs for arg in ("-r", str(r))]
    code, out, _ = cli_run(["cache", "build", *run_args, "-f", "json"], capsys, monkeypatch)
    assert code == 0
    built = json.loads(out)
    assert {(b["run"], b["artifact"]) for b in built} == {
        (r, k)
        for r in CSV_RUNS
        for k, p in oracle.find_artifacts(RUNS / r).items()
        if p is not None and k in ("metrics", "trials", "vllm")
    }
    assert all(b["state"] == "built" for b in built)
    assert all(Path(p).is_relative_to(cache_dir) for p in digest(cache_dir))  # nothing outside the cache folder
    assert {r: digest(RUNS / r) for r in CSV_RUNS} == before  # nothing written into a run folder
    assert "read_parquet" in source_sql(runs, "trials_src")
    catalog = load_catalog()
    for name in [q.name for q in catalog.queries()]:
        if any(f.artifact == "trajectories" for f in catalog.closure([name])):
            continue  # agents' trajectories: these CSV runs have none (tests/test_trajectories.py)
        assert_rows_match(rlsql.query(name, runs).to_dicts(), oracle.expected(name, runs), f"{name} from the cache")


def test_a_changed_csv_is_read_again(cache_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    trials = next(run.glob("*_trial_results.csv"))
    with trials.open("a") as fh:
        fh.write("calendar-0009,calendar-0009__zzzzzzz,9.0,1,1,,1.0,12.5\n")
    assert "read_parquet" not in source_sql([run], "trials_src")  # the stale copy is not used
    got = rlsql.query("turn_stats", [run]).to_dicts()
    assert_rows_match(got, oracle.expected("turn_stats", [run]), "turn_stats after the CSV changed")
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    states = {Path(e["file"]).name: e["state"] for e in json.loads(out)}
    assert states[trials.name] == "stale"
    code, _, err = cli_run(["cache", "clear", "--stale"], capsys, monkeypatch)
    assert code == 0 and "removed 2 files" in err
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    assert all(e["state"] == "fresh" for e in json.loads(out))


@pytest.mark.parametrize("record", ["another reading", "an older record"])
def test_a_copy_another_rlsql_built_is_read_again(record, cache_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    """A copy holds the CSV's rows as a version of rlsql reads them (the types its source declares, the
    whole-number columns, the templates): one recorded by another version, or by one that recorded none, is
    not read while the CSV is unchanged, `cache status` calls it stale and `cache build` builds it again."""
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    meta = parquet.with_name(parquet.name.removesuffix(".parquet") + ".json")
    assert meta.exists(), sorted(p.name for p in parquet.parent.iterdir())
    entry = json.loads(meta.read_text())
    if record == "another reading":
        entry["reading"] = "0123456789abcdef"
    else:
        del entry["reading"], entry["artifact"]
    meta.write_text(json.dumps(entry))
    trials = next(run.glob("*_trial_results.csv"))
    assert "read_parquet" not in source_sql([run], "trials_src")  # not used
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json", "-v"], capsys, monkeypatch)
    assert code == 0, err
    assert f"{trials}: read in place (rlsql reads this CSV another way since its cache entry was built" in err, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "turn_stats past the old copy")
    assert cache_states(capsys, monkeypatch)[trials.name] == "stale"
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert {Path(b["file"]).name: b["state"] for b in json.loads(out)}[trials.name] == "built"
    assert set(cache_states(capsys, monkeypatch).values()) == {"fresh"}
    assert "read_parquet" in source_sql([run], "trials_src")


def test_cache_status_over_a_csv_another_user_cannot_read_lists_every_entry(
    cache_dir: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """`cache status` reads a copied CSV's header to tell whether this rlsql reads it as the copy's build did. In
    a cache shared with the user who built it, a CSV whose mode refuses the user asking fails no status: every
    entry is listed, exit 0, no traceback."""
    from tests.conftest import refused_by_mode

    if os.geteuid() != 0:
        pytest.skip("needs a second user: root builds the copy, then asks without the capability to read it")
    prefix = refused_by_mode()
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    trials = next(run.glob("*_trial_results.csv"))
    os.chown(trials, 65534, 65534)
    trials.chmod(0o600)  # before the build: the copy's record holds this stat, so the entry is fresh
    built_trials_entry(run, capsys, monkeypatch)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "rlsql", "cache", "status", "-f", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert {Path(e["file"]).name for e in json.loads(done.stdout)} == {p.name for p in run.glob("*.csv")}


def test_cache_flag_builds_on_first_use(cache_dir: Path, capsys, monkeypatch) -> None:
    code, out, _ = cli_run(
        ["--cache", "query", "reward_summary", "-r", str(RUNS / "newest"), "-f", "json"], capsys, monkeypatch
    )
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("reward_summary", [RUNS / "newest"]), "--cache")
    assert len(list(cache_dir.glob("*/*.parquet"))) == 1  # the trials file: the only CSV the query read
    code, _, _ = cli_run(["cache", "clear"], capsys, monkeypatch)
    assert code == 0 and not list(cache_dir.glob("*/*.parquet"))


def test_rows_skipped_at_build_are_still_reported(cache_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "bad"
    run.mkdir()
    (run / "20260301_000000_trial_results.csv").write_text(
        "task_name,trial_name,n_episodes,exception_type,reward\nt,t__1,2,,1.0\nt,t__2,abc,,1.0\n"
    )
    with pytest.warns(rlsql.RlsqlWarning) as in_place:
        rows = rlsql.query("turn_stats", [run]).to_dicts()
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    with pytest.warns(rlsql.RlsqlWarning) as cached:
        cached_rows = rlsql.query("turn_stats", [run]).to_dicts()
    assert "read_parquet" in source_sql([run], "trials_src")
    assert rows == cached_rows and rows[0]["trials"] == 1
    # by hand: line 3 (t__2) has turns `abc`; the cached read says it word for word as the in-place read
    message = next(str(w.message) for w in cached if "unreadable" in str(w.message))
    assert message.startswith(f"{run / '20260301_000000_trial_results.csv'}: skipped 1 unreadable row (line 3: ")
    assert message in [str(w.message) for w in in_place]


# --- the cache deletes only what it wrote (issue 9 item 2) -----------------------------------------


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes (and every folder) under `folder`: what must survive a foreign clear."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in folder.rglob("*")}


def foreign_home(root: Path) -> Path:
    """A home-like folder: files rlsql never wrote, some with names that look like cache entries."""
    (root / "project").mkdir(parents=True)
    (root / "project" / "package.json").write_text('{"name": "mine"}\n')
    (root / ".bashrc").write_text("export PS1='$ '\n")
    (root / "ab").mkdir()
    (root / "ab" / "notes.json").write_text("[1, 2]\n")
    (root / "ab" / "0123456789abcdef01234567.json").write_text('{"source": "/nowhere", "size": 1}\n')
    (root / "ab" / "0123456789abcdef01234567.parquet").write_bytes(b"PAR1 not really PAR1")
    (root / "ab" / "tmp_.0123456789abcdef01234567.parquet.x1.tmp").write_text("someone else's\n")
    return root


@pytest.mark.parametrize("stale", [False, True], ids=["clear", "clear --stale"])
def test_clear_on_a_folder_rlsql_did_not_make_deletes_nothing(stale, tmp_path, capsys, monkeypatch) -> None:
    home = foreign_home(tmp_path / "home")
    before = snapshot(home)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(home))
    code, _, err = cli_run(["cache", "clear", *(["--stale"] if stale else [])], capsys, monkeypatch)
    assert snapshot(home) == before
    assert code == 2 and "Traceback" not in err and "not an rlsql cache folder" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("stale", [False, True], ids=["clear", "clear --stale"])
def test_clear_on_a_copy_of_trace_jobs_deletes_nothing(stale, tmp_path, capsys, monkeypatch) -> None:
    jobs = tmp_path / "trace_jobs"
    shutil.copytree(RUNS / "harbor" / "trace_jobs", jobs)
    before = snapshot(jobs)
    assert any(name.endswith("result.json") for name in before)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(jobs))
    code, _, err = cli_run(["cache", "clear", *(["--stale"] if stale else [])], capsys, monkeypatch)
    assert snapshot(jobs) == before
    assert code == 2 and "Traceback" not in err


def test_clear_removes_rlsql_entries_and_leaves_foreign_files_beside_them(
    cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and len(json.loads(out)) == 3  # metrics, trials, vLLM
    ours = {p for p in cache_dir.rglob("*.parquet")}
    assert len(ours) == 3
    # foreign files dropped into the cache folder, one of them inside an entry folder with an entry-like name
    entry_folder = next(iter(ours)).parent
    foreign = {
        cache_dir / "README.txt": b"mine\n",
        entry_folder / "mine.json": b"{}\n",
        entry_folder / ("f" * 24 + ".json"): b'{"rows": 3}\n',
        entry_folder / ("f" * 24 + ".parquet"): b"PAR1" + b"\0" * 20 + b"PAR1",
    }
    for path, data in foreign.items():
        path.write_bytes(data)
    for stale in (True, False):
        code, _, err = cli_run(["cache", "clear", *(["--stale"] if stale else [])], capsys, monkeypatch)
        assert code == 0, err
        assert {p: p.read_bytes() for p in foreign} == foreign
    assert not any(p.exists() for p in ours)
    assert [p for p in cache_dir.rglob("*.parquet")] == [entry_folder / ("f" * 24 + ".parquet")]


def test_a_cache_folder_inside_a_run_folder_is_refused(tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    before = snapshot(run)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(run / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "")
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 2 and "inside run folder" in err
    code, out, err = cli_run(["--cache", "query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "cache refused, CSV read")
    assert "inside run folder" in err
    code, _, err = cli_run(["cache", "clear"], capsys, monkeypatch)
    assert code == 2 and "Traceback" not in err
    assert snapshot(run) == before


def test_an_unwritable_cache_falls_back_to_the_csv_with_one_warning(tmp_path, capsys, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("RLSQL_CACHE", "")
    run = RUNS / "newest"
    code, out, err = cli_run(["--cache", "query", "reward_summary", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("reward_summary", [run]), "unwritable cache")
    cache_lines = [line for line in err.splitlines() if "cache" in line]
    assert len(cache_lines) == 1 and "Traceback" not in err and str(blocker) in cache_lines[0]
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) <= 2


# --- entries are verified before use (issue 9 item 10) ---------------------------------------------


def built_trials_entry(run: Path, capsys, monkeypatch) -> Path:
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    trials = next(run.glob("*_trial_results.csv"))
    return Path(next(e["parquet"] for e in json.loads(out) if Path(e["file"]) == trials.resolve()))


def cache_states(capsys, monkeypatch) -> dict[str, str]:
    code, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    assert code == 0
    return {Path(e["file"]).name: e["state"] for e in json.loads(out)}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "emptied"])
def test_a_damaged_cached_parquet_is_not_read_and_build_repairs_it(
    damage, cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    data = parquet.read_bytes()
    if damage == "truncated":
        parquet.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        parquet.write_bytes(bytes((b * 7 + 13) % 256 for b in data))  # same size, not Parquet
    else:
        parquet.write_bytes(b"")
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), f"{damage} cache entry")
    trials = next(run.glob("*_trial_results.csv")).name
    assert cache_states(capsys, monkeypatch)[trials] == "damaged"
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    states = {Path(b["file"]).name: b["state"] for b in json.loads(out)}
    assert states[trials] == "built" and sorted(states.values()).count("fresh") == 2
    assert set(cache_states(capsys, monkeypatch).values()) == {"fresh"}
    assert "read_parquet" in source_sql([run], "trials_src")


def test_a_read_error_inside_a_verified_parquet_falls_back_to_the_csv(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    """Damage that keeps the size and both magic numbers only shows when DuckDB reads the pages."""
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    data = bytearray(parquet.read_bytes())
    data[4 : len(data) - 8] = bytes(len(data) - 12)  # zero everything between the magic numbers
    parquet.write_bytes(bytes(data))
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "unreadable cache pages")
    assert "Traceback" not in err and "cache" in err
    trials = next(run.glob("*_trial_results.csv")).name
    assert cache_states(capsys, monkeypatch)[trials] == "damaged"


def _flip_three_bytes(parquet: Path) -> None:
    """Issue 42 item 1: three bytes inside the pages flipped, the size and both magic numbers kept: DuckDB
    reads such a copy without an error (a wrong count, a renamed trial), so only a checksum finds it."""
    data = bytearray(parquet.read_bytes())
    for offset in (len(data) // 3, len(data) // 3 + 1, len(data) // 3 + 2):
        data[offset] ^= 0x5A
    parquet.write_bytes(bytes(data))


def test_flipped_bytes_in_a_csv_copy_are_found_before_use(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "calendar"
    shutil.copytree(RUNS / "calendar", run)
    before = digest(run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    _flip_three_bytes(parquet)
    trials = next(run.glob("*_trial_results.csv"))
    for name in ("reward_summary", "turn_stats", "exception_distribution", "trial_phases"):
        code, out, err = cli_run(["query", name, "-r", str(run), "-f", "json"], capsys, monkeypatch)
        assert code == 0, err
        assert_rows_match(json.loads(out), oracle.expected(name, [run]), f"{name} over a copy with flipped bytes")
        warned = [line for line in err.splitlines() if "warning:" in line]
        assert len(warned) == 1, err  # one warning, naming the CSV, the copy and the fix
        assert str(trials) in warned[0] and str(parquet) in warned[0] and "checksum" in warned[0]
        assert "rlsql cache build" in warned[0]
    assert cache_states(capsys, monkeypatch)[trials.name] == "damaged"
    assert digest(run) == before  # the read wrote nothing into the run folder
    code, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert {Path(b["file"]).name: b["state"] for b in json.loads(out)}[trials.name] == "built"
    code, _, err = cli_run(["query", "reward_summary", "-r", str(run)], capsys, monkeypatch)
    assert code == 0 and "warning" not in err


def test_a_copy_without_a_checksum_is_stale_not_damaged(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    """An entry an rlsql before the checksum built is read in place without a warning until the next build."""
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    record_file = parquet.with_suffix(".json")
    record = json.loads(record_file.read_text())
    del record["parquet_crc32"]
    record_file.write_text(json.dumps(record))
    trials = next(run.glob("*_trial_results.csv")).name
    assert cache_states(capsys, monkeypatch)[trials] == "stale"
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and "warning" not in err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "an entry without a checksum")


def _zero_the_pages(parquet: Path) -> None:
    """Damage that keeps the size and both magic numbers: only a read of the pages finds it."""
    data = bytearray(parquet.read_bytes())
    data[4 : len(data) - 8] = bytes(len(data) - 12)
    parquet.write_bytes(bytes(data))


def test_export_falls_back_to_the_csv_when_a_cached_copy_fails_to_read(
    cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    import pyarrow.parquet as pq

    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    _zero_the_pages(built_trials_entry(run, capsys, monkeypatch))
    out_dir = tmp_path / "bi"
    code, _, err = cli_run(["export", "turn_stats", "-r", str(run), "-o", str(out_dir)], capsys, monkeypatch)
    assert code == 0, err
    assert "Traceback" not in err and "answered from the file" in err
    rows = pq.read_table(out_dir / "turn_stats.parquet").to_pylist()
    assert_rows_match(rows, oracle.expected("turn_stats", [run]), "export over a damaged cache entry")
    trials = next(run.glob("*_trial_results.csv")).name
    assert cache_states(capsys, monkeypatch)[trials] == "damaged"


def test_report_falls_back_to_the_csv_when_a_cached_copy_fails_to_read(
    cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    code, _, err = cli_run(["report", "-r", str(run), "-o", str(tmp_path / "clean")], capsys, monkeypatch)
    assert code == 0, err
    _zero_the_pages(built_trials_entry(run, capsys, monkeypatch))
    code, _, err = cli_run(["report", "-r", str(run), "-o", str(tmp_path / "rep")], capsys, monkeypatch)
    assert code == 0, err
    assert "Traceback" not in err and "answered from the file" in err

    # the same report as from the CSVs alone, but for the timestamps it prints
    def text(folder: Path) -> list[str]:
        return [line for line in (folder / "report.md").read_text().splitlines() if "generated" not in line.lower()]

    assert text(tmp_path / "rep") == text(tmp_path / "clean")
    trials = next(run.glob("*_trial_results.csv")).name
    assert cache_states(capsys, monkeypatch)[trials] == "damaged"


def test_a_csv_edited_with_its_size_and_mtime_kept_is_read_again(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    built_trials_entry(run, capsys, monkeypatch)
    trials = next(run.glob("*_trial_results.csv"))
    stat = trials.stat()
    text = trials.read_text()
    # the first trial's turns 3.0 -> 9.0: same length, then the modification time put back
    assert ",3.0," in text.splitlines()[1]
    trials.write_text(text.replace(",3.0,", ",9.0,", 1))
    os.utime(trials, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (trials.stat().st_size, trials.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0, err
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "edited CSV, same size and mtime")
    assert cache_states(capsys, monkeypatch)[trials.name] == "stale"


# --- leftovers and incremental builds (issue 9 item 13, issue 11 item 3) ---------------------------


def test_leftovers_of_a_killed_build_are_swept(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    from rlsql.cache import store as cache

    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    parquet = built_trials_entry(run, capsys, monkeypatch)
    folder = parquet.parent
    # what a build killed mid-write leaves: rlsql's temporary name (from a process that is gone) and the
    # names earlier versions left (mkstemp's, and DuckDB's own tmp_ copy of it)
    with monkeypatch.context() as m:
        m.setattr(os, "getpid", lambda: 2**22 + 12345)  # above Linux's largest pid: a process that is gone
        dead = cache.temp_path(parquet)
    dead.write_bytes(b"half a parquet")
    legacy = [folder / f".{parquet.name}.k2j3h4.tmp", folder / f"tmp_.{parquet.name}.k2j3h4.tmp"]
    for p in legacy:
        p.write_bytes(b"half a parquet")
    foreign = folder / "tmp_mine.tmp"
    foreign.write_bytes(b"mine")
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0
    assert not dead.exists() and not any(p.exists() for p in legacy)
    assert foreign.read_bytes() == b"mine"
    assert "3 leftover" in err


def test_build_rebuilds_only_what_is_missing_or_stale(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    vllm = next(run.glob("*_vllm_metrics_table.csv"))
    _, out, _ = cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)
    untouched = [Path(e["parquet"]) for e in json.loads(out) if Path(e["file"]) != vllm.resolve()]
    assert len(untouched) == 2
    mtimes = {p: p.stat().st_mtime_ns for p in untouched}
    with vllm.open("a") as fh:
        fh.write(vllm.read_text().splitlines()[-1] + "\n")
    _, out, _ = cli_run(["cache", "build", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    states = {b["artifact"]: b["state"] for b in json.loads(out)}
    assert states == {"metrics": "fresh", "trials": "fresh", "vllm": "built"}
    assert {p: p.stat().st_mtime_ns for p in untouched} == mtimes  # not rewritten


def test_verbose_says_whether_each_source_read_used_the_cache(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    trials = next(run.glob("*_trial_results.csv"))
    code, _, err = cli_run(["query", "turn_stats", "-r", str(run), "-v"], capsys, monkeypatch)
    assert code == 0
    assert [line for line in err.splitlines() if str(trials) in line and "read in place" in line]
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    code, _, err = cli_run(["query", "turn_stats", "-r", str(run), "-v"], capsys, monkeypatch)
    assert [line for line in err.splitlines() if str(trials) in line and "from the cache" in line]
    code, _, err = cli_run(["query", "turn_stats", "-r", str(run)], capsys, monkeypatch)
    assert "from the cache" not in err  # quiet without -v


def test_the_hint_counts_the_read_not_the_rows_rendered_in_python(cache_dir, capsys, monkeypatch) -> None:
    """A markdown or table file of many rows takes far longer to write in Python than the read: the hint's
    seconds leave that out. On a clock the test moves, the answer takes 100 s, 99.5 of them rendering."""
    from rlsql.cache import reading
    from rlsql.cache.copies import CacheCopies
    from rlsql.engine import answer as answering

    trials = next((RUNS / "tiny").glob("*_trial_results.csv"))
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", "1")
    clock = [1000.0]
    monkeypatch.setattr(answering.time, "perf_counter", lambda: clock[0])

    def answer() -> None:
        reading.read_in_place(trials, trials.stat().st_size)
        clock[0] += 100.0
        answering.formatted(99.5)

    answering.Answer(CacheCopies()).run(lambda _bad_cells: answer())
    hint = capsys.readouterr().err
    assert f"hint: read 0 MiB in place ({trials}) in 0.5 s;" in hint, hint


# --- nothing is cached unasked; a large file read in place says what a build would save ----------------


def test_a_large_csv_is_read_in_place_with_one_hint_and_nothing_is_built(
    cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    trials = next(run.glob("*_trial_results.csv"))
    # the threshold lowered so that the fixture's trials file counts as large and the others do not
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", str(trials.stat().st_size))
    code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "first read")
    hints = [line for line in err.splitlines() if "hint:" in line]
    assert len(hints) == 1 and str(trials) in hints[0] and "rlsql cache build" in hints[0], err
    assert not cache_dir.exists()  # nothing was built, or even created
    for quiet in (["--no-cache"],):
        code, _, err = cli_run([*quiet, "query", "turn_stats", "-r", str(run)], capsys, monkeypatch)
        assert code == 0 and "hint:" not in err
    code, _, _ = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0 and cache_states(capsys, monkeypatch)[trials.name] == "fresh"
    code, out, err = cli_run(["-v", "query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and "hint:" not in err
    assert [line for line in err.splitlines() if str(trials) in line and "from the cache" in line]
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "second read")
    code, _, err = cli_run(["--no-cache", "query", "turn_stats", "-r", str(run), "-v"], capsys, monkeypatch)
    assert code == 0 and [line for line in err.splitlines() if str(trials) in line and "read in place" in line]
    monkeypatch.setenv("RLSQL_CACHE", "off")
    assert "read_parquet" not in source_sql([run], "trials_src")  # an opt-out also skips existing entries


def test_a_changed_csv_is_answered_from_the_csv_until_the_next_build(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    trials = next(run.glob("*_trial_results.csv"))
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    old_rows = {
        e["file"]: e["rows"] for e in json.loads(cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)[1])
    }
    lines = trials.read_text().splitlines()
    trials.write_text("\n".join([*lines, lines[1].replace(lines[1].split(",")[1], "added-trial", 1)]) + "\n")
    assert cache_states(capsys, monkeypatch)[trials.name] == "stale"
    code, out, err = cli_run(["-v", "query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and [line for line in err.splitlines() if str(trials) in line and "read in place" in line]
    assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "after the edit")
    assert cache_states(capsys, monkeypatch)[trials.name] == "stale"  # a query rebuilds nothing
    cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    status = {e["file"]: e for e in json.loads(cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)[1])}
    assert status[str(trials)]["state"] == "fresh" and status[str(trials)]["rows"] == old_rows[str(trials)] + 1


def test_the_size_limit_removes_the_entries_least_recently_built(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    runs = []
    for name in ("a", "b", "c"):
        shutil.copytree(RUNS / "tiny", tmp_path / name)
        runs.append(tmp_path / name)
    for run in runs:
        assert cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)[0] == 0
    status = json.loads(cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)[1])
    per_run = {r.name: sum(e["parquet_bytes"] for e in status if Path(e["file"]).parent == r.resolve()) for r in runs}
    assert len(status) == 9 and len(set(per_run.values())) == 1
    # a query reads run b's copies (and records nothing: a read never writes the cache folder); a build then
    # finds run a's fresh (and marks them as built now): under a limit of two runs' copies, b's and c's go first
    every_file = (
        "SELECT (SELECT count(*) FROM trials), (SELECT count(*) FROM steps), (SELECT count(*) FROM vllm_seconds)"
    )
    code, _, err = cli_run(["-v", "sql", every_file, "-r", str(runs[1])], capsys, monkeypatch)
    assert code == 0 and err.count("from the cache") == 3, err
    code, out, _ = cli_run(["cache", "build", "-r", str(runs[0]), "-f", "json"], capsys, monkeypatch)
    assert code == 0 and {b["state"] for b in json.loads(out)} == {"fresh"}
    monkeypatch.setenv("RLSQL_CACHE_MAX_BYTES", str(2 * per_run["a"]))
    fresh = tmp_path / "d"
    shutil.copytree(RUNS / "tiny", fresh)
    code, _, err = cli_run(["cache", "build", "-r", str(fresh)], capsys, monkeypatch)
    assert code == 0 and "least recently built entries removed" in err, err
    left = {
        Path(e["file"]).parent.name
        for e in json.loads(cli_run(["cache", "status", "-f", "json"], capsys, monkeypatch)[1])
    }
    assert left == {"a", "d"}
    _, _, err = cli_run(["cache", "status"], capsys, monkeypatch)
    assert f"of at most {2 * per_run['a']:,} bytes" in err


def test_cache_status_says_the_policy(cache_dir, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RLSQL_CACHE_HINT_BYTES", str(64 * 2**20))
    code, _, err = cli_run(["cache", "status"], capsys, monkeypatch)
    assert code == 0 and "64 MiB" in err and "never in the background" in err
    monkeypatch.setenv("RLSQL_CACHE", "off")
    code, _, err = cli_run(["cache", "status"], capsys, monkeypatch)
    assert code == 0 and "the cache is off" in err


def test_a_cache_folder_beside_a_stray_log_is_used_and_one_inside_a_run_warns_every_command(
    tmp_path, capsys, monkeypatch
) -> None:
    """A folder is a run's only when it holds a run's artifacts: a `.log` or `.out` file of anything else
    beside the cache folder does not make rlsql refuse it; a cache it does refuse says so on every command
    that would have used it (which folder, why, the fix), not only in `cache status`."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "first.out").write_text("hello\n")
    (work / "timings.log").write_text("1.2 s\n")
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(work / "cache"))
    run = RUNS / "tiny"
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0, err
    code, _, err = cli_run(["-v", "query", "turn_stats", "-r", str(run)], capsys, monkeypatch)
    assert code == 0 and "from the cache" in err and "warning" not in err
    inside = tmp_path / "copy"
    shutil.copytree(RUNS / "tiny", inside)
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(inside / "cache"))
    for args in (
        ["query", "turn_stats"],
        ["sql", "SELECT count(*) FROM trials"],
        ["export", "turn_stats", "-o", str(tmp_path / "out")],
    ):
        code, _, err = cli_run([*args, "-r", str(run)], capsys, monkeypatch)
        warned = [line for line in err.splitlines() if "warning" in line and "inside run folder" in line]
        assert code == 0 and len(warned) == 1, (args, err)
        assert str(inside / "cache") in warned[0] and "RLSQL_CACHE" in warned[0]
    assert not (inside / "cache").exists()


# --- where the caches live (issue 9 item 15) -------------------------------------------------------


def test_a_query_writes_nothing_anywhere_unasked(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    code, _, _ = cli_run(["query", "turn_stats", "-r", str(RUNS / "tiny")], capsys, monkeypatch)
    assert code == 0
    assert not xdg.exists() and not cache_dir.exists()  # no SQL analysis or any other cache is kept


def test_an_empty_home_does_not_put_the_cache_at_the_filesystem_root(monkeypatch) -> None:
    import pwd

    from rlsql.core.settings import Settings

    expected = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "rlsql" / "parquet"
    assert Settings.from_env({"HOME": ""}).cache_dir == expected
    # the XDG spec says: ignore a relative one
    assert Settings.from_env({"HOME": "", "XDG_CACHE_HOME": "relative/path"}).cache_dir == expected
    assert Settings.from_env({"XDG_CACHE_HOME": "/x"}).cache_dir == Path("/x/rlsql/parquet")


def temp_sizes(folder: Path) -> list[int]:
    """The sizes of the temporary files under `folder` now (one may be renamed away while it is looked at)."""
    sizes = []
    for path in folder.rglob("*.rlsql-tmp"):
        try:
            sizes.append(path.stat().st_size)
        except FileNotFoundError:
            continue
    return sizes


@pytest.mark.slow
def test_kill_9_during_cache_build_leaves_only_sweepable_leftovers(
    cache_dir, tmp_path, capsys, monkeypatch, rlsql_exe
) -> None:
    """kill -9 of a real `cache build` while it writes an entry (its temporary file seen, the process seen
    alive just before the kill): never a half entry in use, never a leftover the next build cannot sweep,
    and the answer afterwards is the oracle's."""
    import signal
    import subprocess
    import time

    run = tmp_path / "big"
    run.mkdir()
    lines = (RUNS / "tiny" / "20260105_120000_trial_results.csv").read_text().splitlines()
    body = [line.split(",", 2) for line in lines[1:]]
    with (run / "20260105_120000_trial_results.csv").open("w") as fh:
        fh.write(lines[0] + "\n")
        for i in range(400_000):
            task, trial, rest = body[i % len(body)]
            fh.write(f"{task},{trial}-{i},{rest}\n")
    before = snapshot(run)
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache_dir), "RLSQL_CACHE": ""}
    allowed = re.compile(
        r"^(rlsql-cache\.json|[0-9a-f]{24}\.(parquet|json)"
        r"|\.([0-9a-f]{24}\.(parquet|json)|rlsql-cache\.json)\.[0-9a-f]{6}-\d+-[0-9a-f]{8}-[0-9a-f]{8}"
        r"\.rlsql-tmp)$"
    )
    killed = 0
    for min_bytes in (0, 1, 2**20):  # as the temporary appears, once it has bytes, once it has a MiB
        proc = subprocess.Popen(
            [rlsql_exe, "cache", "build", "--force", "-r", str(run)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(size >= min_bytes for size in temp_sizes(cache_dir)):
                break
        if proc.poll() is None:  # still writing its entry: killed mid-write
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        names = [p.name for p in cache_dir.rglob("*") if p.is_file()]
        assert all(allowed.match(n) for n in names), names
        code, out, err = cli_run(["query", "turn_stats", "-r", str(run), "-f", "json"], capsys, monkeypatch)
        assert code == 0, err
        assert_rows_match(json.loads(out), oracle.expected("turn_stats", [run]), "after kill -9")
    assert killed >= 2, "the build finished before it could be killed: make the CSV larger"
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0
    assert not [p for p in cache_dir.rglob("*rlsql-tmp*")]
    assert set(cache_states(capsys, monkeypatch).values()) == {"fresh"}
    assert snapshot(run) == before


def test_a_build_killed_while_creating_the_folder_leaves_it_usable(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    """kill -9 between the marker's temporary and its rename (found by the kill test above, one run in
    several): the folder holds only that temporary. It is rlsql's (its name proves it), so the next
    command takes the folder, sweeps the temporary and answers from a copy it builds."""
    import subprocess

    from rlsql.runs import writes

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    cache_dir.mkdir()
    leftover = writes.temp_name(cache_dir / "rlsql-cache.json", pid=int(gone.stdout))
    leftover.write_text('{"format": "rlsql-par')  # cut short where the kill fell
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0, err
    assert "not an rlsql cache folder" not in err
    assert not leftover.exists()
    assert json.loads((cache_dir / "rlsql-cache.json").read_text())["format"] == "rlsql-parquet-cache"
    assert set(cache_states(capsys, monkeypatch).values()) == {"fresh"}
    # a live process's temporary (this one's) is left to it: the folder is taken, the temporary not swept
    shutil.rmtree(cache_dir)
    cache_dir.mkdir()
    live = writes.temp_name(cache_dir / "rlsql-cache.json")
    live.write_text("{")
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code == 0, err
    assert live.exists()
    # ...and a file of somebody else's beside it still makes the folder foreign
    shutil.rmtree(cache_dir)
    cache_dir.mkdir()
    leftover.write_text("{")
    (cache_dir / "notes.txt").write_text("mine")
    code, _, err = cli_run(["cache", "build", "-r", str(run)], capsys, monkeypatch)
    assert code != 0 and "not an rlsql cache folder" in err and (cache_dir / "notes.txt").exists()


def test_a_run_with_pattern_characters_in_its_path_is_cached_from_its_own_file(
    cache_dir, tmp_path, capsys, monkeypatch
) -> None:
    parent = tmp_path / "g"
    shutil.copytree(RUNS / "tiny", parent / "run[1]")
    shutil.copytree(RUNS / "tiny", parent / "run1")  # what the pattern run[1] would match instead
    trials = parent / "run1" / "20260105_120000_trial_results.csv"
    lines = trials.read_text().splitlines(keepends=True)
    trials.write_text("".join(lines[:4]))  # run1 keeps 3 trials, run[1] all of tiny's
    code, out, _ = cli_run(["cache", "build", "-r", str(parent), "-f", "json"], capsys, monkeypatch)
    assert code == 0
    built = {(b["run"], b["artifact"]): b for b in json.loads(out)}
    assert built[("run[1]", "trials")]["state"] == "built" and built[("run1", "trials")]["rows"] == 3
    assert built[("run[1]", "trials")]["rows"] == len((RUNS / "tiny" / trials.name).read_text().splitlines()) - 1
    got = rlsql.query("turn_stats", [parent]).to_dicts()
    assert "read_parquet" in source_sql([parent], "trials_src")
    assert_rows_match(got, oracle.expected("turn_stats", [parent / "run1", parent / "run[1]"]), "pattern names, cached")


def test_cache_build_into_a_full_cache_folder_exits_4_naming_the_folder(tmp_path, rlsql_exe) -> None:
    """Issue 42 (minor): a cache folder that cannot take the copy (here a file size limit, as a full disk
    answers) is the cache's write failure, not the CSV's bad data: exit 4 naming the folder, nothing left."""
    run = tmp_path / "r"
    run.mkdir()
    rows = [
        f"t,{hashlib.sha256(str(i).encode()).hexdigest()}__{i},{i % 9},,1.0" for i in range(20000)
    ]  # ~1.5 MB that zstd cannot shrink to 200 KiB (hex digests)
    (run / "trial_results.csv").write_text(
        "task_name,trial_name,n_episodes,exception_type,reward\n" + "\n".join(rows) + "\n"
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache), "RLSQL_CACHE": "auto"}
    # bash's `ulimit -f` in KiB; SIGXFSZ ignored so that the write fails with EFBIG instead of killing
    done = subprocess.run(
        ["bash", "-c", 'trap "" XFSZ; ulimit -f 200; exec "$0" cache build -r "$1"', rlsql_exe, str(run)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"rlsql: error: {cache}: cannot write (File too large)"
    assert "Traceback" not in done.stderr
    assert not [p for p in cache.rglob("*") if p.is_file() and p.suffix != ".json"]  # no Parquet, no temp left


def test_the_engine_handed_the_copies_builds_none_even_under_cache_on(cache_dir, monkeypatch) -> None:
    """Only the command builds (rlsql/cache/copies.py for_command): the engine asks the copies it is handed, and
    a lookup under RLSQL_CACHE=on finds no copy, reads the CSV in place and writes nothing into the cache folder."""
    from rlsql.engine.query import run_query

    monkeypatch.setenv("RLSQL_CACHE", "on")
    runs = [RUNS / "tiny"]
    rows = run_query("turn_stats", resolve_runs(runs), {}, copies=CacheCopies()).to_dicts()
    assert_rows_match(rows, oracle.expected("turn_stats", runs), "turn_stats, the copies asked but none built")
    assert not cache_dir.exists()


def test_cache_flag_says_once_what_is_wrong_with_a_csv_it_cannot_copy(cache_dir, tmp_path, capsys, monkeypatch) -> None:
    """Under --cache the build before the query cannot copy a zero-filled CSV; the query's read skips it with
    its one warning, and the build's own `not cached` is a -v notice, not a second warning."""
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    trials = next(run.glob("*_trial_results.csv"))
    trials.write_bytes(b"\0" * 64)  # its header cannot be read
    good = RUNS / "calendar"
    args = ["--cache", "query", "turn_stats", "-r", str(good), "-r", str(run), "-f", "json"]
    code, out, err = cli_run(args, capsys, monkeypatch)
    assert code == 0, err
    said = [line for line in err.splitlines() if str(trials) in line]
    assert len(said) == 1 and "file skipped" in said[0], err
    rows = {r["run"]: r for r in json.loads(out)}
    assert rows["tiny"]["trials"] == 0  # its only trials file skipped
    assert_rows_match([rows["calendar"]], oracle.expected("turn_stats", [good]), "turn_stats beside a skipped CSV")
    code, _, err = cli_run(["-v", *args], capsys, monkeypatch)
    assert code == 0 and f"{trials}" in err and "not cached" in err, err
