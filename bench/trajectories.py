"""Agent trajectories at the real size: rlsql's trajectory queries against the script a user would write.

Usage (from the repository root; the data goes under /tmp, never into the repository)::

    python bench/trajectories.py generate --trials 45000 /tmp/trajbench/t45k   # ~4.5 GB, deterministic
    python bench/trajectories.py measure /tmp/trajbench/t1k /tmp/trajbench/t10k /tmp/trajbench/t45k
    python bench/trajectories.py cached /tmp/trajbench/t1k /tmp/trajbench/t10k /tmp/trajbench/t45k

`generate` writes a Harbor run folder: ``trace_jobs/<trial>/result.json`` and
``trace_jobs/<trial>/agent/trajectory.json`` (and ``trajectory.cont-1.json`` after a summarisation for
about one trial in twelve), shaped as terminus-2 writes them (Harbor's ``format_trajectory_json``:
``json.dumps(indent=2)`` with numeric arrays on one line): a user prompt, then one agent step per turn
with 1-3 ``bash_command`` calls, an observation, and metrics; most agent steps carry
``completion_token_ids`` and ``logprobs`` (300-800 numbers each), and about one trial in two hundred a
step whose ``prompt_token_ids`` hold 20,000-30,000 numbers. Files are 10-200 KB; a few loop (the same
call five times or more). Every draw comes from a seeded ``random.Random``: the same arguments write the
same bytes.

`cached` runs ``rlsql cache build`` over each run given (timed), then every trajectory query reading the
cached copies of its rows, paired with the same script.

`measure` times, for each run folder given, the first run of every trajectory query (``rlsql query
NAME``, a fresh process each time) against ``plain_script.py`` (written next to this file's output: the
json-walking script a user would write for the same figure), paired and interleaved, each under
``/usr/bin/time -v`` for its peak memory, and prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

#: where rlsql writes its rows (never /dev/null: the write path before issue 25 renamed a regular file over it)
OUT = Path("/tmp") / "rlsql-trajbench-out.csv"

TASKS = 500
FUNCTIONS = ("bash_command",)
COMMANDS = [
    "ls -la\n",
    "cat calendar.json\n",
    "python3 solve.py\n",
    "grep -n 'meeting' notes.txt\n",
    "cd /app && ls\n",
    "python3 -c 'import json; print(json.load(open(\"c.json\")))'\n",
    "sed -n '1,40p' schedule.py\n",
    "pytest -q\n",
    "echo done > /tmp/out\n",
    "head -c 400 events.ics\n",
]
WORDS = [
    "the",
    "calendar",
    "event",
    "meeting",
    "schedule",
    "file",
    "output",
    "command",
    "check",
    "python",
    "test",
    "result",
    "move",
    "next",
    "update",
    "fix",
    "error",
    "line",
    "value",
    "list",
    "date",
    "time",
    "zone",
    "user",
    "agent",
    "task",
    "json",
    "parse",
    "read",
    "write",
]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def numbers(rng: random.Random, n: int, floats: bool) -> str:
    """A numeric array as Harbor's format_trajectory_json writes it: one line, `, ` between numbers."""
    if floats:
        return "[" + ", ".join(repr(round(-rng.random() * 4, 6)) for _ in range(n)) + "]"
    return "[" + ", ".join(str(rng.randrange(151_000)) for _ in range(n)) + "]"


