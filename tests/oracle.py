"""Independent reference implementation of the named queries (tests compare rlsql against it).

Written straight from the data contract and the query contract (docs/data-contract.md,
docs/queries.md) and docs/semantics.md in plain Python: stdlib csv/statistics/math and pyyaml only. No DuckDB, no
pandas, no SQL, and nothing from rlsql, so a shared misreading cannot hide a bug.

    expected(name, run_dirs, **params) -> list[dict]

returns the rows of named query `name`: dicts with exactly the columns of queries.md in that
order; runs ordered by run name, then each query's own order. Counts are int, statistics
float, NULL is None.

Choices made where neither the spec nor docs/semantics.md decides:
- a query emits rows for a run only when the run has the artifact it reads (turn_stats and
  reward_summary: one row for every run with a trials file, even when it has no usable trial);
- "a column the run has" means a column with at least one non-NULL value in that run (this is
  what a union_by_name view over several runs can see): pass@k column, timing spans, phases;
- metric rows without any step are no deduplicated step (step_timing still lists them, last);
- `turn_percentiles` has no `All trials` row when no trial has turns;
- `trial_phases` lists only phases with at least one value;
- a step-tree span without any recorded ancestor (no `step` column) is a root listed with the
  spans outside `step`;
- routing: the first occurrence of a key in document order is used; when its value is null the
  trainer default applies (later occurrences are not consulted).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import io
import json
import math
import os
import re
import statistics
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

Row = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Finding a run's artifacts (docs/semantics.md "Finding a run's artifacts")
# --------------------------------------------------------------------------------------------

# artifact -> (name after the `YYYYMMDD_HHMMSS_` prefix, unprefixed name of the newest parser)
_CSV_ARTIFACTS: dict[str, tuple[str, str]] = {
    "metrics": ("metrics_table.csv", "metrics.csv"),
    "trials": ("trial_results.csv", "trial_results.csv"),
    "vllm": ("vllm_metrics_table.csv", "vllm_metrics.csv"),
}
_CONFIG_NAMES = ("rl_config.yaml", "rl_config.yml")


def find_artifacts(run_dir: Path | str) -> dict[str, Path | None]:
    """Artifact ('metrics', 'trials', 'vllm', 'config') -> file, or None when absent.

    "For each artifact the file with the newest `YYYYMMDD_HHMMSS_` prefix wins; a file without
    the prefix is used only when no prefixed file exists." Split per-log files
    (`<ts>_metrics_<log>.csv`) never match because the name after the prefix must be exact.
    """
    run_dir = Path(run_dir)
    names = sorted(p.name for p in run_dir.iterdir() if p.is_file())
    found: dict[str, Path | None] = {}
    for artifact, (suffix, plain) in _CSV_ARTIFACTS.items():
        pattern = re.compile(r"^(\d{8}_\d{6})_" + re.escape(suffix) + r"$")
        stamps = sorted(m.group(1) for name in names if (m := pattern.match(name)))
        if stamps:
            found[artifact] = run_dir / f"{stamps[-1]}_{suffix}"  # same-width stamps: max = newest
        elif plain in names:
            found[artifact] = run_dir / plain
        else:
            found[artifact] = None
    found["config"] = next((run_dir / n for n in _CONFIG_NAMES if n in names), None)
    # Harbor's trial folders read in place: "an artifact kind `harbor` present when
    # trace_jobs/*/result.json exists"
    trace_jobs = run_dir / "trace_jobs"
    found["harbor"] = trace_jobs if any(p.is_file() for p in trace_jobs.glob("*/result.json")) else None
    return found


def has_trials(run_dir: Path | str) -> bool:
    """A run's trials come from its CSV, else from Harbor's result.json files."""
    found = find_artifacts(run_dir)
    return found["trials"] is not None or found["harbor"] is not None


def run_name(run_dir: Path | str) -> str:
    """Spec: "The run's identity is its folder name"."""
    return Path(run_dir).resolve().name


# --------------------------------------------------------------------------------------------
# Reading cells: "Empty cells are NULL", "Integers written as `3.0` are integers", nan -> NULL
# --------------------------------------------------------------------------------------------


#: (reader, digest of the file's bytes) -> its rows, the most recently read files last
_PARSED: OrderedDict[tuple[str, bytes], list[Row]] = OrderedDict()
_PARSED_FILES = 256


def _parsed_rows(path: Path, row_of: Callable[[dict[str, str | None]], Row]) -> list[Row]:
    """`row_of` over each line of the CSV at `path`, parsed once per file content: the oracle reads the same
    fixture files for many tests (test_report.py alone read the trials ~300 times, ~15 % of its CPU). The
    key is the file's bytes (their digest), not its name or mtime, so a file rewritten within a clock tick
    is parsed again; each caller gets its own row dicts (their values are numbers, text or None)."""
    data = path.read_bytes()
    key = (row_of.__name__, hashlib.blake2b(data, digest_size=20).digest())
    rows = _PARSED.get(key)
    if rows is None:
        with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="") as fh:
            rows = [row_of(raw) for raw in csv.DictReader(fh)]
        _PARSED[key] = rows
        while len(_PARSED) > _PARSED_FILES:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return [dict(row) for row in rows]


def _num(cell: str | None) -> float | None:
    """A numeric cell: empty, `nan` or `inf` is NULL (docs/semantics.md); otherwise a float."""
    if cell is None:
        return None
    text = cell.strip()
    if text == "" or text.lower() == "nan":
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _int(cell: str | None) -> int | None:
    """An integer cell, possibly written `3.0` (pandas writes an int column with a gap as floats).

    docs/semantics.md: a cell with a fraction, beyond 2**53 or inf is a bad cell, read as empty.
    """
    value = _num(cell)
    if value is None or not math.isfinite(value) or not value.is_integer() or abs(value) > 2**53:
        return None
    return int(value)


def _text(cell: str | None) -> str | None:
    return None if cell is None or cell == "" else cell


def _trimmed(value: Any) -> Any:
    """An exception type as the trials view reads it: spaces around it trimmed (empty is none)."""
    return value.strip(" ") or None if isinstance(value, str) else value


# --------------------------------------------------------------------------------------------
# Trainer metrics
# --------------------------------------------------------------------------------------------


def read_metric_rows(run_dir: Path | str) -> list[Row]:
    """Every metric row in CSV order (no dedup): column -> value, plus a derived `step` key.

    `log_file` stays text; every other column is a float (or None); a cell that is not a
    number at all is kept as text. "Metric row step: `trainer/global_step`, else `global_step`."
    """
    path = find_artifacts(run_dir)["metrics"]
    if path is None:
        return []
    return _parsed_rows(path, _metric_row)


def _metric_row(raw: dict[str, str | None]) -> Row:
    row: Row = {}
    for col, cell in raw.items():
        if col is None:  # surplus cells of a ragged line
            continue
        if col == "log_file":
            row[col] = _text(cell)
            continue
        try:
            row[col] = _num(cell)
        except ValueError:
            row[col] = cell
    step = _int(raw.get("trainer/global_step"))
    if step is None:
        step = _int(raw.get("global_step"))
    row["step"] = step
    return row


def dedup_steps(rows: list[Row]) -> list[Row]:
    """Spec: "Deduplicated steps keep the first-seen row in CSV order", ordered by step ascending."""
    first: dict[int | float, Row] = {}
    for row in rows:
        if row["step"] is not None and row["step"] not in first:
            first[row["step"]] = row
    return [first[s] for s in sorted(first)]


def _columns_with_values(rows: list[Row]) -> list[str]:
    """Columns (in first-appearance order) having at least one non-NULL value."""
    cols: list[str] = []
    for row in rows:
        for col, value in row.items():
            if value is not None and col not in cols:
                cols.append(col)
    return cols


def _timing_spans(rows: list[Row]) -> list[str]:
    """Spec: "spans are the run's `timing/*` columns with at least one value" (name minus `timing/`)."""
    return [c[len("timing/") :] for c in _columns_with_values(rows) if c.startswith("timing/")]


# --------------------------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------------------------

_TRIAL_TEXT = ("task_name", "trial_name")
_TRIAL_INT = ("n_episodes", "n_input_tokens", "n_output_tokens")
_TRIAL_FLOAT = (
    "reward",
    "agent_duration_sec",
    "trial_duration",
    "environment_setup_duration",
    "agent_setup_duration",
    "agent_execution_duration",
    "verifier_duration",
)
NO_EXCEPTION = "No exception"


def _seconds(block: Any) -> float | None:
    """finished_at - started_at of a Harbor timing block, as the parser computes it; None if unreadable."""
    if not isinstance(block, dict) or not block.get("started_at") or not block.get("finished_at"):
        return None
    try:
        started, finished = datetime.fromisoformat(block["started_at"]), datetime.fromisoformat(block["finished_at"])
        return (finished - started).total_seconds()
    except (TypeError, ValueError):
        return None


_GLOB_CHARS = set("[]*?")
#: the largest count a DOUBLE holds exactly: a larger n_episodes or token count is out of range
_MAX_COUNT = 2**53


def _harbor_text(path: Path) -> str | None:
    """The text of a trial's result.json, or None when rlsql skips the file (docs/semantics.md):
    not a regular file (a FIFO is never opened), unreadable, empty, not UTF-8, or a path DuckDB
    cannot be handed exactly (a backslash together with a glob character)."""
    if "\\" in str(path) and _GLOB_CHARS & set(str(path)):
        return None
    if not path.is_file() or not os.access(path, os.R_OK):  # is_file: False for FIFOs, folders, dangling links
        return None
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8") if raw else None
    except UnicodeDecodeError:
        return None


def _json_number(value: Any, whole: bool) -> float | int | None:
    """A JSON number by the CSV cells' rule: finite or None; a boolean or string is no number; a count
    must be a whole number of at most 2**53 (not rounded)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if whole and (value != int(value) or abs(value) > _MAX_COUNT):
        return None
    return value


def _glob_fails(trace_jobs: Path, name: str, entries: list[str]) -> bool:
    """DuckDB lists the folder above every path segment with a glob character, and that listing
    fails when the folder holds a name starting with a backslash: rlsql skips such files."""

    def starts_with_backslash(folder: Path) -> bool:
        return any(n.startswith("\\") for n in os.listdir(folder))

    parts = trace_jobs.parts
    for i in range(1, len(parts)):
        if _GLOB_CHARS & set(parts[i]) and starts_with_backslash(Path(*parts[:i])):
            return True
    return bool(_GLOB_CHARS & set(name)) and any(n.startswith("\\") for n in entries)


def read_harbor_trials(trace_jobs: Path) -> list[Row]:
    """Harbor's trace_jobs/<trial>/result.json files, trial folders sorted by name, mapped to the
    CSV's columns the way the log parser's parse_result_files maps them.

    Files that are no trial are skipped as rlsql skips them (_harbor_text; json.loads fails; a
    top-level value that is not an object). Python's json module reads NaN, Infinity and
    -Infinity, as DuckDB does. Known differences from DuckDB's JSON reader, which no test input
    uses: DuckDB also accepts trailing commas and nan/inf in any case, rejects a lone surrogate
    escape (\\ud800), and takes the first of duplicate keys where Python takes the last.
    """
    trials: list[Row] = []
    entries = os.listdir(trace_jobs)
    for name in sorted(entries):
        if not (trace_jobs / name).is_dir():
            continue
        if _glob_fails(trace_jobs, name, entries):
            continue
        text = _harbor_text(trace_jobs / name / "result.json")
        if text is None:
            continue
        trial = _harbor_trial(text)
        if trial is not None:
            trials.append(dict(trial))
    return trials


@functools.lru_cache(maxsize=8192)
def _harbor_trial(text: str) -> Row | None:
    """The trial row of a result.json's text, or None for a file that is no trial (json.loads fails, or a
    top-level value that is not an object). Parsed once per content: the oracle reads the same fixture
    folders for many tests (~1,000 folder reads in test_trajectories, test_serve, test_rawlogs,
    test_many_runs and test_queries); read_harbor_trials hands each caller a copy."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    agent = data.get("agent_result") or {}
    agent = agent if isinstance(agent, dict) else {}
    metadata = agent.get("metadata") or {}
    metadata = metadata if isinstance(metadata, dict) else {}
    verifier = data.get("verifier_result") or {}
    rewards = (verifier.get("rewards") or {}) if isinstance(verifier, dict) else {}
    reward = _json_number(rewards.get("reward") if isinstance(rewards, dict) else None, whole=False)
    trial: Row = {
        "task_name": data.get("task_name") or None,
        "trial_name": data.get("trial_name") or None,
        "n_episodes": _json_number(metadata.get("n_episodes"), whole=True),
        "n_input_tokens": _json_number(agent.get("n_input_tokens"), whole=True),
        "n_output_tokens": _json_number(agent.get("n_output_tokens"), whole=True),
        "exception_type": _trimmed((data.get("exception_info") or {}).get("exception_type")) or NO_EXCEPTION,
        "reward": float(reward) if reward is not None else None,
        "agent_duration_sec": None,  # the current parser writes agent_execution_duration instead
        "trial_duration": _seconds(data),
    }
    for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
        trial[f"{phase}_duration"] = _seconds(data.get(phase))
    info = data.get("exception_info")
    message = info.get("exception_message") if isinstance(info, dict) else None
    trial["exception_message"] = message if isinstance(message, str) else None
    trial["started_at"] = _stamp(data.get("started_at"))
    trial["finished_at"] = _stamp(data.get("finished_at"))
    return trial


def _stamp(value: Any) -> datetime | None:
    """A result.json stamp as the trials view gives it: one with an offset (`Z`, `+02:00`) as that instant
    in UTC, one without as written; anything unreadable None."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    return stamp.astimezone(UTC).replace(tzinfo=None) if stamp.tzinfo is not None else stamp


