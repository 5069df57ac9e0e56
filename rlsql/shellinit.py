"""The init script for the DuckDB shell (and harlequin): every view and macro as plain SQL.

`duckdb -init script.sql` and `harlequin -i script.sql` then give an analyst the views rlsql uses,
each with its description attached by `COMMENT ON`. Paths in the script are absolute, so it works
from any folder; it reads the runs' CSVs in place, as rlsql does.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

import duckdb

from rlsql import __version__, cache
from rlsql.catalog import Catalog, load_catalog
from rlsql.connection import object_statements
from rlsql.errors import UsageError
from rlsql.runs import Run

INSTALL_HINT = "pip install 'rlsql[shell]' (or: pip install duckdb-cli)"


def script_statements(runs: Sequence[Run], catalog: Catalog | None = None) -> list[str]:
    """Every CREATE and COMMENT ON statement for `runs`, in dependency order, without a final ';'."""
    catalog = catalog or load_catalog()
    with cache.disabled():  # the shell's views read the runs' files, never a cache copy that may go
        return [statement for _, statement in object_statements(runs, catalog.order, catalog)]


def _terminated(statement: str) -> str:
    text = statement.rstrip()
    # a trailing `-- comment` on the last line would swallow a ';' written on the same line
    last_line = text.rsplit("\n", 1)[-1]
    return f"{text}\n;" if "--" in last_line else f"{text};"


def _one_line(text: str) -> str:
    """A folder name inside a `--` comment: a line break in it must not end the comment."""
    return "".join(ch if ch >= " " else "?" for ch in text)


def init_script(runs: Sequence[Run], catalog: Catalog | None = None) -> str:
    """The whole script: a header comment, then each statement ending with ';'."""
    catalog = catalog or load_catalog()
    params = sorted({p.describe().split(":", 1)[0] for f in catalog.order for p in f.params})
    header = [
        f"-- DuckDB init script written by rlsql {__version__} (DuckDB {duckdb.__version__}): every rlsql view",
        "-- and macro over the runs below, reading their files in place through absolute paths.",
        "-- Use it with:  duckdb -init THIS_FILE   or   harlequin -i THIS_FILE",
        "-- Runs:",
        *(f"--   {_one_line(run.name)}: {_one_line(str(run.path))}" for run in runs),
        "-- Query parameters are DuckDB variables; set one before querying, for example:",
        "--   SET VARIABLE span = 10;",
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