def trajectory(
    rng: random.Random,
    trial: str,
    turns: int,
    start: float,
    loop: bool,
    big_prompt: bool,
    arrays: bool,
    segment: int = 0,
    copied: int = 0,
) -> tuple[str, float]:
    """One ATIF document's text (and the time its last step ends), with numeric arrays on one line."""
    arrays_text: dict[str, str] = {}
    steps: list[dict] = []
    t = start
    for i in range(copied):  # a continuation's copied context: earlier messages, no metrics
        steps.append(
            {
                "step_id": len(steps) + 1,
                "source": "agent" if i % 2 else "user",
                "message": words(rng, 60),
                "is_copied_context": True,
            }
        )
    steps.append(
        {
            "step_id": len(steps) + 1,
            "timestamp": _stamp(t),
            "source": "user",
            "message": "Task: " + words(rng, rng.randint(400, 900)),
        }
    )
    context = rng.randint(1500, 4000)
    loop_call = rng.choice(COMMANDS)
    for turn in range(turns):
        t += rng.uniform(2, 40)
        calls = []
        for k in range(rng.randint(1, 3)):
            keystrokes = loop_call if loop and k == 0 else rng.choice(COMMANDS)
            calls.append(
                {
                    "tool_call_id": f"call_{turn}_{k + 1}",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": keystrokes, "duration": rng.choice([0.1, 1.0, 5.0])},
                }
            )
        completion = rng.randint(120, 800)
        context += completion + rng.randint(200, 1500)
        metrics: dict = {
            "prompt_tokens": context,
            "completion_tokens": completion,
            "cached_tokens": int(context * rng.uniform(0.5, 0.95)),
        }
        if arrays:
            for name, n, floats in (("completion_token_ids", completion, False), ("logprobs", completion, True)):
                key = f"@@{len(arrays_text)}@@"
                arrays_text[key] = numbers(rng, n, floats)
                metrics[name] = key
        if big_prompt and turn == turns - 1:
            key = f"@@{len(arrays_text)}@@"
            arrays_text[key] = numbers(rng, rng.randint(20_000, 30_000), False)
            metrics["prompt_token_ids"] = key
        steps.append(
            {
                "step_id": len(steps) + 1,
                "timestamp": _stamp(t),
                "source": "agent",
                "model_name": "hosted_vllm/calendar-8b",
                "message": "Analysis: "
                + words(rng, rng.randint(80, 300))
                + "\nPlan: "
                + words(rng, rng.randint(30, 120)),
                "tool_calls": calls,
                "observation": {
                    "results": [
                        {
                            "source_call_id": calls[0]["tool_call_id"] if len(calls) == 1 else None,
                            "content": "$ " + words(rng, rng.randint(60, 500)),
                        }
                    ]
                },
                "metrics": metrics,
            }
        )
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": f"{trial}-cont-{segment}" if segment else trial,
        "agent": {
            "name": "terminus-2",
            "version": "2.0.0",
            "model_name": "hosted_vllm/calendar-8b",
            "extra": {"parser": "json"},
        },
        "steps": steps,
        "final_metrics": {"total_prompt_tokens": context, "total_completion_tokens": 0, "total_cached_tokens": 0},
    }
    text = json.dumps(doc, indent=2)
    if arrays_text:
        text = re.sub(r'"(@@\d+@@)"', lambda m: arrays_text[m.group(1)], text)
    return text, t


def _stamp(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat()


def generate(root: Path, trials: int, seed: int = 26) -> None:
    rng = random.Random(seed)
    trace_jobs = root / "trace_jobs"
    trace_jobs.mkdir(parents=True, exist_ok=True)
    start = 1_780_000_000.0
    total = 0
    for i in range(trials):
        trial = f"calendar-{i % TASKS:04d}__{i:07d}"
        agent = trace_jobs / trial / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        turns = rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 8, 10, 14, 20])
        loop = rng.random() < 0.04
        if loop:
            turns = max(turns, 6)
        big = rng.random() < 0.005
        arrays = rng.random() < 0.7
        summarised = rng.random() < 0.08 and turns >= 4
        first = turns // 2 if summarised else turns
        text, t = trajectory(rng, trial, first, start + 37 * i, loop, big and not summarised, arrays)
        (agent / "trajectory.json").write_text(text)
        total += len(text)
        if summarised:
            text, t = trajectory(rng, trial, turns - first, t, loop, big, arrays, segment=1, copied=2 * first + 1)
            (agent / "trajectory.cont-1.json").write_text(text)
            total += len(text)
        reward = 1.0 if rng.random() < (0.5 if loop else 0.9) else 0.0
        exception = "AgentTimeoutError" if loop and rng.random() < 0.5 else None
        result = {
            "task_name": trial.split("__")[0],
            "trial_name": trial,
            "agent_result": {
                "n_input_tokens": 1000 * turns,
                "n_output_tokens": 300 * turns,
                "metadata": {"n_episodes": turns},
            },
            "verifier_result": {"rewards": {"reward": reward}},
            "exception_info": ({"exception_type": exception, "exception_message": "timed out"} if exception else None),
            "started_at": _stamp(start + 37 * i),
            "finished_at": _stamp(t + 5),
        }
        (trace_jobs / trial / "result.json").write_text(json.dumps(result, indent=4))
    print(f"{root}: {trials} trials, {total / 1e9:.2f} GB of trajectories")


