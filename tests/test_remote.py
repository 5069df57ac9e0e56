"""Runs given as URLs (rlsql/cache/mirrors.py, docs/remote.md): a real S3 API on 127.0.0.1 (moto's server) and a
stand-in for the Hugging Face Hub's HTTP API (tests/remote_stores.py), both holding the fixture runs.

The expectation of every comparison is the same query over the local fixture folder; the requests are counted
by the servers, and the files that must (and must not) be fetched are listed here by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import rlsql
from rlsql.catalog.catalog import load_catalog
from tests.compare import assert_rows_match
from tests.conftest import FIXTURE_RUNS, RUNS
from tests.remote_stores import HubStore, S3Store, folder_files

QUERIES = [q.name for q in load_catalog().queries()]
S3_RUNS = [*FIXTURE_RUNS, "rawlogs"]
#: files in the store that no run folder's scan reads: never fetched
NOT_READ = {"model.safetensors": b"\0weights" * 512, "optimizer.pt": b"\0state" * 256, "notes/README.md": b"# run\n"}
BUCKET = "team-runs"


def _local(names: list[str]) -> list[Path]:
    return [RUNS / n for n in names]


def _rows(name: str, runs: list) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a run lacking the query's artifact is said so, alike for both
        try:
            return rlsql.query(name, runs).to_dicts()
        except rlsql.DataError as exc:  # no run has the artifact: the same error, the paths aside
            return [{"error": type(exc).__name__, "why": str(exc)}]


def assert_same(got: list[dict], want: list[dict], label: str) -> None:
    """Row for row, floats to 1e-9 (DuckDB's parallel sums may add in another order from one run to the next)."""
    assert_rows_match(got, want, label)


def _s3_env(store: S3Store, cache: Path) -> dict[str, str]:
    return {**store.env(), "RLSQL_CACHE_DIR": str(cache)}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Store]:
    """The fixture runs under s3://team-runs/runs/, with weights and optimizer state beside calendar's files;
    the process's environment points the AWS chain at the store, the cache at a folder of the module's."""
    with S3Store() as store, pytest.MonkeyPatch.context() as mp:
        files: dict[str, bytes] = {}
        for name in S3_RUNS:
            files.update(folder_files(RUNS / name, f"runs/{name}"))
        files.update({f"runs/calendar/{k}": v for k, v in NOT_READ.items()})
        store.put(BUCKET, files)
        for key, value in _s3_env(store, tmp_path_factory.mktemp("cache")).items():
            mp.setenv(key, value)
        store.clear()
        yield store


@pytest.mark.parametrize("name", QUERIES)
def test_every_query_over_a_bucket_of_runs_answers_as_the_local_folders(s3: S3Store, name: str) -> None:
    assert_same(_rows(name, [f"s3://{BUCKET}/runs/"]), _rows(name, _local(S3_RUNS)), name)


def test_one_run_url_is_named_by_its_last_segment_or_its_alias(s3: S3Store) -> None:
    from rlsql.cache.mirrors import resolve_runs

    runs = resolve_runs([f"s3://{BUCKET}/runs/tiny", f"late=s3://{BUCKET}/runs/calendar"])
    assert [r.name for r in runs] == ["late", "tiny"]
    assert _rows("turn_stats", [f"s3://{BUCKET}/runs/tiny"]) == _rows("turn_stats", _local(["tiny"]))


