"""The SQL catalog: finds the files of `sql/`, reads their headers, orders them by dependency.

Each file opens with `-- key: value` header lines (name, version, description, param, grain,
artifact, columns, other_columns, optional, column). A value may go on over the lines that follow
as `--   more text` (two or more spaces after `--`): the pieces are joined with one space. Views
and named queries document each output column with `-- column: NAME: one line` (`-- column: *:`
covers the columns a view passes through from a file, such as the trainer metrics). Dependencies
come from the SQL itself (sqlglot), not from file order; an unknown reference or a cycle is an
error when the catalog loads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rlsql import writes
from rlsql.errors import BAD_CELL_FUNCTION, BAD_CELL_MARK, DATA_ERROR_MARK, CatalogError, RlsqlError, UsageError
from rlsql.params import Param
from rlsql.sqlfolder import sql_root
from rlsql.sqltext import date_literal, file_literal, identifier, literal, sql_type

if TYPE_CHECKING:
    import jinja2

#: folder -> kind, in the order a reader meets them
KINDS = {"sources": "source", "macros": "macro", "views": "view", "queries": "query"}
#: the kinds a user can name in `rlsql query`, `show`, `describe` and `export`
SELECTABLE = ("query", "view")
_HEADER = re.compile(r"^--\s*(?P<key>[a-z_]+):\s*(?P<value>.*)$")
_CONTINUATION = re.compile(r"^--\s{2,}(?P<more>\S.*)$")
_COLUMN_DOC = re.compile(r"^(?P<name>\*|[^:\s][^:]*?):\s+(?P<text>\S.*)$")
#: the `-- column:` name that documents every column the header does not name
OTHER_COLUMNS = "*"
_KNOWN_KEYS = {
    "name", "version", "description", "param", "grain", "artifact", "columns", "other_columns", "optional", "column",
}
_MACRO_NAME = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
#: a template that lays out a column per config key (rendered per connection: SqlFile.per_runs)
_PER_RUNS = re.compile(r"\bconfig_columns\b")
_MACRO_IS_TABLE = re.compile(r"\)\s+AS\s+TABLE\b", re.IGNORECASE)
# sqlglot does not parse `CREATE MACRO m(a, b := 5)`: analyse the body after AS [TABLE] instead
_MACRO_BODY = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+\w+\s*\([^)]*\)\s+AS\s+(?:TABLE\s+)?(.*)$",
                         re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass
class SqlFile:
    """One file of `sql/`: a source, view, macro or named query."""

    name: str
    kind: str
    path: str
    text: str
    version: str
    description: str
    params: list[Param] = field(default_factory=list)
    grain: str | None = None
    artifact: str | None = None
    optional: bool = False
    columns: list[Column] = field(default_factory=list)
    other_columns_type: str = "VARCHAR"
    #: names this file's SQL refers to (views and macros of the catalog)
    depends_on: list[str] = field(default_factory=list)
    #: hash of the normalised SQL and of every parent's fingerprint (a comment edit keeps it)
    fingerprint: str = ""
    #: the SQL with parameters and structure filled in; sources render per connection instead
    rendered: str = ""
    #: column -> its one-line description, from the header's `-- column: NAME: text` lines
    column_docs: dict[str, str] = field(default_factory=dict)
    #: a view or query whose columns depend on the runs (it reads `config_columns`): rendered per
    #: connection by rlsql.sources.SourceContext.object_sql; `rendered` is its form with no such column
    per_runs: bool = False

    @property
    def body(self) -> str:
        """The SQL after the header: header and continuation lines dropped, anything else kept."""
        lines = self.text.splitlines()
        kept: list[str] = []
        in_header = True
        for line in lines:
            if in_header and (_CONTINUATION.match(line) or _HEADER.match(line)):
                continue
            if line.strip() and not line.startswith("{#"):
                in_header = False
            kept.append(line)
        return "\n".join(kept).strip()

    def column_descriptions(self, columns: Iterable[str]) -> dict[str, str]:
        """column -> description for the columns given (export writes this into Parquet's metadata)."""
        return {column: self.column_doc(column) for column in columns}

    def column_doc(self, column: str) -> str:
        """The description of output column `column`: its own `-- column:` line, else the `*` one, else ''."""
        return self.column_docs.get(column) or self.column_docs.get(OTHER_COLUMNS, "")

    def column_types(self, header: list[str]) -> dict[str, str]:
        """A source's type for each column of a CSV header: declared, else `other_columns`."""
        declared = {c.name: c.type for c in self.columns}
        return {name: declared.get(name, self.other_columns_type) for name in header}

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise CatalogError(f"{self.path}: uses param {name!r} that its header does not declare")

    def create_statements(self, sql: str, as_table: bool = False) -> list[str]:
        """The DDL that creates this object in DuckDB, with its description attached.

        `as_table` loads a source into the in-memory database once instead of defining a view
        (see connection.LOADED_SOURCES for why and which).
        """
        comment = literal(self.description)
        if self.kind == "macro":
            what = "MACRO TABLE" if _MACRO_IS_TABLE.search(sql) else "MACRO"
            return [sql, f"COMMENT ON {what} {identifier(self.name)} IS {comment}"]
        if as_table:
            return [
                f"CREATE OR REPLACE TABLE {identifier(self.name)} AS\n{sql}",
                f"COMMENT ON TABLE {identifier(self.name)} IS {comment}",
            ]
        return [
            f"CREATE OR REPLACE VIEW {identifier(self.name)} AS\n{sql}",
            f"COMMENT ON VIEW {identifier(self.name)} IS {comment}",
        ]


def _header_entries(text: str, path: str) -> list[tuple[str, str]]:
    """(key, value) per header entry, continuation lines joined onto the entry they follow."""
    entries: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        more = _CONTINUATION.match(line)
        if more:
            if not entries:
                raise CatalogError(f"{path}:{number}: a continuation line before any header entry")
            key, value = entries[-1]
            entries[-1] = (key, f"{value} {more['more'].strip()}")
            continue
        match = _HEADER.match(line)
        if not match:
            if line.strip() and not line.startswith("{#"):
                break
            continue
        if match["key"] not in _KNOWN_KEYS:
            raise CatalogError(f"{path}:{number}: unknown header key {match['key']!r}")
        entries.append((match["key"], match["value"].strip()))
    return entries


def _parse_header(text: str, path: str, kind: str) -> SqlFile:
    fields: dict[str, str] = {}
    params: list[Param] = []
    column_docs: dict[str, str] = {}
    for key, value in _header_entries(text, path):
        if key == "param":
            params.append(Param.parse(value, path))
        elif key == "column":
            doc = _COLUMN_DOC.match(value)
            if not doc:
                raise CatalogError(f"{path}: cannot read column line {value!r} (want '-- column: NAME: text')")
            if doc["name"] in column_docs:
                raise CatalogError(f"{path}: column {doc['name']!r} is documented twice")
            column_docs[doc["name"]] = doc["text"].strip()
        else:
            fields[key] = value
    stem = Path(path).stem
    for required in ("name", "version", "description"):
        if required not in fields:
            raise CatalogError(f"{path}: header lacks '-- {required}: ...'")
    if fields["name"] != stem:
        raise CatalogError(f"{path}: header name {fields['name']!r} differs from the file name")
    columns = [_parse_column(spec, path) for spec in fields.get("columns", "").split(",") if spec.strip()]
    return SqlFile(
        name=fields["name"],
        kind=kind,
        path=path,
        text=text,
        version=fields["version"],
        description=fields["description"],
        params=params,
        grain=fields.get("grain"),
        artifact=fields.get("artifact"),
        optional=fields.get("optional", "false").lower() == "true",
        columns=columns,
        other_columns_type=_parse_type(fields.get("other_columns", "VARCHAR"), path, "other_columns"),
        column_docs=column_docs,
    )


def _parse_column(spec: str, path: str) -> Column:
    name, _, ctype = spec.strip().rpartition(" ")
    if not name:
        raise CatalogError(f"{path}: cannot read column spec {spec.strip()!r} (want 'name TYPE')")
    return Column(name.strip(), _parse_type(ctype, path, f"column spec {spec.strip()!r}"))


def _parse_type(text: str, path: str, what: str) -> str:
    """A declared type, checked against the allow-list at load time (rlsql.sqltext.SQL_TYPES)."""
    try:
        return sql_type(text)
    except ValueError as exc:
        raise CatalogError(f"{path}: {what}: {exc}") from None


@functools.cache
def _code_cache_class() -> type:
    """_CodeCache, defined when first needed: jinja2 is imported only when a template is compiled or run."""
    import jinja2

    class _CodeCache(jinja2.BytecodeCache):
        """Jinja's compiled templates, kept between processes: compiling the templates a query needs cost
        ~30 ms of every start (a third of rlsql's start-up over a bare DuckDB script at 45,711 trials).

        One file per template in a folder beside the SQL analysis cache (`sql-analysis-<key>-jinja`),
        written through rlsql/writes.py. Jinja stores the template text's checksum and its own bytecode
        version with the code and discards a mismatch, so an edited template is compiled again. Off with
        RLSQL_NO_CACHE, as the analysis cache; any failure only means compiling again.
        """

        def __init__(self, root: Path):
            key = hashlib.sha256(f"{root}".encode()).hexdigest()[:12]
            self.name = f"sql-analysis-{key}-jinja"

        def _file(self, key: str, for_writing: bool) -> Path | None:
            from rlsql.cache import analysis_cache_file

            folder = analysis_cache_file(self.name, for_writing)
            return folder / f"{key}.code" if folder is not None else None

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            path = self._file(bucket.key, for_writing=False)
            if path is None:
                return
            try:
                data = path.read_bytes()
            except OSError:
                return
            with contextlib.suppress(Exception):  # a damaged file is a cache miss (Bucket.reset on bad data)
                bucket.bytecode_from_string(data)

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            path = self._file(bucket.key, for_writing=True)
            if path is None:
                return
            with contextlib.suppress(OSError, RlsqlError):
                path.parent.mkdir(parents=True, exist_ok=True)
                writes.write_bytes(path, bucket.bytecode_to_string())

    return _CodeCache


def jinja_env(root: Path) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        bytecode_cache=None if os.environ.get("RLSQL_NO_CACHE") else _code_cache_class()(root),
    )
    env.filters["lit"] = literal
    env.filters["lit_date"] = date_literal
    env.filters["file_lit"] = file_literal
    env.filters["ident"] = identifier
    # a type pasted into SQL (`CAST(NULL AS {{ col.type | sqltype }})`): only an allow-listed name passes
    env.filters["sqltype"] = sql_type
    # the prefix of every error() rlsql's SQL raises about the data (rlsql.duckdb_errors reads it back)
    env.globals["DATA_ERROR_MARK"] = DATA_ERROR_MARK
    env.globals["BAD_CELL_MARK"] = BAD_CELL_MARK  # ...and about a cell that is no whole number (rlsql.badcells)
    env.globals["BAD_CELL_FUNCTION"] = BAD_CELL_FUNCTION  # the function that records such a cell instead
    return env