#: docs/semantics.md, "Harbor trial folders": beside a trials CSV, result.json gives these (the CSV never does)...
_JSON_ONLY = ("exception_message", "started_at", "finished_at")
#: ...and these where the CSV has no such column (a parser older than the newest)
_DURATIONS = _TRIAL_FLOAT[2:]


def read_trials(run_dir: Path | str) -> list[Row]:
    """Trials in CSV order, columns read by name ("a column that a run lacks is NULL").

    `exception_type` is "`No exception` for a trial without one, in every query". A run without
    a trials CSV reads Harbor's result.json files instead ("the CSV wins").
    """
    found = find_artifacts(run_dir)
    path = found["trials"]
    if path is None:
        return read_harbor_trials(found["harbor"]) if found["harbor"] is not None else []
    rows = _parsed_rows(path, _trial_row)
    for row in rows:
        row.update(dict.fromkeys(_JSON_ONLY))
    if found["harbor"] is None:
        return rows
    # a run with both: the CSV's trials, and for each the result.json of the same trial_name (the first file in
    # folder order when two name one trial; a trial with none keeps NULL; a result.json the CSV does not list
    # adds no trial): its exception_message and stamps, and the durations the CSV's header lacks
    with path.open(newline="", encoding="utf-8-sig") as handle:
        header = {name.strip() for name in next(csv.reader(handle), [])}
    by_name: dict[str, Row] = {}
    for trial in read_harbor_trials(found["harbor"]):
        if trial["trial_name"] is not None:
            by_name.setdefault(trial["trial_name"], trial)
    filled = [*_JSON_ONLY, *(c for c in _DURATIONS if c not in header)]
    for row in rows:
        match = by_name.get(row["trial_name"])
        if match is not None:
            row.update({c: match[c] for c in filled})
    return rows


def _trial_row(raw: dict[str, str | None]) -> Row:
    trial: Row = {col: _text(raw.get(col)) for col in _TRIAL_TEXT}
    trial.update({col: _int(raw.get(col)) for col in _TRIAL_INT})
    # trimmed of spaces, as the trials view reads the cell
    trial["exception_type"] = _text((raw.get("exception_type") or "").strip(" ")) or NO_EXCEPTION
    trial.update({col: _num(raw.get(col)) for col in _TRIAL_FLOAT})
    return trial


# --------------------------------------------------------------------------------------------
# vLLM engine stats
# --------------------------------------------------------------------------------------------


def read_vllm_rows(run_dir: Path | str) -> list[Row]:
    """vLLM per-second rows in CSV order; `log_file`/`datetime_str` text, the rest numbers."""
    path = find_artifacts(run_dir)["vllm"]
    if path is None:
        return []
    return _parsed_rows(path, _vllm_row)


def _vllm_row(raw: dict[str, str | None]) -> Row:
    row: Row = {}
    for col, cell in raw.items():
        if col is None:
            continue
        row[col] = _text(cell) if col in ("log_file", "datetime_str") else _num(cell)
    return row


# --------------------------------------------------------------------------------------------
# Config and exception routing (data-contract.md section 3 "Exception routing")
# --------------------------------------------------------------------------------------------

DEFAULT_ROUTING: dict[str, Any] = {
    "passthrough": [],
    "mask": [
        "DaytonaError",
        "EnvironmentStartTimeoutError",
        "NetworkError",
        "ConnectionError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
    ],
    "zero": ["AgentTimeoutError", "ContextLengthExceededError"],
    "default": "zero",
}
_ROUTING_KEYS = {
    "passthrough": "passthrough_exceptions",
    "mask": "mask_exceptions",
    "zero": "zero_exceptions",
    "default": "default_error_treatment",
}
_MISSING = object()