def test_a_fetch_lists_once_gets_each_read_file_once_and_a_repeat_gets_nothing(
    s3: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    s3.clear()
    _rows("turn_stats", [f"s3://{BUCKET}/runs/calendar"])
    assert s3.listings() == 1
    gets = s3.gets()
    # calendar's files a run folder's scan reads, by hand: its three newest CSVs, the older metrics table
    # (listed as ignored by `rlsql runs`) and its config; never the weights, the optimizer, the report or plot
    assert sorted(gets) == sorted(
        f"/{BUCKET}/runs/calendar/{n}"
        for n in [
            "20260601_090000_metrics_table.csv",
            "20260602_174231_metrics_table.csv",
            "20260602_174231_trial_results.csv",
            "20260602_174231_vllm_metrics_table.csv",
            "rl_config.yaml",
        ]
    )
    s3.clear()
    _rows("turn_stats", [f"s3://{BUCKET}/runs/calendar"])
    assert (s3.listings(), s3.gets()) == (1, [])


def test_an_object_replaced_in_the_bucket_is_seen_by_the_next_query(
    s3: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    url = f"s3://{BUCKET}/runs/tiny"
    before = _rows("turn_stats", [url])
    key = "runs/tiny/20260105_120000_trial_results.csv"
    original = (RUNS / "tiny" / "20260105_120000_trial_results.csv").read_bytes()
    lines = original.decode().splitlines(keepends=True)
    shorter = "".join(lines[:3]).encode()  # the header and two trials
    edited = tmp_path / "tiny"
    edited.mkdir()
    for f in (RUNS / "tiny").iterdir():
        (edited / f.name).write_bytes(shorter if f.name == Path(key).name else f.read_bytes())
    try:
        s3.put(BUCKET, {key: shorter})
        s3.clear()
        after = _rows("turn_stats", [url])
        assert s3.gets() == [f"/{BUCKET}/{key}"] and s3.listings() == 1
        assert after == _rows("turn_stats", [edited]) != before
    finally:
        s3.put(BUCKET, {key: original})


def test_provenance_names_the_url_and_the_etag(s3: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlsql.inspection.inventory import inventory
    from rlsql.outputs.provenance import SourceFingerprints

    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    from rlsql.cache.mirrors import resolve_runs
    from rlsql.outputs.provenance import run_record
    from rlsql.runs.folders import Run

    (run,) = resolve_runs([f"s3://{BUCKET}/runs/tiny"])
    trials = run.artifacts["trials"].path
    record = SourceFingerprints().describe(trials, run)
    key = f"runs/tiny/{trials.name}"
    etag = s3.client().head_object(Bucket=BUCKET, Key=key)["ETag"].strip('"')
    assert (record["url"], record["version"]) == (f"s3://{BUCKET}/{key}", etag)
    columns, rows = inventory([run])
    assert rows[0][columns.index("path")] == f"s3://{BUCKET}/runs/tiny"
    assert run_record(run) == {"name": "tiny", "path": str(run.path), "url": f"s3://{BUCKET}/runs/tiny"}
    assert run_record(Run("tiny", RUNS / "tiny")) == {"name": "tiny", "path": str(RUNS / "tiny")}


def test_cache_status_and_clear_cover_the_copies_and_the_size_limit_counts_them(
    s3: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlsql.cache import admin, store

    cache = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(cache))
    _rows("turn_stats", [f"s3://{BUCKET}/runs/tiny"])
    tiny_bytes = sum(f.stat().st_size for f in (RUNS / "tiny").iterdir())
    (row,) = [r for r in admin.status().rows if r[0] == f"s3://{BUCKET}/runs/tiny"]
    assert (row[1], row[4]) == ("fetched", tiny_bytes)
    # a later command (in this process, tiny's copy is read: never evicted from under it), with a limit
    # smaller than both copies: fetching calendar's removes tiny's (least recently used), never its own
    monkeypatch.setattr(store, "MIRRORS_IN_USE", set())
    monkeypatch.setenv("RLSQL_CACHE_MAX_BYTES", str(tiny_bytes + 1))
    _rows("turn_stats", [f"s3://{BUCKET}/runs/calendar"])
    assert [m.url for m in store.list_mirrors(cache)] == [f"s3://{BUCKET}/runs/calendar"]
    _rows("turn_stats", [f"s3://{BUCKET}/runs/tiny"])  # tiny again: calendar's copy is read by this process
    assert sorted(m.url for m in store.list_mirrors(cache)) == [f"s3://{BUCKET}/runs/{r}" for r in ("calendar", "tiny")]
    monkeypatch.delenv("RLSQL_CACHE_MAX_BYTES")
    assert admin.clear(stale_only=True).startswith("cache: removed 0 files")
    admin.clear(stale_only=False)
    assert store.list_mirrors(cache) == [] and not any((cache / store.REMOTE_DIR).rglob("*.csv"))


def test_without_its_backend_a_url_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # import s3fs now fails as where it is not installed
    with pytest.raises(rlsql.UsageError, match=r"pip install 'rlsql\[s3\]'"):
        rlsql.query("turn_stats", [f"s3://{BUCKET}/runs/tiny"])


def test_other_schemes_and_bad_urls_are_one_usage_line() -> None:
    from rlsql.cache.mirrors import parse

    for url, words in [
        ("https://example.org/run", "not https://"),
        ("s3://", "name a bucket"),
        ("hf://gpt2", "name a Hub repository"),
        ("hf://org/repo@", "empty"),
        ("s3://b/../etc", ". or .."),
    ]:
        with pytest.raises(rlsql.UsageError, match=words):
            parse(url)
    loc = parse("hf://datasets/org/repo@v1/sub/run")
    assert (loc.scheme, loc.root, loc.prefix, loc.repo_type, loc.revision, loc.parts[-1]) == (
        "hf",
        "org/repo",
        "sub/run",
        "dataset",
        "v1",
        "run",
    )


def test_a_plain_query_imports_no_store_library() -> None:
    code = (
        "import sys, rlsql; rlsql.query('turn_stats', [sys.argv[1]]); "
        "print(sorted(m for m in ('s3fs', 'gcsfs', 'huggingface_hub', 'botocore', 'fsspec') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(RUNS / "tiny")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlsql", *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def test_with_the_store_stopped_the_copy_answers_with_one_warning(tmp_path: Path) -> None:
    with S3Store() as store:
        store.put("gone", folder_files(RUNS / "tiny", "tiny"))
        env = _s3_env(store, tmp_path / "cache")
        first = _cli(["query", "turn_stats", "-r", "s3://gone/tiny", "-f", "csv"], env)
        assert first.returncode == 0, first.stderr
    offline = _cli(["query", "turn_stats", "-r", "s3://gone/tiny", "-f", "csv"], env)
    assert (offline.returncode, offline.stdout) == (0, first.stdout)
    lines = offline.stderr.strip().splitlines()
    assert len(lines) == 1 and " ago (" in lines[0]
    assert "s3://gone/tiny: the store cannot be reached; answering from the copy fetched" in lines[0]
    # a URL never fetched, the store stopped: one line naming it, exit 3
    never = _cli(["query", "turn_stats", "-r", "s3://gone/other", "-f", "csv"], env)
    assert never.returncode == 3
    assert never.stderr.strip() == "rlsql: error: s3://gone/other: the store cannot be reached"


def test_a_bad_bucket_or_missing_credentials_is_one_line(s3: S3Store, tmp_path: Path) -> None:
    env = _s3_env(s3, tmp_path / "cache")
    bad = _cli(["query", "turn_stats", "-r", "s3://no-such-bucket/runs/", "-f", "csv"], env)
    assert bad.returncode == 3
    assert bad.stderr.strip() == "rlsql: error: s3://no-such-bucket/runs/: no such bucket or prefix"
    empty = _cli(["query", "turn_stats", "-r", f"s3://{BUCKET}/nothing-here", "-f", "csv"], env)
    assert empty.returncode == 3 and empty.stderr.count("\n") == 1 and "no run files there" in empty.stderr
    bare = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    nocreds = subprocess.run(
        [sys.executable, "-m", "rlsql", "query", "turn_stats", "-r", f"s3://{BUCKET}/runs/tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **bare,
            "AWS_ENDPOINT_URL_S3": s3.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "RLSQL_CACHE_DIR": str(tmp_path / "cache2"),
        },
    )
    assert nocreds.returncode == 3
    assert nocreds.stderr.startswith(f"rlsql: error: s3://{BUCKET}/runs/tiny: no credentials")
    assert nocreds.stderr.count("\n") == 1 and "Traceback" not in nocreds.stderr


# --- the Hub ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubStore]:
    """org/calendar (a model repo: calendar's files beside weights) and datasets/org/harbor on the stand-in,
    HF_ENDPOINT pointed at it (huggingface_hub read its endpoint when imported: set there too)."""
    import huggingface_hub.constants

    with HubStore() as store, pytest.MonkeyPatch.context() as mp:
        store.commit("org/calendar", {**folder_files(RUNS / "calendar"), **NOT_READ})
        store.commit("org/harbor", folder_files(RUNS / "harbor"), repo_type="dataset")
        mp.setenv("HF_ENDPOINT", store.endpoint)
        mp.setattr(huggingface_hub.constants, "ENDPOINT", store.endpoint)
        mp.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        # the library caches what it fetches on its own (remote_stores.LIBRARY_OWN) under HF_HOME: not the user's
        mp.setattr(
            huggingface_hub.constants,
            "AGENT_HARNESSES_PATH",
            str(tmp_path_factory.mktemp("hfhome") / ".agent_harnesses.json"),
        )
        mp.setenv("RLSQL_CACHE_DIR", str(tmp_path_factory.mktemp("hubcache")))
        yield store


@pytest.mark.parametrize("name", QUERIES)
def test_every_query_over_hub_repos_answers_as_the_local_folders(hub: HubStore, name: str) -> None:
    got = _rows(name, ["hf://org/calendar", "hf://datasets/org/harbor"])
    assert_same(got, _rows(name, _local(["calendar", "harbor"])), name)


def test_the_hub_costs_one_request_while_the_commit_is_the_same_and_none_when_pinned(
    hub: HubStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    hub.clear()
    _rows("turn_stats", ["hf://org/calendar"])
    api = sorted(
        p.split("/tree/")[0] + "/tree" if "/tree/" in p else p for _, p in hub.requests if p.startswith("/api/")
    )
    assert api == ["/api/models/org/calendar", "/api/models/org/calendar/tree"]  # the commit, then one listing
    assert sorted(hub.resolves()) == sorted(
        [
            "20260601_090000_metrics_table.csv",
            "20260602_174231_metrics_table.csv",
            "20260602_174231_trial_results.csv",
            "20260602_174231_vllm_metrics_table.csv",
            "rl_config.yaml",
        ]
    )
    hub.clear()
    _rows("turn_stats", ["hf://org/calendar"])
    assert [p for _, p in hub.requests] == ["/api/models/org/calendar"]
    sha = hub.repos[("model", "org/calendar")]["refs"]["main"]
    _rows("turn_stats", [f"hf://org/calendar@{sha}"])  # its first fetch: revision, tree, files
    hub.clear()
    assert _rows("turn_stats", [f"hf://org/calendar@{sha}"]) == _rows("turn_stats", _local(["calendar"]))
    assert hub.requests == []


def test_a_new_commit_fetches_only_the_changed_file(
    hub: HubStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    files = folder_files(RUNS / "tiny")
    hub.commit("org/tiny", files)
    _rows("turn_stats", ["hf://org/tiny"])
    name = "20260105_120000_trial_results.csv"
    shorter = b"".join(files[name].splitlines(keepends=True)[:3])
    hub.commit("org/tiny", {**files, name: shorter})
    hub.clear()
    edited = tmp_path / "tiny"
    edited.mkdir()
    for rel, body in {**files, name: shorter}.items():
        (edited / rel).write_bytes(body)
    assert _rows("turn_stats", ["hf://org/tiny"]) == _rows("turn_stats", [edited])
    assert hub.resolves() == [name]


def test_a_bad_repo_or_revision_is_one_line_and_a_stopped_hub_leaves_the_copy(tmp_path: Path) -> None:
    with HubStore() as store:
        store.commit("org/tiny", folder_files(RUNS / "tiny"))
        env = {
            "HF_ENDPOINT": store.endpoint,
            "RLSQL_CACHE_DIR": str(tmp_path / "cache"),
            "HF_HOME": str(tmp_path / "hf"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        for url, why in [("hf://org/nope", "no such repository"), ("hf://org/tiny@no-branch", "no such revision")]:
            out = _cli(["query", "turn_stats", "-r", url], env)
            assert out.returncode == 3 and out.stderr.startswith(f"rlsql: error: {url}: {why}"), out.stderr
            assert out.stderr.count("\n") == 1
        first = _cli(["query", "turn_stats", "-r", "hf://org/tiny", "-f", "csv"], env)
        assert first.returncode == 0, first.stderr
        store.clear()  # HF_HUB_OFFLINE: the copy answers, saying why, and the Hub is not asked
        offline_mode = _cli(["query", "turn_stats", "-r", "hf://org/tiny", "-f", "csv"], {**env, "HF_HUB_OFFLINE": "1"})
        assert (offline_mode.returncode, offline_mode.stdout, store.requests) == (0, first.stdout, [])
        assert (
            offline_mode.stderr.count("\n") == 1
            and "hf://org/tiny: HF_HUB_OFFLINE is set; answering from the copy" in offline_mode.stderr
        )
    offline = _cli(["query", "turn_stats", "-r", "hf://org/tiny", "-f", "csv"], env)
    assert (offline.returncode, offline.stdout) == (0, first.stdout)
    assert (
        offline.stderr.count("\n") == 1
        and "hf://org/tiny: the store cannot be reached; answering from the copy" in offline.stderr
    )


def test_which_listed_files_are_fetched() -> None:
    from rlsql.cache.mirrors import trial_folders, wanted

    read = [
        "20260105_120000_trial_results.csv",
        "metrics.csv",
        "vllm_metrics.csv",
        "rl_config.yaml",
        "train.out",
        "logs/job_1.log",
        "trace_jobs/t1/result.json",
        "trace_jobs/t1/agent/trajectory.json",
        "trace_jobs/t1/agent/trajectory.cont-2.json",
        "run_a/rl_config.yaml",
        "run_a/trace_jobs/t2/result.json",
    ]
    never = [
        "model.safetensors",
        "optimizer.pt",
        "reward.png",
        "20260602_174231_metrics_report.md",
        "checkpoints/global_step_10/model.safetensors",
        "trace_jobs/t1/agent/trajectory.cont-01.json",
        "trace_jobs/t1/agent/trajectory.summarization-1-summary.json",
        "trace_jobs/t1/verifier/stdout.log",
        "a/b/rl_config.yaml",
        "logs/deeper/job.out",
        "run_a/logs/x/y.log",
    ]
    assert [r for r in read if not wanted(r)] == [] and [n for n in never if wanted(n)] == []
    assert trial_folders([*read, *never, "trace_jobs/t3/verifier/out.txt"]) == {
        "trace_jobs/t1",
        "trace_jobs/t3",
        "run_a/trace_jobs/t2",
    }


class _Terminal:
    """stderr as a terminal: what rlsql writes to it, kept."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_a_fetch_on_a_terminal_shows_one_progress_line_and_none_when_piped(
    s3: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlsql.cache.mirrors import mirror

    monkeypatch.setenv("RLSQL_CACHE_DIR", str(tmp_path / "cache"))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    mirror(f"s3://{BUCKET}/runs/tiny")
    tiny = sorted(f.stat().st_size for f in (RUNS / "tiny").iterdir())
    # one line, rewritten per file (\r), ending with every file and byte of tiny's four files
    assert terminal.text.count("\n") == 1 and terminal.text.endswith(
        f"\rfetching s3://{BUCKET}/runs/tiny: 4/4 files, {sum(tiny) / 2**20:.1f} of {sum(tiny) / 2**20:.1f} MiB\n"
    )
    assert terminal.text.count("\r") == 4
    piped = _Terminal()
    monkeypatch.setattr(piped, "isatty", lambda: False)
    monkeypatch.setattr(sys, "stderr", piped)
    mirror(f"s3://{BUCKET}/runs/calendar")  # stderr a pipe: no progress line
    assert piped.text == ""
