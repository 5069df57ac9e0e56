"""Routing keys of the wrong type in rl_config.yaml (docs/semantics.md, "Damaged input").

A routing list given as a plain string (`mask_exceptions: RuntimeError`) is a config problem: a
warning, and that key takes the trainer's default list. The run here is the tiny fixture run with
its routing block rewritten; the expectations are worked out by hand from the tiny run's trials
(see tests/test_tiny_run.py for the table) and checked against the oracle as well, so the oracle
and the SQL are held to the same rule.

Trials by exception type (12 in all, CSV order of first appearance):
    No exception 6, DaytonaError 2, AgentTimeoutError 2, RuntimeError 1, ContextLengthExceededError 1
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import rlsql
from tests import oracle

TINY = Path(__file__).parent.parent / "fixtures" / "runs" / "tiny"

ROUTING = """\
trainer:
  hf_save_interval: 2
terminal_bench:
  harbor:
    passthrough_exceptions: [AgentTimeoutError]
    mask_exceptions: RuntimeError
    zero_exceptions: []
    default_error_treatment: ZERO
"""


@pytest.fixture()
def string_routing_run(tmp_path: Path) -> Path:
    run = tmp_path / "routing_string"
    shutil.copytree(TINY, run)
    (run / "rl_config.yaml").write_text(ROUTING, encoding="utf-8")
    return run


# by hand: mask takes the trainer's default list (DaytonaError ... RewardFileEmptyError, not
# RuntimeError nor ContextLengthExceededError); zero is the given empty list; the default treatment
# `ZERO` is read case-insensitively, so RuntimeError and ContextLengthExceededError fall to `zero`.
EXPECTED = [
    ("No exception", 6, 50.0, "none"),
    ("DaytonaError", 2, 100 * 2 / 12, "mask"),
    ("AgentTimeoutError", 2, 100 * 2 / 12, "passthrough"),
    ("RuntimeError", 1, 100 / 12, "zero"),
    ("ContextLengthExceededError", 1, 100 / 12, "zero"),
]


def test_string_routing_list_takes_the_default_with_a_warning(string_routing_run: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = rlsql.query("exception_distribution", string_routing_run)
    got = [(r["exception_type"], r["trials"], r["pct"], r["treatment"]) for r in result.to_dicts()]
    assert [g[0] for g in got] == [e[0] for e in EXPECTED]
    for g, e in zip(got, EXPECTED, strict=True):
        assert g[1] == e[1] and g[2] == pytest.approx(e[2]) and g[3] == e[3]
    messages = [str(w.message) for w in caught]
    assert any("mask_exceptions" in m and "RuntimeError" in m and "rl_config.yaml" in m for m in messages), messages


def test_oracle_agrees_on_string_routing(string_routing_run: Path) -> None:
    rows = oracle.q_exception_distribution("routing_string", string_routing_run)
    got = [(r["exception_type"], r["trials"], r["pct"], r["treatment"]) for r in rows]
    assert [g[0] for g in got] == [e[0] for e in EXPECTED]
    for g, e in zip(got, EXPECTED, strict=True):
        assert g[1] == e[1] and g[2] == pytest.approx(e[2]) and g[3] == e[3]


def test_effective_treatment_with_string_routing(string_routing_run: Path) -> None:
    # by hand: AgentTimeoutError trial 9 has no reward -> passthrough becomes mask; so
    # none 6, passthrough 1 (trial 4), mask 3 (trials 2, 8, 9), zero 2 (trials 6, 7)
    rows = {r["treatment"]: r["trials"] for r in rlsql.query("exception_treatment", string_routing_run).to_dicts()}
    assert rows == {"none": 6, "passthrough": 1, "mask": 3, "zero": 2}
    assert {r["treatment"]: r["trials"] for r in oracle.q_exception_treatment("x", string_routing_run)} == rows
