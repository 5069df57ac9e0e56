"""Typed query parameters declared in SQL headers (`-- param: span INTEGER = 5, min 1: EMA span`).

Values reach DuckDB as bound parameters of `SET VARIABLE`, never as SQL text; views read them
with `getvariable()` so the same views work in the DuckDB shell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlsql.core.errors import CatalogError, UsageError
from rlsql.core.sqltext import literal, sql_type

_PARAM = re.compile(
    r"^(?P<name>[a-z_][a-z0-9_]*)\s+(?P<type>INTEGER|DOUBLE|VARCHAR|BOOLEAN)\s*=\s*(?P<default>[^,:]+?)"
    r"(?:\s*,\s*min\s+(?P<min>[-0-9.]+))?(?:\s*,\s*max\s+(?P<max>[-0-9.]+))?\s*:\s*(?P<doc>.+)$"
)
_TRUE = {"true", "1", "yes", "on"}
#: DuckDB's INTEGER is 32-bit: a larger value would fail inside the query (exit 1) instead of here
INTEGER_MAX = 2**31 - 1
INTEGER_MIN = -(2**31)
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any
    minimum: float | None
    doc: str
    maximum: float | None = None

    @classmethod
    def parse(cls, text: str, where: str) -> Param:
        match = _PARAM.match(text.strip())
        if not match:
            raise CatalogError(
                f"{where}: cannot read param line {text!r} (want 'name TYPE = default[, min N][, max N]: doc')"
            )
        ptype = match["type"]
        raw_default = match["default"].strip()
        param = cls(
            match["name"],
            ptype,
            None,
            float(match["min"]) if match["min"] else None,
            match["doc"].strip(),
            float(match["max"]) if match["max"] else None,
        )
        default = None if raw_default.upper() == "NULL" else param.convert(raw_default)
        return cls(param.name, ptype, default, param.minimum, param.doc, param.maximum)

    def convert(self, raw: str) -> Any:
        """Turn the user's text into a value of the declared type, or raise UsageError."""
        text = raw.strip()
        try:
            if self.type == "INTEGER":
                value: Any = int(text)
            elif self.type == "DOUBLE":
                value = float(text)
            elif self.type == "BOOLEAN":
                if text.lower() not in _TRUE | _FALSE:
                    raise ValueError(text)
                value = text.lower() in _TRUE
            else:
                value = text
        except ValueError:
            raise UsageError(f"parameter {self.name}: {raw!r} is not a valid {self.type}") from None
        if self.type == "INTEGER" and not INTEGER_MIN <= value <= INTEGER_MAX:
            low = INTEGER_MIN if self.minimum is None else max(INTEGER_MIN, int(self.minimum))
            raise UsageError(f"parameter {self.name}: {value} is out of range ({low} to {INTEGER_MAX})")
        if self.type == "DOUBLE" and value != value:
            raise UsageError(f"parameter {self.name}: {raw!r} is not a number")
        if self.minimum is not None and isinstance(value, (int, float)) and value < self.minimum:
            raise UsageError(f"parameter {self.name}: {value} is below the minimum {self.minimum:g}")
        if self.maximum is not None and isinstance(value, (int, float)) and value > self.maximum:
            raise UsageError(f"parameter {self.name}: {value} is above the maximum {self.maximum:g}")
        return value

    def sql_default(self) -> str:
        """The default as a typed SQL literal, for the view text (shell users who set nothing get it)."""
        if self.default is None:
            return f"CAST(NULL AS {sql_type(self.type)})"
        return literal(self.default)

    def sql_ref(self) -> str:
        """SQL that reads the parameter inside a view: the session variable, else the default."""
        return f"CAST(coalesce(getvariable({literal(self.name)}), {self.sql_default()}) AS {sql_type(self.type)})"

    def describe(self) -> str:
        default = "NULL" if self.default is None else self.default
        return f"{self.name} {self.type} = {default}: {self.doc}"