def _normalise(sql: str) -> str:
    """SQL without comments or layout, so a fingerprint changes with logic only."""
    import sqlglot  # late: ~90 ms to import, and the analysis cache usually spares it

    try:
        return ";".join(e.sql(dialect="duckdb", comments=False) for e in sqlglot.parse(sql, read="duckdb") if e)
    except sqlglot.errors.SqlglotError:
        return " ".join(re.sub(r"--[^\n]*|\{#.*?#\}", " ", sql, flags=re.S).split())


def _references(sql: str, path: str) -> tuple[set[str], set[str]]:
    """(tables, functions) a SQL text refers to, CTE names left out."""
    import sqlglot  # late, as in _normalise
    from sqlglot import exp

    macro = _MACRO_BODY.match(sql)
    if macro:
        sql = macro.group(1)
    try:
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise CatalogError(f"{path}: sqlglot cannot parse it to find its dependencies: {exc}") from exc
    tables: set[str] = set()
    functions: set[str] = set()
    for tree in trees:
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if table.name and table.name not in ctes and not isinstance(table.this, exp.Func):
                tables.add(table.name)
        for func in tree.find_all(exp.Anonymous):
            functions.add(func.name.lower())
    return tables, functions


class Catalog:
    """Every SQL file, by name, with dependencies resolved and checked."""

    def __init__(self, files: Iterable[SqlFile], root: Path):
        self.root = root
        self._rendered = _RenderedCache(root)
        self._templates: dict[str, jinja2.Template] = {}
        self.files: dict[str, SqlFile] = {}
        for f in files:
            if f.name in self.files:
                raise CatalogError(f"{f.path}: name {f.name!r} is already used by {self.files[f.name].path}")
            self.files[f.name] = f
        self._analyse()
        self.order = self._topological(self.files)

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, root: Path | None = None) -> Catalog:
        root = root or sql_root()
        files = []
        for folder, kind in KINDS.items():
            for path in sorted((root / folder).glob("*.sql")):
                files.append(_parse_header(path.read_text(encoding="utf-8"), f"sql/{folder}/{path.name}", kind))
        return cls(files, root)

    @functools.cached_property
    def env(self) -> jinja2.Environment:
        """The Jinja environment, made on first use (a start whose renders all come from the rendered
        cache never imports jinja2)."""
        return jinja_env(self.root)

    @functools.cached_property
    def _templates_digest(self) -> str:
        """A digest of every template a file may import or include (`*.j2` under the SQL folder)."""
        digest = hashlib.sha256()
        for path in sorted(self.root.rglob("*.j2")):
            digest.update(str(path.relative_to(self.root)).encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    def render(self, f: SqlFile, **context: object) -> str:
        """`f`'s SQL; `config_columns` (run_table's config keys, per connection) defaults to none. From the
        rendered cache when it holds this file, context and templates."""
        context = {"config_columns": [], **context}
        key = self._rendered.key(f, context, self._templates_digest) if self._rendered.enabled else None
        if key is not None:
            text = self._rendered.get(key)
            if text is not None:
                return text
        template = self._template(f)
        text = template.render(param=lambda name: f.param(name).sql_ref(), **context).strip()
        if key is not None:
            self._rendered.put(key, text)
        return text

    def _template(self, f: SqlFile) -> jinja2.Template:
        """env.from_string(f.body), with the compiled code from the code cache when it has it; made once
        per catalogue and body (a source is rendered per connection: compiling it again cost ~20 % of a
        small query's CPU where the caches are off)."""
        made = self._templates.get(f.body)
        if made is None:
            made = self._templates[f.body] = self._compiled(f)
        return made

    def _compiled(self, f: SqlFile) -> jinja2.Template:
        codes = self.env.bytecode_cache
        if codes is None:
            return self.env.from_string(f.body)
        bucket = codes.get_bucket(self.env, f.path, None, f.body)  # keyed by the path, checked by the text
        if bucket.code is None:
            bucket.code = self.env.compile(f.body)
            codes.set_bucket(bucket)
        return self.env.template_class.from_code(self.env, bucket.code, self.env.make_globals(None))

    def _analyse(self) -> None:
        macro_names = {f.name for f in self.files.values() if f.kind == "macro"}
        cache = _AnalysisCache(self.root)
        for f in self.files.values():
            if f.kind == "source":
                # rendered per connection; sources read files and refer to nothing
                cached = cache.get(f.body)
                if cached is None:
                    cached = {"normal": _normalise(f.body)}
                    cache.put(f.body, cached)
                f.fingerprint = cached["normal"]
                continue
            f.rendered = self.render(f)
            f.per_runs = _PER_RUNS.search(f.body) is not None
            if f.kind == "macro":
                defined = _MACRO_NAME.findall(f.rendered)
                if defined != [f.name]:
                    raise CatalogError(f"{f.path}: a macro file must define exactly the macro {f.name!r}")
            cached = cache.get(f.rendered)
            if cached is None:
                tables, functions = _references(f.rendered, f.path)
                cached = {"tables": sorted(tables), "functions": sorted(functions), "normal": _normalise(f.rendered)}
                cache.put(f.rendered, cached)
            deps = set()
            for table in cached["tables"]:
                if table not in self.files:
                    raise CatalogError(f"{f.path}: refers to {table!r}, which no file of sql/ defines")
                deps.add(table)
            deps |= {fn for fn in cached["functions"] if fn in macro_names and fn != f.name}
            f.depends_on = sorted(deps)
            f.fingerprint = cached["normal"]  # replaced by the hash with parents below
        cache.save()
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


class _Uncacheable(Exception):
    """A render context holding a value the rendered cache cannot name exactly."""


def _canonical(value: object) -> object:
    """`value` as plain JSON that names it exactly (type included), for the rendered cache's key; raises
    _Uncacheable for anything else (a context holding one is rendered, never looked up)."""
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return ["float", repr(value)]
    if isinstance(value, Path):
        return ["path", str(value)]
    if type(value) in (dt.date, dt.datetime):
        return [type(value).__name__, value.isoformat()]
    if type(value) in (list, tuple):
        return [type(value).__name__, [_canonical(v) for v in value]]
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise _Uncacheable
        return ["dict", [[k, _canonical(v)] for k, v in value.items()]]  # in order: templates loop over it
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return ["dataclass", f"{cls.__module__}.{cls.__qualname__}",
                [[f.name, _canonical(getattr(value, f.name))] for f in dataclasses.fields(value)]]
    raise _Uncacheable


class _RenderedCache:
    """Rendered SQL text, kept between processes: Jinja's import and its renders were ~30 ms of a query's
    start-up. A render's text depends only on the file's text, its parameters, the templates it may
    import and its context (the run list, file paths, headers, types, which cache copies are fresh:
    everything the sources computed from the files as they are now), so an entry is keyed by a digest
    of all of them and is never stale; a context value it cannot name exactly (_canonical) is rendered
    every time. One file per entry in `sql-analysis-<key>-rendered/` beside the SQL analysis cache,
    written through rlsql/writes.py; beyond LIMIT entries the oldest half is deleted, and a text over
    MAX_CHARS is not kept (at most ~128 MB). Off with
    RLSQL_NO_CACHE; any failure only means rendering again.
    """

    LIMIT = 500
    #: a longer text (a fleet's source: its file lists) is not kept: its render is cheap beside its query
    MAX_CHARS = 256 * 1024
    _NAME = re.compile(r"^[0-9a-f]{64}\.sql$")

    def __init__(self, root: Path):
        key = hashlib.sha256(f"{root}".encode()).hexdigest()[:12]
        self.name = f"sql-analysis-{key}-rendered"
        self.enabled = not os.environ.get("RLSQL_NO_CACHE")

    def key(self, f: SqlFile, context: dict, templates: str) -> str | None:
        try:
            named = json.dumps(["rendered-v1", f.path, f.body, _canonical(list(f.params)), templates,
                                _canonical(context)], separators=(",", ":"))
        except _Uncacheable:
            return None
        return hashlib.sha256(named.encode()).hexdigest()

    def _folder(self, for_writing: bool) -> Path | None:
        from rlsql.cache import analysis_cache_file

        return analysis_cache_file(self.name, for_writing)

    def get(self, key: str) -> str | None:
        folder = self._folder(for_writing=False)
        if folder is None:
            return None
        try:
            return (folder / f"{key}.sql").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put(self, key: str, text: str) -> None:
        if len(text) > self.MAX_CHARS:
            return
        folder = self._folder(for_writing=True)
        if folder is None:
            return
        with contextlib.suppress(OSError, RlsqlError):
            folder.mkdir(parents=True, exist_ok=True)
            writes.write_text(folder / f"{key}.sql", text)
            self._prune(folder)

    def _prune(self, folder: Path) -> None:
        entries = [p for p in folder.iterdir() if self._NAME.match(p.name)]
        if len(entries) <= self.LIMIT:
            return
        entries.sort(key=lambda p: p.stat().st_mtime_ns)
        for path in entries[: len(entries) // 2]:
            with contextlib.suppress(OSError):
                path.unlink()


class _AnalysisCache:
    """sqlglot parsing costs ~100 ms per start; its results depend only on the SQL text, so keep them.

    Stored under the user's cache folder (never a run folder); any failure just means no cache.
    """

    def __init__(self, root: Path):
        from rlsql.cache import analysis_cache_file

        # entries are keyed by the SQL text itself; the file name only separates installations
        key = hashlib.sha256(f"{root}".encode()).hexdigest()[:12]
        self.name = f"sql-analysis-{key}.json"
        # beside the Parquet cache when RLSQL_CACHE_DIR is set, else in the user cache folder
        self.path = analysis_cache_file(self.name, for_writing=False)
        self.dirty = False
        self.enabled = not os.environ.get("RLSQL_NO_CACHE")
        self.used: set[str] = set()
        self.entries: dict[str, dict] = {}
        if self.enabled and self.path is not None:
            try:
                self.entries = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.entries = {}

    @staticmethod
    def _key(sql: str) -> str:
        return hashlib.sha256(sql.encode()).hexdigest()

    def get(self, sql: str) -> dict | None:
        self.used.add(self._key(sql))
        return self.entries.get(self._key(sql))

    def put(self, sql: str, value: dict) -> None:
        self.entries[self._key(sql)] = value
        self.dirty = True

    def save(self) -> None:
        if not self.dirty or not self.enabled:
            return
        # keep only what this SQL tree uses, so edits do not grow the file forever
        self.entries = {k: v for k, v in self.entries.items() if k in self.used}
        from rlsql.cache import analysis_cache_file

        self.path = analysis_cache_file(self.name, for_writing=True)
        if self.path is None:
            return
        # through the one write path (temporary name, rename, sweep of a killed writer's leftovers);
        # a cache that cannot be written only costs the next process the analysis again
        with contextlib.suppress(OSError, RlsqlError):
            writes.write_text(self.path, json.dumps(self.entries))


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    return Catalog.load()
