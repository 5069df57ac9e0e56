"""Render rows for people (table, markdown) and for programs (csv, json, jsonl).

Machine formats keep full precision; people formats round like Python's `format` (half to even on
the exact binary value), never half away from zero as SQL's round() does.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

FORMATS = ("table", "csv", "json", "jsonl", "markdown")


def display(value: Any) -> str:
    """A value as a person reads it in a table cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value != 0 and abs(value) < 0.001:
            return format(value, ".4g")
        text = format(value, ".4f").rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (list, tuple)):
        return ", ".join(display(v) for v in value)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    objects = [{c: _jsonable(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    return json.dumps(objects, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return "".join(
        json.dumps({c: _jsonable(v) for c, v in zip(columns, row, strict=True)}, ensure_ascii=False) + "\n"
        for row in rows
    )


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return json.dumps(_jsonable(value))
    return _jsonable(value)


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def to_markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    numeric = [bool(rows) and all(_is_number(r[i]) or r[i] is None for r in rows) for i in range(len(columns))]
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines.extend("| " + " | ".join(cell(display(v)) for v in row) + " |" for row in rows)
    return "\n".join(lines) + "\n"


def to_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned text table: numbers right-aligned, no wrapping, readable in any pager."""
    cells = [[display(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(_is_number(r[i]) or r[i] is None for r in rows) for i in range(len(columns))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line(columns), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out) + "\n"


RENDERERS: dict[str, Callable[[Sequence[str], Sequence[Sequence[Any]]], str]] = {
    "table": to_table,
    "csv": to_csv,
    "json": to_json,
    "jsonl": to_jsonl,
    "markdown": to_markdown,
}


def render(fmt: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return RENDERERS[fmt](columns, rows)