# -- the script a user would write ----------------------------------------------------------------

PLAIN_SCRIPT = '''\
"""What a user writes without rlsql: walk trace_jobs with json, one figure per QUERY (argv[2])."""
import json, os, re, statistics, sys
from collections import Counter, defaultdict

run, query = sys.argv[1], sys.argv[2]
trace_jobs = os.path.join(run, "trace_jobs")
SEG = re.compile(r"^trajectory(?:\\.cont-([1-9][0-9]*))?\\.json$")
outcome = {}
for trial in sorted(os.listdir(trace_jobs)):
    try:
        with open(os.path.join(trace_jobs, trial, "result.json")) as fh:
            r = json.load(fh)
        reward = ((r.get("verifier_result") or {}).get("rewards") or {}).get("reward")
        outcome[trial] = "Success" if reward and reward > 0 else "Failure" if reward == 0 else "No reward"
    except (OSError, ValueError):
        outcome[trial] = "No reward"
calls = Counter(); trials_of = defaultdict(set); steps_of = defaultdict(list); repeated = Counter()
for trial in sorted(os.listdir(trace_jobs)):
    agent = os.path.join(trace_jobs, trial, "agent")
    try:
        names = sorted((int(m.group(1) or 0), n) for n in os.listdir(agent) if (m := SEG.match(n)))
    except OSError:
        continue
    for _, name in names:
        try:
            with open(os.path.join(agent, name)) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue
        for step in doc.get("steps", []):
            if step.get("is_copied_context") or step.get("source") != "agent":
                continue
            steps_of[trial].append(step.get("metrics") or {})
            for call in step.get("tool_calls") or []:
                calls[call["function_name"]] += 1
                trials_of[call["function_name"]].add(trial)
                repeated[(trial, call["function_name"], json.dumps(call["arguments"], sort_keys=True))] += 1
if query == "tool_usage":
    for name, n in calls.most_common():
        print(name, n, len(trials_of[name]), n / len(trials_of[name]))
elif query == "token_usage":
    by = defaultdict(list)
    for trial, steps in steps_of.items():
        by[outcome.get(trial, "No reward")].append(sum(m.get("completion_tokens") or 0 for m in steps))
    for name, sums in by.items():
        print(name, len(sums), statistics.mean(sums), statistics.median(sums))
else:
    for (trial, name, args), n in repeated.most_common():
        if n >= 3:
            print(trial, name, args, n)
'''

QUERIES = ("tool_usage", "token_usage", "looping_trials")


def timed(command: list[str], env: dict | None = None) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (KB) and CPU seconds (user + system) of one command under /usr/bin/time -v."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([0-9.]+)", done.stderr))
    return wall, peak, cpu


