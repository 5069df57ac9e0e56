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
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class OutputFormat(StrEnum):
    """How `query`, `sql`, `list`, `runs`, `check` and `cache` print rows: the one list of choices."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"
    JSONL = "jsonl"
    MARKDOWN = "markdown"

    @classmethod
    def parse(cls, text: str) -> OutputFormat:
        """The format a user typed: any case, `md` for markdown; ValueError names the choices."""
        wanted = text.strip().lower()
        wanted = FORMAT_ALIASES.get(wanted, wanted)
        for member in cls:
            if member.value == wanted:
                return member
        raise ValueError(f"unknown format {text!r}; choose one of {', '.join(FORMATS)} (or md)")

    @classmethod
    def for_output(cls, path: Path | None) -> OutputFormat:
        """The format an output file's extension asks for (`best.csv` -> csv); a table otherwise."""
        if path is None:
            return cls.TABLE
        return SUFFIX_FORMATS.get(path.suffix.lower(), cls.TABLE)


class ExportFormat(StrEnum):
    """`rlsql export --format`: files for BI tools (rlsql/outputs/export.py writes them)."""

    PARQUET = "parquet"
    CSV = "csv"
    JSON = "json"


class ReportFormat(StrEnum):
    """`rlsql report --format`: report.md with PNG figures, or one self-contained report.html."""

    MD = "md"
    HTML = "html"


class Partition(StrEnum):
    """`rlsql export --partition-by`: a hive tree NAME/run=RUN/data_0.parquet, or for an item with about one
    row per run one file NAME.parquet merged run by run (rlsql.outputs.exportmerge)."""

    RUN = "run"


#: names accepted besides the formats' own (lower case)
FORMAT_ALIASES = {"md": "markdown"}
FORMATS = tuple(member.value for member in OutputFormat)
#: `-o FILE` without `-f`: the extension picks the format
SUFFIX_FORMATS = {
    ".csv": OutputFormat.CSV,
    ".json": OutputFormat.JSON,
    ".jsonl": OutputFormat.JSONL,
    ".ndjson": OutputFormat.JSONL,
    ".md": OutputFormat.MARKDOWN,
    ".markdown": OutputFormat.MARKDOWN,
}
ELLIPSIS = "\u2026"
#: a column is never squeezed below this many characters to fit the terminal
MIN_COLUMN_WIDTH = 6


def display(value: Any) -> str:
    """A value as a person reads it in a table cell."""
    kind = type(value)  # the common cells first: a table written to a file may hold 10M rows
    if kind is str:
        return value
    if kind is int:
        return str(value)
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


#: the characters a terminal acts on rather than shows (C0 controls but the line feed, which a table turns into
#: a space, DEL and the C1 controls: an escape sequence can retitle the window, clear the screen, move the
#: cursor), shown in table, markdown and transcript text as Python's repr writes them (`\x1b`, `\t`, `\r`)
CONTROLS = [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)]
CONTROL_ESCAPES = {c: {9: "\\t", 13: "\\r"}.get(c, f"\\x{c:02x}") for c in CONTROLS}
#: the same set as an RE2 class (DuckDB's regexp functions)
CONTROL_CLASS = "[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f]"
_CONTROL_TABLE = str.maketrans(CONTROL_ESCAPES)


def shown(text: str) -> str:
    """`text` as a terminal must be given it: every control character (CONTROLS) written out, not acted on."""
    return text.translate(_CONTROL_TABLE)


def _cell(value: Any) -> str:
    """A table cell's text: display(), a line break as a space, control characters shown (`shown`)."""
    return display(value).replace("\n", " ").translate(_CONTROL_TABLE)


def jsonable(value: Any) -> Any:
    """A cell as `rlsql query -f json` writes it: NaN and inf as null, dates ISO 8601, decimals as floats."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    objects = [{c: jsonable(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    return json.dumps(objects, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return "".join(
        json.dumps({c: jsonable(v) for c, v in zip(columns, row, strict=True)}, ensure_ascii=False) + "\n"
        for row in rows
    )


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return json.dumps(jsonable(value))
    return jsonable(value)


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def markdown_cell(text: str) -> str:
    """Text that stays one cell of a markdown table and shows as written: `\\`, `|` and backticks escaped (a
    `\\|` in the text must not turn into an escaped backslash and a cell's end), `<` and `>` as entities (a run
    folder named `<b>x</b>` is not HTML), line breaks as spaces, other control characters shown (`shown`)."""
    # str.translate, not a loop over characters: a 10M-row markdown file has ~150M cells
    return text.replace("\r\n", " ").translate(_MARKDOWN_ESCAPES)


_MARKDOWN_ESCAPES = str.maketrans(
    {**CONTROL_ESCAPES, "\\": "\\\\", "|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "}
)


def fenced(text: str, info: str = "") -> str:
    """`text` as a markdown code block that no line of it can close or leave: fenced by a run of backticks
    longer than any the text holds (at least three), its control characters shown (`shown`: a lone CR would
    end a line)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{shown(text)}\n{fence}"


