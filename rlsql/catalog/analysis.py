"""The SQL analysis sqlglot does at build time (`python -m rlsql.outputs.docs` writes sql/manifest.json):
each file's references to other files and its normalised text, whose hash is its fingerprint.

Nothing here runs on the query path: a query reads the manifest (rlsql/catalog/manifest.py).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from rlsql.core.errors import CatalogError

# sqlglot does not parse `CREATE MACRO m(a, b := 5)`: analyse the body after AS [TABLE] instead
_MACRO_BODY = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+\w+\s*\([^)]*\)\s+AS\s+(?:TABLE\s+)?(.*)$", re.IGNORECASE | re.DOTALL
)


def normalise(sql: str) -> str:
    """SQL without comments or layout, so a fingerprint changes with logic only."""
    try:
        return ";".join(e.sql(dialect="duckdb", comments=False) for e in sqlglot.parse(sql, read="duckdb") if e)
    except sqlglot.errors.SqlglotError:
        return " ".join(re.sub(r"--[^\n]*|\{#.*?#\}", " ", sql, flags=re.S).split())


def references(sql: str, path: str) -> tuple[set[str], set[str]]:
    """(tables, functions) a SQL text refers to, CTE names left out."""
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
