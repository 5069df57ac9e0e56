"""`rlsql trial NAME`: one trial's transcript, as a person reads it (terminal, markdown) or a tool does (JSON).

The trial is found by a look at `trace_jobs/NAME/` in each run (no run's trial folders are listed). Its row
comes from the trials view over the run's trials CSV, or over that trial's result.json alone; its steps from
the trajectory sources rendered over that trial's files only (sql/sources/trajectory_steps_src.sql for the
figures, trajectory_texts_src.sql for the words): no other trial's file is opened, so a trial of a run of
45,000 costs what one of 3,000 does. Long texts are cut, saying how many characters were left out, unless `full`.
The exception's traceback is the trial's own result.json's (Harbor's `exception_info.exception_traceback`), read
alone; a call the trial's agent already made (same function, same canonical arguments) is marked as a repeat.
On a terminal the transcript is drawn with rich (which typer brings) to the terminal's width.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsql.core.errors import DataError, UsageError
from rlsql.runs.folders import Run

#: characters of a message, reasoning or observation shown before it is cut (without --full)
CUT = 600
#: the trials view's columns the transcript's header shows, in order
TRIAL_FIELDS = (
    "task_name",
    "outcome",
    "reward",
    "exception_type",
    "exception_message",
    "n_episodes",
    "n_input_tokens",
    "n_output_tokens",
    "trial_duration",
    "environment_setup_duration",
    "agent_setup_duration",
    "agent_execution_duration",
    "agent_duration_sec",
    "verifier_duration",
)


@dataclass
class Transcript:
    run: str
    trial: str
    #: the trials view's row (None: the trial has no row there, e.g. a trial in flight)
    facts: dict[str, Any] | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    #: damaged files of the trial: (path, problem)
    damaged: list[tuple[str, str]] = field(default_factory=list)
    #: why the trial has no steps at all: its folder has no agent/ (or no agent/trajectory.json)
    missing: str | None = None
    #: the traceback of the exception that ended the trial (its result.json's), None without one
    traceback: str | None = None


def _folder_without_trajectory(runs: Sequence[Run], name: str) -> tuple[Run, str] | None:
    """A run whose trace_jobs/ holds trial folder `name` (asked once the listing found no trajectory for it), and
    what the folder lacks."""
    from rlsql.runs.trajectories import AGENT_DIR, FIRST_SEGMENT

    if not name or "/" in name or name in (".", ".."):
        return None
    for run in runs:
        artifact = run.artifact("harbor") or run.artifact("trajectories")
        folder = (artifact.path if artifact is not None else run.path / "trace_jobs") / name
        if folder.is_dir():
            agent = folder / AGENT_DIR
            lacks = f"no {AGENT_DIR}/ folder" if not agent.is_dir() else f"no {AGENT_DIR}/{FIRST_SEGMENT}"
            return run, f"{folder}: {lacks}, so no trajectory to show"
    return None


def find_trial(runs: Sequence[Run], name: str) -> Run:
    """The run holding trial `name` with a trajectory, found by a look at `trace_jobs/NAME/agent/` in each run
    (no other trial folder listed); a did-you-mean (difflib) over every run's trials when none holds it. A
    trial folder without a trajectory is TrialWithoutTrajectory (its trials row is shown instead)."""
    from rlsql.runs.trajectories import list_trajectories, trace_jobs_of

    folders = [(run, path) for run in runs if (path := trace_jobs_of(run)) is not None]
    found = [run for run, path in folders if list_trajectories(path, name).files]
    if len(found) > 1:
        raise UsageError(
            f"trial {name!r} is in runs {', '.join(r.name for r in found)}: choose one with --run "
            "(in rlsql mcp, the trial tool's `run` argument)"
        )
    if found:
        return found[0]
    if (bare := _folder_without_trajectory(runs, name)) is not None:
        raise TrialWithoutTrajectory(*bare)
    names = {f.trial for _, path in folders for f in list_trajectories(path).files}
    if not names:
        raise DataError(
            f"no agent trajectories in {', '.join(repr(r.name) for r in runs)} "
            "(looked for trace_jobs/*/agent/trajectory.json)"
        )
    import difflib

    close = difflib.get_close_matches(name, sorted(names), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `rlsql query trajectory_steps` lists them"
    raise UsageError(f"no trial {name!r} with a trajectory in {', '.join(r.name for r in runs)}{hint}")


class TrialWithoutTrajectory(Exception):
    """The trial folder exists but holds no trajectory: (run, what it lacks)."""


def transcript(runs: Sequence[Run], name: str, facts: bool = True) -> Transcript:
    """Trial `name`'s row (unless not `facts`) and every step of its trajectory, in order (segment, step_id); for
    a trial folder without a trajectory, its row and why there are no steps."""
    from rlsql.catalog.catalog import load_catalog
    from rlsql.core.errors import one_line
    from rlsql.duck import damagedfiles
    from rlsql.duck.memorydb import DuckError, memory_connection
    from rlsql.engine.failures import data_error
    from rlsql.runs import trajectories

    try:
        run = find_trial(runs, name)
    except TrialWithoutTrajectory as bare:
        found, missing = bare.args
        return Transcript(
            found.name,
            name,
            _trials_row(found, name) if facts else None,
            missing=missing,
            traceback=exception_traceback(found, name),
        )
    catalog = load_catalog()
    con = memory_connection()
    damagedfiles.record_damaged(con)
    context = trajectories.render_context([run], record=True, trial=name)
    rows: dict[str, list[dict]] = {}
    for source in ("trajectory_steps_src", "trajectory_texts_src"):
        sql = catalog.render(catalog.files[source], runs=[], bad_cells=None, **context)
        try:
            cursor = con.execute(f"SELECT * FROM ({sql}) ORDER BY segment, step_id, step_index")
        except DuckError as exc:
            raise data_error(exc) or DataError(f"{name}: cannot read its trajectory: {one_line(exc)}") from exc
        columns = [d[0] for d in cursor.description]
        rows[source] = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
    damaged = sorted((path, problem) for path, (_, problem) in damagedfiles.recorded(con).items())
    damagedfiles.forget(con)
    words = {(r["segment"], r["step_index"]): r for r in rows["trajectory_texts_src"] if r["problem"] is None}
    steps = []
    for r in rows["trajectory_steps_src"]:
        if r["problem"] is None:
            w = words.get((r["segment"], r["step_index"]), {})
            steps.append(
                {
                    **r,
                    "message": w.get("message"),
                    "reasoning": w.get("reasoning"),
                    "calls": json.loads(w["calls"]) if w.get("calls") else [],
                    "observations": json.loads(w["observations"]) if w.get("observations") else [],
                }
            )
    mark_repeats(steps)
    return Transcript(
        run.name,
        name,
        _trials_row(run, name) if facts else None,
        steps,
        damaged,
        traceback=exception_traceback(run, name),
    )


def exception_traceback(run: Run, name: str) -> str | None:
    """The traceback of the exception that ended trial `name` of `run`: its result.json's
    `exception_info.exception_traceback` (None when the trial has none, or no readable result.json: the trials
    view warns about a damaged one)."""
    artifact = run.artifact("harbor") or run.artifact("trajectories")
    if artifact is None or not name or "/" in name or name in (".", ".."):
        return None
    try:
        result = json.loads((artifact.path / name / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    info = result.get("exception_info") if isinstance(result, dict) else None
    found = info.get("exception_traceback") if isinstance(info, dict) else None
    return found if isinstance(found, str) and found.strip() else None


def canonical(arguments: str | None) -> str | None:
    """A call's arguments as the canonical JSON text tool_calls and looping_trials compare (keys sorted at every
    depth); the text as written when it is not JSON."""
    if arguments is None:
        return None
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def mark_repeats(steps: list[dict[str, Any]]) -> None:
    """Give each call of an agent step (copied context left out, as looping_trials does) `first`: the (segment,
    step_id) of the trial's first call with the same function and canonical arguments when this one is a
    repeat of it (else None), and `times`: how many times the trial's agent made that call."""
    first: dict[tuple, tuple[int, int]] = {}
    times: dict[tuple, int] = {}
    keyed = []
    for s in steps:
        for c in s.get("calls") or []:
            c["first"], c["times"] = None, 1
            if s["copied"]:
                continue
            key = (c["function_name"], canonical(c["arguments"]))
            keyed.append((c, key))
            times[key] = times.get(key, 0) + 1
            if key in first:
                c["first"] = first[key]
            else:
                first[key] = (s["segment"], s["step_id"])
    for c, key in keyed:
        c["times"] = times[key]


