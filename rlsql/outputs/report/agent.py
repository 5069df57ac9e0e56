"""The report's section "What the agent did", for runs with agents' trajectories (docs/trajectories.md).

Its figures are the named queries tool_usage, token_usage and looping_trials (only their first rows are
fetched); a few of the worst trials (the longest loops, then the failures with the most turns) are shown as
their transcripts (rlsql/outputs/transcript.py), cut to a readable length. Bounded: no trial is read into Python but
those few, and no query's rows beyond a table's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlsql.duck.memorydb import Connection
from rlsql.runs.folders import Run

QUERIES = ("tool_usage", "token_usage", "looping_trials")
#: the views the section reads besides (the failures with the most turns)
VIEWS = ("trial_rows",)
#: rows of each table the section prints (the most repeated calls: the first rows of looping_trials)
TABLE_ROWS = 15
#: transcripts shown, and how much of each
WORST_TRIALS = 3
STEPS_SHOWN = 12
TEXT_SHOWN = 240


def has_trajectories(runs: Sequence[Run]) -> bool:
    return any(run.artifact("trajectories") is not None for run in runs)


def gather(con: Connection, runs: Sequence[Run], fetch: Any) -> dict[str, Any]:
    """The section's rows over `runs` on `con` (which holds the QUERIES' views): `fetch(name, sql)` is the
    report's fetcher. Returns {query: rows, "worst": [(run, trial, why, markdown)]}."""
    from rlsql.duck import damagedfiles
    from rlsql.outputs import transcript
    from rlsql.runs import trajectories

    found: dict[str, Any] = {}
    for name in QUERIES:
        # the first rows only: looping_trials lists every repeated call of every trial
        _, found[name] = fetch(name, f"SELECT * FROM {name} LIMIT {TABLE_ROWS}")
    damagedfiles.warn_damaged(con)
    with_trajectory = {
        (run.name, f.trial)
        for run in runs
        if (tj := trajectories.trace_jobs_of(run))
        for f in trajectories.list_trajectories(tj).files
        if f.segment == 0
    }
    chosen: list[tuple[str, str, str]] = []
    for row in found["looping_trials"]:
        if len(chosen) < 2 and (row["run"], row["trial_name"]) not in {(r, t) for r, t, _ in chosen}:
            chosen.append(
                (
                    row["run"],
                    row["trial_name"],
                    f"{row['function_name']} repeated {row['repeats']} times (turns {row['first_turn']}-"
                    f"{row['last_turn']})",
                )
            )
    _, failures = fetch(
        "trial_rows",
        "SELECT run, trial_name, n_episodes FROM trial_rows WHERE outcome = 'Failure' "
        "AND n_episodes IS NOT NULL ORDER BY n_episodes DESC, run, trial_name LIMIT 50",
    )
    for row in failures:
        if len(chosen) >= WORST_TRIALS:
            break
        key = (row["run"], row["trial_name"])
        if key in with_trajectory and key not in {(r, t) for r, t, _ in chosen}:
            chosen.append((*key, f"a failure with {row['n_episodes']} turns"))
    by_name = {run.name: run for run in runs}
    worst = []
    for run, trial, why in chosen:
        shown = transcript.transcript([by_name[run]], trial, facts=False)
        worst.append((run, trial, why, short_markdown(shown)))
    found["worst"] = worst
    return found


def short_markdown(t: Any) -> str:
    """A transcript cut to a readable length: the first STEPS_SHOWN steps (copied context folded), each text cut
    to TEXT_SHOWN characters."""
    from rlsql.outputs import transcript

    lines: list[str] = []
    shown = 0
    total = sum(1 for s in t.steps if not s["copied"])
    for segment, steps, folded in transcript.segments(t, full=False):
        lines.append(
            f"-- segment {segment}: {transcript.segment_name(segment)}"
            + (f" ({folded} steps of copied context folded)" if folded else "")
        )
        for s in steps:
            if shown == STEPS_SHOWN:
                break
            shown += 1
            lines.append(f"[{transcript.step_title(s)}]")
            if s.get("message"):
                lines.append(transcript.cut(s["message"], False, TEXT_SHOWN))
            for c in s.get("calls") or []:
                lines.append(f"-> {c['function_name']} {transcript.cut(c['arguments'], False, TEXT_SHOWN)}")
            for o in s.get("observations") or []:
                lines.append("<- " + (transcript.cut(o["content"] or "", False, TEXT_SHOWN) or ""))
    if total > shown:
        lines.append(f"... {total - shown} more steps: `rlsql trial {t.trial} -r RUN` shows them all")
    return "\n".join(lines)
