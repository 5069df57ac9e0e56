"""The findings query's rows for a person: one line each, criticals first (`rlsql findings`, the report).

The rows come ordered by run, severity, step (sql/queries/findings.sql); a person reads the worst first, so
the lines are ordered by severity, then as the query gives them."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

NO_FINDINGS = "no findings"


class Severity(StrEnum):
    """A finding's severity, worst first (docs/findings.md)."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


_RANK = {s.value: i for i, s in enumerate(Severity)}


def worst_first(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows ordered by severity, critical first; the query's order within one severity (sorted is stable)."""
    return sorted(rows, key=lambda r: _RANK[r["severity"]])


def at_or_above(rows: Sequence[dict[str, Any]], level: Severity) -> list[dict[str, Any]]:
    return [r for r in rows if _RANK[r["severity"]] <= _RANK[level.value]]


def finding_line(row: dict[str, Any]) -> str:
    """`warning   calendar  idle_engines: job_554408: ... [rlsql query vllm_activity --run calendar ...]`"""
    return f"{row['severity']:<8}  {row['run']}  {row['kind']}: {row['message']}  [{row['evidence']}]"


def findings_text(rows: Sequence[dict[str, Any]]) -> str:
    """Every finding on its own line, worst first, or `no findings`."""
    if not rows:
        return NO_FINDINGS + "\n"
    return "".join(finding_line(r) + "\n" for r in worst_first(rows))
