"""Read a run's rl_config.yaml and flatten it to rows for the `config_src` view.

DuckDB has no YAML reader, so pyyaml parses the file and the leaves reach SQL as literals.
A config is data from outside: before it is expanded, its size, alias count, nesting depth and
the number of values its aliases expand to are capped (a 600-byte "billion laughs" file would
otherwise take minutes and gigabytes; lists nested 5,000 deep exhaust Python's recursion limit).
Over a cap, the config is unusable, as one that does not parse: a warning, and the defaults.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsql.core.errors import RlsqlWarning


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


#: caps on a config before it is expanded; real rl_config.yaml files are a few KB, a few levels deep
MAX_CONFIG_BYTES = 1 << 20
MAX_ALIASES = 1_000
MAX_DEPTH = 100
MAX_VALUES = 100_000


class ConfigTooLarge(Exception):
    """A config over one of the caps (the message says which)."""


class LimitedLoader(yaml.SafeLoader):
    """pyyaml's safe loader that counts aliases and nesting while it composes the node graph.

    The pure-Python loader on purpose: the C loader composes in C, where nothing can be counted.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.depth = 0
        self.aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigTooLarge(f"config uses more than {MAX_ALIASES:,} aliases")
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ConfigTooLarge(f"config is nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def check_expansion(root: yaml.Node, aliases: int) -> None:
    """Raise ConfigTooLarge when the tree the aliases describe is too big, too deep or recursive.

    Aliases share nodes, so the graph is small while its expansion (what flattening and JSON
    walk) can be exponential: sizes and depths are computed per shared node, without recursion.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    visiting: set[int] = set()
    through = " through its aliases" if aliases else ""
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        if leaving:
            visiting.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_VALUES:
                raise ConfigTooLarge(f"config expands{through} to more than {MAX_VALUES:,} values")
            if depth[key] > MAX_DEPTH:
                raise ConfigTooLarge(f"config is nested deeper than {MAX_DEPTH} levels{through}")
            continue
        if key in size:
            continue
        if key in visiting:
            raise ConfigTooLarge("config has an alias that refers to itself (a recursive structure)")
        visiting.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)


def _check_tree(node: yaml.Node, depth: int = 1) -> int:
    """check_expansion for a node graph without aliases (a tree): its size, ConfigTooLarge past the caps.

    Recursion stops at MAX_DEPTH + 1 levels, so it cannot run out of stack; ~4x faster than the
    general walk (which has to remember every shared node), most of a config's parse over 1,000 runs.
    """
    if depth > MAX_DEPTH:
        raise ConfigTooLarge(f"config is nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_check_tree(k, depth + 1) + _check_tree(v, depth + 1) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_check_tree(c, depth + 1) for c in node.value)
    else:
        return 1
    if size > MAX_VALUES:
        raise ConfigTooLarge(f"config expands to more than {MAX_VALUES:,} values")
    return size


def _parse_in_c(text: str) -> Any:
    """parse_limited through libyaml (~9x faster: 1,000 configs in ~1 s instead of ~9 s), for a text
    without `*`, which therefore holds no alias to count: the node graph libyaml composes is then
    the size of the text, and check_expansion still bounds its depth before it is constructed."""
    loader = yaml.CSafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_tree(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def parse_limited(text: str) -> Any:
    """yaml.safe_load within the caps above (ConfigTooLarge beyond them)."""
    if "*" not in text and getattr(yaml, "__with_libyaml__", False):
        try:
            return _parse_in_c(text)
        except (yaml.YAMLError, ConfigTooLarge, RecursionError):
            pass  # parsed again below, so the problem reported is the pure-Python loader's, word for word
    loader = LimitedLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        check_expansion(root, loader.aliases)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def read_yaml(path: Path) -> tuple[dict | None, ConfigProblem | None]:
    """The parsed config, or None and the problem that makes it unusable."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return None, ConfigProblem(path, None, None, f"config is over {MAX_CONFIG_BYTES:,} bytes")
        tree = parse_limited(raw.decode("utf-8-sig"))
    except ConfigTooLarge as exc:
        return None, ConfigProblem(path, None, None, str(exc))
    except RecursionError:  # a cap above should come first; never a traceback either way
        return None, ConfigProblem(path, None, None, "config is nested too deeply to read")
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


#: the trainer's checkpoint interval when the config has none it can use (checkpoint_settings.sql)
DEFAULT_SAVE_INTERVAL = 20
INTERVAL_KEY = "trainer.hf_save_interval"
MAX_INTERVAL = 2**31 - 1  # the SQL reads it as an INTEGER


def whole_steps(value: Any) -> int | None:
    """A checkpoint interval the trainer can use (a whole number of steps, at least 1), else None.

    `3.0` and the text `"4"` count as whole numbers, as the SQL reading the config's text does.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and 1 <= value <= MAX_INTERVAL:
        return value
    return None


def setting_problems(tree: dict) -> list[str]:
    """Settings other than the routing that the trainer could not use (today: the checkpoint interval)."""
    for key, value in flatten(tree):
        if key == INTERVAL_KEY:  # the first occurrence is the one read
            if value is not None and whole_steps(value) is None:
                return [
                    f"{key} should be a whole number of steps, at least 1, not {value!r}; using {DEFAULT_SAVE_INTERVAL}"
                ]
            break
    return []


def config_problems(tree: dict) -> list[str]:
    return routing_problems(tree) + setting_problems(tree)


#: a config value's text that reads as a number: JSON's number grammar (what str() gives an int or a finite
#: float, and a YAML 1.1 string such as `3e-6`); no `nan`, `inf`, `1_000`, `0x1f` or leading zeros
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def value_type(texts: Iterable[str | None]) -> str:
    """The SQL type a config column gets from its runs' values as text (`config` view's `value`): BIGINT
    when every value is an integer within BIGINT, DOUBLE when every value is a finite number (integers
    up to 2**53, which a DOUBLE holds exactly), BOOLEAN when every value is `true` or `false`, else
    VARCHAR. A YAML null (None, or `null` as run_table prints it) reads as NULL and counts for no type; a
    column of nulls only is VARCHAR. Every text that decides a type is one DuckDB and Spark cast exactly."""
    values = [t for t in texts if t is not None and t != "null"]
    if not values:
        return "VARCHAR"
    if all(v in ("true", "false") for v in values):
        return "BOOLEAN"
    if all(_INTEGER.fullmatch(v) and -(2**63) <= int(v) < 2**63 for v in values):
        return "BIGINT"
    if all(
        _NUMBER.fullmatch(v) and math.isfinite(float(v)) and (not _INTEGER.fullmatch(v) or abs(int(v)) <= 2**53)
        for v in values
    ):
        return "DOUBLE"
    return "VARCHAR"


def config_rows(run: str, path: Path) -> list[dict]:
    tree = load_yaml(path)
    if tree is None:
        return []
    for problem in setting_problems(tree):
        warnings.warn(f"{path}: {problem} (the trainer's default)", RlsqlWarning, stacklevel=2)
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