def load_config(run_dir: Path | str) -> Any:
    path = find_artifacts(run_dir)["config"]
    if path is None:
        return None
    stat = path.stat()
    # parsed once per file version: compare_runs reads every run's config for every run (the change time
    # and inode too: an edit that keeps the size and mtime is another version)
    return _parse_yaml(str(path.resolve()), stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _parse_yaml(path: str, mtime_ns: int, ctime_ns: int, ino: int, size: int) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _find_key(node: Any, key: str) -> Any:
    """First occurrence of `key` anywhere in the YAML, in document order (pre-order walk)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                return v
            hit = _find_key(v, key)
            if hit is not _MISSING:
                return hit
    elif isinstance(node, list):
        for item in node:
            hit = _find_key(item, key)
            if hit is not _MISSING:
                return hit
    return _MISSING


def routing(run_dir: Path | str) -> dict[str, Any]:
    """{'passthrough': [...], 'mask': [...], 'zero': [...], 'default': 'zero'|'mask'|'passthrough'}.

    "Routing keys are looked up anywhere in the YAML (first match in document order); each
    absent (or null) key takes the trainer's default separately." No config: all defaults.
    """
    config = load_config(run_dir)
    result: dict[str, Any] = {}
    for slot, key in _ROUTING_KEYS.items():
        value = _find_key(config, key)
        if value is _MISSING or value is None or not _routing_value_ok(slot, value):
            # docs/semantics.md: a key of the wrong type (a string where a list belongs, an unknown
            # default treatment) takes the trainer's default for that key, with a warning
            value = DEFAULT_ROUTING[slot]
        result[slot] = [str(v) for v in value] if slot != "default" else value.lower()
    return result


def _routing_value_ok(slot: str, value: Any) -> bool:
    if slot == "default":
        return isinstance(value, str) and value.lower() in ("zero", "mask", "passthrough")
    return isinstance(value, list)


def configured_treatment(exception_type: str, route: dict[str, Any]) -> str:
    """Spec: "order of the checks: passthrough, mask, zero, default"; exact names, no subclassing."""
    if exception_type == NO_EXCEPTION:
        return "none"
    for slot in ("passthrough", "mask", "zero"):
        if exception_type in route[slot]:
            return slot
    return route["default"]


def effective_treatment(trial: Row, route: dict[str, Any]) -> str:
    """Passthrough "when no reward exists it is treated as `mask`"."""
    treatment = configured_treatment(trial["exception_type"], route)
    if treatment == "passthrough" and trial["reward"] is None:
        return "mask"
    return treatment


# --------------------------------------------------------------------------------------------
# Statistics ("Medians and percentiles interpolate linearly between order statistics
# (pandas' default), standard deviations are sample (n-1) deviations")
# --------------------------------------------------------------------------------------------


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _median(values: list[float]) -> float | None:
    """Spec: "the average of the two middle values for an even count"."""
    return float(statistics.median(values)) if values else None


def _std(values: list[float]) -> float | None:
    """Sample standard deviation (n-1); NULL below two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def _max(values: list[float]) -> float | None:
    return float(max(values)) if values else None


def _min(values: list[float]) -> float | None:
    return float(min(values)) if values else None


def _sum(values: list[float]) -> float | None:
    return math.fsum(values) if values else None


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation at position (n-1)*q of the sorted values (numpy/pandas default)."""
    if not values:
        return None
    xs = sorted(float(v) for v in values)
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _nums(values: list[Any]) -> list[float]:
    """The non-NULL numeric values, as floats."""
    return [float(v) for v in values if isinstance(v, int | float)]


# --------------------------------------------------------------------------------------------
# Queries over trainer metrics
# --------------------------------------------------------------------------------------------


def _none_last(value: Any) -> tuple[bool, Any]:
    return (value is None, value if value is not None else 0)


def q_run_overview(run: str, run_dir: Path) -> list[Row]:
    """One row per log_file: max global step, rows, mean/max of reward/avg_raw_reward, sum of timing/step."""
    rows = read_metric_rows(run_dir)
    logs: dict[str | None, list[Row]] = {}
    for row in rows:
        logs.setdefault(row.get("log_file"), []).append(row)
    out = []
    for log in sorted(logs, key=_none_last):
        group = logs[log]
        steps = [r["step"] for r in group if r["step"] is not None]
        rewards = _nums([r.get("reward/avg_raw_reward") for r in group])
        out.append(
            {
                "run": run,
                "log_file": log,
                "total_steps": max(steps) if steps else None,
                "metric_blocks": len(group),
                "mean_reward": _mean(rewards),
                "max_reward": _max(rewards),
                "total_time_s": _sum(_nums([r.get("timing/step") for r in group])),
                # version 2: the highest step under its own name, and how many different steps there are
                "max_step": max(steps) if steps else None,
                "distinct_steps": len(set(steps)),
            }
        )
    return out


def _pass_at_k_column(rows: list[Row]) -> tuple[str | None, int | None]:
    """The run's `reward/avg_pass_at_<k>` column (lowest k if several); (None, None) when none."""
    ks = []
    for col in _columns_with_values(rows):
        m = re.fullmatch(r"reward/avg_pass_at_(\d+)", col)
        if m:
            ks.append(int(m.group(1)))
    if not ks:
        return None, None
    k = min(ks)
    return f"reward/avg_pass_at_{k}", k


def _reward_curve_rows(run: str, run_dir: Path, span: int) -> list[Row]:
    rows = read_metric_rows(run_dir)
    steps = dedup_steps(rows)
    pass_col, k = _pass_at_k_column(rows)
    alpha = 2.0 / (span + 1)  # "alpha = 2/(span+1) ... seeded with the first reward"
    ema: float | None = None
    rewards: list[float | None] = []
    out = []
    for row in steps:
        reward = row.get("reward/avg_raw_reward")
        reward = reward if isinstance(reward, float) else None
        rewards.append(reward)
        if reward is None:
            row_ema = None  # "steps with a NULL reward keep a row: their ema is NULL and the EMA skips them"
        else:
            ema = reward if ema is None else alpha * reward + (1 - alpha) * ema
            row_ema = ema
        window = _nums(rewards[-span:])  # "mean of the non-NULL rewards among the last span steps"
        out.append(
            {
                "run": run,
                "step": row["step"],
                "log_file": row.get("log_file"),
                "reward": reward,
                "pass_at_k": row.get(pass_col) if pass_col else None,
                "k": k,
                "ema": row_ema,
                "rolling_mean": _mean(window),
            }
        )
    return out


def q_reward_curve(run: str, run_dir: Path, span: int = 5) -> list[Row]:
    return _reward_curve_rows(run, run_dir, span)


def _checkpoint_interval(value: Any) -> int:
    """A whole number of steps >= 1 (3.0 and "4" included), else the trainer's default 20."""
    if isinstance(value, bool) or value is None:
        return 20
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 20
    if number != number or number in (float("inf"), float("-inf")) or number != int(number):
        return 20
    return int(number) if 1 <= number <= 2**31 - 1 else 20


def q_best_checkpoint(run: str, run_dir: Path, span: int = 5, save_every: int | None = None) -> list[Row]:
    """Eligible: deduplicated steps with an EMA, `step % save_every = 0 and step >= 2*save_every`;
    best = highest EMA, ties to the earliest step."""
    if find_artifacts(run_dir)["metrics"] is None:
        return []
    if save_every is None:
        config = load_config(run_dir)
        trainer = config.get("trainer") if isinstance(config, dict) else None
        interval = trainer.get("hf_save_interval") if isinstance(trainer, dict) else None
        save_every = _checkpoint_interval(interval)

    def is_eligible(r: Row) -> bool:
        if r["ema"] is None or save_every == 0:
            return False
        return r["step"] % save_every == 0 and r["step"] >= 2 * save_every

    eligible = [r for r in _reward_curve_rows(run, run_dir, span) if is_eligible(r)]
    best = None
    for r in eligible:  # ascending steps; strict > keeps the earliest of equal EMAs
        if best is None or r["ema"] > best["ema"]:
            best = r
    return [
        {
            "run": run,
            "step": best["step"] if best else None,
            "ema": best["ema"] if best else None,
            "reward": best["reward"] if best else None,
            "save_every": save_every,
            "eligible_steps": len(eligible),
            "reason": None,  # free text; tests ignore it
        }
    ]


def q_async_health(run: str, run_dir: Path) -> list[Row]:
    """Means and max over every metric row; steps_with_discards over deduplicated steps with
    async/discarded_count > 0 (or discard_rate > 0 where the count is absent)."""
    rows = read_metric_rows(run_dir)
    if not rows:
        return []
    with_discards = 0
    for row in dedup_steps(rows):
        count = row.get("async/discarded_count")
        value = count if count is not None else row.get("async/discard_rate")
        if isinstance(value, float) and value > 0:
            with_discards += 1
    return [
        {
            "run": run,
            "mean_staleness": _mean(_nums([r.get("async/staleness_mean") for r in rows])),
            "max_staleness": _max(_nums([r.get("async/staleness_max") for r in rows])),
            "mean_discard_rate": _mean(_nums([r.get("async/discard_rate") for r in rows])),
            "steps_with_discards": with_discards,
        }
    ]


# Timing spans and their nesting (data-contract.md section 2): span -> declared parent.
# None = a top-level span (`step` itself, or a span outside `step`).
DECLARED_PARENT: dict[str, str | None] = {
    "step": None,
    "wait_for_generation_buffer": "step",
    "convert_to_training_input": "step",
    "run_training": "step",
    "sync_weights": "step",
    "generate": "step",
    "postprocess_generator_output": "step",
    "fwd_logprobs_values_reward": "run_training",
    "apply_reward_kl_penalty": "run_training",
    "compute_advantages_and_returns": "run_training",
    "train_critic_and_policy": "run_training",
    "policy_train": "train_critic_and_policy",
    "critic_train": "train_critic_and_policy",
    "policy_critic_overlap_train": "train_critic_and_policy",
    "save_checkpoints": None,
    "cleanup_old_checkpoints": "save_checkpoints",
    "save_hf_model": None,
    "eval": None,
    "update_ref_with_policy": None,
    "init_weight_sync_state": None,
}


def q_timing_breakdown(run: str, run_dir: Path) -> list[Row]:
    rows = read_metric_rows(run_dir)  # "It uses every metric row of the run"
    spans = _timing_spans(rows)
    recorded = set(spans)
    col: dict[str, list[float | None]] = {
        s: [v if isinstance(v, float) else None for v in (r.get(f"timing/{s}") for r in rows)] for s in spans
    }

    def effective_parent(span: str) -> str | None:
        """Spec: "Effective parent = nearest recorded declared ancestor"."""
        parent = DECLARED_PARENT[span]
        while parent is not None and parent not in recorded:
            parent = DECLARED_PARENT[parent]
        return parent

    declared = [s for s in spans if s in DECLARED_PARENT]
    parent_of = {s: effective_parent(s) for s in declared}
    children = {s: [c for c in declared if parent_of[c] == s] for s in declared}

    def ran(span: str) -> list[float]:
        return [v for v in col[span] if v is not None]

    def mean_seconds(span: str) -> float | None:
        """Spec: "mean over rows where the span ran"."""
        return _mean(ran(span))

    def by_mean(names: list[str]) -> list[str]:
        """Spec: "siblings by mean_seconds descending, then name"."""
        return sorted(names, key=lambda s: (-(mean_seconds(s) or 0.0), s))

    def share(span: str, parent: str) -> float | None:
        """Spec: mean over the rows whose (effective) parent ran and is > 0 of coalesce(span, 0) / parent."""
        pairs = zip(col[span], col[parent], strict=True)
        ratios = [(v or 0.0) / p for v, p in pairs if p is not None and p > 0]
        return _mean(ratios)

    out: list[Row] = []

    def emit(span: str, within: str, share: float | None, seconds: float | None, steps: int) -> None:
        out.append(
            {
                "run": run,
                "span": span,
                "within": within,
                "mean_seconds": seconds,
                "share_of_within": share,
                "steps": steps,
            }
        )

    def visit(span: str, within: str, share_of_within: float | None) -> None:
        """Depth-first: the span, then each child (siblings by mean desc, name) with its subtree."""
        emit(span, within, share_of_within, mean_seconds(span), len(ran(span)))
        for child in by_mean(children[span]):
            visit(child, span, share(child, span))

    if "step" in recorded:
        visit("step", "-", None)
        # "`unattributed`: per row where `step` ran, `step - sum(its effective direct children)`"
        residuals, fractions = [], []
        for i, step_s in enumerate(col["step"]):
            if step_s is None:
                continue
            residual = step_s - math.fsum(col[c][i] or 0.0 for c in children["step"])
            residuals.append(residual)
            if step_s > 0:
                fractions.append(residual / step_s)
        mean_residual = statistics.fmean(residuals)
        if mean_residual >= 0:
            emit("unattributed", "step", _mean(fractions), mean_residual, len(residuals))
        else:  # "`overlap` with mean_seconds = the excess and share NULL"
            emit("overlap", "step", None, -mean_residual, len(residuals))

    # "Top-level spans outside `step`: within `outside step`, share NULL", then their subtrees.
    for root in by_mean([s for s in declared if parent_of[s] is None and s != "step"]):
        visit(root, "outside step", None)

    # "Undeclared spans: within `not declared`, share NULL, ordered by mean_seconds desc then name."
    for span in by_mean([s for s in spans if s not in DECLARED_PARENT]):
        emit(span, "not declared", None, mean_seconds(span), len(ran(span)))
    return out


def q_step_timing(run: str, run_dir: Path) -> list[Row]:
    """One row per metric row and recorded `timing/*` span; share_of_step = seconds / timing/step."""
    out = []
    for row in read_metric_rows(run_dir):
        step_s = row.get("timing/step")
        for col, value in row.items():
            if not col.startswith("timing/") or not isinstance(value, float):
                continue
            share = value / step_s if isinstance(step_s, float) and step_s != 0 else None
            out.append(
                {
                    "run": run,
                    "step": row["step"],
                    "log_file": row.get("log_file"),
                    "span": col[len("timing/") :],
                    "seconds": value,
                    "share_of_step": share,
                }
            )
    # "ordered by run, step, log_file, span" (stable: a step logged twice in one log keeps CSV order)
    out.sort(key=lambda r: (_none_last(r["step"]), _none_last(r["log_file"]), r["span"]))
    return out


# --------------------------------------------------------------------------------------------
# Queries over trials
# --------------------------------------------------------------------------------------------


def _turns(trials: list[Row]) -> list[float]:
    return [float(t["n_episodes"]) for t in trials if t["n_episodes"] is not None]


def q_turn_stats(run: str, run_dir: Path) -> list[Row]:
    """Over trials with `n_episodes`; one row per run (trials 0, NULL statistics when none)."""
    if not has_trials(run_dir):
        return []
    turns = _turns(read_trials(run_dir))
    return [
        {
            "run": run,
            "trials": len(turns),
            "mean": _mean(turns),
            "median": _median(turns),
            "std": _std(turns),
            "min": _min(turns),
            "max": _max(turns),
        }
    ]


def q_turn_percentiles(run: str, run_dir: Path) -> list[Row]:
    """`All trials` first, then exception types by name; types without turns have no row."""
    with_turns = [t for t in read_trials(run_dir) if t["n_episodes"] is not None]
    groups: list[tuple[str, list[float]]] = []
    if with_turns:
        groups.append(("All trials", _turns(with_turns)))
    for exc in sorted({t["exception_type"] for t in with_turns}):
        groups.append((exc, _turns([t for t in with_turns if t["exception_type"] == exc])))
    return [
        {
            "run": run,
            "exception_type": label,
            "trials": len(turns),
            "p50": percentile(turns, 0.50),
            "p75": percentile(turns, 0.75),
            "p90": percentile(turns, 0.90),
            "p95": percentile(turns, 0.95),
            "p99": percentile(turns, 0.99),
            "max": _max(turns),
        }
        for label, turns in groups
    ]


def q_turns_by_exception(run: str, run_dir: Path) -> list[Row]:
    """Trials with `n_episodes` grouped by type; "ordered by mean_turns descending, then exception_type"."""
    with_turns = [t for t in read_trials(run_dir) if t["n_episodes"] is not None]
    groups: dict[str, list[float]] = {}
    for t in with_turns:
        groups.setdefault(t["exception_type"], []).append(float(t["n_episodes"]))
    out = [
        {
            "run": run,
            "exception_type": exc,
            "trials": len(turns),
            "mean_turns": _mean(turns),
            "median_turns": _median(turns),
        }
        for exc, turns in groups.items()
    ]
    out.sort(key=lambda r: (-r["mean_turns"], r["exception_type"]))
    return out


def q_turns_by_outcome(run: str, run_dir: Path) -> list[Row]:
    """Trials with both `n_episodes` and `reward`: Success = reward > 0, Failure = reward = 0
    (a negative reward is neither); Success first; an outcome with no trial has no row."""
    trials = [t for t in read_trials(run_dir) if t["n_episodes"] is not None and t["reward"] is not None]
    outcomes: list[tuple[str, Callable[[float], bool]]] = [
        ("Success", lambda r: r > 0),
        ("Failure", lambda r: r == 0),
    ]
    out = []
    for label, test in outcomes:
        turns = _turns([t for t in trials if test(t["reward"])])
        if turns:
            out.append(
                {
                    "run": run,
                    "outcome": label,
                    "trials": len(turns),
                    "mean_turns": _mean(turns),
                    "median_turns": _median(turns),
                }
            )
    return out


def q_exception_distribution(run: str, run_dir: Path) -> list[Row]:
    """Count per type, pct of all trials of the run, "ordered by count descending, ties in order
    of first appearance in the CSV"; treatment = the configured one (`none` for no exception)."""
    trials = read_trials(run_dir)
    route = routing(run_dir)
    counts: dict[str, int] = {}  # insertion order = first appearance in the CSV
    for t in trials:
        counts[t["exception_type"]] = counts.get(t["exception_type"], 0) + 1
    order = sorted(counts, key=lambda exc: -counts[exc])  # stable sort keeps first appearance on ties
    return [
        {
            "run": run,
            "exception_type": exc,
            "trials": counts[exc],
            "pct": 100.0 * counts[exc] / len(trials),
            "treatment": configured_treatment(exc, route),
        }
        for exc in order
    ]


def q_exception_treatment(run: str, run_dir: Path) -> list[Row]:
    """Each trial under its effective treatment; rows `none`, `passthrough`, `mask`, `zero`;
    exception_types = distinct types of that treatment, sorted, joined with ', '."""
    trials = read_trials(run_dir)
    route = routing(run_dir)
    groups: dict[str, list[Row]] = {"none": [], "passthrough": [], "mask": [], "zero": []}
    for t in trials:
        groups[effective_treatment(t, route)].append(t)
    return [
        {
            "run": run,
            "treatment": treatment,
            "trials": len(members),
            "pct": 100.0 * len(members) / len(trials),
            "exception_types": ", ".join(sorted({t["exception_type"] for t in members})),
        }
        for treatment, members in groups.items()
        if members
    ]


def q_reward_summary(run: str, run_dir: Path) -> list[Row]:
    """Over trials with a reward: mean, success rate (share with reward > 0, 0-1), count; plus
    total trials and trials with turns."""
    if not has_trials(run_dir):
        return []
    trials = read_trials(run_dir)
    rewards = [t["reward"] for t in trials if t["reward"] is not None]
    return [
        {
            "run": run,
            "trials": len(trials),
            "trials_with_reward": len(rewards),
            "mean_reward": _mean(rewards),
            "success_rate": sum(1 for r in rewards if r > 0) / len(rewards) if rewards else None,
            "trials_with_turns": len(_turns(trials)),
        }
    ]


# trial_phases: phase -> the column(s) holding it, first non-NULL wins
# ("`agent_execution_duration`, else `agent_duration_sec`")
_PHASES: dict[str, tuple[str, ...]] = {
    "environment_setup": ("environment_setup_duration",),
    "agent_setup": ("agent_setup_duration",),
    "agent_execution": ("agent_execution_duration", "agent_duration_sec"),
    "verifier": ("verifier_duration",),
}


def q_trial_phases(run: str, run_dir: Path) -> list[Row]:
    trials = read_trials(run_dir)

    def phase_value(t: Row, phase: str) -> float | None:
        return next((t[c] for c in _PHASES[phase] if t[c] is not None), None)

    values = {phase: [phase_value(t, phase) for t in trials] for phase in _PHASES}
    if not any(v is not None for vs in values.values() for v in vs):
        return []  # "A run without any phase column returns no rows."
    timed = [i for i, t in enumerate(trials) if t["trial_duration"] is not None]
    total_duration = math.fsum(trials[i]["trial_duration"] for i in timed) if timed else None

    def share_of(amount: float) -> float | None:
        return amount / total_duration if total_duration else None

    out: list[Row] = []

    def emit(phase: str, vals: list[float], share: float | None) -> None:
        out.append(
            {
                "run": run,
                "phase": phase,
                "median_s": _median(vals),
                "mean_s": _mean(vals),
                "total_s": _sum(vals),
                "share_of_trial": share,
                "trials": len(vals),
            }
        )

    for phase, vs in values.items():
        present = [v for v in vs if v is not None]
        if not present:
            continue
        # "the phase's sum over trials that have a `trial_duration` divided by the sum of trial_duration"
        share = share_of(math.fsum(vs[i] for i in timed if vs[i] is not None)) if timed else None
        emit(phase, present, share)

    if timed:
        # "trial_duration - sum(its non-NULL phases)" per trial with a trial_duration
        residuals = []
        for i in timed:
            phases = [vs[i] for vs in values.values() if vs[i] is not None]
            residuals.append(trials[i]["trial_duration"] - math.fsum(phases))
        total = math.fsum(residuals)
        if total >= 0:
            emit("unattributed", residuals, share_of(total))
        else:
            emit("overlap", [-r for r in residuals], None)
    return out


# --------------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------------


def utilization(mean_waiting: float | None, mean_running: float | None, mean_gen_tps: float | None) -> str:
    """data-contract.md section 5: "mean waiting = 0 and mean running per engine < 5:
    underutilized; else mean waiting > 0: well utilized; else mean generation throughput per
    engine < 300 tok/s: low throughput; else moderate". A NULL comparison is false (as in SQL)."""
    if mean_waiting is not None and mean_waiting == 0 and mean_running is not None and mean_running < 5:
        return "underutilized"
    if mean_waiting is not None and mean_waiting > 0:
        return "well-utilized"
    if mean_gen_tps is not None and mean_gen_tps < 300:
        return "low throughput"
    return "moderate"


def q_vllm_summary(run: str, run_dir: Path) -> list[Row]:
    rows = read_vllm_rows(run_dir)
    logs: dict[str | None, list[Row]] = {}
    for row in rows:
        logs.setdefault(row.get("log_file"), []).append(row)
    out = []
    for log in sorted(logs, key=_none_last):
        group = logs[log]

        def values(column: str, group: list[Row] = group) -> list[float]:
            return _nums([r.get(column) for r in group])

        mean_running = _mean(values("avg_running_requests_per_engine"))
        mean_waiting = _mean(values("total_waiting_requests"))
        mean_gen = _mean(values("avg_generation_throughput_per_engine"))
        out.append(
            {
                "run": run,
                "log_file": log,
                "seconds": len(group),  # one row per (log_file, second)
                "mean_engines_reporting": _mean(values("n_engines_reporting")),
                "mean_running_per_engine": mean_running,
                "max_total_running": _max(values("total_running_requests")),
                "mean_total_waiting": mean_waiting,
                "max_total_waiting": _max(values("total_waiting_requests")),
                "mean_generation_tps_per_engine": mean_gen,
                "max_total_generation_tps": _max(values("total_generation_throughput_tokens_per_sec")),
                "mean_kv_cache_pct": _mean(values("avg_gpu_kv_cache_usage_pct")),
                "mean_prefix_cache_hit_pct": _mean(values("avg_prefix_cache_hit_rate_pct")),
                "utilization": utilization(mean_waiting, mean_running, mean_gen),
                "stat_lines": len(group),  # version 2: the same count under an honest name
            }
        )
    return out


# --------------------------------------------------------------------------------------------
# compare_runs (docs/semantics.md): headline figures per run, and the config keys that differ
# --------------------------------------------------------------------------------------------


#: run folder -> its _flat_config, while one expected()/expected_view() call computes its rows (the files do not
#: change meanwhile): each run's row compares its config with every other run's, so over 200 runs each config was
#: found and flattened 200 times (~7 of test_many_runs' 8 CPU-s). None outside such a call: nothing is kept.
_FLAT_CONFIGS: dict[Path, dict[str, tuple[str, str]] | None] | None = None


@contextlib.contextmanager
def _one_call() -> Iterator[None]:
    """Keep each run's flattened config for the rows of one expected()/expected_view() call (_FLAT_CONFIGS)."""
    global _FLAT_CONFIGS
    outer = _FLAT_CONFIGS
    _FLAT_CONFIGS = {} if outer is None else outer
    try:
        yield
    finally:
        _FLAT_CONFIGS = outer


def _flat_config(run_dir: Path) -> dict[str, tuple[str, str]] | None:
    """Dotted key -> (comparison key, printed text) of every YAML leaf (lists are leaves; a YAML
    null prints `null`); None without a usable config."""
    if _FLAT_CONFIGS is None:
        return _flatten_config(run_dir)
    if run_dir not in _FLAT_CONFIGS:
        _FLAT_CONFIGS[run_dir] = _flatten_config(run_dir)
    return _FLAT_CONFIGS[run_dir]


def _flatten_config(run_dir: Path) -> dict[str, tuple[str, str]] | None:
    config = load_config(run_dir) if find_artifacts(run_dir)["config"] is not None else None
    if not isinstance(config, dict):
        return None
    leaves: dict[str, tuple[str, str]] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
            return
        if node is None:
            text = "null"
        elif isinstance(node, bool):
            text = "true" if node else "false"
        elif isinstance(node, list):
            text = json.dumps(node, default=str)
        else:
            text = str(node)
        leaves[prefix] = (json.dumps(node, default=str), text)

    walk(config, "")
    return leaves


def q_compare_runs(run: str, run_dir: Path, span: int = 5, run_dirs: list[Path] | None = None) -> list[Row]:
    """One row per run: steps = deduplicated steps; trials, success_rate and mean_reward as in
    reward_summary; final_ema = EMA at the last step with one; best_ema = the highest EMA, ties to
    the earliest step; mean_step_time_s = mean timing/step over deduplicated steps; the rates are
    shares of all trials; differing_config = `key=value` (`<missing>` where the run lacks the key)
    for the keys whose values differ among the runs with a config, sorted by key, joined by '; '."""
    has_metrics = find_artifacts(run_dir)["metrics"] is not None
    steps = dedup_steps(read_metric_rows(run_dir)) if has_metrics else []
    curve = [r for r in _reward_curve_rows(run, run_dir, span) if r["ema"] is not None] if has_metrics else []
    best = None
    for r in curve:  # ascending steps; strict > keeps the earliest of equal EMAs
        if best is None or r["ema"] > best["ema"]:
            best = r
    summary = q_reward_summary(run, run_dir)
    trials = read_trials(run_dir)

    def rate(exception: str) -> float | None:
        if not trials:
            return None
        return sum(1 for t in trials if t["exception_type"] == exception) / len(trials)

    differing = None
    own = _flat_config(run_dir)
    if own is not None:
        configs = [c for c in (_flat_config(d) for d in (run_dirs or [run_dir])) if c is not None]
        keys = sorted({k for c in configs for k in c})
        differ = [k for k in keys if len({c[k][0] if k in c else None for c in configs}) > 1]
        differing = "; ".join(f"{k}={own[k][1] if k in own else '<missing>'}" for k in differ)
    return [
        {
            "run": run,
            "steps": len(steps) if has_metrics else None,
            "trials": summary[0]["trials"] if summary else None,
            "success_rate": summary[0]["success_rate"] if summary else None,
            "mean_reward": summary[0]["mean_reward"] if summary else None,
            "final_ema": curve[-1]["ema"] if curve else None,
            "best_ema": best["ema"] if best else None,
            "best_ema_step": best["step"] if best else None,
            "mean_step_time_s": _mean(_nums([r.get("timing/step") for r in steps])) if has_metrics else None,
            "timeout_rate": rate("AgentTimeoutError"),
            "context_length_rate": rate("ContextLengthExceededError"),
            "differing_config": differing,
        }
    ]


def q_run_summary(
    run: str, run_dir: Path, span: int = 5, save_every: int | None = None, run_dirs: list[Path] | None = None
) -> list[Row]:
    """The run_summary view: compare_runs' figures, trials_with_reward, the best checkpoint's step and
    EMA, training_time_s = sum of timing/step over every metric row, mean_staleness (async_health),
    and the direct child of `step` with the highest mean seconds (timing_breakdown; ties by name)."""
    compare = q_compare_runs(run, run_dir, span, run_dirs)[0]
    summary = q_reward_summary(run, run_dir)
    best = q_best_checkpoint(run, run_dir, span, save_every)
    health = q_async_health(run, run_dir)
    rows = read_metric_rows(run_dir)
    times = _nums([r.get("timing/step") for r in rows])
    children = [
        r
        for r in q_timing_breakdown(run, run_dir)
        if r["within"] == "step" and r["span"] not in ("unattributed", "overlap")
    ]
    slowest = None
    for r in sorted(children, key=lambda r: r["span"]):  # by name: strict > keeps the first of a tie
        if slowest is None or r["mean_seconds"] > slowest["mean_seconds"]:
            slowest = r
    return [
        {
            "run": run,
            "steps": compare["steps"],
            "trials": compare["trials"],
            "trials_with_reward": summary[0]["trials_with_reward"] if summary else None,
            "success_rate": compare["success_rate"],
            "mean_reward": compare["mean_reward"],
            "final_ema": compare["final_ema"],
            "best_ema": compare["best_ema"],
            "best_ema_step": compare["best_ema_step"],
            "best_checkpoint_step": best[0]["step"] if best else None,
            "best_checkpoint_ema": best[0]["ema"] if best else None,
            "mean_step_time_s": compare["mean_step_time_s"],
            "training_time_s": math.fsum(times) if times else None,
            "timeout_rate": compare["timeout_rate"],
            "context_length_rate": compare["context_length_rate"],
            "mean_staleness": health[0]["mean_staleness"] if health else None,
            "slowest_span": slowest["span"] if slowest else None,
            "slowest_span_mean_s": slowest["mean_seconds"] if slowest else None,
            "slowest_span_share": slowest["share_of_within"] if slowest else None,
        }
    ]


def q_run_table_map(
    run: str,
    run_dir: Path,
    span: int = 5,
    save_every: int | None = None,
    keys: str | None = None,
    run_dirs: list[Path] | None = None,
) -> list[Row]:
    """run_summary plus `config`: key -> the run's value text (None where it lacks the key) for the
    given comma-separated keys, else for the keys whose values differ between the runs with a config."""
    row = q_run_summary(run, run_dir, span, save_every, run_dirs)[0]
    own = _flat_config(run_dir) or {}
    if keys is not None:
        chosen = sorted({k.strip() for k in keys.split(",") if k.strip()})
    else:
        configs = [c for c in (_flat_config(d) for d in (run_dirs or [run_dir])) if c is not None]
        every = sorted({k for c in configs for k in c})
        chosen = [k for k in every if len({c[k][0] if k in c else None for c in configs}) > 1]
    return [{**row, "config": {k: own[k][1] if k in own else None for k in chosen}}]


def q_run_table(
    run: str,
    run_dir: Path,
    span: int = 5,
    save_every: int | None = None,
    keys: str | None = None,
    run_dirs: list[Path] | None = None,
) -> list[Row]:
    """run_table_map with its `config` spread into one column per key (sorted), named by the key, or
    `config.KEY` where a headline column (compared case-insensitively) has that name."""
    row = q_run_table_map(run, run_dir, span, save_every, keys, run_dirs)[0]
    config = row.pop("config")
    every = [c for c in (_flat_config(d) for d in (run_dirs or [run_dir])) if c is not None]
    taken = {c.lower() for c in row}
    for key, value in sorted(config.items()):
        column = key if key.lower() not in taken else f"config.{key}"
        taken.add(column.lower())
        row[column] = _typed(value, [c[key][1] for c in every if key in c])
    return [row]


def _typed(text: str | None, texts: list[str | None]) -> Any:
    """run_table version 3 (docs/semantics.md): a config column is BIGINT when every run's value is an
    integer within 64 bits, DOUBLE when every value is a finite number (a JSON number: no `nan`, `1_000`,
    leading zeros; integers within 2**53), BOOLEAN when every value is true/false, else text; a YAML null
    (`null`) is NULL in a typed column and counts for no type; a column of nulls only is text."""
    values = [t for t in texts if t is not None and t != "null"]

    def whole(t: str) -> bool:
        return re.fullmatch(r"-?(0|[1-9]\d*)", t) is not None

    def integer(t: str) -> bool:
        return whole(t) and -(2**63) <= int(t) <= 2**63 - 1

    def number(t: str) -> bool:
        if re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?", t) is None:
            return False
        return abs(int(t)) <= 2**53 if whole(t) else math.isfinite(float(t))

    if not values:
        return text
    if text is None or text == "null":
        return None
    if all(t in ("true", "false") for t in values):
        return text == "true"
    if all(integer(t) for t in values):
        return int(text)
    if all(number(t) for t in values):
        return float(text)
    return text


# --------------------------------------------------------------------------------------------
# The report's own views (rlsql report): plain Python over the same readers
# --------------------------------------------------------------------------------------------


def _fnum(value: Any) -> float | None:
    return value if isinstance(value, float) else None


def v_log_summary(run: str, run_dir: Path) -> list[Row]:
    """Per log_file (sorted): rows, first/last step, and means over the log's rows of reward, the run's
    pass@k column, timing/step, generation wait, generate/avg_num_tokens, async/staleness_mean."""
    rows = read_metric_rows(run_dir)
    pass_col, k = _pass_at_k_column(rows)
    out = []
    for log in sorted({r.get("log_file") for r in rows}, key=lambda v: (v is None, v)):
        mine = [r for r in rows if r.get("log_file") == log]
        steps = [r["step"] for r in mine if r["step"] is not None]

        def mean(column: str | None, mine: list[Row] = mine) -> float | None:
            return _mean(_nums([r.get(column) for r in mine])) if column else None

        out.append(
            {
                "run": run,
                "log_file": log,
                "rows": len(mine),
                "first_step": min(steps) if steps else None,
                "last_step": max(steps) if steps else None,
                "mean_reward": mean("reward/avg_raw_reward"),
                "mean_pass_at_k": mean(pass_col),
                "k": k,
                "mean_step_s": mean("timing/step"),
                "mean_generation_wait_s": mean("timing/wait_for_generation_buffer"),
                "mean_tokens": mean("generate/avg_num_tokens"),
                "mean_staleness": mean("async/staleness_mean"),
            }
        )
    return out


def _first_logged(rows: list[Row], candidates: list[str]) -> str | None:
    return next((c for c in candidates if any(isinstance(r.get(c), float) for r in rows)), None)


def v_progression_rows(run: str, run_dir: Path) -> list[Row]:
    """Every metric row with a step, by step then CSV order: used = the step's first-seen row, rerun =
    the step has several rows; the newest progression columns where logged."""
    rows = read_metric_rows(run_dir)
    pass_col, _ = _pass_at_k_column(rows)
    kl = _first_logged(rows, ["policy/policy_kl", "policy/policy_entropy"])
    loss = _first_logged(rows, ["loss/final_loss", "policy/final_loss", "policy/policy_loss"])
    first: dict[Any, int] = {}
    counts: dict[Any, int] = {}
    for i, r in enumerate(rows):
        if r["step"] is not None:
            first.setdefault(r["step"], i)
            counts[r["step"]] = counts.get(r["step"], 0) + 1
    out = []
    for i, r in sorted(
        ((i, r) for i, r in enumerate(rows) if r["step"] is not None), key=lambda p: (p[1]["step"], p[0])
    ):
        out.append(
            {
                "run": run,
                "step": r["step"],
                "log_file": r.get("log_file"),
                "used": first[r["step"]] == i,
                "rerun": counts[r["step"]] > 1,
                "reward": _fnum(r.get("reward/avg_raw_reward")),
                "pass_at_k": _fnum(r.get(pass_col)) if pass_col else None,
                "kl_or_entropy": _fnum(r.get(kl)) if kl else None,
                "loss": _fnum(r.get(loss)) if loss else None,
                "kl_or_entropy_metric": kl,
                "loss_metric": loss,
                "epoch": _fnum(r.get("trainer/epoch")),
                "grad_norm": _fnum(r.get("policy/raw_grad_norm")),
                "ppo_clip_ratio": _fnum(r.get("policy/ppo_clip_ratio")),
                "policy_loss": _fnum(r.get("policy/policy_loss")),
                "log_ratio_mean": _fnum(r.get("policy/log_ratio_abs_mean")),
                "step_seconds": _fnum(r.get("timing/step")),
                "generation_wait_seconds": _fnum(r.get("timing/wait_for_generation_buffer")),
            }
        )
    return out


def v_timing_table(run: str, run_dir: Path) -> list[Row]:
    """timing_breakdown's rows with share_of_step: the mean over rows where step ran and is > 0 of
    span / step (a row without the span counts 0); step itself 1; unattributed its share_of_within."""
    rows = read_metric_rows(run_dir)
    out = []
    for b in q_timing_breakdown(run, run_dir):
        span = b["span"]
        if span == "step":
            share = 1.0
        elif span == "unattributed":
            share = b["share_of_within"]
        elif span == "overlap":
            share = None
        else:
            ratios = [
                (_fnum(r.get(f"timing/{span}")) or 0.0) / r["timing/step"]
                for r in rows
                if isinstance(r.get("timing/step"), float) and r["timing/step"] > 0
            ]
            share = _mean(ratios)
        out.append(
            {
                "run": run,
                "span": span,
                "within": b["within"],
                "mean_seconds": b["mean_seconds"],
                "share_of_within": b["share_of_within"],
                "share_of_step": share,
                "steps": b["steps"],
            }
        )
    return out


def v_step_signals(run: str, run_dir: Path) -> list[Row]:
    """Per deduplicated step: entropy, grad norm, |log ratio| mean, agent timeouts and context-length
    errors per batch (batch_errors/avg_*)."""
    return [
        {
            "run": run,
            "step": r["step"],
            "entropy": _fnum(r.get("policy/policy_entropy")),
            "grad_norm": _fnum(r.get("policy/raw_grad_norm")),
            "log_ratio_mean": _fnum(r.get("policy/log_ratio_abs_mean")),
            "timeouts_per_batch": _fnum(r.get("batch_errors/avg_AgentTimeoutError")),
            "context_length_per_batch": _fnum(r.get("batch_errors/avg_ContextLengthExceededError")),
        }
        for r in dedup_steps(read_metric_rows(run_dir))
    ]


#: view name -> oracle function (run, run_dir) -> rows, for the report's views
VIEWS: dict[str, Callable[..., list[Row]]] = {
    "log_summary": v_log_summary,
    "progression_rows": v_progression_rows,
    "timing_table": v_timing_table,
    "step_signals": v_step_signals,
    "run_summary": q_run_summary,
}


def v_run_ranking(run_dirs: list[Path], **params: Any) -> list[Row]:
    """run_table_map's rows ranked, best first: by final_ema when any run has one, else by success_rate,
    higher first, ties by run name; a run without the figure gets rank None and comes last, by name."""
    dirs = sorted((Path(d) for d in run_dirs), key=run_name)
    rows = [r for d in dirs for r in q_run_table_map(run_name(d), d, run_dirs=dirs, **params)]
    basis = "final_ema" if any(r["final_ema"] is not None for r in rows) else "success_rate"
    scored = sorted((r for r in rows if r[basis] is not None), key=lambda r: (-r[basis], r["run"]))
    unscored = sorted((r for r in rows if r[basis] is None), key=lambda r: r["run"])
    out = []
    for rank, r in enumerate(scored, start=1):
        out.append({"run": r["run"], "rank": rank, "ranked_by": basis, **{k: v for k, v in r.items() if k != "run"}})
    for r in unscored:
        out.append({"run": r["run"], "rank": None, "ranked_by": basis, **{k: v for k, v in r.items() if k != "run"}})
    return out


def expected_view(name: str, run_dirs: list[Path], **params: Any) -> list[Row]:
    """Rows of one of the report's views over `run_dirs`, ordered by run name, then the view's order
    (run_ranking: in its own order, best first)."""
    out: list[Row] = []
    dirs = sorted((Path(d) for d in run_dirs), key=run_name)
    if name == "run_ranking":
        with _one_call():
            return v_run_ranking(dirs, **params)
    with _one_call():
        for run_dir in dirs:
            if name == "run_summary":
                out += q_run_summary(run_name(run_dir), run_dir, run_dirs=dirs, **params)
            elif find_artifacts(run_dir)["metrics"] is not None:
                out += VIEWS[name](run_name(run_dir), run_dir, **params)
    return out


# --------------------------------------------------------------------------------------------
# Agent trajectories (docs/trajectories.md): plain json over trace_jobs/<trial>/agent/trajectory*.json
# --------------------------------------------------------------------------------------------

_SEGMENT_NAME = re.compile(r"^trajectory\.cont-([1-9][0-9]*)\.json$")
#: "ISO 8601 as Harbor writes it": a date, then an optional time to the microsecond with an optional Z or
#: +HH:MM / -HH:MM offset (docs/trajectories.md, `ts`)
_ISO_STAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?)?$"
)
TRAJECTORY_STEP_COLUMNS = [
    "run",
    "trial_name",
    "segment",
    "step_id",
    "turn",
    "source",
    "ts",
    "model_name",
    "message_chars",
    "reasoning_chars",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "copied",
]
TOOL_CALL_COLUMNS = [
    "run",
    "trial_name",
    "segment",
    "step_id",
    "turn",
    "call_index",
    "tool_call_id",
    "function_name",
    "arguments",
    "observation_chars",
    "copied",
]
TOOL_CALL_NAME_COLUMNS = ["run", "trial_name", "segment", "step_id", "call_index", "function_name", "copied"]
TOOL_CALL_ARGUMENT_COLUMNS = [c for c in TOOL_CALL_COLUMNS if c != "observation_chars"]


