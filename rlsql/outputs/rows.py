"""Rows to stdout or `-o`, in every format, as DuckDB produces them: memory stays bounded at any size.

A query's rows never become a Python list here. The machine formats (csv, json, jsonl) are written
by DuckDB's own COPY; so are the people formats (table, markdown) into a file or a pipe, their lines
rendered in SQL; on a terminal, and for types only Python renders, they are rendered batch by batch from the
cursor. Where they go:

- stdout that is no terminal (a pipe, a file it was redirected to), for what COPY writes: as DuckDB produces
  the rows, through a pipe of rlsql's own that a thread copies into stdout (`_Stream`), so `| head -3` has its
  lines at once; when the reader goes away the statement is interrupted and the command ends quietly (exit 0).
  A failed read is answered again (a damaged cached copy, a CSV DuckDB cannot parse, a bad cell: see
  rlsql/engine/answer.py) only while no byte has gone out; after, the command fails in one line saying so
  (docs/semantics.md, "Rows as they come");
- `-o FILE` (a regular file or a new name): staged beside it and renamed onto it (rlsql/runs/writes.py),
  so an interrupted or failed command leaves the old file whole;
- anything else (a terminal, `-o -`, `-o` onto a FIFO or a character device such as /dev/null): staged in
  rlsql's own temporary folder and copied into it as a shell's `>` writes, never renamed over it.

In a table a column is as wide as the widest cell of the first batch (BATCH rows); a later, longer cell
widens its own line only. On a terminal, a table holds at most TERMINAL_ROWS rows and says how many
more there were; its cells are cut to the terminal's width except those that name a row (`grain`), and
a table that cannot fit so prints one field per line (rlsql/outputs/formats.py, layout).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rlsql.core.errors import DataError, ReaderGone
from rlsql.core.sqltext import identifier, literal
from rlsql.duck.fileio import copy_to
from rlsql.duck.memorydb import Connection, DuckError, interrupt, scalar, write_as_produced
from rlsql.duck.parsing import statement_types
from rlsql.engine import answer
from rlsql.outputs.formats import (
    CONTROL_CLASS,
    CONTROL_ESCAPES,
    Layout,
    OutputFormat,
    layout,
    render,
    to_markdown,
    to_records,
    to_table,
)
from rlsql.runs import writes

#: rows fetched from DuckDB at a time for the people formats
BATCH = 10_000
#: the most rows a table printed on a terminal holds (the rest: `-f csv`, `-o FILE`, `--limit`)
TERMINAL_ROWS = 1_000
_COPY_OPTIONS = {
    OutputFormat.CSV: "FORMAT csv, HEADER true",
    OutputFormat.JSON: "FORMAT json, ARRAY true",
    OutputFormat.JSONL: "FORMAT json",
}
_FLOATS = frozenset({"DOUBLE", "FLOAT", "REAL"})
#: the view a statement's rows are read through when the statement is no SELECT
_ROWS = "__rlsql_rows"


@dataclass(frozen=True)
class Written:
    """What went out: the rows written, and when a limit cut them, how many the answer had."""

    rows: int
    total: int | None = None
    #: the limit that cut them came from the terminal (TERMINAL_ROWS), not --limit
    by_terminal: bool = False
    #: a table too wide for the terminal, printed one field per line
    records: bool = False


class Output:
    """Where a command's rows go (stdout or `-o`) and in which format; `write_*` stages them whole,
    `commit` puts them in place (see the module docstring)."""

    def __init__(
        self, fmt: OutputFormat | None, target: Path | None, limit: int | None = None, grain: Sequence[str] = ()
    ):
        self.fmt = fmt or OutputFormat.for_output(None if target == writes.STDOUT else target)
        self.kind = "stdout" if target is None else writes.output_kind(target)
        if target is not None and self.kind == "file":
            target = writes.through_link(target)
        self.target = target
        #: the columns one row of the answer is per (a named query's grain), which a terminal never cuts
        self.grain = tuple(grain)
        self.terminal = self.kind == "stdout" and _isatty(sys.stdout)
        #: the --limit asked for; a table on a terminal is held to TERMINAL_ROWS besides
        self.limit = limit
        self.shown = limit
        if self.terminal and self.fmt in (OutputFormat.TABLE, OutputFormat.MARKDOWN):
            self.shown = TERMINAL_ROWS if limit is None else min(limit, TERMINAL_ROWS)
        #: the terminal's width, which a table's cells are cut to (None: every cell whole)
        self.width = shutil.get_terminal_size().columns if self.terminal and self.fmt is OutputFormat.TABLE else None
        #: stdout's descriptor when COPY's rows go straight to it (_Stream), else None
        self.stream_to = _fileno(sys.stdout) if self.kind == "stdout" and not self.terminal else None
        #: bytes of rows that went to stdout so far (an answer again after some did would print them twice)
        self.sent = 0
        #: the rows went to stdout as they came: nothing staged to copy
        self.streamed = False
        if self.kind == "file":
            assert target is not None
            self.staged = writes.stage(target)  # refused here, before any file is read, where a write would be
            #: what a failure to write the staged file is said about (the file asked for, not its temporary)
            self.named: Path = target
        else:
            self.staged = writes.private_temp("rows")
            self.named = self.staged.parent
            with writes.failures_named(self.named):
                self.staged.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    # -- staging ----------------------------------------------------------------------------------
    def write_query(self, con: Connection, sql: str) -> Written | None:
        """Stage the rows of statement `sql` on `con` (None: a statement without rows, such as CREATE, which
        has run). Raises what DuckDB raises (the caller may answer again)."""
        (kind,) = statement_types(con, sql)
        if kind != "SELECT":
            relation = con.sql(sql)  # DESCRIBE, SHOW, PRAGMA: rows DuckDB holds once run
            if relation is None:
                return None
            con.register(_ROWS, relation)
            sql = f"SELECT * FROM {_ROWS}"
        sql, shape = _distinct_names(con, sql)
        if self.fmt in _COPY_OPTIONS:
            return self._copy(con, sql, shape)
        if not self.terminal:  # a file or a pipe: every row, every cell whole
            written = self._copy_lines(con, sql, shape)
            if written is not None:
                return written
        return self._render(con, sql)

    def write_rows(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Written:
        """Stage rows a command holds already (a listing, a check's issues): few, by their nature."""
        shown = rows if self.shown is None else rows[: self.shown]
        shape = layout(columns, shown, self.width, self.keys(columns)) if self.fmt is OutputFormat.TABLE else None
        with writes.failures_named(self.named), self.staged.open("w", encoding="utf-8", newline="") as fh:
            if shape is not None:
                fh.write(to_table(columns, shown, self.width, shape))
            else:
                fh.write(render(self.fmt, columns, shown))
        return self._written(len(shown), len(rows), shape is not None and shape.records)

    def write_text(self, text: str) -> None:
        """Stage a text (a script, a document) as it is."""
        with writes.failures_named(self.named), self.staged.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    def _copy(self, con: Connection, sql: str, shape: Shape) -> Written:
        select = ", ".join(
            _json_cell(c, t) if self.fmt is not OutputFormat.CSV else identifier(c)
            for c, t in zip(shape.columns, shape.types, strict=True)
        )
        return self._copy_select(con, sql, select, _COPY_OPTIONS[self.fmt])

    def _copy_lines(self, con: Connection, sql: str, bound: Shape) -> Written | None:
        """A markdown or table file (or pipe) whose lines DuckDB renders and COPY writes: no row passes
        through Python (~13 µs a row there). None when a column's type is one only formats.display renders
        (lists, decimals, intervals, ...): the caller renders the rows in Python.

        The layout (widths, right-aligned columns) is the first batch's, as in `_render`: those rows are
        read first, on their own (a query that streams stops after them; one that sorts or groups is run
        to that point twice).
        """
        columns = list(bound.columns)
        found = [_display_sql(identifier(c), t) for c, t in zip(columns, bound.types, strict=True)]
        cells = [c for c in found if c is not None]
        if not columns or len(cells) < len(found):
            return None
        first = con.execute(f"SELECT * FROM ({sql}) AS rows_out LIMIT {BATCH}").fetchall()
        shape = layout(columns, first, None, self.keys(columns))
        if self.fmt is OutputFormat.MARKDOWN:
            head = _markdown_head(columns, shape)
            parts = [
                _markdown_sql(c) if t == "VARCHAR" else f"coalesce({c}, '')"
                for c, t in zip(cells, bound.types, strict=True)
            ]
            line = "concat('| ', " + ", ' | ', ".join(parts) + ", ' |')"
        else:
            head = to_table(columns, [], None, shape).rstrip("\n")
            is_text = [t == "VARCHAR" for t in bound.types]
            texts = [
                f"coalesce({_controls_sql(_spaced(c))}, '')" if text else f"coalesce({c}, '')"
                for c, text in zip(cells, is_text, strict=True)
            ]
            # a cell is blank when its text is whitespace alone (rtrim, which decodes its set of characters for
            # every row, only for the texts that are not empty); a cell that is no text only when it is NULL (a
            # test of the value, not of its text: DuckDB inlines each v in every place the line names it)
            blanks = [
                f"(v{i} = '' OR rtrim(v{i}, {literal(WHITESPACE)}) = '')" if text else f"r{i} IS NULL"
                for i, text in enumerate(is_text)
            ]
            values = "".join(
                f", {identifier(c)} AS r{i}"
                for i, (c, text) in enumerate(zip(columns, is_text, strict=True))
                if not text
            )
            sql = "SELECT " + ", ".join(f"{v} AS v{i}" for i, v in enumerate(texts)) + f"{values} FROM ({sql}) AS cells"
            line = _table_line_sql(blanks, is_text, shape.widths, shape.numeric)
        # one VARCHAR column, written as it is (no quotes, no escapes), its name the header lines
        return self._copy_select(
            con,
            sql,
            f"{line} AS {identifier(head)}",
            f"FORMAT csv, HEADER true, QUOTE '', ESCAPE '', DELIMITER {literal(chr(1))}",
        )

    def _copy_select(self, con: Connection, sql: str, select: str, options: str) -> Written:
        inner = f"SELECT {select} FROM ({sql}) AS rows_out"
        if self.shown is not None:
            inner += f" LIMIT {int(self.shown)}"
        if self.stream_to is not None:
            written = self._copy_streamed(con, inner, options, self.stream_to)
        else:
            try:
                written = copy_to(con, inner, str(self.staged), f"{options}, USE_TMP_FILE false")
            except DuckError as exc:  # a full or read-only disk: the one line naming the output, exit 4
                failure = writes.disk_failure(self.named, self.staged, str(exc))
                if failure is None:
                    raise
                raise failure from exc
        rows = int(written or 0)
        total = None
        if self.shown is not None and rows == self.shown:
            total = int(scalar(con, f"SELECT count(*) FROM ({sql}) AS rows_out"))
        return self._written(rows, total)

    def _render(self, con: Connection, sql: str) -> Written:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        rows = 0
        left = self.shown
        with writes.failures_named(self.named), self.staged.open("w", encoding="utf-8", newline="") as fh:
            batch = cursor.fetchmany(BATCH if left is None else min(BATCH, left))
            shape = layout(columns, batch, self.width, self.keys(columns))
            if self.fmt is OutputFormat.MARKDOWN:
                fh.write(_markdown_head(columns, shape) + "\n")
            elif not shape.records:
                fh.write(to_table(columns, [], self.width, shape))
            while batch:
                started = time.perf_counter()
                if self.fmt is OutputFormat.MARKDOWN:
                    fh.write(to_markdown(columns, batch, header=False))
                elif shape.records:
                    fh.write(to_records(columns, batch, rows + 1))
                else:
                    fh.write(to_table(columns, batch, self.width, shape, header=False))
                answer.formatted(time.perf_counter() - started)
                rows += len(batch)
                if left is not None:
                    left -= len(batch)
                    if left <= 0:
                        break
                batch = cursor.fetchmany(BATCH if left is None else min(BATCH, left))
        total = None
        if self.shown is not None and rows == self.shown:
            total = int(scalar(con, f"SELECT count(*) FROM ({sql}) AS rows_out"))
        return self._written(rows, total, shape.records)

    def _copy_streamed(self, con: Connection, inner: str, options: str, fd: int) -> int:
        """COPY `inner` into stdout (descriptor `fd`) as DuckDB produces the rows; what COPY returns."""
        if self.sent:
            raise DataError(_SENT.format(sent=self.sent, why="an answer again was needed"))
        sys.stdout.flush()
        # without DuckDB's asynchronous writer, which hands COPY's bytes on in blocks of ~8 MB (1M trials: the first
        # lines came with the first 9 MB of CSV), they go out as DuckDB writes them (bench/RESULTS.md, issue 38)
        write_as_produced(con)
        stream = _Stream(con, fd)
        try:
            written = copy_to(con, inner, stream.path, f"{options}, USE_TMP_FILE false")
        except BaseException as exc:
            stream.close()
            self.sent += stream.sent
            if stream.failure is not None:
                raise _failed(stream.failure) from None
            if self.sent and not isinstance(exc, KeyboardInterrupt):
                raise DataError(_SENT.format(sent=self.sent, why=_reason(exc))) from None
            raise
        stream.close()
        self.sent += stream.sent
        self.streamed = True
        if stream.failure is not None:
            raise _failed(stream.failure) from None
        return written

    def keys(self, columns: Sequence[str]) -> list[str]:
        """The columns that name a row, never cut on a terminal: the grain given, else `run` and the first."""
        if self.grain:
            return [c for c in columns if c in self.grain]
        return [c for i, c in enumerate(columns) if i == 0 or c == "run"]

    def _written(self, rows: int, total: int | None, records: bool = False) -> Written:
        if total is None or total <= rows:
            return Written(rows, records=records)
        return Written(rows, total, by_terminal=self.limit is None or (self.shown or 0) < self.limit, records=records)

    # -- in place -----------------------------------------------------------------------------------
    def commit(self) -> None:
        """Put the staged output in place: renamed onto `-o FILE`, or copied into stdout, a FIFO or a device."""
        if self.kind == "file":
            assert self.target is not None
            writes.commit(self.staged, self.target)
            return
        if self.streamed:
            return
        try:
            if self.kind == "stdout":
                sys.stdout.flush()
                with self.staged.open("rb") as src:
                    try:
                        _copy_into(src, _binary(sys.stdout))
                    except BrokenPipeError as exc:
                        raise ReaderGone() from exc
            else:
                assert self.target is not None
                writes.pour(self.staged, self.target)
        finally:
            self.discard()

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.staged.unlink()


#: the one line of a query that failed after some of its rows went to stdout (never printed twice)
_SENT = (
    "the answer stopped after its first {sent:,} bytes had gone to stdout ({why}); it is not printed again: "
    "-o FILE writes it whole (answered again from the files where it must be)"
)


def _reason(exc: BaseException) -> str:
    """What stopped a streamed answer, in a few words (a bad cell's own message is said by its retry, not here)."""
    from rlsql.core.errors import BAD_CELL_MARK, one_line

    text = one_line(exc)
    return "a whole-number cell that is not one was found" if BAD_CELL_MARK in text else text


class _Stream:
    """A pipe DuckDB's COPY writes into (`path`) and a thread that copies what comes out of it into descriptor
    `fd` (stdout) as it comes, counting the bytes (`sent`). A write that fails (the reader went away: `| head`;
    a full disk) is kept in `failure` and interrupts the statement; the pipe is drained to its end either way,
    so that DuckDB never waits on it."""

    def __init__(self, con: Connection, fd: int):
        self.sent = 0
        self.failure: OSError | None = None
        self._read, self._write = os.pipe()
        self.path = f"/dev/fd/{self._write}"
        self._thread = threading.Thread(target=self._copy, args=(con, fd), daemon=True)
        self._thread.start()

    def _copy(self, con: Connection, fd: int) -> None:
        try:
            while chunk := os.read(self._read, 1 << 16):
                if self.failure is not None:
                    continue
                try:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                    self.sent += len(chunk)
                except OSError as exc:
                    self.failure = exc
                    interrupt(con)
        finally:
            os.close(self._read)

    def close(self) -> None:
        """After the statement (DuckDB has closed its end): the copy finished."""
        os.close(self._write)
        self._thread.join()


def _failed(failure: OSError) -> BaseException:
    """What a failed write into stdout raises: ReaderGone for a reader that went away (exit 0), else the error
    (a full disk: one line naming stdout)."""
    return ReaderGone() if isinstance(failure, BrokenPipeError) else failure


def _fileno(stream: Any) -> int | None:
    """`stream`'s file descriptor, None for one without (a test's capture)."""
    try:
        return int(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return None


@dataclass(frozen=True)
class Shape:
    """A statement's columns and their DuckDB types (as SQL writes them), bound and never run."""

    columns: list[str]
    types: list[str]


def _distinct_names(con: Connection, sql: str) -> tuple[str, Shape]:
    """`sql` with its columns named apart where two share a name (`SELECT 1 AS a, 2 AS a`): the outputs select
    their columns by name, and a shared name would read the first column twice. The later ones become `a_1`,
    `a_2`, ... (as DuckDB names them apart in a subquery; never a name another column has), renamed by position.
    Returns the statement and its shape, from one DESCRIBE: DuckDB binds the statement and runs none of it (it
    runs at once, to the end, a statement that writes, as one counting bad cells does: rlsql/duck/badcells.py)."""
    described = con.execute(f"DESCRIBE {sql}").fetchall()
    columns, types = [row[0] for row in described], [row[1] for row in described]
    if len(set(columns)) == len(columns):
        return sql, Shape(columns, types)
    taken = set(columns)
    named: list[str] = []
    for column in columns:
        name, n = column, 0
        while name in named or (n and name in taken):  # never another column's own name
            n += 1
            name = f"{column}_{n}"
        named.append(name)
    renamed = f"SELECT * FROM ({sql}) AS rows_named({', '.join(identifier(n) for n in named)})"
    return renamed, Shape(named, types)


def _json_cell(column: str, type_name: str) -> str:
    """The JSON formats' contract, where DuckDB's own JSON differs: NaN and infinities are null, and a
    timestamp is ISO 8601 as Python writes it (`2026-06-01T09:00:00`, microseconds only when not zero)."""
    name = identifier(column)
    if type_name in _FLOATS:
        return f"CASE WHEN isfinite({name}) THEN {name} END AS {name}"
    if type_name == "TIMESTAMP":
        return (
            f"CASE WHEN microsecond({name}) % 1000000 = 0 THEN strftime({name}, '%Y-%m-%dT%H:%M:%S') "
            f"ELSE strftime({name}, '%Y-%m-%dT%H:%M:%S.%f') END AS {name}"
        )
    return name


def _markdown_head(columns: Sequence[str], shape: Layout) -> str:
    """A markdown table's two header lines, its columns aligned as the first batch's `shape` says."""
    names = to_markdown(columns, []).partition("\n")[0]
    return names + "\n|" + "|".join("---:" if n else "---" for n in shape.numeric) + "|"


_INTEGERS = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)
#: what str.rstrip() strips (str.isspace): a table's line ends as `_render`'s does
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: the characters formats.markdown_cell changes
_MARKDOWN_SPECIAL = "[\\\\|`<>\n\r]|" + CONTROL_CLASS


def _display_sql(name: str, type_name: str) -> str | None:
    """SQL giving formats.display's text of a cell of this type (NULL for NULL), or None for a type only
    Python renders. tests/test_people_formats.py checks it against display() byte for byte."""
    if type_name == "VARCHAR":
        return name
    if type_name in _INTEGERS or type_name in ("BOOLEAN", "DATE"):
        return f"CAST({name} AS VARCHAR)"
    if type_name == "TIMESTAMP":  # datetime.isoformat(sep=" "): microseconds only when not zero
        return (
            f"CASE WHEN microsecond({name}) % 1000000 = 0 THEN strftime({name}, '%Y-%m-%d %H:%M:%S') "
            f"ELSE strftime({name}, '%Y-%m-%d %H:%M:%S.%f') END"
        )
    if type_name not in _FLOATS:
        return None
    x = f"CAST({name} AS DOUBLE)"
    # format(x, ".4f").rstrip("0").rstrip("."): printf's %.4f is Python's below 1e15 (both round the exact
    # binary value); above, a double's fraction has at most 3 decimals and its integer part is exact as BIGNUM
    fixed = (
        f"CASE WHEN abs({x}) < 1e15 THEN printf('%.4f', {x}) ELSE CAST(CAST(trunc({x}) AS BIGNUM) AS VARCHAR) "
        f"|| substr(printf('%.4f', abs({x} - trunc({x}))), 2) END"
    )
    return (
        f"CASE WHEN isnan({x}) THEN 'nan' WHEN isinf({x}) THEN CASE WHEN {x} > 0 THEN 'inf' ELSE '-inf' END "
        f"WHEN {x} = 0 THEN '0' WHEN abs({x}) < 0.001 THEN printf('%.4g', {x}) "
        f"ELSE rtrim(rtrim({fixed}, '0'), '.') END"
    )


def _replace_chars(text: str, escapes: dict[int, str]) -> str:
    """`text` (SQL) with each character (by code point) replaced by its escape: one replace each, in order."""
    for code, escaped in escapes.items():
        text = f"replace({text}, chr({code}), {literal(escaped)})"
    return text


def _spaced(text: str) -> str:
    """`text` (SQL) with its line feeds as spaces, as a table shows them."""
    return f"replace({text}, chr(10), ' ')"


def _controls_sql(text: str) -> str:
    """formats.shown in SQL (`text` a VARCHAR expression): the control characters written out, only in the
    texts that hold one."""
    return (
        f"CASE WHEN regexp_matches({text}, {literal(CONTROL_CLASS)}) "
        f"THEN {_replace_chars(text, CONTROL_ESCAPES)} ELSE {text} END"
    )


def _markdown_sql(cell: str) -> str:
    """formats.markdown_cell in SQL: one replace per character it escapes, the backslash first (the others'
    escapes hold one), only in the cells that hold one."""
    text = f"replace({cell}, chr(13) || chr(10), ' ')"
    escapes = {
        ord("\\"): "\\\\",
        **CONTROL_ESCAPES,
        10: " ",
        13: " ",
        ord("|"): "\\|",
        ord("`"): "\\`",
        ord("<"): "&lt;",
        ord(">"): "&gt;",
    }
    text = _replace_chars(text, escapes)
    return f"CASE WHEN regexp_matches({cell}, {literal(_MARKDOWN_SPECIAL)}) THEN {text} ELSE coalesce({cell}, '') END"


def _table_line_sql(blanks: list[str], texts: list[bool], widths: list[int], right: list[bool]) -> str:
    """formats.to_table's line over columns v0, v1, ... (display texts, '' for NULL): each padded as str.rjust
    or str.ljust does (a longer text whole), joined by two spaces, and as str.rstrip() leaves it.

    The line ends at its last cell that is not blank (`blanks`: the SQL that tells, per column; `texts`: the
    columns whose text may end in whitespace), and only that cell is stripped: rtrim decodes a whole line from
    its start, and over every line it cost more than the rest. The cells before it are one printf, whose %-Ns
    and %Ns pad by code points as ljust and rjust do and never cut a longer text (one call a line, not a
    repeat and a length per cell: 1M trials to a table file 7.3 s -> 5.7 s with the blank tests above)."""
    space = literal(WHITESPACE)
    specs = [f"%{w}s" if r else f"%-{w}s" for w, r in zip(widths, right, strict=True)]
    cases = []
    for last in reversed(range(len(specs))):
        before = "".join(spec + "  " for spec in specs[:last])
        if texts[last]:  # its own trailing whitespace goes with its padding
            cell = f"printf({literal(specs[last])}, v{last})" if right[last] else f"v{last}"
            tail = f"rtrim({cell}, {space})"
            line = f"printf({literal(before)}, {', '.join(f'v{i}' for i in range(last))}) || {tail}" if last else tail
        else:  # no whitespace of its own: right-aligned, padded; left-aligned, as it is
            spec = specs[last] if right[last] else "%s"
            line = f"printf({literal(before + spec)}, {', '.join(f'v{i}' for i in range(last + 1))})"
        cases.append(f"WHEN NOT {blanks[last]} THEN {line}")
    return f"CASE {' '.join(cases)} ELSE '' END"


def _copy_into(src: IO[bytes], dst: Any) -> None:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
    dst.flush()


def _binary(stream: Any) -> Any:
    """The byte stream under a text stream (stdout), or one that encodes into it (a test's capture)."""
    buffer = getattr(stream, "buffer", None)
    return buffer if buffer is not None else _Encoding(stream)


class _Encoding:
    """Bytes written into a text stream, decoded as they come (a character may span two chunks)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def write(self, data: bytes) -> int:
        self.stream.write(self.decoder.decode(data))
        return len(data)

    def flush(self) -> None:
        self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
