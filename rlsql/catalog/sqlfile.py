"""One file of `sql/`: its header (`-- key: value` lines) and the DDL that creates it.

Each file opens with `-- key: value` header lines (name, version, description, param, grain,
artifact, columns, other_columns, optional, column). A value may go on over the lines that follow
as `--   more text` (two or more spaces after `--`): the pieces are joined with one space. Views
and named queries document each output column with `-- column: NAME: one line` (`-- column: *:`
covers the columns a view passes through from a file, such as the trainer metrics).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rlsql.catalog.params import Param
from rlsql.core.errors import CatalogError
from rlsql.core.sqltext import identifier, literal, sql_type

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
    "name",
    "version",
    "description",
    "param",
    "grain",
    "artifact",
    "columns",
    "other_columns",
    "optional",
    "column",
}
_MACRO_IS_TABLE = re.compile(r"\)\s+AS\s+TABLE\b", re.IGNORECASE)


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
    #: hash of the normalised SQL and of every parent's fingerprint (a comment edit keeps it; sql/manifest.json)
    fingerprint: str = ""
    #: the SQL with parameters and structure filled in (`rendered`), once rendered; sources render per connection
    rendered_sql: str | None = None
    #: renders this file's SQL on first use (Catalog.render): a command renders only the files it creates,
    #: where compiling all ~60 templates cost every process ~65 ms
    renderer: Callable[[SqlFile], str] | None = field(default=None, repr=False, compare=False)
    #: column -> its one-line description, from the header's `-- column: NAME: text` lines
    column_docs: dict[str, str] = field(default_factory=dict)
    #: a view or query whose columns depend on the runs (it reads `config_columns`): rendered per
    #: connection by rlsql.engine.sources.SourceContext.object_sql; `rendered` is its form with no such column
    per_runs: bool = False
    #: sha256 of the file's text (what sql/manifest.json records its analysis for)
    digest: str = ""

    @property
    def rendered(self) -> str:
        if self.rendered_sql is None:
            self.rendered_sql = self.renderer(self) if self.renderer else ""
        return self.rendered_sql

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
        """column -> description for the columns given that have their own `-- column:` line, and under `*`
        the one description of the others (the trainer metrics or config keys a view passes through), when
        there are any: export writes this into every Parquet file's metadata, and one line per metric column
        would repeat the same text a hundred times in each run's partition."""
        names = list(columns)
        own = {column: self.column_docs[column] for column in names if self.column_docs.get(column)}
        if len(own) < len(names) and self.column_docs.get(OTHER_COLUMNS):
            own[OTHER_COLUMNS] = self.column_docs[OTHER_COLUMNS]
        return own

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


def parse_header(text: str, path: str, kind: str) -> SqlFile:
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
    """A declared type, checked against the allow-list at load time (rlsql.core.sqltext.SQL_TYPES)."""
    try:
        return sql_type(text)
    except ValueError as exc:
        raise CatalogError(f"{path}: {what}: {exc}") from None