def trajectory_files(run_dir: Path | str) -> tuple[list[tuple[str, int, Path]], int, int]:
    """([(trial, segment, path)] of a run's trajectory files in trial-folder then segment order, trial folders,
    trial folders without a trajectory): "A trial folder without agent/ or without trajectory.json has no rows";
    segment N is trajectory.cont-N.json, N written without leading zeros."""
    trace_jobs = Path(run_dir) / "trace_jobs"
    if not trace_jobs.is_dir():
        return [], 0, 0
    files, trials, without = [], 0, 0
    for trial in sorted(os.listdir(trace_jobs)):
        if not (trace_jobs / trial).is_dir():
            continue
        trials += 1
        agent = trace_jobs / trial / "agent"
        names = os.listdir(agent) if agent.is_dir() else []
        if "trajectory.json" not in names:
            without += 1
            continue
        continuations = sorted((int(m.group(1)), n) for n in names if (m := _SEGMENT_NAME.match(n)))
        segments = [(0, "trajectory.json"), *continuations]
        files += [(trial, segment, agent / name) for segment, name in segments]
    return files, trials, without


def read_trajectory(path: Path) -> dict | None:
    """A trajectory file's document, or None when it is skipped ("does not parse ... not an object, no steps
    list, or a step without an integer step_id"; "a continuation numbered past 2**31-1", past the INTEGER
    segment)."""
    numbered = _SEGMENT_NAME.match(path.name)
    if numbered and int(numbered.group(1)) > 2**31 - 1:
        return None
    text = _harbor_text(path)  # the same rule as result.json files: a regular, readable, UTF-8 file
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        return None
    for step in doc["steps"]:
        step_id = step.get("step_id") if isinstance(step, dict) else None
        if not isinstance(step_id, int) or isinstance(step_id, bool) or not 1 <= step_id < 2**63:
            return None
    return doc


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _chars(value: Any) -> int:
    """A string's length, or the lengths of the `text` of the parts of type text; anything else 0."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(
            len(p["text"])
            for p in value
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return 0


def _count(value: Any) -> int | None:
    """A token count: a whole number from 0 to 2**53 ("greater than 2**53 or negative are bad cells: NULL")."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    return int(value) if 0 <= value <= 2**53 else None


