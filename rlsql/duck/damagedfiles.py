"""The DuckDB half of the damaged-file warnings: what a statement met, recorded as it ran and said after it.

Harbor's result.json files that are no trial or hold values of the wrong type come from the rows of the
loaded `harbor_trials_src` (rlsql/runs/harbor.py lists the files). Damaged trajectory files are recorded by
a Python function the trajectory sources call for each (rlsql/runs/trajectories.py lists them): no file is
read twice to find them.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence

import duckdb

from rlsql.runs import harbor, trajectories
from rlsql.runs.harbor import shown

#: how many result.json files a warning names before "and N more"
SHOWN_RESULTS = 3
#: damaged trajectory files named one warning each, per run; the rest in one more warning
SHOWN_TRAJECTORIES = trajectories.SHOWN_FILES


# -- Harbor's result.json files ----------------------------------------------------------------------


def _listed(items: Sequence[tuple[str, str]]) -> str:
    named = ", ".join(f"{shown(path)} ({why})" for path, why in items[:SHOWN_RESULTS])
    more = len(items) - SHOWN_RESULTS
    return named + (f", and {more} more" if more > 0 else "")


def _plural(n: int) -> str:
    return f"{n} result.json file{'s' if n != 1 else ''}"


def harbor_problems(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None, str | None]]:
    """(run, file, problem, bad values) for each result.json that is no trial or has values read as empty."""
    return con.execute(
        "SELECT run, source_file, problem, bad_values FROM harbor_trials_src "
        "WHERE problem IS NOT NULL OR bad_values IS NOT NULL ORDER BY run, row_no"
    ).fetchall()


def warn_harbor_problems(con: duckdb.DuckDBPyConnection) -> None:
    """At most two warnings per run: the result.json files skipped, and those with values of the wrong type."""
    skipped: dict[str, list[tuple[str, str]]] = {}
    wrong: dict[str, list[tuple[str, str]]] = {}
    for run, path, problem, bad in harbor_problems(con):
        if problem is not None:
            skipped.setdefault(run, []).append((path, problem))
        elif bad is not None:
            wrong.setdefault(run, []).append((path, bad))
    for run, items in skipped.items():
        warnings.warn(
            f"run {shown(run)!r}: skipped {_plural(len(items))} that "
            f"{'is not a trial result' if len(items) == 1 else 'are not trial results'}: {_listed(items)}",
            harbor.HarborFilesWarning,
            stacklevel=3,
        )
    for run, items in wrong.items():
        warnings.warn(
            f"run {shown(run)!r}: {_plural(len(items))} {'holds' if len(items) == 1 else 'hold'} values of the "
            f"wrong type, read as empty: {_listed(items)}",
            harbor.HarborFilesWarning,
            stacklevel=3,
        )


# -- trajectory files ------------------------------------------------------------------------------

#: connection -> the damaged files its statements met (path -> (run, problem)); weak: a connection closed and
#: collected takes its entry with it, and no later connection can be given another's files
_RECORDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_damaged(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """Give `con` DAMAGED_FUNCTION(run, path, problem): it remembers the file and gives the problem back (the
    sources' `problem` column), so that warn_damaged can name each damaged file the statement met once.
    Returns what it remembers (path -> (run, problem)): a source read from a cached copy adds its files there."""
    seen: dict[str, tuple[str, str]] = {}
    _RECORDERS[con] = seen

    def damaged(run: str, path: str, problem: str) -> str:
        seen.setdefault(path, (run, problem))
        return problem

    con.create_function(
        trajectories.DAMAGED_FUNCTION, damaged, ["VARCHAR", "VARCHAR", "VARCHAR"], "VARCHAR", side_effects=True
    )
    return seen


def warn_damaged(con: duckdb.DuckDBPyConnection) -> None:
    """One warning per damaged trajectory file the last statements on `con` met (SHOWN_TRAJECTORIES per run, then
    one naming how many more)."""
    seen = _RECORDERS.get(con)
    if not seen:
        return
    by_run: dict[str, list[tuple[str, str]]] = {}
    for path, (run, problem) in sorted(seen.items()):
        by_run.setdefault(run, []).append((path, problem))
    seen.clear()
    for run, items in by_run.items():
        for path, problem in items[:SHOWN_TRAJECTORIES]:
            said = problem if problem.endswith(trajectories.READ_AS_EMPTY) else f"{problem}; {trajectories.SKIPPED}"
            warnings.warn(
                f"{shown(path)}: {said} (run {shown(run)!r})", trajectories.TrajectoryFilesWarning, stacklevel=3
            )
        if len(items) > SHOWN_TRAJECTORIES:
            warnings.warn(
                f"run {shown(run)!r}: {len(items) - SHOWN_TRAJECTORIES} more damaged trajectory files "
                "skipped (`rlsql check` names them all)",
                trajectories.TrajectoryFilesWarning,
                stacklevel=3,
            )


def forget(con: duckdb.DuckDBPyConnection) -> None:
    _RECORDERS.pop(con, None)


def recorded(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """The damaged files `con`'s statements met so far: path -> (run, problem)."""
    return dict(_RECORDERS.get(con, {}))
