"""rl_config.yaml's rows kept per file (rlsql/configcache.py): used while the file and the code are
unchanged, proved used by a process that cannot import pyyaml (and, in this process, by parsing made to
fail), and every answer checked against the oracle (tests/oracle.py, which parses the YAML itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlsql import configcache
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS
from tests.inprocess import Ran, run_cli
from tests.test_answers import aged_copy, settle

#: a Python that cannot import pyyaml: a config is read only from its kept entry
NO_YAML = "import sys; sys.modules['yaml'] = None; from rlsql.quickcli import main; main()"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The analysis caches in a folder of the test's own; kept answers off (each query runs)."""
    env = {**os.environ, "RLSQL_CACHE_DIR": str(tmp_path / "cache"), "RLSQL_CACHE": "0"}
    env.pop("RLSQL_NO_CACHE", None)
    return env


def query(name: str, run: Path, env: dict[str, str], without_yaml: bool = False) -> subprocess.CompletedProcess:
    head = [sys.executable, "-c", NO_YAML] if without_yaml else [sys.executable, "-m", "rlsql"]
    return subprocess.run([*head, "query", name, "-r", str(run), "-f", "json"], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def ask(env: dict[str, str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    """query() in this process (cheaper than a process per call); `without_yaml`: parsing a config at
    all fails the command (exit 99), so only a kept entry answers."""
    from rlsql import config

    def call(name: str, run: Path, without_yaml: bool = False, extra: dict[str, str] | None = None) -> Ran:
        return run_cli(["query", name, "-r", str(run), "-f", "json"], monkeypatch, capsys, {**env, **(extra or {})},
                       ("RLSQL_CACHE_DIR", "RLSQL_CACHE", "RLSQL_NO_CACHE"),
                       (config, "config_rows") if without_yaml else None)
    return call


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of the tiny run per test that changes one, made and settled (older than the racy window) once."""
    base = tmp_path_factory.mktemp("configs")
    made = {name: aged_copy(RUNS / "tiny", base / name / "tiny") for name in ("edited", "warned", "other", "off")}
    # a routing key the trainer cannot use: rlsql warns and applies the default for it
    config = made["warned"] / "rl_config.yaml"
    config.write_text(config.read_text().replace("zero_exceptions: []", "zero_exceptions: 7"))
    settle()
    return made


def entries(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["RLSQL_CACHE_DIR"]) / configcache.FOLDER).glob("*.json"))


def test_a_config_is_read_from_its_entry_until_it_changes(copies: dict[str, Path], env: dict[str, str], ask) -> None:
    run = copies["edited"]
    config = run / "rl_config.yaml"
    assert ask("exception_treatment", run, without_yaml=True).returncode != 0  # nothing kept: yaml needed
    first = ask("exception_treatment", run)
    assert first.returncode == 0, first.stderr
    assert_rows_match(json.loads(first.stdout), oracle.expected("exception_treatment", [run]), "first")
    assert len(entries(env)) == 1
    # a process that cannot import pyyaml at all answers from the entry
    alone = query("exception_treatment", run, env, without_yaml=True)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == first.stdout
    for name in ("exception_treatment", "exception_distribution", "best_checkpoint"):
        got = ask(name, run, without_yaml=True)
        assert got.returncode == 0, got.stderr
        assert_rows_match(json.loads(got.stdout), oracle.expected(name, [run]), f"{name} from the entry")
    # the same size and modification time, another default treatment: the file is parsed again
    old = config.stat()
    text = config.read_text()
    assert "default_error_treatment: zero" in text
    config.write_text(text.replace("default_error_treatment: zero", "default_error_treatment: mask"))
    os.utime(config, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert (config.stat().st_size, config.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)
    assert ask("exception_treatment", run, without_yaml=True).returncode != 0
    after = ask("exception_treatment", run)
    assert after.returncode == 0, after.stderr
    assert_rows_match(json.loads(after.stdout), oracle.expected("exception_treatment", [run]), "after the edit")
    assert after.stdout != first.stdout
    # changed within the racy window: not kept yet; once settled, kept again
    assert ask("exception_treatment", run, without_yaml=True).returncode != 0
    settle()
    assert ask("exception_treatment", run).returncode == 0
    again = ask("exception_treatment", run, without_yaml=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout == after.stdout


def test_a_configs_warnings_are_said_again_from_its_entry(copies: dict[str, Path], env: dict[str, str], ask) -> None:
    run = copies["warned"]  # its zero_exceptions is 7
    first = ask("exception_treatment", run)
    assert first.returncode == 0, first.stderr
    assert "zero_exceptions should be a list" in first.stderr
    assert_rows_match(json.loads(first.stdout), oracle.expected("exception_treatment", [run]), "first")
    kept = ask("exception_treatment", run, without_yaml=True)
    assert kept.returncode == 0, kept.stderr
    assert (kept.stdout, kept.stderr) == (first.stdout, first.stderr)


def test_an_entry_of_other_code_or_another_file_is_not_used(copies: dict[str, Path], env: dict[str, str], ask) -> None:
    run = copies["other"]
    assert ask("best_checkpoint", run).returncode == 0
    (entry,) = entries(env)
    record = json.loads(entry.read_text())
    record["code"] = [*record["code"], ["config.py", 1, 1]]  # as made by another rlsql
    entry.write_text(json.dumps(record))
    assert ask("best_checkpoint", run, without_yaml=True).returncode != 0
    # a file that is not rlsql's entry at that name: parsed again, and replaced only by a real entry
    entry.write_text("not json")
    got = ask("best_checkpoint", run)
    assert got.returncode == 0, got.stderr
    assert_rows_match(json.loads(got.stdout), oracle.expected("best_checkpoint", [run]), "best_checkpoint")
    assert ask("best_checkpoint", run, without_yaml=True).returncode == 0


def test_no_entry_with_the_analysis_caches_off(copies: dict[str, Path], env: dict[str, str], ask) -> None:
    run = copies["off"]
    got = ask("exception_treatment", run, extra={"RLSQL_NO_CACHE": "1"})
    assert got.returncode == 0, got.stderr
    assert_rows_match(json.loads(got.stdout), oracle.expected("exception_treatment", [run]), "caches off")
    assert entries(env) == []


def test_the_folder_is_pruned_beyond_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over LIMIT entries, a process's first store removes the oldest half (and nothing that is not an entry)."""
    folder = tmp_path / "configs"
    folder.mkdir()
    for i in range(10):
        path = folder / f"{i:032x}.json"
        path.write_text("{}")
        os.utime(path, ns=(i * 10**9, i * 10**9))  # entry i stored at second i
    (folder / "notes.txt").write_text("not an entry")
    monkeypatch.setattr(configcache, "LIMIT", 8)
    monkeypatch.setattr(configcache, "_pruned", False)
    configcache._prune(folder)
    assert sorted(p.name for p in folder.iterdir()) == [f"{i:032x}.json" for i in range(5, 10)] + ["notes.txt"]
    (folder / "extra.json").write_text("{}")
    configcache._prune(folder)  # once per process
    assert (folder / "extra.json").exists()