def _utc(value: Any) -> datetime | None:
    """`timestamp` as UTC without tzinfo: an offset applied, none read as UTC; NULL when absent or another form."""
    if not isinstance(value, str) or not _ISO_STAMP.match(value):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = (when - when.utcoffset()).replace(tzinfo=None)
    return when


def canonical(value: Any) -> str:
    """'the arguments object as canonical JSON text' (the contract states this call)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: "arguments whose objects and arrays nest more than 100 deep are read as empty (NULL)"
MAX_ARGUMENT_DEPTH = 100


def _depth(value: Any) -> int:
    """How deep objects and arrays nest in `value` (a scalar 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            todo.extend((c, level + 1) for c in children)
    return deepest


def trajectory_rows(run_dir: Path | str) -> tuple[list[Row], list[Row]]:
    """(trajectory_steps rows, tool_calls rows) of one run, in the views' orders."""
    run = run_name(run_dir)
    steps: list[Row] = []
    calls: list[Row] = []
    files, _, _ = trajectory_files(run_dir)
    for trial, segment, path in files:
        doc = read_trajectory(path)
        if doc is None:
            continue
        agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
        for index, step in enumerate(doc["steps"]):
            metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else {}
            tool_calls = step.get("tool_calls") if isinstance(step.get("tool_calls"), list) else []
            cost = metrics.get("cost_usd")
            row = {
                "run": run,
                "trial_name": trial,
                "segment": segment,
                "step_id": step["step_id"],
                "turn": None,
                "source": _string(step.get("source")),
                "ts": _utc(step.get("timestamp")),
                "model_name": _string(step.get("model_name")) or _string(agent.get("model_name")),
                "message_chars": _chars(step.get("message")),
                "reasoning_chars": len(step["reasoning_content"])
                if isinstance(step.get("reasoning_content"), str)
                else 0,
                "tool_calls": len(tool_calls),
                "prompt_tokens": _count(metrics.get("prompt_tokens")),
                "completion_tokens": _count(metrics.get("completion_tokens")),
                "cached_tokens": _count(metrics.get("cached_tokens")),
                "cost_usd": float(cost)
                if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost)
                else None,
                "copied": step.get("is_copied_context") is True,
                "_index": index,
            }
            steps.append(row)
            observation = step.get("observation") if isinstance(step.get("observation"), dict) else {}
            results = observation.get("results") if isinstance(observation.get("results"), list) else []
            for i, call in enumerate(tool_calls):
                call = call if isinstance(call, dict) else {}
                call_id = _string(call.get("tool_call_id"))
                arguments = call.get("arguments")
                calls.append(
                    {
                        "run": run,
                        "trial_name": trial,
                        "segment": segment,
                        "step_id": step["step_id"],
                        "turn": row,
                        "call_index": i,
                        "tool_call_id": call_id,
                        "function_name": _string(call.get("function_name")),
                        "arguments": canonical(arguments)
                        if arguments is not None and _depth(arguments) <= MAX_ARGUMENT_DEPTH
                        else None,
                        "observation_chars": sum(
                            _chars(r.get("content"))
                            for r in results
                            if isinstance(r, dict)
                            and call_id is not None
                            and _string(r.get("source_call_id")) == call_id
                        ),
                        "copied": row["copied"],
                        "_index": index,
                    }
                )
    # turn: "1-based ordinal of this step among the trial's agent steps that are not copied context, ordered
    # by (segment, step_id)" (a step_id written twice: by its place in the file)
    steps.sort(key=lambda r: (r["trial_name"], r["segment"], r["step_id"], r["_index"]))
    turns: dict[str, int] = {}
    for row in steps:
        if row["source"] == "agent" and not row["copied"]:
            turns[row["trial_name"]] = row["turn"] = turns.get(row["trial_name"], 0) + 1
    for call in calls:
        call["turn"] = call["turn"]["turn"]
    calls.sort(key=lambda r: (r["trial_name"], r["segment"], r["step_id"], r["_index"], r["call_index"]))
    return (
        [{k: r[k] for k in TRAJECTORY_STEP_COLUMNS} for r in steps],
        [{k: r[k] for k in TOOL_CALL_COLUMNS} for r in calls],
    )


