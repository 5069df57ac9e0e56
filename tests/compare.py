"""Compare query rows with independently computed expectations, value by value."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

IGNORED_COLUMNS = {"reason"}  # free text, checked by hand in test_tiny_run.py


def result_columns(cursor: Any) -> list[tuple[str, str]]:
    """The (name, DuckDB type) pairs of the result a DuckDB cursor holds (what DESCRIBE names and types)."""
    return [(d[0], str(d[1])) for d in cursor.description]


def same_value(got: Any, want: Any) -> bool:
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, float) or isinstance(got, float):
        if isinstance(got, float) and math.isnan(got):
            return isinstance(want, float) and math.isnan(want)
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)
    return got == want


def assert_rows_match(got: list[dict], want: list[dict], label: str) -> None:
    assert len(got) == len(want), f"{label}: {len(got)} rows, expected {len(want)}\n got={got[:5]}\nwant={want[:5]}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert list(g) == list(w), f"{label} row {i}: columns {list(g)} != {list(w)}"
        for column in w:
            if column in IGNORED_COLUMNS:
                continue
            assert same_value(g[column], w[column]), (
                f"{label} row {i} column {column}: got {g[column]!r}, expected {w[column]!r}\n got={g}\nwant={w}"
            )


def read_turns_export(path: Path, fmt: str) -> list[dict]:
    """An exported turns_by_exception file read back as rows: JSON as it is, CSV's text cells typed
    (`mean*`/`median*` floats, `trials` an int) so they compare with the oracle's values."""
    if fmt == "json":
        return json.loads(path.read_text())
    with path.open(newline="") as fh:
        return [
            {
                k: (float(v) if k.startswith(("mean", "median")) else int(v) if k == "trials" else v)
                for k, v in row.items()
            }
            for row in csv.DictReader(fh)
        ]
