"""Where the versioned SQL files are: `rlsql/sql` inside an installed package, `sql/` at the top of a checkout.

One place for the catalogue (rlsql/catalog.py) and the key of a kept answer (rlsql/answers.py), which
must stamp the very files the catalogue reads. Found from this file's location rather than through
importlib.resources, whose import (~3 ms) a query answered from a kept answer does without;
tests/test_catalog.py checks that both name the same folder.
"""

from __future__ import annotations

from pathlib import Path


def sql_root() -> Path:
    package = Path(__file__).resolve().parent
    installed = package / "sql"  # pyproject.toml maps the package rlsql.sql to the checkout's sql/
    return installed if installed.is_dir() else package.parent / "sql"