def measure(runs: list[Path], repeats: int, queries: Sequence[str] = QUERIES) -> None:
    script = Path("/tmp/trajbench/plain_script.py")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(PLAIN_SCRIPT)
    rlsql = [sys.executable, "-m", "rlsql"]
    env = {**os.environ, "RLSQL_CACHE": "off"}
    print(
        "| trials | files | GB | query | rlsql s (median) | rlsql CPU s | rlsql peak MB | script s | script CPU s "
        "| script peak MB | speed-up |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for run in runs:
        files = sum(1 for _ in run.glob("trace_jobs/*/agent/trajectory*.json"))
        size = sum(p.stat().st_size for p in run.glob("trace_jobs/*/agent/trajectory*.json")) / 1e9
        trials = sum(1 for _ in (run / "trace_jobs").iterdir())
        for query in queries:
            ours, theirs = [], []
            for _ in range(repeats):  # paired and interleaved: the same load on both
                ours.append(timed([*rlsql, "query", query, "-r", str(run), "-f", "csv", "-o", str(OUT)], env))
                theirs.append(timed([sys.executable, str(script), str(run), query]))
            o, s = statistics.median(w for w, _, _ in ours), statistics.median(w for w, _, _ in theirs)
            oc, sc = statistics.median(c for _, _, c in ours), statistics.median(c for _, _, c in theirs)
            print(
                f"| {trials:,} | {files:,} | {size:.2f} | {query} | {o:.2f} | {oc:.2f} "
                f"| {max(p for _, p, _ in ours) / 1024:.0f} | {s:.2f} | {sc:.2f} "
                f"| {max(p for _, p, _ in theirs) / 1024:.0f} | {s / o:.1f}x |",
                flush=True,
            )


def after_cache_build(runs: list[Path], repeats: int) -> None:
    """`rlsql cache build -r RUN` (timed, into a cache folder of its own, emptied first), then every trajectory
    query reading its copies, paired and interleaved with the plain script as `measure` pairs them."""
    import shutil

    script = Path("/tmp/trajbench/plain_script.py")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(PLAIN_SCRIPT)
    cache = Path("/tmp/trajbench/rlsql-cache")
    rlsql = [sys.executable, "-m", "rlsql"]
    env = {**os.environ, "RLSQL_CACHE_DIR": str(cache), "RLSQL_CACHE": "auto"}
    print("| trials | cache build s | build peak MB | query | rlsql s (median) | rlsql peak MB | script s | speed-up |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for run in runs:
        shutil.rmtree(cache, ignore_errors=True)
        trials = sum(1 for _ in (run / "trace_jobs").iterdir())
        build, build_peak, _ = timed([*rlsql, "cache", "build", "-r", str(run)], env)
        for query in QUERIES:
            ours, theirs = [], []
            for _ in range(repeats):
                ours.append(timed([*rlsql, "query", query, "-r", str(run), "-f", "csv", "-o", str(OUT)], env))
                theirs.append(timed([sys.executable, str(script), str(run), query]))
            o, s = statistics.median(w for w, _, _ in ours), statistics.median(w for w, _, _ in theirs)
            print(
                f"| {trials:,} | {build:.1f} | {build_peak / 1024:.0f} | {query} | {o:.2f} "
                f"| {max(p for _, p, _ in ours) / 1024:.0f} | {s:.2f} | {s / o:.1f}x |",
                flush=True,
            )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate")
    gen.add_argument("--trials", type=int, required=True)
    gen.add_argument("root", type=Path)
    meas = sub.add_parser("measure")
    meas.add_argument("runs", type=Path, nargs="+")
    meas.add_argument("--repeats", type=int, default=3)
    meas.add_argument("--queries", nargs="+", choices=QUERIES, default=list(QUERIES))
    cache = sub.add_parser("cached")
    cache.add_argument("runs", type=Path, nargs="+")
    cache.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.command == "generate":
        generate(args.root, args.trials)
    elif args.command == "cached":
        after_cache_build(args.runs, args.repeats)
    else:
        measure(args.runs, args.repeats, args.queries)


if __name__ == "__main__":
    main(sys.argv[1:])