def code_span(text: str) -> str:
    """`text` as one markdown code span: delimited by a run of backticks longer than any it holds (padded
    with a space where it starts or ends with one), line breaks as spaces, control characters shown."""
    text = shown(text.replace("\r\n", " ").replace("\n", " ").replace("\r", " "))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def to_markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]], header: bool = True) -> str:
    """A markdown table; `header=False`: its rows only (a table written batch by batch)."""
    lines = []
    if header:
        numeric = [bool(rows) and all(is_number(r[i]) or r[i] is None for r in rows) for i in range(len(columns))]
        lines.append("| " + " | ".join(markdown_cell(c) for c in columns) + " |")
        lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines.extend("| " + " | ".join(markdown_cell(display(v)) for v in row) + " |" for row in rows)
    return "\n".join(lines) + "\n" if lines else ""


@dataclass(frozen=True)
class Layout:
    """How a table's rows are laid out: its column widths and which columns are numbers; `records` when it
    cannot fit the terminal even with every cell it may cut cut short (one field per line instead)."""

    widths: list[int]
    numeric: list[bool]
    #: the columns whose longer cells are cut to their width (on a terminal, all but the keys)
    cut: list[bool]
    records: bool = False


def layout(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None, keys: Sequence[str] = ()
) -> Layout:
    """The layout of `rows` (a table's first batch) on a terminal `width` wide (None: a file or a pipe,
    every cell whole). The columns in `keys` name a row (its run, its grain): never cut, or the rows could
    not be told apart. The widest other column gives way first, down to MIN_COLUMN_WIDTH; a table that
    still overflows prints as records, as psql's expanded mode does."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(shown(c)), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(is_number(r[i]) or r[i] is None for r in rows) for i in range(len(columns))]
    if width is None:
        return Layout(widths, numeric, [False] * len(columns))
    kept = {i for i, c in enumerate(columns) if c in keys}
    cut = [i not in kept for i in range(len(columns))]
    excess = sum(widths) + 2 * max(len(widths) - 1, 0) - width
    while excess > 0:
        cuttable = [i for i in range(len(widths)) if i not in kept and widths[i] > MIN_COLUMN_WIDTH]
        if not cuttable:
            return Layout(widths, numeric, cut, records=bool(rows))
        widest = max(cuttable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return Layout(widths, numeric, cut)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def to_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int | None = None,
    shape: Layout | None = None,
    header: bool = True,
    keys: Sequence[str] = (),
) -> str:
    """A plain aligned text table: numbers right-aligned, no wrapping, readable in any pager.

    With `width` (a terminal's), cells that would overflow it are cut with an ellipsis, but never those of
    `keys`, and a table that cannot fit prints as records (to_records); without it (a file, a pipe) every
    cell is printed whole. `shape` given (a table written batch by batch, rlsql/outputs/rows.py) lays out
    its rows as the first batch's; `header=False`: the rows only.
    """
    shape = shape or layout(columns, rows, width, keys)
    if shape.records:
        return to_records(columns, rows)
    cells = [[_cell(v) for v in row] for row in rows]

    def line(values: Sequence[str]) -> str:
        parts = [
            (_clip(v, w) if c else v).rjust(w) if n else (_clip(v, w) if c else v).ljust(w)
            for v, w, n, c in zip(values, shape.widths, shape.numeric, shape.cut, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line([shown(c) for c in columns]), "  ".join("-" * w for w in shape.widths)] if header else []
    out.extend(line(r) for r in cells)
    return "\n".join(out) + "\n" if out else ""


def to_records(columns: Sequence[str], rows: Sequence[Sequence[Any]], first: int = 1) -> str:
    """Rows one field per line under a `-[ RECORD n ]` line, as psql's expanded mode prints them: every
    value whole (`first`: the number of the first row, for a table written batch by batch)."""
    label = max((len(c) for c in columns), default=0)
    out = []
    for number, row in enumerate(rows, first):
        out.append(f"-[ RECORD {number} ]".ljust(label + 3, "-"))
        out.extend(
            f"{shown(c).ljust(label)} | {_cell(v)}".replace("\n", " ").rstrip()
            for c, v in zip(columns, row, strict=True)
        )
    return "\n".join(out) + "\n" if out else ""


#: the width a listing is wrapped to when stdout is no terminal and COLUMNS is not set
LISTING_WIDTH = 100


def to_entries(entries: Sequence[tuple[str, Sequence[str]]], width: int) -> str:
    """Entries a person reads in a terminal `width` columns wide (`rlsql list`): each its title line, then
    its texts wrapped under it, indented; nothing cut (a long name or word runs past, never lost)."""
    out = []
    width = max(width, 20)
    for title, texts in entries:
        out.extend(
            textwrap.wrap(shown(title), width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
        )
        for text in texts:
            out.extend(
                textwrap.wrap(
                    shown(text),
                    width,
                    initial_indent="    ",
                    subsequent_indent="    ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
    return "\n".join(out) + "\n" if out else ""


RENDERERS: dict[OutputFormat, Callable[[Sequence[str], Sequence[Sequence[Any]]], str]] = {
    OutputFormat.TABLE: to_table,
    OutputFormat.CSV: to_csv,
    OutputFormat.JSON: to_json,
    OutputFormat.JSONL: to_jsonl,
    OutputFormat.MARKDOWN: to_markdown,
}


def render(
    fmt: OutputFormat | str, columns: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """Rows in `fmt`; `width` (a terminal's) only ever shortens a table's cells."""
    fmt = fmt if isinstance(fmt, OutputFormat) else OutputFormat.parse(fmt)
    if fmt is OutputFormat.TABLE:
        return to_table(columns, rows, width)
    return RENDERERS[fmt](columns, rows)
