"""The Jinja environment the SQL files are rendered in: only structure (identifiers, lists, paths, typed
literals) reaches SQL through its filters; a user's value is a bound parameter, never pasted in."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rlsql.core.errors import BAD_CELL_FUNCTION, BAD_CELL_MARK, DATA_ERROR_MARK
from rlsql.core.sqltext import date_literal, file_literal, identifier, literal, sql_type
from rlsql.runs.logfiles import TERMINAL_CODES

if TYPE_CHECKING:
    import jinja2


def jinja_env(root: Path) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["lit"] = literal
    env.filters["lit_date"] = date_literal
    env.filters["file_lit"] = file_literal
    env.filters["ident"] = identifier
    # a type pasted into SQL (`CAST(NULL AS {{ col.type | sqltype }})`): only an allow-listed name passes
    env.filters["sqltype"] = sql_type
    # the prefix of every error() rlsql's SQL raises about the data (rlsql.engine.failures reads it back)
    env.globals["DATA_ERROR_MARK"] = DATA_ERROR_MARK
    env.globals["BAD_CELL_MARK"] = BAD_CELL_MARK  # ...and about a cell that is no whole number (rlsql.duck.badcells)
    env.globals["BAD_CELL_FUNCTION"] = BAD_CELL_FUNCTION  # the function that records such a cell instead
    env.globals["TERMINAL_CODES"] = TERMINAL_CODES  # taken out of raw log lines (rlsql/runs/logfiles.py)
    return env
