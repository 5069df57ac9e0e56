"""`rlsql describe NAME`: a query's or view's columns with DuckDB's types and the descriptions in its SQL file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rlsql.catalog.catalog import load_catalog
from rlsql.engine.copies import Copies
from rlsql.engine.statements import column_types
from rlsql.runs.folders import Run, resolve_runs


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    description: str


@dataclass
class Description:
    name: str
    kind: str
    version: str
    fingerprint: str
    description: str
    path: str
    params: list[str] = field(default_factory=list)
    columns: list[ColumnInfo] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "version": self.version,
            "fingerprint": self.fingerprint,
            "description": self.description,
            "path": self.path,
            "params": self.params,
            "columns": [{"name": c.name, "type": c.type, "description": c.description} for c in self.columns],
        }


def describe(name: str, runs: Sequence[Run] | None = None, copies: Copies | None = None) -> Description:
    """What `rlsql describe` prints: header facts, every param (own and inherited), every column (bound over the
    runs' fresh `copies` where the command hands some in)."""
    from rlsql.engine.query import declared_params

    catalog = load_catalog()
    f = catalog.query(name)
    runs = list(runs) if runs is not None else resolve_runs(None)
    columns = [ColumnInfo(c, t, f.column_doc(c)) for c, t in column_types(name, runs, copies)]
    return Description(
        name=f.name,
        kind=f.kind,
        version=f.version,
        fingerprint=f.fingerprint,
        description=f.description,
        path=f.path,
        params=[p.describe() for p in declared_params(name)],
        columns=columns,
    )