def repeat_note(call: dict[str, Any], segment: int) -> str:
    """`same call as step 2, x12` for a repeated call (the segment named when the first was in another); "" for
    a call the trial makes once or for its first time."""
    if not call.get("first"):
        return ""
    where, step_id = call["first"]
    step = f"step {step_id}" if where == segment else f"step {step_id} of segment {where}"
    return f"same call as {step}, x{call['times']}"


def _trials_row(run: Run, name: str) -> dict[str, Any] | None:
    """Trial `name`'s row of the trials view (None: the run has no such row), read from the trials CSV or from
    that trial's result.json alone."""
    from rlsql.engine.statements import open_connection

    if not (run.artifact("trials") or run.artifact("harbor")):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the trials view's own warnings belong to the trial queries
        trials = open_connection([run], ["trials"], trial=name)  # that trial's result.json alone
        cursor = trials.execute("SELECT * FROM trials WHERE trial_name = ? ORDER BY row_no LIMIT 1", [name])
        columns = [d[0] for d in cursor.description]
        found = cursor.fetchone()
    return dict(zip(columns, found, strict=True)) if found else None


# -- shaping ------------------------------------------------------------------------------------------------


def cut(text: str | None, full: bool, limit: int = CUT) -> str:
    """`text` ("" for none), or its first `limit` characters and how many were left out."""
    if text is None:
        return ""
    if full or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def as_dict(t: Transcript, full: bool) -> dict[str, Any]:
    """The transcript as JSON-ready data: texts cut unless `full`."""
    steps = []
    for s in t.steps:
        steps.append(
            {
                "segment": s["segment"],
                "step_id": s["step_id"],
                "turn": s["turn"],
                "source": s["source"],
                "ts": _plain(s["ts"]),
                "timestamp": s["timestamp"],
                "model_name": s["model_name"],
                "copied": s["copied"],
                "prompt_tokens": s["prompt_tokens"],
                "completion_tokens": s["completion_tokens"],
                "cached_tokens": s["cached_tokens"],
                "cost_usd": s["cost_usd"],
                "message": cut(s.get("message"), full),
                "reasoning": cut(s.get("reasoning"), full),
                "tool_calls": [
                    {
                        "tool_call_id": c["tool_call_id"],
                        "function_name": c["function_name"],
                        "arguments": cut(c["arguments"], full),
                        "repeat_of": _repeat_of(c),
                        "times": c.get("times", 1),
                    }
                    for c in s.get("calls") or []
                ],
                "observations": [
                    {"source_call_id": o["source_call_id"], "content": cut(o["content"], full)}
                    for o in s.get("observations") or []
                ],
            }
        )
    facts = {k: _plain(v) for k, v in (t.facts or {}).items() if k in TRIAL_FIELDS}
    return {
        "run": t.run,
        "trial_name": t.trial,
        "trial": facts if t.facts else None,
        "exception_traceback": cut(t.traceback, full) if t.traceback else None,
        "steps": steps,
        "damaged_files": [{"file": p, "problem": why} for p, why in t.damaged],
        "no_trajectory": t.missing,
    }


