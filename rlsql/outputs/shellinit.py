"""The init script for the DuckDB shell (and harlequin): every view and macro as plain SQL.

`duckdb -init script.sql` and `harlequin -i script.sql` then give an analyst the views rlsql uses,
each with its description attached by `COMMENT ON`. Paths in the script are absolute, so it works
from any folder; it reads the runs' CSVs in place, as rlsql does.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from collections.abc import Sequence

from rlsql.catalog.catalog import Catalog, load_catalog
from rlsql.core.errors import RlsqlWarning, UsageError, one_line
from rlsql.core.version import __version__
from rlsql.duck.memorydb import DuckError, duckdb_version, memory_connection
from rlsql.duck.parsing import tokens
from rlsql.engine.statements import column_comment_statements, object_statements
from rlsql.runs.folders import Run

INSTALL_HINT = "pip install 'rlsql[shell]' (or: pip install duckdb-cli)"


def script_statements(runs: Sequence[Run], catalog: Catalog | None = None) -> list[str]:
    """Every CREATE and COMMENT ON statement for `runs`, in dependency order, without a final ';'.

    No statement holds a `;` (see `without_semicolons`), so a client that splits the script on
    every `;` (harlequin's DuckDB adapter) runs the same statements as the DuckDB shell.
    """
    catalog = catalog or load_catalog()
    # no copies handed in: the shell's views read the runs' files, never a cache copy that may go
    statements = [statement for _, statement in object_statements(runs, catalog.order, catalog)]
    return [without_semicolons(statement) for statement in [*statements, *_column_comments(statements, catalog)]]


def _column_comments(statements: Sequence[str], catalog: Catalog) -> list[str]:
    """COMMENT ON COLUMN for every view column: the views are created once in memory to learn their columns."""
    con = memory_connection()
    try:
        for statement in statements:
            con.execute(statement)
        return column_comment_statements(con, catalog.order)
    except DuckError as exc:
        warnings.warn(f"column descriptions left out of the init script: {one_line(exc)}", RlsqlWarning, stacklevel=3)
        return []
    finally:
        con.close()


SEMICOLON = ";"


def without_semicolons(statement: str) -> str:
    """`statement` with no `;` left, meaning the same to DuckDB.

    harlequin splits an init script on every `;`, also inside comments and string literals. Using
    DuckDB's own tokenizer: a `;` in a comment becomes `,`; a string literal holding one becomes
    `('a' || chr(59) || 'b')`, except in COMMENT ON, which takes a literal only (there the
    description's `;` becomes `,`). A `;` in a quoted identifier (a CSV column named so) cannot be
    written otherwise: it stays, with a warning.
    """
    if SEMICOLON not in statement:
        return statement
    found = tokens(statement)
    is_comment_on = statement.lstrip().upper().startswith("COMMENT ON")
    out: list[str] = []
    for index, (start, kind) in enumerate(found):
        end = found[index + 1][0] if index + 1 < len(found) else len(statement)
        piece = statement[start:end]
        token = piece.rstrip()
        gap = piece[len(token) :]
        if SEMICOLON in token:
            if kind == "comment":
                token = token.replace(SEMICOLON, ",")
            elif kind == "string_const" and token.startswith("'") and token.endswith("'"):
                if is_comment_on:
                    token = token.replace(SEMICOLON, ",")
                else:
                    token = "(" + token.replace(SEMICOLON, "' || chr(59) || '") + ")"
            else:
                warnings.warn(
                    f"the init script holds a ';' in {token[:60]!r}: harlequin will split the script "
                    "there (the DuckDB shell reads it as is)",
                    RlsqlWarning,
                    stacklevel=2,
                )
        out.append(statement[:start] if index == 0 else "")
        out.append(token + gap)
    return "".join(out)


def _terminated(statement: str) -> str:
    text = statement.rstrip()
    # a trailing `-- comment` on the last line would swallow a ';' written on the same line
    last_line = text.rsplit("\n", 1)[-1]
    return f"{text}\n;" if "--" in last_line else f"{text};"


def _one_line(text: str) -> str:
    """A folder name inside a `--` comment: a line break must not end the comment, nor a `;` split the script."""
    return "".join(ch if ch >= " " and ch != SEMICOLON else "?" for ch in text)


def init_script(runs: Sequence[Run], catalog: Catalog | None = None) -> str:
    """The whole script: a header comment, then each statement ending with ';'."""
    catalog = catalog or load_catalog()
    params = sorted({p.describe().split(":", 1)[0] for f in catalog.order for p in f.params})
    header = [
        f"-- DuckDB init script written by rlsql {__version__} (DuckDB {duckdb_version()}): every rlsql view",
        "-- and macro over the runs below, reading their files in place through absolute paths.",
        "-- Use it with:  duckdb -init THIS_FILE   or   harlequin -i THIS_FILE",
        "-- Runs:",
        *(f"--   {_one_line(run.name)}: {_one_line(str(run.path))}" for run in runs),
        "-- Query parameters are DuckDB variables. Set one before querying, for example:",
        "--   SET VARIABLE span = 10",
        "-- This script holds no semicolon except at the end of each statement (harlequin splits on them).",
    ]
    if params:
        header.append("-- Parameters (name type = default): " + ", ".join(params))
    header.append("-- `SELECT * FROM duckdb_views() WHERE NOT internal` lists the views with their descriptions.")
    body = [_terminated(s) for s in script_statements(runs, catalog)]
    return "\n".join(header) + "\n\n" + "\n\n".join(body) + "\n"


def duckdb_cli() -> str | None:
    """The DuckDB command-line shell: beside this Python (the duckdb-cli package), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "duckdb")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("duckdb")


def require_duckdb_cli() -> str:
    found = duckdb_cli()
    if found is None:
        raise UsageError(f"the DuckDB shell is not installed; install it with: {INSTALL_HINT}")
    return found
