"""The SQL catalogue: the files of `sql/`, each with its header, in dependency order.

Dependencies come from the SQL itself (sqlglot, at build time: sql/manifest.json), not from file
order; an unknown reference or a cycle is an error when the manifest is written, and a file the
manifest does not describe is an error when the catalogue loads (rlsql/catalog/manifest.py).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rlsql.catalog import manifest
from rlsql.catalog.sqlfile import KINDS, SELECTABLE, SqlFile, parse_header
from rlsql.catalog.templates import jinja_env
from rlsql.core.errors import CatalogError, UsageError

if TYPE_CHECKING:
    import jinja2

_MACRO_NAME = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
#: what makes a SQL file a template: a body without it renders as itself (Jinja would compile it, ~1-3 ms each)
_JINJA_MARKUP = re.compile(r"\{[{%#]")
#: a template whose SQL depends on the runs (rendered per connection: SqlFile.per_runs): run_table lays out a
#: column per config key, trial_rows fills the durations an older trials CSV lacks from result.json
_PER_RUNS = re.compile(r"\b(config_columns|json_phases)\b")


def sql_root() -> Path:
    """Where the versioned SQL files are: `rlsql/sql` inside an installed package (pyproject.toml maps
    the package rlsql.sql to the checkout's sql/), `sql/` at the top of a checkout."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "sql"
    return installed if installed.is_dir() else package.parent / "sql"


class Catalog:
    """Every SQL file, by name, with dependencies resolved and checked."""

    def __init__(self, files: Iterable[SqlFile], root: Path, analysed: bool = False):
        """`analysed`: the files' depends_on and fingerprints are set (from the manifest); else sqlglot
        finds them now (the build-time path)."""
        self.root = root
        self._templates: dict[str, jinja2.Template] = {}
        self.files: dict[str, SqlFile] = {}
        for f in files:
            if f.name in self.files:
                raise CatalogError(f"{f.path}: name {f.name!r} is already used by {self.files[f.name].path}")
            self.files[f.name] = f
        for f in self.files.values():
            if f.kind != "source":  # sources render per connection, with the runs
                f.renderer = self.render
            f.per_runs = _PER_RUNS.search(f.body) is not None
        if not analysed:
            self._analyse()
        self.order = self._topological(self.files)

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def read_files(cls, root: Path) -> list[SqlFile]:
        """Every file of the SQL folder `root`, its header parsed."""
        files = []
        for folder, kind in KINDS.items():
            for path in sorted((root / folder).glob("*.sql")):
                text = path.read_text(encoding="utf-8")
                f = parse_header(text, f"sql/{folder}/{path.name}", kind)
                f.digest = manifest.text_digest(text)
                files.append(f)
        return files

    @classmethod
    def load(cls, root: Path | None = None) -> Catalog:
        """The catalogue of `root` (default: the installed SQL folder), analysed as its manifest says."""
        root = root or sql_root()
        files = cls.read_files(root)
        manifest.apply({f.name: f for f in files}, root)
        return cls(files, root, analysed=True)

    @classmethod
    def analyse(cls, root: Path | None = None) -> Catalog:
        """The catalogue of `root` analysed by sqlglot now, whatever the manifest says (to write it)."""
        root = root or sql_root()
        return cls(cls.read_files(root), root)

    @functools.cached_property
    def env(self) -> jinja2.Environment:
        return jinja_env(self.root)

    def render(self, f: SqlFile, **context: object) -> str:
        """`f`'s SQL; `config_columns` (run_table's config keys) and `json_phases` (trial_rows' durations from
        result.json), per connection, default to none."""
        if not _JINJA_MARKUP.search(f.body):  # plain SQL (most views and queries): nothing to compile
            return f.body.strip()
        context = {"config_columns": [], "json_phases": {}, **context}
        template = self._templates.get(f.body)
        if template is None:  # compiled once per catalogue: a source is rendered per connection
            template = self._templates[f.body] = self.env.from_string(f.body)
        return template.render(param=lambda name: f.param(name).sql_ref(), **context).strip()

    def _analyse(self) -> None:
        """depends_on and fingerprints by parsing every file with sqlglot, and that a macro file defines exactly
        its macro: at build time (the manifest, `python -m rlsql.outputs.docs`) and for catalogues made of files
        given in code (tests). A loaded catalogue's files are the ones analysed: their digests match the manifest."""
        from rlsql.catalog import analysis

        macro_names = {f.name for f in self.files.values() if f.kind == "macro"}
        for f in self.files.values():
            if f.kind == "macro" and _MACRO_NAME.findall(f.rendered) != [f.name]:
                raise CatalogError(f"{f.path}: a macro file must define exactly the macro {f.name!r}")
            if f.kind == "source":
                f.fingerprint = analysis.normalise(f.body)  # rendered per connection; refers to nothing
                continue
            tables, functions = analysis.references(f.rendered, f.path)
            deps = set()
            for table in tables:
                if table not in self.files:
                    raise CatalogError(f"{f.path}: refers to {table!r}, which no file of sql/ defines")
                deps.add(table)
            deps |= {fn for fn in functions if fn in macro_names and fn != f.name}
            f.depends_on = sorted(deps)
            f.fingerprint = analysis.normalise(f.rendered)  # replaced by the hash with parents below
        for f in self._topological(self.files):
            own = f.fingerprint
            parents = "".join(self.files[d].fingerprint for d in f.depends_on)
            f.fingerprint = hashlib.sha256(f"{f.kind}\0{own}\0{parents}".encode()).hexdigest()[:16]

    @staticmethod
    def _topological(files: dict[str, SqlFile]) -> list[SqlFile]:
        order: list[SqlFile] = []
        state: dict[str, str] = {}

        def visit(name: str, trail: list[str]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "active":
                cycle = [*trail[trail.index(name) :], name]
                raise CatalogError(f"{files[name].path}: dependency cycle {' -> '.join(cycle)}")
            state[name] = "active"
            for dep in files[name].depends_on:
                visit(dep, [*trail, name])
            state[name] = "done"
            order.append(files[name])

        for name in sorted(files, key=lambda n: (list(KINDS.values()).index(files[n].kind), n)):
            visit(name, [])
        return order

    # -- lookups ---------------------------------------------------------------------------------
    def queries(self) -> list[SqlFile]:
        return sorted((f for f in self.files.values() if f.kind == "query"), key=lambda f: f.name)

    def views(self) -> list[SqlFile]:
        return sorted((f for f in self.files.values() if f.kind == "view"), key=lambda f: f.name)

    def query(self, name: str) -> SqlFile:
        """A named query or a view (`rlsql query`, `show`, `export` and `describe` take either)."""
        f = self.files.get(name)
        if f is None or f.kind not in SELECTABLE:
            names = [q.name for q in self.files.values() if q.kind in SELECTABLE]
            import difflib  # only to name the closest match of a name that is not there

            close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else "; `rlsql list [--views]` shows them"
            raise UsageError(f"no named query or view {name!r}{hint}")
        return f

    def closure(self, names: Iterable[str]) -> list[SqlFile]:
        """The files `names` need, themselves included, in creation order."""
        wanted: set[str] = set()
        stack = list(names)
        while stack:
            name = stack.pop()
            if name not in wanted:
                wanted.add(name)
                stack.extend(self.files[name].depends_on)
        return [f for f in self.order if f.name in wanted]


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    return Catalog.load()
