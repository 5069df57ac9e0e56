"""Read a run's rl_config.yaml and flatten it to rows for the `config_src` view.

DuckDB has no YAML reader, so pyyaml parses the file and the leaves reach SQL as literals.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsql.errors import RlsqlWarning


def _json_default(value: Any) -> str:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=_json_default)
    return str(value)


def flatten(tree: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, leaf) pairs in document order; lists are leaves (routing lists stay whole)."""
    if isinstance(tree, dict):
        pairs: list[tuple[str, Any]] = []
        for key, value in tree.items():
            pairs.extend(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return pairs
    return [(prefix, tree)]


@dataclass(frozen=True)
class ConfigProblem:
    """Why a config cannot be used; `line` (1-based) when YAML says where."""

    path: Path
    line: int | None
    column: int | None
    problem: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line is not None else str(self.path)
        return f"{where}: {self.problem}"


def _safe_load(text: str) -> object:
    """yaml.safe_load, through libyaml when pyyaml has it (~9x faster: 1,000 configs in ~1 s instead
    of ~9 s); a document libyaml refuses is parsed again by the pure-Python loader, so the error
    (its message and line) is the one safe_load gives."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)  # CSafeLoader: the safe loader, in C
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def read_yaml(path: Path) -> tuple[dict | None, ConfigProblem | None]:
    """The parsed config, or None and the problem that makes it unusable."""
    try:
        tree = _safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        return None, ConfigProblem(path, line, column, f"YAML does not parse ({exc.problem})")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, ConfigProblem(path, None, None, f"cannot read config ({exc})")
    if tree is None:
        return {}, None
    if not isinstance(tree, dict):
        return None, ConfigProblem(path, None, None, "config is not a mapping")
    return tree, None


def load_yaml(path: Path) -> dict | None:
    """The parsed config, or None (with a warning) when it cannot be used."""
    tree, problem = read_yaml(path)
    if problem is not None:
        warnings.warn(f"{problem}; using the trainer's default exception routing", RlsqlWarning, stacklevel=3)
    return tree


ROUTING_LISTS = ("passthrough_exceptions", "mask_exceptions", "zero_exceptions")
TREATMENTS = ("zero", "mask", "passthrough")


def routing_problems(tree: dict) -> list[str]:
    """Routing keys the trainer could not use: rlsql then applies the trainer's default for that key.

    The first occurrence of each key in document order is the one read (as exception_routing.sql does).
    """
    seen: set[str] = set()
    problems = []
    for key, value in flatten(tree):
        leaf = key.rpartition(".")[2]
        if leaf in seen or value is None or leaf not in (*ROUTING_LISTS, "default_error_treatment"):
            continue
        seen.add(leaf)
        if leaf in ROUTING_LISTS and not isinstance(value, list):
            problems.append(f"{key} should be a list of exception names, not {value!r}")
        elif leaf == "default_error_treatment" and (not isinstance(value, str) or value.lower() not in TREATMENTS):
            problems.append(f"{key} should be one of {', '.join(TREATMENTS)}, not {value!r}")
    return problems


def config_rows(run: str, path: Path) -> list[dict]:

    tree = load_yaml(path)
    if tree is None:
        return []
    for problem in routing_problems(tree):
        warnings.warn(f"{path}: {problem}; using the trainer's default for it", RlsqlWarning, stacklevel=2)
    return [
        {
            "run": run,
            "ordinal": ordinal,
            "key": key,
            "value": _text(value),
            "value_json": json.dumps(value, default=_json_default),
        }
        for ordinal, (key, value) in enumerate(flatten(tree), start=1)
    ]
