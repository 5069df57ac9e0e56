"""Which paths DuckDB's file readers can be handed as exactly that file.

DuckDB's readers (read_csv, read_parquet, read_text, read_blob) expand `*`, `?` and `[...]` in every
path they are given; rlsql escapes those characters (sqltext.glob_escaped), so the path still goes
through DuckDB's glob, matching only itself. Two things that glob cannot do (DuckDB 2.0 on Linux):

- name a file whose path holds a backslash as well as a glob character (the glob leaves out every
  name holding a backslash);
- list a folder that holds a name starting with a backslash (it takes the name for an absolute
  path and fails the whole query: "cannot join incompatible paths"). Any path with a glob
  character in a segment below such a folder cannot be read.

A file that cannot be named is skipped with the reason given here, never read as another file.
"""

from __future__ import annotations

import os
from pathlib import Path

from rlsql.core.sqltext import glob_cannot_name

_GLOB_SET = frozenset("[]*?")


def has_glob(name: str) -> bool:
    """Whether DuckDB globs a path segment as rlsql escapes it (`]` becomes `[]]`, a class too)."""
    return not _GLOB_SET.isdisjoint(name)


def unlistable_parent(path: str) -> str | None:
    """The folder DuckDB's glob would list for `path` and fail on (a name there starts with a
    backslash), or None."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        if not has_glob(parts[i]):
            continue
        parent = "/".join(parts[:i]) or "/"
        try:
            with os.scandir(parent) as entries:
                if any(e.name.startswith("\\") for e in entries):
                    return parent
        except OSError:
            continue
    return None


def why_unnameable(path: str | Path) -> str | None:
    """Why DuckDB cannot be given `path` exactly, or None when it can."""
    text = str(path)
    if glob_cannot_name(text):
        return "its path holds a backslash and one of [ ] * ?, which DuckDB's reader cannot name exactly"
    parent = unlistable_parent(text)
    if parent is not None:
        return f"DuckDB cannot look for it: its glob of {parent} fails on a name there starting with a backslash"
    return None