def expected_trajectory_view(name: str, run_dirs: list[Path]) -> list[Row]:
    """Rows of trajectory_steps, tool_calls, tool_call_names (tool_calls' rows with only the calls' positions
    and functions) or tool_call_arguments (tool_calls' rows without observation_chars) over `run_dirs`, ordered
    by run name, then the view's order."""
    out: list[Row] = []
    for run_dir in sorted((Path(d) for d in run_dirs), key=run_name):
        steps, calls = trajectory_rows(run_dir)
        out += steps if name == "trajectory_steps" else calls
    if name in ("tool_call_names", "tool_call_arguments"):
        columns = TOOL_CALL_NAME_COLUMNS if name == "tool_call_names" else TOOL_CALL_ARGUMENT_COLUMNS
        return [{k: r[k] for k in columns} for r in out]
    return out


def _trial_facts(run_dir: Path) -> dict[str, Row]:
    """trial_name -> its trials row (the first, in the trials view's order)."""
    facts: dict[str, Row] = {}
    for t in read_trials(run_dir):
        facts.setdefault(t["trial_name"], t)
    return facts


def _outcome(trial: Row | None) -> str:
    """ "a trajectory whose trial has no outcome (no reward, or no trials row at all) is No reward"."""
    reward = trial["reward"] if trial else None
    if reward is None:
        return "No reward"
    return "Success" if reward > 0 else "Failure" if reward == 0 else "No reward"


def q_tool_usage(run: str, run_dir: Path) -> list[Row]:
    if not trajectory_files(run_dir)[0]:
        return []
    facts = _trial_facts(run_dir)
    _, calls = trajectory_rows(run_dir)
    by: dict[Any, list[Row]] = {}
    for c in calls:
        if not c["copied"]:
            by.setdefault(c["function_name"], []).append(c)
    rows = []
    for name, group in by.items():
        trials = {c["trial_name"] for c in group}
        outcomes = [_outcome(facts.get(t)) for t in trials]
        rows.append(
            {
                "run": run,
                "function_name": name,
                "calls": len(group),
                "trials": len(trials),
                "success_trials": outcomes.count("Success"),
                "failure_trials": outcomes.count("Failure"),
                "mean_calls_per_trial": len(group) / len(trials),
            }
        )
    return sorted(rows, key=lambda r: (-r["calls"], _none_last(r["function_name"])))


def q_token_usage(run: str, run_dir: Path) -> list[Row]:
    if not trajectory_files(run_dir)[0]:
        return []
    facts = _trial_facts(run_dir)
    steps, _ = trajectory_rows(run_dir)
    per_trial: dict[str, list[Row]] = {}
    for s in steps:
        if not s["copied"]:
            per_trial.setdefault(s["trial_name"], []).append(s)
    rows = []
    for outcome in ("Success", "Failure", "No reward"):
        trials = [t for t in per_trial if _outcome(facts.get(t)) == outcome]
        if not trials:
            continue
        agent = {t: [s for s in per_trial[t] if s["source"] == "agent"] for t in trials}
        sums = {
            metric: [sum(v) for t in trials if (v := [s[metric] for s in agent[t] if s[metric] is not None])]
            for metric in ("prompt_tokens", "completion_tokens")
        }
        both = [
            s for t in trials for s in agent[t] if s["prompt_tokens"] is not None and s["cached_tokens"] is not None
        ]
        prompt_sum = sum(s["prompt_tokens"] for s in both)
        completions = sums["completion_tokens"]
        prompts = [s["prompt_tokens"] for t in trials for s in agent[t] if s["prompt_tokens"] is not None]
        rows.append(
            {
                "run": run,
                "outcome": outcome,
                "trials": len(trials),
                "agent_steps": sum(len(a) for a in agent.values()),
                "mean_prompt_tokens": _mean([float(v) for v in sums["prompt_tokens"]]),
                "mean_completion_tokens": _mean([float(v) for v in completions]),
                "cached_share": sum(s["cached_tokens"] for s in both) / prompt_sum if prompt_sum > 0 else None,
                "p50_completion_tokens": percentile(completions, 0.5),
                "p90_completion_tokens": percentile(completions, 0.9),
                "max_step_prompt_tokens": max(prompts) if prompts else None,
            }
        )
    return rows


def q_looping_trials(run: str, run_dir: Path, min_repeats: int = 3) -> list[Row]:
    if not trajectory_files(run_dir)[0]:
        return []
    facts = _trial_facts(run_dir)
    _, calls = trajectory_rows(run_dir)  # in (segment, step_id, call_index) order within each trial
    groups: dict[tuple, list[Row]] = {}
    for c in calls:
        if c["turn"] is not None:  # an agent step that is not copied context
            groups.setdefault((c["trial_name"], c["function_name"], c["arguments"]), []).append(c)
    rows = []
    for (trial, name, arguments), group in groups.items():
        if len(group) < min_repeats:
            continue
        fact = facts.get(trial)
        rows.append(
            {
                "run": run,
                "trial_name": trial,
                "outcome": _outcome(fact),
                "exception_type": fact["exception_type"] if fact else None,
                "n_episodes": fact["n_episodes"] if fact else None,
                "function_name": name,
                "arguments": arguments,
                "repeats": len(group),
                "first_turn": group[0]["turn"],
                "last_turn": group[-1]["turn"],
            }
        )
    return sorted(
        rows, key=lambda r: (-r["repeats"], r["trial_name"], _none_last(r["function_name"]), _none_last(r["arguments"]))
    )


# --------------------------------------------------------------------------------------------
# findings (docs/findings.md): what is unusual in a run, one row per finding
# --------------------------------------------------------------------------------------------

