"""Numbers as a person reads them in the report: percentages, durations, thousands separators.

Only the report uses these; the named queries keep their raw figures (rates 0-1, seconds, ...).
Rounding is Python's `format` (half to even on the exact binary value), as everywhere in rlsql.
"""

from __future__ import annotations

import math
from typing import Any

from rlsql.outputs.formats import display


def percent(rate: float | None, scale: float = 100.0) -> str:
    """A rate as a percentage with one decimal: 0.9101 -> '91.0%'. `scale=1` for a value already 0-100."""
    if rate is None:
        return ""
    if math.isnan(rate) or math.isinf(rate):
        return str(rate)
    return f"{rate * scale:.1f}%"


def duration(seconds: float | None) -> str:
    """Seconds as h/m/s: '14 h 20 m' from an hour on, '2 m 20 s' from a minute, '45.3 s', '0.52 s'.

    The shown unit sets the precision: a minute (from an hour), a second (from a minute), 0.1 s
    (from 10 s), 0.01 s below.
    """
    if seconds is None:
        return ""
    if math.isnan(seconds) or math.isinf(seconds):
        return str(seconds)
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s >= 3600:
        minutes = round(s / 60)
        return f"{sign}{minutes // 60:,} h {minutes % 60} m"
    if s >= 60:
        whole = round(s)
        if whole >= 3600:  # 3599.6 s rounds up into the next unit
            return f"{sign}1 h 0 m"
        return f"{sign}{whole // 60} m {whole % 60} s"
    if s >= 10:
        text = f"{s:.1f}"
        return f"{sign}{'1 m 0 s' if text == '60.0' else text + ' s'}"
    return f"{sign}{s:.2f} s"


def count(value: int | None) -> str:
    """An integer with thousands separators: 45711 -> '45,711'."""
    if value is None:
        return ""
    return f"{value:,}"


def number(value: Any) -> str:
    """Any other figure: from 1,000 on one decimal with separators, else rlsql's 4-decimal display."""
    if isinstance(value, bool) or value is None:
        return display(value)
    if isinstance(value, int):
        return count(value)
    if isinstance(value, float) and math.isfinite(value) and abs(value) >= 1000:
        return f"{value:,.1f}"
    return display(value)