def _repeat_of(call: dict[str, Any]) -> dict[str, int] | None:
    """The first call this one repeats, as {segment, step_id} (None: not a repeat)."""
    return {"segment": call["first"][0], "step_id": call["first"][1]} if call.get("first") else None


def _or_none(value: Any) -> str:
    """A trials cell as a person reads it: an empty cell is `none`, not Python's `None`."""
    return "none" if value is None else str(value)


def _header(t: Transcript) -> list[str]:
    if t.facts is None:
        return ["no trials row (a trial in flight, or one the trials file does not list): outcome No reward"]
    f = t.facts
    line = [
        f"outcome {f.get('outcome') or 'No reward'}",
        f"reward {_or_none(f.get('reward'))}",
        f"exception {f.get('exception_type')}",
        f"turns {_or_none(f.get('n_episodes'))}",
    ]
    lines = [", ".join(line)]
    if f.get("exception_message"):
        lines.append(f"exception message: {f['exception_message']}")
    durations = [
        f"{k.removesuffix('_duration').removesuffix('_sec').replace('_', ' ')} {f[k]:.1f} s"
        for k in TRIAL_FIELDS
        if k.endswith(("duration", "_sec")) and isinstance(f.get(k), int | float)
    ]
    if durations:
        lines.append("durations: " + ", ".join(durations))
    return lines