FINDING_DEFAULTS: dict[str, Any] = {
    "slow_factor": 5.0,
    "critical_factor": 20.0,
    "idle_share": 0.5,
    "kv_full_pct": 95.0,
    "kv_share": 0.1,
    "waiting_share": 0.25,
    "span": 5,
    "drop": 0.1,
    "rising_steps": 10,
    "spike_factor": 10.0,
    "entropy_floor": 0.25,
    "entropy_first_steps": 5,
    "staleness_factor": 3.0,
    "discard_rate": 0.05,
    "timeout_share": 0.05,
    "masked_share": 0.05,
    "no_reward_share": 0.01,
    "min_repeats": 3,
    "looping_share": 0.1,
}
#: the spans the trainer declares directly under `step` (docs/semantics.md, timing spans)
STEP_CHILD_SPANS = (
    "wait_for_generation_buffer",
    "convert_to_training_input",
    "run_training",
    "sync_weights",
    "generate",
    "postprocess_generator_output",
)
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def shell_word(word: str) -> str:
    """One word of a POSIX command line: as is when plain, else single-quoted."""
    if re.fullmatch(r"[A-Za-z0-9._,:=@%+/-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def duration_text(seconds: float) -> str:
    """`4 h 31 m` (minutes cut), `6 m 46 s`, `12.5 s`, from seconds rounded half away from zero."""
    whole = math.floor(seconds + 0.5)
    if whole >= 3600:
        return f"{whole // 3600} h {whole % 3600 // 60} m"
    if whole >= 60:
        return f"{whole // 60} m {whole % 60} s"
    return f"{fixed_text(seconds, 1)} s"


def fixed_text(x: float, places: int) -> str:
    """x with `places` decimals: x * 10**places (a double, as SQL computes it) rounded half away from zero."""
    scaled = Decimal(x * 10.0**places).to_integral_value(rounding=ROUND_HALF_UP)
    if places == 0:
        return str(int(scaled))
    whole, part = divmod(abs(int(scaled)), 10**places)
    return f"{'-' if scaled < 0 else ''}{whole}.{part:0{places}d}"


def number_text(x: float) -> str:
    """At most 4 decimals, trailing zeros (and a bare point) dropped: 5.0 -> '5', 0.83444 -> '0.8344'."""
    return re.sub(r"\.?0+$", "", fixed_text(x, 4))


def _times(ratio: float) -> str:
    return f"{fixed_text(ratio, 0)}x" if ratio >= 10 else f"{fixed_text(ratio, 1)}x"


def _percent(share: float) -> str:
    """A share as a percent with one decimal; a share that is neither none nor all never reads as 0.0% or 100.0%."""
    text = fixed_text(100 * share, 1)
    if share > 0 and text == "0.0":
        return "<0.1%"
    if share < 1 and text == "100.0":
        return ">99.9%"
    return f"{text}%"


def _k_of_n(k: int, n: int, what: str) -> str:
    return f"{k:,} of {n:,} {what} ({_percent(k / n)})"


def _finding(
    run: str,
    kind: str,
    severity: str,
    log_file: str | None,
    steps: tuple[int, int] | None,
    metric: str,
    value: float,
    baseline: float,
    message: str,
    evidence: str,
) -> Row:
    return {
        "run": run,
        "kind": kind,
        "severity": severity,
        "log_file": log_file,
        "step_from": steps[0] if steps else None,
        "step_to": steps[1] if steps else None,
        "metric": metric,
        "value": value,
        "baseline": baseline,
        "message": message,
        "evidence": evidence,
    }


def _stretches(firing: list[tuple[int, Row, float, float]], lowest: bool) -> list[dict[str, Any]]:
    """Runs of consecutive positions among (position, step row, value, baseline), each with its worst step
    (highest value, or lowest; the earliest of equal ones)."""
    groups: list[list[tuple[int, Row, float, float]]] = []
    for item in firing:
        if groups and groups[-1][-1][0] == item[0] - 1:
            groups[-1].append(item)
        else:
            groups.append([item])
    out = []
    for group in groups:
        worst = group[0]
        for item in group[1:]:
            if (item[2] < worst[2]) if lowest else (item[2] > worst[2]):
                worst = item
        logs = {g[1].get("log_file") for g in group}
        out.append(
            {
                "step_from": group[0][1]["step"],
                "step_to": group[-1][1]["step"],
                "log_file": logs.pop() if len(logs) == 1 else None,
                "worst": worst[1],
                "value": worst[2],
                "baseline": worst[3],
            }
        )
    return out


def _steps_text(s: dict[str, Any]) -> str:
    return f"step {s['step_from']}" if s["step_from"] == s["step_to"] else f"steps {s['step_from']}-{s['step_to']}"


def _at_worst(s: dict[str, Any]) -> str:
    return "" if s["step_from"] == s["step_to"] else f" at step {s['worst']['step']}"


def _step_findings(run: str, run_dir: Path, p: dict[str, Any]) -> list[Row]:
    steps = dedup_steps(read_metric_rows(run_dir))
    if not steps:
        return []
    last = steps[-1]["step"]
    # a step is complete when it has timing/step or a later step exists (the one being written has no step time)
    done = [
        (pos, row) for pos, row in enumerate(steps) if isinstance(row.get("timing/step"), float) or row["step"] < last
    ]
    word = shell_word(run)
    out: list[Row] = []

    def series(metric: str) -> list[tuple[int, Row, float]]:
        return [(pos, row, row[metric]) for pos, row in done if isinstance(row.get(metric), float)]

    def over_median(metric: str, factor: float) -> tuple[list[dict[str, Any]], float | None]:
        values = series(metric)
        median = _median([v for _, _, v in values])
        if median is None or median <= 0:
            return [], median
        return _stretches([(pos, row, v, median) for pos, row, v in values if v >= factor * median], False), median

    slow, _ = over_median("timing/step", p["slow_factor"])
    for s in slow:
        ratio = s["value"] / s["baseline"]
        if s["step_from"] == s["step_to"]:
            text = (
                f"step {s['worst']['step']} took {duration_text(s['value'])}, {_times(ratio)} the median step "
                f"({duration_text(s['baseline'])})"
            )
        else:
            text = (
                f"{_steps_text(s)} each took {number_text(p['slow_factor'])}x the median step "
                f"({duration_text(s['baseline'])})"
                f" or more; the slowest, step {s['worst']['step']}, took {duration_text(s['value'])} "
                f"({_times(ratio)})"
            )
        children = [
            (s["worst"][f"timing/{c}"], c) for c in STEP_CHILD_SPANS if isinstance(s["worst"].get(f"timing/{c}"), float)
        ]
        if children:
            seconds, span = min(children, key=lambda c: (-c[0], c[1]))
            text += f"; {duration_text(seconds)} of it in {span}"
        severity = "critical" if s["value"] >= p["critical_factor"] * s["baseline"] else "warning"
        out.append(
            _finding(
                run,
                "slow_step",
                severity,
                s["log_file"],
                (s["step_from"], s["step_to"]),
                "timing/step",
                s["value"],
                s["baseline"],
                text,
                f"rlsql query step_timing --run {word}",
            )
        )

    spikes, _ = over_median("policy/raw_grad_norm", p["spike_factor"])
    for s in spikes:
        text = (
            f"{_steps_text(s)}: policy/raw_grad_norm reached {number_text(s['value'])}{_at_worst(s)}, "
            f"{_times(s['value'] / s['baseline'])} its run median {number_text(s['baseline'])}"
        )
        out.append(
            _finding(
                run,
                "grad_spike",
                "warning",
                s["log_file"],
                (s["step_from"], s["step_to"]),
                "policy/raw_grad_norm",
                s["value"],
                s["baseline"],
                text,
                f"rlsql query step_signals --run {word}",
            )
        )

    entropy = series("policy/policy_entropy")
    if entropy:
        early = _mean([v for _, _, v in entropy[: p["entropy_first_steps"]]])
        assert early is not None
        lows = [(pos, row, v, early) for pos, row, v in entropy if v < p["entropy_floor"] * early]
        for s in _stretches(lows, True):
            text = (
                f"{_steps_text(s)}: policy/policy_entropy fell to {number_text(s['value'])}{_at_worst(s)}, below "
                f"{number_text(p['entropy_floor'])}x its mean over the first {p['entropy_first_steps']} steps "
                f"({number_text(s['baseline'])})"
            )
            out.append(
                _finding(
                    run,
                    "entropy_collapse",
                    "warning",
                    s["log_file"],
                    (s["step_from"], s["step_to"]),
                    "policy/policy_entropy",
                    s["value"],
                    s["baseline"],
                    text,
                    f"rlsql query step_signals --run {word}",
                )
            )

    stale, _ = over_median("async/staleness_mean", p["staleness_factor"])
    discards = _stretches(
        [
            (pos, row, v, float(p["discard_rate"]))
            for pos, row, v in series("async/discard_rate")
            if v >= p["discard_rate"]
        ],
        False,
    )
    for metric, found in (("async/staleness_mean", stale), ("async/discard_rate", discards)):
        for s in found:
            if metric == "async/discard_rate":
                detail = f"{_percent(s['value'])}{_at_worst(s)}, at or above {_percent(s['baseline'])}"
            else:
                detail = (
                    f"{number_text(s['value'])}{_at_worst(s)}, {_times(s['value'] / s['baseline'])} its run "
                    f"median {number_text(s['baseline'])}"
                )
            out.append(
                _finding(
                    run,
                    "staleness",
                    "warning",
                    s["log_file"],
                    (s["step_from"], s["step_to"]),
                    metric,
                    s["value"],
                    s["baseline"],
                    f"{_steps_text(s)}: {metric} reached {detail}",
                    f"rlsql query async_health --run {word}",
                )
            )

    # the reward EMA over the complete steps with one; the checkpoint the selector picks (q_best_checkpoint)
    span = p["span"]
    curve = {r["step"]: r for r in _reward_curve_rows(run, run_dir, span)}
    emas = [(pos, row, curve[row["step"]]["ema"]) for pos, row in done if curve[row["step"]]["ema"] is not None]
    drops = []
    top = None
    for pos, row, ema in emas:
        top = ema if top is None else max(top, ema)
        if top - ema >= p["drop"]:
            drops.append((pos, row, ema, top))
    for s in _stretches(drops, True):
        text = (
            f"{_steps_text(s)}: the reward EMA ({span}-step) fell to {number_text(s['value'])}{_at_worst(s)}, "
            f"{number_text(s['baseline'] - s['value'])} below its running maximum {number_text(s['baseline'])}"
        )
        out.append(
            _finding(
                run,
                "reward_drop",
                "critical",
                s["log_file"],
                (s["step_from"], s["step_to"]),
                "reward/avg_raw_reward",
                s["value"],
                s["baseline"],
                text,
                f"rlsql query reward_curve --run {word} -p span={span}",
            )
        )

    best = q_best_checkpoint(run, run_dir, span)[0]
    save_every = best["save_every"]
    eligible = [
        r["step"]
        for r in curve.values()
        if r["ema"] is not None and r["step"] % save_every == 0 and r["step"] >= 2 * save_every
    ]
    complete_steps = {row["step"]: row for _, row in done}
    n = p["rising_steps"]
    if (
        best["step"] is not None
        and best["step"] == max(eligible)
        and best["step"] in complete_steps
        and len(emas) >= n
        and emas[-1][2] > emas[-n][2]
    ):
        first, last_ema = emas[-n][2], emas[-1][2]
        text = (
            f"the checkpoint picked, step {best['step']}, is the last eligible step, and the reward EMA "
            f"({span}-step) rose from {number_text(first)} to {number_text(last_ema)} over the last {n} steps: "
            "training may not have converged"
        )
        out.append(
            _finding(
                run,
                "still_improving",
                "info",
                complete_steps[best["step"]].get("log_file"),
                (best["step"], best["step"]),
                "reward/avg_raw_reward",
                last_ema,
                first,
                text,
                f"rlsql query best_checkpoint --run {word} -p span={span}",
            )
        )
    return out


def _vllm_findings(run: str, run_dir: Path, p: dict[str, Any]) -> list[Row]:
    logs: dict[str | None, list[Row]] = {}
    for row in read_vllm_rows(run_dir):
        logs.setdefault(row.get("log_file"), []).append(row)
    evidence = f"rlsql query vllm_activity --run {shell_word(run)} -p kv_full_pct={number_text(p['kv_full_pct'])}"
    out = []
    for log, lines in logs.items():
        n = len(lines)
        rules = [
            (
                "idle_engines",
                "warning",
                "total_running_requests",
                p["idle_share"],
                sum(1 for r in lines if r.get("total_running_requests") == 0),
                "show no running request: its engines sat idle",
            ),
            (
                "kv_cache_pressure",
                "warning",
                "avg_gpu_kv_cache_usage_pct",
                p["kv_share"],
                sum(
                    1 for r in lines if (v := r.get("avg_gpu_kv_cache_usage_pct")) is not None and v >= p["kv_full_pct"]
                ),
                f"have a KV-cache usage of {number_text(p['kv_full_pct'])}% or more",
            ),
            (
                "waiting_requests",
                "info",
                "total_waiting_requests",
                p["waiting_share"],
                sum(1 for r in lines if (r.get("total_waiting_requests") or 0) > 0),
                "have requests waiting",
            ),
        ]
        for kind, severity, metric, threshold, k, what in rules:
            if k / n >= threshold:
                out.append(
                    _finding(
                        run,
                        kind,
                        severity,
                        log,
                        None,
                        metric,
                        k / n,
                        float(threshold),
                        f"{log}: {_k_of_n(k, n, 'vLLM stat lines')} {what}",
                        evidence,
                    )
                )
    return out


def _trial_findings(run: str, run_dir: Path, p: dict[str, Any]) -> list[Row]:
    trials = read_trials(run_dir)
    out = []
    word = shell_word(run)
    if trials:
        route = routing(run_dir)
        n = len(trials)
        rules = [
            (
                "timeouts",
                "warning",
                "exception_type",
                p["timeout_share"],
                sum(1 for t in trials if t["exception_type"] == "AgentTimeoutError"),
                "ended in AgentTimeoutError",
                "exception_distribution",
            ),
            (
                "masked_trials",
                "warning",
                "effective_treatment",
                p["masked_share"],
                sum(1 for t in trials if effective_treatment(t, route) == "mask"),
                "are masked: their exception keeps them out of training",
                "exception_treatment",
            ),
            (
                "no_reward",
                "info",
                "reward",
                p["no_reward_share"],
                sum(1 for t in trials if t["exception_type"] == NO_EXCEPTION and t["reward"] is None),
                "have no exception and no reward",
                "reward_summary",
            ),
        ]
        for kind, severity, metric, threshold, k, what, query in rules:
            if k / n >= threshold:
                out.append(
                    _finding(
                        run,
                        kind,
                        severity,
                        None,
                        None,
                        metric,
                        k / n,
                        float(threshold),
                        f"{_k_of_n(k, n, 'trials')} {what}",
                        f"rlsql query {query} --run {word}",
                    )
                )
    if trajectory_files(run_dir)[0]:
        steps, _ = trajectory_rows(run_dir)
        with_trajectory = {s["trial_name"] for s in steps}
        looping = {r["trial_name"] for r in q_looping_trials(run, run_dir, p["min_repeats"])}
        if with_trajectory and len(looping) / len(with_trajectory) >= p["looping_share"]:
            k, n = len(looping), len(with_trajectory)
            out.append(
                _finding(
                    run,
                    "looping",
                    "warning",
                    None,
                    None,
                    "looping_trials",
                    k / n,
                    float(p["looping_share"]),
                    f"{_k_of_n(k, n, 'trials with a trajectory')} repeat a call {p['min_repeats']} times or more",
                    f"rlsql query looping_trials --run {word} -p min_repeats={p['min_repeats']}",
                )
            )
    return out


def _damaged_findings(run: str, run_dir: Path) -> list[Row]:
    """damaged_input: the result.json files that are no trial (a run without a trials CSV), and the trajectory
    files rlsql skips among those of trials that have a trials row (a trial in flight may be mid-write)."""
    found = find_artifacts(run_dir)
    inputs = []  # (metric, what, how, [(path, damaged)])
    trace_jobs = found["harbor"]
    if found["trials"] is None and trace_jobs is not None:
        entries = os.listdir(trace_jobs)
        listed = []
        for name in sorted(entries):
            path = trace_jobs / name / "result.json"
            if not (trace_jobs / name).is_dir() or not os.path.lexists(path):
                continue
            text = None if _glob_fails(trace_jobs, name, entries) else _harbor_text(path)
            listed.append((f"trace_jobs/{name}/result.json", text is None or _harbor_trial(text) is None))
        inputs.append(("result.json", "trial result files", "are no trial and were skipped", listed))
    files, _, _ = trajectory_files(run_dir)
    finished = {t["trial_name"] for t in read_trials(run_dir)}
    # named inside the run folder
    kept = [
        (path.relative_to(run_dir).as_posix(), read_trajectory(path) is None)
        for trial, _, path in files
        if trial in finished
    ]
    if kept:
        inputs.append(("trajectory", "trajectory files of finished trials", "are damaged and were skipped", kept))
    out = []
    for metric, what, how, listed in inputs:
        bad = sorted(path for path, damaged in listed if damaged)
        if bad:
            out.append(
                _finding(
                    run,
                    "damaged_input",
                    "warning",
                    None,
                    None,
                    metric,
                    len(bad) / len(listed),
                    0.0,
                    f"{_k_of_n(len(bad), len(listed), what)} {how}; the first: {bad[0]}",
                    f"rlsql check --run {shell_word(run)}",
                )
            )
    return out


def q_findings(run: str, run_dir: Path, **params: Any) -> list[Row]:
    """docs/findings.md: every rule over the run's files; a rule whose inputs the run lacks gives nothing."""
    unknown = set(params) - set(FINDING_DEFAULTS)
    assert not unknown, unknown
    p = {**FINDING_DEFAULTS, **params}
    rows = _step_findings(run, run_dir, p) + _vllm_findings(run, run_dir, p) + _trial_findings(run, run_dir, p)
    rows += _damaged_findings(run, run_dir)
    return sorted(
        rows,
        key=lambda r: (
            _SEVERITY_RANK[r["severity"]],
            _none_last(r["step_from"]),
            r["kind"],
            r["metric"],
            _none_last(r["log_file"]),
        ),
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------

#: the named queries over agents' trajectories (docs/trajectories.md)
TRAJECTORY_QUERIES = ("tool_usage", "token_usage", "looping_trials")

# --------------------------------------------------------------------------------------------
# Comparing runs (docs/compare.md): exact fractions for Fisher's test, plain loops for the rest
# --------------------------------------------------------------------------------------------

#: "no more likely than the observed one, within a relative 1e-7" (scipy's and R's tolerance)
_FISHER_TOLERANCE = Fraction(10_000_001, 10_000_000)


def fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact p-value of [[a, b], [c, d]], exactly: the hypergeometric probabilities
    C(n1, x) C(n2, k - x) / C(n, k) of the tables with the observed margins, summed over those no more
    likely than the observed table (x = a) times 1 + 1e-7, at most 1."""
    n1, n2, k = a + b, c + d, a + c
    total = math.comb(n1 + n2, k)
    probability = {
        x: Fraction(math.comb(n1, x) * math.comb(n2, k - x), total) for x in range(max(0, k - n2), min(n1, k) + 1)
    }
    limit = probability[a] * _FISHER_TOLERANCE
    return min(1.0, float(sum(p for p in probability.values() if p <= limit)))


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """q_i = min over j >= i of p_(j) m / j, the p-values sorted ascending, each at most 1; in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = running
    return q


def _task_rates(run_dir: Path) -> dict[str, tuple[int, int]]:
    """task -> (trials with a reward, those with reward > 0)."""
    out: dict[str, tuple[int, int]] = {}
    if not has_trials(run_dir):
        return out
    for t in read_trials(run_dir):
        if t["reward"] is None or t["task_name"] is None:
            continue
        trials, successes = out.get(t["task_name"], (0, 0))
        out[t["task_name"]] = (trials + 1, successes + (t["reward"] > 0))
    return out


def _baseline(run_dirs: list[Path], baseline: str | None) -> Path | None:
    by_name = {run_name(d): d for d in run_dirs}
    name = baseline if baseline is not None else min(by_name)
    return by_name.get(name)


def q_task_diff(
    run: str, run_dir: Path, baseline: str | None = None, alpha: float = 0.05, run_dirs: list[Path] | None = None
) -> list[Row]:
    """The run against the baseline over the tasks both ran with a reward: Fisher's p-value per task,
    Benjamini-Hochberg over those tasks, verdict by the sign of delta where q < alpha; by q, then task."""
    base_dir = _baseline(run_dirs or [run_dir], baseline)
    if base_dir is None or run_name(base_dir) == run:
        return []
    base, own = _task_rates(base_dir), _task_rates(run_dir)
    rows = []
    for task in sorted(set(base) & set(own)):
        (n1, s1), (n2, s2) = base[task], own[task]
        rows.append(
            {
                "run": run,
                "baseline": run_name(base_dir),
                "task_name": task,
                "trials_base": n1,
                "successes_base": s1,
                "trials_run": n2,
                "successes_run": s2,
                "rate_base": s1 / n1,
                "rate_run": s2 / n2,
                "delta": s2 / n2 - s1 / n1,
                "p_value": fisher_two_sided(s1, n1 - s1, s2, n2 - s2),
            }
        )
    for row, q in zip(rows, benjamini_hochberg([r["p_value"] for r in rows]), strict=True):
        row["q_value"] = q
        changed = q < alpha and row["successes_run"] * row["trials_base"] != row["successes_base"] * row["trials_run"]
        row["verdict"] = ("improved" if row["delta"] > 0 else "regressed") if changed else "same"
    return sorted(rows, key=lambda r: (r["q_value"], r["task_name"]))


def q_run_diff(
    run: str, run_dir: Path, baseline: str | None = None, alpha: float = 0.05, run_dirs: list[Path] | None = None
) -> list[Row]:
    """task_diff in one line: counts, the mean delta with mean -/+ 1.96 sd / sqrt(n), success over the
    shared tasks' trials; a row for every run but the baseline, when the baseline is one of the runs."""
    base_dir = _baseline(run_dirs or [run_dir], baseline)
    if base_dir is None or run_name(base_dir) == run:
        return []
    tasks = q_task_diff(run, run_dir, baseline, alpha, run_dirs)
    deltas = [t["delta"] for t in tasks]
    mean = statistics.fmean(deltas) if deltas else None
    half = 1.96 * statistics.stdev(deltas) / math.sqrt(len(deltas)) if len(deltas) > 1 else None

    def rate(successes: str, trials: str) -> float | None:
        n = sum(t[trials] for t in tasks)
        return sum(t[successes] for t in tasks) / n if n else None

    return [
        {
            "run": run,
            "baseline": run_name(base_dir),
            "shared_tasks": len(tasks),
            "improved": sum(t["verdict"] == "improved" for t in tasks),
            "regressed": sum(t["verdict"] == "regressed" for t in tasks),
            "mean_delta": mean,
            "ci_low": mean - half if mean is not None and half is not None else None,
            "ci_high": mean + half if mean is not None and half is not None else None,
            "success_base": rate("successes_base", "trials_base"),
            "success_run": rate("successes_run", "trials_run"),
        }
    ]


def q_group_curves(run_dirs: list[Path], key: str | None = None, span: int = 5) -> list[Row]:
    """Per value of the config key (None without it) and step: the runs' reward_curve EMAs as count,
    mean, sample std (None for one), mean -/+ 1.96 std / sqrt(n), min and max; by value (None last), step."""
    groups: dict[tuple[str | None, int], list[float]] = {}
    for run_dir in run_dirs:
        if find_artifacts(run_dir)["metrics"] is None:
            continue
        config = _flat_config(run_dir) or {}
        value = config[key][1] if key is not None and key in config else None
        for row in _reward_curve_rows(run_name(run_dir), run_dir, span):
            if row["ema"] is not None:
                groups.setdefault((value, row["step"]), []).append(row["ema"])
    out = []
    for (value, step), emas in sorted(groups.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or "", kv[0][1])):
        mean = statistics.fmean(emas)
        std = statistics.stdev(emas) if len(emas) > 1 else None
        half = 1.96 * std / math.sqrt(len(emas)) if std is not None else None
        out.append(
            {
                "key": key,
                "value": value,
                "step": step,
                "runs": len(emas),
                "mean_ema": mean,
                "std_ema": std,
                "ci_low": mean - half if half is not None else None,
                "ci_high": mean + half if half is not None else None,
                "min_ema": min(emas),
                "max_ema": max(emas),
            }
        )
    return out


QUERIES: dict[str, Callable[..., list[Row]]] = {
    "run_overview": q_run_overview,
    "reward_curve": q_reward_curve,
    "best_checkpoint": q_best_checkpoint,
    "turn_stats": q_turn_stats,
    "turn_percentiles": q_turn_percentiles,
    "turns_by_exception": q_turns_by_exception,
    "turns_by_outcome": q_turns_by_outcome,
    "exception_distribution": q_exception_distribution,
    "exception_treatment": q_exception_treatment,
    "reward_summary": q_reward_summary,
    "timing_breakdown": q_timing_breakdown,
    "step_timing": q_step_timing,
    "vllm_summary": q_vllm_summary,
    "async_health": q_async_health,
    "trial_phases": q_trial_phases,
    "compare_runs": q_compare_runs,
    "run_table": q_run_table,
    "tool_usage": q_tool_usage,
    "token_usage": q_token_usage,
    "looping_trials": q_looping_trials,
    "task_diff": q_task_diff,
    "run_diff": q_run_diff,
    "findings": q_findings,
}

RUN_SUMMARY_COLUMNS = [
    "run",
    "steps",
    "trials",
    "trials_with_reward",
    "success_rate",
    "mean_reward",
    "final_ema",
    "best_ema",
    "best_ema_step",
    "best_checkpoint_step",
    "best_checkpoint_ema",
    "mean_step_time_s",
    "training_time_s",
    "timeout_rate",
    "context_length_rate",
    "mean_staleness",
    "slowest_span",
    "slowest_span_mean_s",
    "slowest_span_share",
]

# queries.md: the columns of each query, in order
COLUMNS: dict[str, list[str]] = {
    # version 2 of run_overview and vllm_summary: the v1 columns, then honestly named ones (docs/queries.md)
    "run_overview": ["run", "log_file", "total_steps", "metric_blocks", "mean_reward", "max_reward",
                     "total_time_s", "max_step", "distinct_steps"],
    "reward_curve": ["run", "step", "log_file", "reward", "pass_at_k", "k", "ema", "rolling_mean"],
    "best_checkpoint": ["run", "step", "ema", "reward", "save_every", "eligible_steps", "reason"],
    "turn_stats": ["run", "trials", "mean", "median", "std", "min", "max"],
    "turn_percentiles": ["run", "exception_type", "trials", "p50", "p75", "p90", "p95", "p99", "max"],
    "turns_by_exception": ["run", "exception_type", "trials", "mean_turns", "median_turns"],
    "turns_by_outcome": ["run", "outcome", "trials", "mean_turns", "median_turns"],
    "exception_distribution": ["run", "exception_type", "trials", "pct", "treatment"],
    "exception_treatment": ["run", "treatment", "trials", "pct", "exception_types"],
    "reward_summary": ["run", "trials", "trials_with_reward", "mean_reward", "success_rate",
                       "trials_with_turns"],
    "timing_breakdown": ["run", "span", "within", "mean_seconds", "share_of_within", "steps"],
    "step_timing": ["run", "step", "log_file", "span", "seconds", "share_of_step"],
    "vllm_summary": ["run", "log_file", "seconds", "mean_engines_reporting", "mean_running_per_engine",
                     "max_total_running", "mean_total_waiting", "max_total_waiting",
                     "mean_generation_tps_per_engine", "max_total_generation_tps", "mean_kv_cache_pct",
                     "mean_prefix_cache_hit_pct", "utilization", "stat_lines"],
    "async_health": ["run", "mean_staleness", "max_staleness", "mean_discard_rate", "steps_with_discards"],
    "trial_phases": ["run", "phase", "median_s", "mean_s", "total_s", "share_of_trial", "trials"],
    "compare_runs": ["run", "steps", "trials", "success_rate", "mean_reward", "final_ema", "best_ema", "best_ema_step",
                     "mean_step_time_s", "timeout_rate", "context_length_rate", "differing_config"],
    # then one column per config key, which depends on the runs (checked in expected())
    "run_table": RUN_SUMMARY_COLUMNS,
    # docs/trajectories.md
    "tool_usage": ["run", "function_name", "calls", "trials", "success_trials", "failure_trials",
                   "mean_calls_per_trial"],
    "token_usage": ["run", "outcome", "trials", "agent_steps", "mean_prompt_tokens", "mean_completion_tokens",
                    "cached_share", "p50_completion_tokens", "p90_completion_tokens", "max_step_prompt_tokens"],
    "looping_trials": ["run", "trial_name", "outcome", "exception_type", "n_episodes", "function_name", "arguments",
                       "repeats", "first_turn", "last_turn"],
    # docs/compare.md
    "task_diff": ["run", "baseline", "task_name", "trials_base", "successes_base", "trials_run", "successes_run",
                  "rate_base", "rate_run", "delta", "p_value", "q_value", "verdict"],
    "run_diff": ["run", "baseline", "shared_tasks", "improved", "regressed", "mean_delta", "ci_low", "ci_high",
                 "success_base", "success_run"],
    "group_curves": ["key", "value", "step", "runs", "mean_ema", "std_ema", "ci_low", "ci_high", "min_ema",
                     "max_ema"],
    # docs/findings.md
    "findings": ["run", "kind", "severity", "log_file", "step_from", "step_to", "metric", "value", "baseline",
                 "message", "evidence"],
}  # fmt: skip


def expected(name: str, run_dirs: list[Path], **params: Any) -> list[Row]:
    """Rows of named query `name` over `run_dirs`, ordered by run name, then the query's order."""
    if name == "group_curves":  # rows by config value and step, across the runs
        with _one_call():
            return q_group_curves([Path(d) for d in run_dirs], **params)
    if name not in QUERIES:
        raise KeyError(f"unknown query {name!r}")
    query = QUERIES[name]
    # compare_runs' and run_table's config columns compare the runs with each other; the diffs pair them
    if name in ("compare_runs", "run_table", "task_diff", "run_diff"):
        params = {**params, "run_dirs": [Path(d) for d in run_dirs]}
    out: list[Row] = []
    with _one_call():
        for run_dir in sorted((Path(d) for d in run_dirs), key=run_name):
            for row in query(run_name(run_dir), run_dir, **params):
                fixed = list(row)[: len(COLUMNS[name])] if name == "run_table" else list(row)
                assert fixed == COLUMNS[name], (name, list(row))
                out.append(row)
    return out
