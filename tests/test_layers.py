"""The package's layers (README, "Architecture"): each module imports only from its own layer or below,
and no imports go round in a cycle.

The imports are read from the source with `ast` (top-level and function-level alike: a late import
still ties two modules together), so the test needs nothing imported. A new module must be given a
layer here; the README's architecture section lists the same layers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rlsql"

#: layer -> modules, bottom first; the README's architecture section says the same in words
LAYERS: list[tuple[str, set[str]]] = [
    ("text and errors", {"rlsql.errors", "rlsql.sqltext", "rlsql.version"}),
    ("files on disk", {
        "rlsql.writes", "rlsql.duckpaths", "rlsql.csvread", "rlsql.harbor", "rlsql.logfiles",
        "rlsql.formats", "rlsql.sample", "rlsql.duckconn", "rlsql.sqlfolder", "rlsql.detached",
    }),
    ("runs, config and params", {
        "rlsql.runs", "rlsql.artifacts", "rlsql.config", "rlsql.configcache", "rlsql.params", "rlsql.cache",
    }),
    ("the catalogue", {"rlsql.catalog"}),
    ("sources and the engine", {
        "rlsql.duckdb_errors", "rlsql.probe", "rlsql.sources", "rlsql.cachebuild", "rlsql.cachebg", "rlsql.connection",
        "rlsql.lazyconn",
        "rlsql.provenance", "rlsql.inventory", "rlsql.rawlogs", "rlsql.logcache", "rlsql.badcells", "rlsql.answers",
        "rlsql.engines.spark_sources", "rlsql.engines.spark_sql", "rlsql.trajectories",
    }),
    ("the API", {"rlsql.api", "rlsql", "rlsql.engines", "rlsql.engines.spark"}),
    ("commands' work", {
        "rlsql.check", "rlsql.export", "rlsql.exportmerge", "rlsql.dbfile", "rlsql.shellinit", "rlsql.describe",
        "rlsql.docs", "rlsql.ahead",
        "rlsql.report", "rlsql.report.data", "rlsql.report.figures", "rlsql.report.render", "rlsql.report.human",
        "rlsql.transcript", "rlsql.report.agent",
    }),
    ("the command line", {"rlsql.cli", "rlsql.cliout", "rlsql.quickcli", "rlsql.__main__"}),
]


README = PACKAGE.parent / "README.md"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "sql" not in p.relative_to(PACKAGE).parts[:1]}


def imports(path: Path, known: set[str]) -> set[str]:
    """The rlsql modules `path` imports (`from rlsql import x` counts as rlsql.x when x is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("rlsql"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "rlsql")
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(path, set(mods)) - {name} for name, path in mods.items()}


def layer_of() -> dict[str, int]:
    return {m: i for i, (_, members) in enumerate(LAYERS) for m in members}


def test_every_module_has_a_layer() -> None:
    placed = layer_of()
    assert sorted(set(modules()) - set(placed)) == []
    assert sorted(set(placed) - set(modules())) == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    placed = layer_of()
    upward = [
        f"{m} ({LAYERS[placed[m]][0]}) imports {t} ({LAYERS[placed[t]][0]})"
        for m, targets in graph().items()
        for t in sorted(targets)
        if m in placed and t in placed and placed[t] > placed[m]
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    g = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(g.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node)
    assert cycles == []


def readme_layers() -> list[tuple[str, set[str]]]:
    """The README's "Architecture" list: (layer, modules) per numbered line, modules as the backticked names."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Architecture"):]
    section = section[:section.index("\n## ", 3)]
    found = []
    for line in section.splitlines():
        match = re.match(r"^\d+\. \*\*(?P<layer>[^*]+)\*\*: (?P<rest>.*)$", line)
        if match:
            names = re.findall(r"(?:^|, )`([a-z_.]+)`", match["rest"])
            found.append((match["layer"].lower(), {n if n == "rlsql" else f"rlsql.{n}" for n in names}))
    return found


def test_the_readme_states_the_same_layers() -> None:
    assert readme_layers() == [(name.lower(), members) for name, members in LAYERS]
