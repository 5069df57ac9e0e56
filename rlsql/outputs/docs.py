"""The files generated from the code so they cannot drift: sql/manifest.json (the SQL analysis, done
here by sqlglot so that no query does it), docs/queries.md and docs/data-contract.md (from the SQL
headers) and docs/settings.md (from rlsql/core/settings.py).

`python -m rlsql.outputs.docs` rewrites them in the checkout; `--check` only says whether they are
current (exit 1 when not). `rlsql docs NAME` prints one of the docs from the installed package.
tests/test_docs.py compares the committed files with what this writes.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from pathlib import Path

from rlsql.catalog import manifest
from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.outputs.exportmerge import partition_layout
from rlsql.runs.folders import CONFIG_NAMES, CSV_ARTIFACTS, HARBOR_DIR, HARBOR_RESULT, resolve_runs

DOCS = {"queries": "queries.md", "data-contract": "data-contract.md", "settings": "settings.md"}
LABELS = {
    "metrics": "trainer metrics",
    "trials": "trial results",
    "vllm": "vLLM engine stats",
    "config": "run config",
    "harbor": "Harbor trial folders",
}
#: the trainer's routing defaults, as the exception_routing view writes them (stated here for the docs)
DEFAULT_MASK = (
    "DaytonaError",
    "EnvironmentStartTimeoutError",
    "NetworkError",
    "ConnectionError",
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
)
DEFAULT_ZERO = ("AgentTimeoutError", "ContextLengthExceededError")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _entry(f: SqlFile, types: dict[str, str]) -> dict:
    from rlsql.engine.query import declared_params

    columns = [{"name": c, "type": t, "description": f.column_doc(c)} for c, t in types.items() if c in f.column_docs]
    if "*" in f.column_docs:
        # a metric column a run's CSV brings: DOUBLE, or BIGINT for the counts (docs/semantics.md)
        columns.append({"name": "*", "type": "DOUBLE or BIGINT", "description": f.column_docs["*"]})
    params = [
        {
            "name": p.name,
            "type": p.type,
            "doc": p.doc,
            "minimum": p.minimum,
            "minimum_text": _number(p.minimum),
            "maximum": p.maximum,
            "maximum_text": _number(p.maximum),
            "default_text": "NULL" if p.default is None else str(p.default),
        }
        for p in declared_params(f.name)
    ]
    return {
        "name": f.name,
        "version": f.version,
        "description": f.description,
        "grain": f.grain,
        "layout": _export_layout(f),
        "params": params,
        "columns": columns,
    }


def _export_layout(f: SqlFile) -> str | None:
    """How `export --partition-by run` writes `f`: one merged file, a hive tree, or None (no `run` column)."""
    return partition_layout(f)


def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parents[1] / "templates")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["cell"] = _cell
    return env


def queries_md(catalog: Catalog | None = None) -> str:
    """docs/queries.md: every named query and view, types bound over the bundled sample run."""
    from rlsql.engine.statements import column_types

    catalog = catalog or load_catalog()
    runs = resolve_runs(None)
    entries = {f.name: _entry(f, dict(column_types(f.name, runs))) for f in [*catalog.queries(), *catalog.views()]}
    macros = [f for f in catalog.order if f.kind == "macro"]
    return (
        _environment()
        .get_template("queries.md.j2")
        .render(
            queries=[entries[f.name] for f in catalog.queries()],
            views=[entries[f.name] for f in catalog.views()],
            macros=sorted(({"name": m.name, "description": m.description} for m in macros), key=lambda m: m["name"]),
        )
    )


def data_contract_md(catalog: Catalog | None = None) -> str:
    """docs/data-contract.md: the prose of the template, the file names rlsql looks for, the sources' columns."""
    catalog = catalog or load_catalog()
    artifacts = [
        {"kind": kind, "label": LABELS[kind], "prefixed": f"`<ts>_{prefixed}`", "plain": f"`{plain}`"}
        for kind, (prefixed, plain) in CSV_ARTIFACTS.items()
    ]
    artifacts.append(
        {
            "kind": "config",
            "label": LABELS["config"],
            "prefixed": f"`{CONFIG_NAMES[0]}`",
            "plain": " or ".join(f"`{n}`" for n in CONFIG_NAMES[1:]),
        }
    )
    artifacts.append(
        {
            "kind": "harbor",
            "label": LABELS["harbor"],
            "prefixed": f"`{HARBOR_DIR}/<trial>/{HARBOR_RESULT}` (the trials when the trials CSV is "
            "absent; beside it, what it lacks)",
            "plain": "",
        }
    )
    sources = [
        {
            "name": f.name,
            "artifact": f.artifact,
            "optional": f.optional,
            "description": f.description,
            "columns": ", ".join(f"`{c.name}` {c.type}" for c in f.columns),
            "other": f.other_columns_type if f.columns else "",
        }
        for f in catalog.order
        if f.kind == "source"
    ]
    return (
        _environment()
        .get_template("data-contract.md.j2")
        .render(
            artifacts=artifacts,
            sources=sorted(sources, key=lambda s: str(s["name"])),
            default_mask=", ".join(DEFAULT_MASK),
            default_zero=", ".join(DEFAULT_ZERO),
        )
    )


def _tidy(text: str) -> str:
    """One blank line between blocks, whatever the template's loops left."""
    import re

    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def render(name: str) -> str:
    """The text of docs/NAME.md (`queries` or `data-contract`)."""
    if name == "queries":
        return _tidy(queries_md())
    if name == "data-contract":
        return _tidy(data_contract_md())
    if name == "settings":
        return settings_md()
    raise KeyError(name)


def settings_md() -> str:
    """docs/settings.md: one row per field of rlsql.core.settings.Settings."""
    from rlsql.core import settings

    lines = [
        "# Settings",
        "",
        "<!-- generated by `python -m rlsql.outputs.docs` from rlsql/core/settings.py: do not edit -->",
        "",
        "Every setting rlsql has, with its environment variable and its command-line flag. A flag wins over",
        "the variable; in Python, `rlsql.connect(runs, settings=rlsql.Settings.from_env().replace(...))`",
        '(and `rlsql.query`) take a `Settings` object instead ([python.md](python.md), "Settings").',
        "",
        "| setting | variable | flag | default: meaning |",
        "|---|---|---|---|",
    ]
    for name, env, flag, meaning in settings.table():
        lines.append(f"| `{name}` | {_code(env)} | {_code(flag)} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    return "-" if text == "-" else " / ".join(f"`{part.strip()}`" for part in text.split(" / "))


def manifest_text() -> str:
    """sql/manifest.json as the SQL files are now (sqlglot analyses every file)."""
    catalog = Catalog.analyse()
    return manifest.render(manifest.build(catalog.files.values(), catalog.root))


def main(argv: Sequence[str] | None = None) -> int:
    from rlsql.runs.writes import write_text

    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    checkout = Path(__file__).resolve().parents[2]
    stale = []
    targets = [(checkout / "sql" / manifest.NAME, manifest_text)]
    targets += [(checkout / "docs" / filename, functools.partial(render, name)) for name, filename in DOCS.items()]
    for target, make in targets:
        text = make()
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(str(target))
        if not check:
            write_text(target, text)
            print(f"wrote {target}", file=sys.stderr)
            if target.name == manifest.NAME:
                load_catalog.cache_clear()  # the docs below read the catalogue through the new manifest
    if check and stale:
        print(f"out of date: {', '.join(stale)} (run: python -m rlsql.outputs.docs)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