def step_title(s: dict) -> str:
    parts = [f"step {s['step_id']}", s["source"] or "?"]
    if s["turn"] is not None:
        parts.append(f"turn {s['turn']}")
    if s["copied"]:
        parts.append("copied context")
    if s["ts"] is not None:  # a TIMESTAMP, to the millisecond in every title: 07:00:27.250 and 07:00:52.000
        parts.append(s["ts"].isoformat(sep=" ", timespec="milliseconds") + " UTC")
    elif s["timestamp"]:
        parts.append(f"time {s['timestamp']!r} (not ISO 8601)")
    tokens = [
        f"{k.removesuffix('_tokens')} {s[k]:,}"
        for k in ("prompt_tokens", "completion_tokens", "cached_tokens")
        if s[k] is not None
    ]
    if tokens:
        parts.append("tokens " + " / ".join(tokens))
    return " · ".join(parts)


def segments(t: Transcript, full: bool):
    """(segment, [(step, folded count)]) in order: copied steps folded into one count unless `full`."""
    current: int | None = None
    shown: list = []
    folded = 0
    for s in t.steps:
        if s["segment"] != current:
            if current is not None:
                yield current, shown, folded
            current, shown, folded = s["segment"], [], 0
        if s["copied"] and not full:
            folded += 1
            continue
        shown.append(s)
    if current is not None:
        yield current, shown, folded


def segment_name(segment: int) -> str:
    return "trajectory.json" if segment == 0 else f"trajectory.cont-{segment}.json"


