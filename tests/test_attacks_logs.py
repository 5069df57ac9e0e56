"""Attacks on raw training logs (issue 25, D5 and M4): a cached log edited in place is read again, and the
terminal codes Ray and vLLM print do not hide a line. Expectations worked out by hand on tiny logs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rlsql
from rlsql.cache import logentries
from rlsql.engine import rawlogs
from tests.test_logcache import NOISE, VLLM, block, log_records


@pytest.fixture
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("RLSQL_CACHE_DIR", str(root))
    monkeypatch.setenv("RLSQL_CACHE", "on")
    return root


def rewards(run: Path) -> dict[int, float]:
    rawlogs._metric_keys.cache_clear()  # as a new process would
    return {r["step"]: r["reward"] for r in rlsql.query("reward_curve", [run]).to_dicts()}


def live_log(tmp_path: Path, steps: int) -> tuple[Path, Path]:
    run = tmp_path / "live"
    run.mkdir()
    log = run / "train.out"
    log.write_text("".join(NOISE + block(s, f"0.{s:02d}00") for s in range(1, steps + 1)))
    return run, log


@pytest.mark.parametrize("steps", [3, 2000], ids=["small", "past_the_full_check"])
def test_an_edit_in_place_then_growth_is_read_again(steps: int, tmp_path: Path, cache_on: Path) -> None:
    """D5: the entry covers steps 1..N; step 2's reward is edited in place (same length), then the log grows.
    A fresh read gives the edited value; the old entry must not be extended over the edit."""
    run, log = live_log(tmp_path, steps)
    assert rewards(run)[2] == 0.02  # the entry is built and read
    if steps > 3:
        assert log.stat().st_size > logentries.FULL_CHECK_BYTES / 40  # several MiB: the sampled check applies
    text = log.read_text()
    at = text.index("'reward/avg_raw_reward': '0.0200'")
    edited = text[:at] + "'reward/avg_raw_reward': '9.9999'" + text[at + len("'reward/avg_raw_reward': '0.0200'") :]
    assert len(edited) == len(text)
    log.write_text(edited + NOISE + block(steps + 1, "0.7700"))
    got = rewards(run)
    assert got[2] == 9.9999 and got[steps + 1] == 0.77  # by hand: the edit, and the new step
    record = log_records(cache_on)[str(log)]
    assert record["parsed_from"] == 0 and record["cut"] == log.stat().st_size  # read again from the start


def test_a_touch_without_growth_reads_the_log_again(tmp_path: Path, cache_on: Path) -> None:
    run, log = live_log(tmp_path, 3)
    assert rewards(run)[3] == 0.03
    text = log.read_text()
    log.write_text(text.replace("'0.0300'", "'0.0400'"))  # same length, same inode, no growth
    assert rewards(run)[3] == 0.04


@pytest.mark.parametrize("code", ["\x1b[K", "\x1b[2K", "\x1b[1A\x1b[2K", "\x1b]0;title\x07", "\x1b[?25l"])
def test_vllm_lines_with_terminal_codes_are_read(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """M4: each of three stat lines carries a terminal code besides its colours; all three are read."""
    monkeypatch.setenv("RLSQL_CACHE", "off")
    run = tmp_path / "live"
    run.mkdir()
    lines = [VLLM.format(s=s, g=g) for s, g in ((1, 10), (6, 20), (11, 30))]
    (run / "train.out").write_text(NOISE + "".join(code + line for line in lines) + block(1, "0.5000"))
    (row,) = rlsql.query("vllm_summary", [run]).to_dicts()
    # by hand: three seconds, one engine each; generation throughput 10, 20, 30 tok/s: mean 20
    assert (row["seconds"], row["mean_generation_tps_per_engine"]) == (3, 20.0)
