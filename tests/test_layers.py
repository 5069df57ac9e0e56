"""The package's layers (README, "Architecture"): one subpackage per layer; a module imports only from
its own package or the packages below it, and no imports go round in a cycle.

The imports are read from the source with `ast` (top-level and function-level alike: a late import
still ties two modules together), so the test needs nothing imported. A new package must be given a
place here; the README's architecture section lists the same packages in the same order.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rlsql"
README = PACKAGE.parent / "README.md"

#: the layers, bottom first: each a subpackage of rlsql (the package root `rlsql` and `rlsql.__main__` sit
#: on top, beside the command line)
LAYERS = ["core", "runs", "duck", "catalog", "cache", "engine", "inspection", "outputs", "serve", "cli"]
TOP = {"rlsql": len(LAYERS) - 1, "rlsql.__main__": len(LAYERS)}
#: the most modules a folder may hold (the layers must stay readable in a sitting)
MAX_MODULES = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> int:
    if module in TOP:
        return TOP[module]
    return LAYERS.index(module.split(".")[1])


def imports(path: Path, known: set[str]) -> set[str]:
    """The rlsql modules `path` imports (`from rlsql.x import y` counts as rlsql.x.y when y is a module)."""
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


def test_every_module_is_in_a_layer_and_no_folder_is_crowded() -> None:
    loose = [m for m in modules() if m not in TOP and (m.count(".") < 1 or m.split(".")[1] not in LAYERS)]
    assert loose == []
    for folder in {p.parent for p in PACKAGE.rglob("*.py")}:
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        assert count <= MAX_MODULES, f"{folder} holds {count} modules"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [f"{m} imports {t}" for m, targets in graph().items() for t in sorted(targets) if layer(t) > layer(m)]
    assert upward == []


#: the only modules that may import rlsql.cache: the cache itself, the command line (which builds the copies a
#: command hands the engine, and resolves URL runs) and the Python API on top; the engine takes copies as an
#: argument (rlsql/engine/copies.py) and never reaches the cache folder on its own
CACHE_USERS = ("rlsql.cache", "rlsql.cli")


def test_only_the_commands_import_the_cache() -> None:
    users = [
        f"{m} imports {t}"
        for m, targets in graph().items()
        for t in sorted(targets)
        if (t == "rlsql.cache" or t.startswith("rlsql.cache."))
        and m != "rlsql"
        and not any(m == top or m.startswith(top + ".") for top in CACHE_USERS)
    ]
    assert users == []


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
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node)
    assert cycles == []


def test_the_readme_lists_the_same_packages_in_the_same_order() -> None:
    """The README's architecture section: one line per package, `rlsql/NAME/` first on the line, top first."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Architecture") :]
    section = section[: section.index("\n## ", 3)] if "\n## " in section[3:] else section
    listed = re.findall(r"^\s*rlsql/([a-z]+)/", section, flags=re.M)
    present = [name for name in LAYERS if (PACKAGE / name).is_dir()]
    assert listed == list(reversed(present))


#: a dependency's import name where it is not its distribution's name
IMPORT_NAMES = {"pyyaml": "yaml"}
#: packages of the dependencies' own dependencies that rlsql imports itself: jinja2's, typer's
TRANSITIVE = {"markupsafe", "rich"}


def core_packages() -> set[str]:
    """What a plain `pip install .` brings, by import name: pyproject.toml's dependencies and TRANSITIVE."""
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower() for spec in project["dependencies"]}
    return {IMPORT_NAMES.get(name, name) for name in names} | TRANSITIVE


#: each extra's packages -> the only modules that may import them (each import late, behind its extra's
#: message: a plain install must reach none of them from a command that does not need the extra)
EXTRAS = {
    "matplotlib": {"rlsql.outputs.report.figures"},
    "starlette": {"rlsql.serve", "rlsql.serve.app", "rlsql.serve.api", "rlsql.serve.views"},
    "uvicorn": {"rlsql.serve", "rlsql.serve.app", "rlsql.serve.mcp_server"},
    # the MCP SDK and what it brings (anyio runs it, pydantic describes the tools' arguments): `rlsql mcp`
    "mcp": {"rlsql.serve", "rlsql.serve.mcp_server"},
    "anyio": {"rlsql.serve.mcp_server"},
    "pydantic": {"rlsql.serve.mcp_server"},
    "pyspark": {"rlsql.engine.spark", "rlsql.engine.spark_sources"},
    # s3fs and gcsfs are imported by name (mirrors._backend), only for a URL of their kind
    "huggingface_hub": {"rlsql.cache.mirrors"},
}


def test_a_plain_install_has_every_package_the_code_imports() -> None:
    """No module imports a package that only an extra (or the test environment) installs, outside the
    modules of that extra: badcells.py once imported pyarrow for its DuckDB function, and `rlsql check`
    on a run with trajectories failed with a traceback in the README's own first venv."""
    import sys

    core = core_packages()
    assert {"duckdb", "jinja2", "yaml", "typer", "numpy"} <= core  # the parse of pyproject.toml found them
    stray = [
        f"{name}: {top}"
        for name, path in sorted(modules().items())
        for top in imported_packages(path)
        if top != "rlsql"
        and top not in sys.stdlib_module_names
        and top not in core
        and name not in EXTRAS.get(top, set())
    ]
    assert stray == []


def imported_packages(path: Path) -> list[str]:
    """The top-level package of each absolute import in the module at `path`, late imports included."""
    tops = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.append(node.module.split(".")[0])
    return tops


#: the packages that may import DuckDB (issue 37, one home for it): duck/ (its mechanics: connections, settings,
#: COPY, Parquet footers, rejects) and engine/ (statements, sources, answers; the Spark files are there too).
#: Every other module names a connection or an error through rlsql.duck.memorydb and calls duck/'s functions.
DUCKDB_HOMES = {"duck", "engine"}


def test_only_duck_and_engine_import_duckdb() -> None:
    stray = [
        name
        for name, path in sorted(modules().items())
        if not (name.split(".")[1:2] and name.split(".")[1] in DUCKDB_HOMES) and "duckdb" in imported_packages(path)
    ]
    assert stray == []


def test_every_package_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages a plain (not editable) install carries: a new one left out there works
    in a checkout and fails in the README's first command (`No module named 'rlsql.duck'`)."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("__init__.py")}
    assert found - listed == set()