def as_markdown(t: Transcript, full: bool) -> str:
    """The transcript as markdown. Everything the agent or the files wrote stays inside its block: texts in
    fences no line of theirs can close, names and short values escaped as a table's cells are, calls as code
    spans (rlsql/outputs/formats.py)."""
    from rlsql.outputs.formats import code_span, fenced, markdown_cell

    out = [f"# Trial {markdown_cell(t.trial)} (run {markdown_cell(t.run)})", ""]
    out += [f"- {markdown_cell(line)}" for line in _header(t)] + [""]
    if t.traceback:
        out += ["exception traceback (result.json):", "", fenced(cut(t.traceback.rstrip("\n"), full), "text"), ""]
    if t.missing:
        out.append(f"> {markdown_cell(t.missing)}")
    for path, problem in t.damaged:
        out.append(f"> damaged file skipped: {code_span(path)}: {markdown_cell(problem)}")
    for segment, steps, folded in segments(t, full):
        out += [f"## Segment {segment}: {segment_name(segment)}", ""]
        if folded:
            out += [f"*{_copied(folded)} (folded; `--full` shows them)*", ""]
        for s in steps:
            out += [f"### {markdown_cell(step_title(s))}", ""]
            if s.get("message"):
                out += [fenced(cut(s["message"], full), "text"), ""]
            if s.get("reasoning"):
                out += ["*reasoning:*", "", fenced(cut(s["reasoning"], full), "text"), ""]
            for c in s.get("calls") or []:
                repeat = f" *{markdown_cell(note)}*" if (note := repeat_note(c, segment)) else ""
                out.append(
                    f"- call {code_span(c['function_name'] or '')} {code_span(cut(c['arguments'], full))}"
                    f" ({code_span(c['tool_call_id'] or '')}){repeat}"
                )
            for o in s.get("observations") or []:
                answer = f" (answers {code_span(o['source_call_id'])})" if o["source_call_id"] else ""
                out += ["", f"observation{answer}:", "", fenced(cut(o["content"] or "", full), "text")]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def print_terminal(t: Transcript, full: bool, stream: Any = None) -> None:
    """The transcript on a terminal: rich (typer's dependency) at the terminal's width; plain text elsewhere."""
    from rlsql.outputs.formats import shown  # an agent's escape sequences written out, never acted on

    stream = stream or sys.stdout
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.panel import Panel
        from rich.rule import Rule
        from rich.text import Text
    except ImportError:  # typer without rich: the markdown text, plain
        stream.write(as_markdown(t, full))
        return
    console = Console(file=stream, highlight=False, soft_wrap=False)
    console.print(
        Panel(
            "\n".join(escape(shown(line)) for line in _header(t)),
            title=f"[bold]{escape(shown(t.trial))}[/] (run {escape(shown(t.run))})",
            expand=True,
        )
    )
    if t.traceback:
        console.print(
            Panel(
                Text(shown(cut(t.traceback.rstrip("\n"), full))),
                title="exception traceback (result.json)",
                expand=True,
                border_style="red",
            )
        )
    if t.missing:
        console.print(Text(shown(t.missing), style="bold"))
    for path, problem in t.damaged:
        console.print(Text(shown(f"damaged file skipped: {path}: {problem}"), style="bold red"))
    for segment, steps, folded in segments(t, full):
        console.print(Rule(f"segment {segment}: {segment_name(segment)}"))
        if folded:
            console.print(Text(f"{_copied(folded)} (folded; --full shows them)", style="dim italic"))
        for s in steps:
            console.print(Text(shown(step_title(s)), style="bold cyan" if s["source"] == "agent" else "bold"))
            if s.get("message"):
                console.print(Text(shown(cut(s["message"], full))))
            if s.get("reasoning"):
                console.print(Text(shown("reasoning: " + cut(s["reasoning"], full)), style="italic"))
            for c in s.get("calls") or []:
                call = Text(
                    shown(f"→ {c['function_name']} {cut(c['arguments'], full)} ({c['tool_call_id']})"), style="green"
                )
                if note := repeat_note(c, segment):
                    call.append(f"  [{note}]", style="bold magenta")
                console.print(call)
            for o in s.get("observations") or []:
                answers = f"(answers {o['source_call_id']}) " if o["source_call_id"] else ""
                console.print(Text(shown(f"← {answers}" + cut(o["content"] or "", full)), style="yellow"))
            console.print()


def render(t: Transcript, fmt: str, full: bool) -> str | None:
    """The transcript as `fmt` (json, markdown) text; None for the terminal (print_terminal draws it)."""
    if fmt == "json":
        return json.dumps(as_dict(t, full), indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "markdown":
        return as_markdown(t, full)
    return None


def _copied(folded: int) -> str:
    return f"{folded} step{'s' if folded != 1 else ''} of context copied from earlier segments"
