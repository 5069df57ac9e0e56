"""rl_config.yaml that would hang, exhaust memory or crash the YAML parser is a config problem: one
warning naming the file, and the trainer's defaults (issue 9 item 8). So is a checkpoint interval the
trainer could not use."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import rlsql
from rlsql.runs.config import config_rows, read_yaml
from tests import oracle
from tests.compare import assert_rows_match
from tests.conftest import RUNS


def alias_bomb(levels: int, width: int, mapping: bool) -> str:
    """The classic "billion laughs": each level repeats the previous one `width` times by alias."""
    lines = ["a0: &a0 [lol]" if not mapping else "a0: &a0 {k: lol}"]
    for level in range(1, levels + 1):
        refs = ", ".join(f"*a{level - 1}" for _ in range(width))
        if mapping:
            refs = ", ".join(f"k{i}: *a{level - 1}" for i in range(width))
            lines.append(f"a{level}: &a{level} {{{refs}}}")
        else:
            lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def problem_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rl_config.yaml"
    path.write_text(text)
    tree, problem = read_yaml(path)
    assert tree is None and problem is not None
    assert str(path) in str(problem)
    return problem.problem


@pytest.mark.parametrize("mapping", [False, True], ids=["lists", "mappings"])
def test_an_alias_bomb_is_refused(mapping, tmp_path) -> None:
    text = alias_bomb(levels=9, width=9, mapping=mapping)  # 9**9 = 387M leaves in ~600 bytes
    assert len(text) < 1200
    assert "alias" in problem_of(tmp_path, text)


def test_a_small_alias_bomb_over_the_node_cap_is_refused(tmp_path) -> None:
    # 20**4 = 160,000 leaves: parses in a moment without the cap, but is no config
    assert "values" in problem_of(tmp_path, alias_bomb(levels=4, width=20, mapping=False))


def test_ordinary_anchors_and_aliases_still_work(tmp_path) -> None:
    path = tmp_path / "rl_config.yaml"
    path.write_text("defaults: &d {lr: 0.001, batch: 8}\ntrainer:\n  <<: *d\n  hf_save_interval: 4\nother: *d\n")
    tree, problem = read_yaml(path)
    assert problem is None
    assert tree == {
        "defaults": {"lr": 0.001, "batch": 8},
        "trainer": {"lr": 0.001, "batch": 8, "hf_save_interval": 4},
        "other": {"lr": 0.001, "batch": 8},
    }


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000 + "]" * 5000,
        "a: " + "{a: " * 5000 + "1" + "}" * 5000,
        "".join(f"{'  ' * i}k{i}:\n" for i in range(600)) + "  " * 600 + "v: 1\n",
    ],
    ids=["flow lists", "flow mappings", "block mappings"],
)
def test_deep_nesting_is_a_config_problem_not_a_recursion_error(text, tmp_path) -> None:
    assert "deep" in problem_of(tmp_path, text)


def test_an_oversized_config_is_refused(tmp_path) -> None:
    text = "trainer:\n  hf_save_interval: 2\n" + "".join(f"key_{i}: {'x' * 90}\n" for i in range(30_000))
    assert len(text.encode()) > 2 * 2**20
    assert "bytes" in problem_of(tmp_path, text)


def test_config_rows_warn_once_and_use_the_defaults(tmp_path) -> None:
    path = tmp_path / "rl_config.yaml"
    path.write_text("[" * 5000 + "]" * 5000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = config_rows("r", path)
    assert rows == []
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and str(path) in messages[0] and "default" in messages[0]


def test_a_query_over_a_run_with_a_bomb_config_answers_with_defaults(tmp_path) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    (run / "rl_config.yaml").write_text(alias_bomb(levels=9, width=9, mapping=True))
    with pytest.warns(rlsql.RlsqlWarning, match="alias"):
        rows = rlsql.query("best_checkpoint", [run]).to_dicts()
    (run / "rl_config.yaml").unlink()  # the oracle's view of it: no usable config
    assert_rows_match(rows, oracle.expected("best_checkpoint", [run]), "bomb config -> defaults")


@pytest.mark.parametrize("value", ["0", "-5", "ten", "2.5", "1e23", "true", "[2]"])
def test_an_unusable_checkpoint_interval_is_warned_about_and_defaults_to_20(value, tmp_path) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    config = run / "rl_config.yaml"
    config.write_text(config.read_text().replace("hf_save_interval: 2", f"hf_save_interval: {value}"))
    assert f"hf_save_interval: {value}" in config.read_text()
    with pytest.warns(rlsql.RlsqlWarning, match=r"hf_save_interval") as caught:
        rows = rlsql.query("best_checkpoint", [run]).to_dicts()
    assert any(str(config) in str(w.message) and "20" in str(w.message) for w in caught)
    # by hand: the trainer's default interval, 20, as if the key were absent
    config.write_text(config.read_text().replace(f"hf_save_interval: {value}", ""))
    assert_rows_match(rows, oracle.expected("best_checkpoint", [run]), f"hf_save_interval {value}")


@pytest.mark.parametrize("value, steps", [("3.0", 3), ("4", 4)])
def test_a_whole_interval_is_used_without_a_warning(value, steps, tmp_path) -> None:
    run = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run)
    config = run / "rl_config.yaml"
    config.write_text(config.read_text().replace("hf_save_interval: 2", f"hf_save_interval: {value}"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", rlsql.RlsqlWarning)
        rows = rlsql.query("best_checkpoint", [run]).to_dicts()
    assert_rows_match(rows, oracle.expected("best_checkpoint", [run], save_every=steps), f"interval {value}")
