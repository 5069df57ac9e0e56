"""The script a user could write with polars instead of installing rlsql: one trial statistic, one run.

Usage (from the repository root)::

    python bench/polars_baseline.py NAME RUN_DIR        # prints the statistic as CSV on stdout
    python bench/polars_baseline.py --list              # the statistics implemented

Each invocation is one fresh process that reads the run's trials CSV with ``polars.scan_csv``,
selecting only the columns the statistic needs (projection pushdown: the other columns are not
parsed), types declared for them, then aggregates with the default engine. NAME is the
trial-level named query it stands for (turn_stats, turns_by_exception, turns_by_outcome,
turn_percentiles, exception_distribution, exception_treatment, reward_summary, trial_phases); the
figures are rlsql's (docs/semantics.md), so the output can be compared with
``rlsql query NAME --run RUN_DIR -f csv`` (tests/test_baselines.py checks both against tests/oracle.py).

What it reproduces of rlsql's reading rules, as a careful user would: the newest
``<YYYYMMDD_HHMMSS>_trial_results.csv`` (else ``trial_results.csv``); empty cells are null; ``nan``
and ``inf`` are null; a turn count that is not a whole number is null; a column the file lacks is
null; an empty exception_type is ``No exception``;
the exception routing from rl_config.yaml (first key anywhere in the document, else the trainer's
defaults). What it does not: Harbor's result.json folders and damaged rows (rlsql skips them).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl

NO_EXCEPTION = "No exception"
TEXT_COLUMNS = {"task_name", "trial_name", "exception_type"}
WHOLE_COLUMNS = {"n_episodes", "n_input_tokens", "n_output_tokens"}
MASK_DEFAULT = [
    "DaytonaError",
    "EnvironmentStartTimeoutError",
    "NetworkError",
    "ConnectionError",
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
]
ZERO_DEFAULT = ["AgentTimeoutError", "ContextLengthExceededError"]
QUANTILES = [0.5, 0.75, 0.9, 0.95, 0.99]
PHASES = {
    "environment_setup": ["environment_setup_duration"],
    "agent_setup": ["agent_setup_duration"],
    "agent_execution": ["agent_execution_duration", "agent_duration_sec"],  # older files: agent_duration_sec
    "verifier": ["verifier_duration"],
}


def trials_csv(run: Path) -> Path:
    """The newest parse's trials CSV (the timestamp prefix sorts by time), else the unprefixed one."""
    pattern = re.compile(r"\d{8}_\d{6}_trial_results\.csv")
    stamped = sorted(p for p in run.glob("*_trial_results.csv") if pattern.fullmatch(p.name))
    if stamped:
        return stamped[-1]
    if (run / "trial_results.csv").is_file():
        return run / "trial_results.csv"
    raise SystemExit(f"{run}: no trial_results.csv")


def scan(run: Path, columns: list[str]) -> pl.LazyFrame:
    """The trials CSV, only `columns`, typed; non-finite numbers and absent columns null."""
    path = trials_csv(run)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), [])
    present = [c for c in columns if c in header]
    types = {c: pl.String if c in TEXT_COLUMNS else pl.Float64 for c in present}
    lf = pl.scan_csv(path, schema_overrides=types).select(present)
    exprs = []
    for c in columns:
        if c not in header:
            exprs.append(pl.lit(None, dtype=pl.String if c in TEXT_COLUMNS else pl.Float64).alias(c))
        elif c == "exception_type":
            name = pl.col(c).str.strip_chars()
            exprs.append(pl.when(name.is_null() | (name == "")).then(pl.lit(NO_EXCEPTION)).otherwise(name).alias(c))
        elif c in WHOLE_COLUMNS:  # a whole number up to 2**53, else empty (a fraction of a turn is a bad cell)
            x = pl.col(c)
            exprs.append(pl.when(x.is_finite() & (x == x.floor()) & (x.abs() <= 2**53)).then(x).alias(c))
        elif c not in TEXT_COLUMNS:
            exprs.append(pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c))
    return lf.with_columns(exprs)


def with_run(df: pl.DataFrame, run: Path) -> pl.DataFrame:
    return df.select(pl.lit(run.name).alias("run"), pl.all())


def turn_stats(run: Path) -> pl.DataFrame:
    n = pl.col("n_episodes")
    out = (
        scan(run, ["n_episodes"])
        .select(
            n.count().alias("trials"),
            n.mean().alias("mean"),
            n.median().alias("median"),
            n.std().alias("std"),
            n.min().alias("min"),
            n.max().alias("max"),
        )
        .collect()
    )
    return with_run(out, run)


def turns_by_exception(run: Path) -> pl.DataFrame:
    n = pl.col("n_episodes")
    out = (
        scan(run, ["n_episodes", "exception_type"])
        .filter(n.is_not_null())
        .group_by("exception_type")
        .agg(pl.len().alias("trials"), n.mean().alias("mean_turns"), n.median().alias("median_turns"))
        .sort(["mean_turns", "exception_type"], descending=[True, False])
        .collect()
    )
    return with_run(out, run)


def turns_by_outcome(run: Path) -> pl.DataFrame:
    n, reward = pl.col("n_episodes"), pl.col("reward")
    out = (
        scan(run, ["n_episodes", "reward"])
        .filter(n.is_not_null() & (reward >= 0))  # a negative reward is neither outcome
        .group_by(pl.when(reward > 0).then(pl.lit("Success")).otherwise(pl.lit("Failure")).alias("outcome"))
        .agg(pl.len().alias("trials"), n.mean().alias("mean_turns"), n.median().alias("median_turns"))
        .sort(pl.col("outcome") == "Failure")
        .collect()
    )
    return with_run(out, run)


def turn_percentiles(run: Path) -> pl.DataFrame:
    n = pl.col("n_episodes")
    figures = [pl.len().alias("trials")]
    figures += [n.quantile(q, interpolation="linear").alias(f"p{round(q * 100)}") for q in QUANTILES]
    figures.append(n.max().alias("max"))
    turns = scan(run, ["n_episodes", "exception_type"]).filter(n.is_not_null())
    every = turns.select(pl.lit("All trials").alias("exception_type"), *figures).filter(pl.col("trials") > 0)
    per_type = turns.group_by("exception_type").agg(figures).sort("exception_type")
    out = pl.concat(pl.collect_all([every, per_type]), how="vertical_relaxed")
    return with_run(out, run)


def routing(run: Path) -> Callable[[str], str]:
    """The trainer's exception routing from rl_config.yaml (first key found anywhere), else defaults."""
    import yaml

    found: dict[str, object] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("passthrough_exceptions", "mask_exceptions", "zero_exceptions", "default_error_treatment"):
                    found.setdefault(key, value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    path = run / "rl_config.yaml"
    if path.exists():
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    lists = {}
    for key, default in (
        ("passthrough_exceptions", []),
        ("mask_exceptions", MASK_DEFAULT),
        ("zero_exceptions", ZERO_DEFAULT),
    ):
        value = found.get(key)
        lists[key] = value if isinstance(value, list) else default
    default = str(found.get("default_error_treatment", "zero")).lower()
    default = default if default in ("zero", "mask", "passthrough") else "zero"

    def route(name: str) -> str:
        if name == NO_EXCEPTION:
            return "none"
        for label in ("passthrough", "mask", "zero"):
            if name in lists[f"{label}_exceptions"]:
                return label
        return default

    return route


def exception_distribution(run: Path) -> pl.DataFrame:
    out = (
        scan(run, ["exception_type"])
        .with_row_index("row")
        .group_by("exception_type")
        .agg(pl.len().alias("trials"), pl.col("row").min().alias("first_row"))
        .sort(["trials", "first_row"], descending=[True, False])  # ties in order of first appearance
        .collect()
    )
    route = routing(run)
    out = out.select(
        "exception_type",
        "trials",
        (100.0 * pl.col("trials") / pl.col("trials").sum()).alias("pct"),
        pl.col("exception_type").map_elements(route, return_dtype=pl.String).alias("treatment"),
    )
    return with_run(out, run)


def exception_treatment(run: Path) -> pl.DataFrame:
    groups = (
        scan(run, ["exception_type", "reward"])
        .group_by("exception_type", pl.col("reward").is_null().alias("no_reward"))
        .len()
        .collect()
    )
    route = routing(run)
    total = groups["len"].sum()
    per_treatment: dict[str, tuple[int, set[str]]] = {}
    for name, no_reward, count in groups.iter_rows():
        treatment = route(name)
        if treatment == "passthrough" and no_reward:  # passthrough without a reward is masked
            treatment = "mask"
        trials, names = per_treatment.get(treatment, (0, set()))
        per_treatment[treatment] = (trials + count, names | {name})
    rows = [
        {
            "treatment": t,
            "trials": per_treatment[t][0],
            "pct": 100.0 * per_treatment[t][0] / total,
            "exception_types": ", ".join(sorted(per_treatment[t][1])),
        }
        for t in ("none", "passthrough", "mask", "zero")
        if t in per_treatment
    ]
    schema = {"treatment": pl.String, "trials": pl.Int64, "pct": pl.Float64, "exception_types": pl.String}
    return with_run(pl.DataFrame(rows, schema=schema), run)


def reward_summary(run: Path) -> pl.DataFrame:
    reward = pl.col("reward")
    out = (
        scan(run, ["reward", "n_episodes"])
        .select(
            pl.len().alias("trials"),
            reward.count().alias("trials_with_reward"),
            reward.mean().alias("mean_reward"),
            (reward > 0).mean().alias("success_rate"),
            pl.col("n_episodes").count().alias("trials_with_turns"),
        )
        .collect()
    )
    return with_run(out, run)


def trial_phases(run: Path) -> pl.DataFrame:
    sources = [c for cols in PHASES.values() for c in cols]
    lf = scan(run, ["trial_duration", *sources])
    phase = {p: pl.coalesce(cols) if len(cols) > 1 else pl.col(cols[0]) for p, cols in PHASES.items()}
    duration = pl.col("trial_duration")
    timed = duration.is_not_null()
    # per trial with a trial_duration: the seconds no phase covers (negative: the phases overlap)
    residual = pl.when(timed).then(duration - pl.sum_horizontal([e.fill_null(0) for e in phase.values()]))
    figures = [duration.sum().alias("total"), duration.count().alias("timed")]
    for p, e in phase.items():
        figures += [
            e.median().alias(f"{p}_median"),
            e.mean().alias(f"{p}_mean"),
            e.sum().alias(f"{p}_total"),
            e.filter(timed).sum().alias(f"{p}_timed"),
            e.count().alias(f"{p}_trials"),
        ]
    figures += [residual.median().alias("r_median"), residual.sum().alias("r_total"), residual.count().alias("r_n")]
    f = lf.select(figures).collect().row(0, named=True)
    rows: list[dict[str, object]] = []
    if not any(f[f"{p}_trials"] for p in PHASES):
        return with_run(pl.DataFrame(rows, schema=PHASE_SCHEMA), run)  # no phase figures at all: no rows

    def share(amount: float) -> float | None:
        return amount / f["total"] if f["timed"] and f["total"] else None

    for p in PHASES:
        if f[f"{p}_trials"]:
            rows.append(
                {
                    "phase": p,
                    "median_s": f[f"{p}_median"],
                    "mean_s": f[f"{p}_mean"],
                    "total_s": f[f"{p}_total"],
                    "share_of_trial": share(f[f"{p}_timed"]),
                    "trials": f[f"{p}_trials"],
                }
            )
    if f["r_n"]:
        total = f["r_total"]
        rows.append(
            {
                "phase": "unattributed" if total >= 0 else "overlap",
                "median_s": f["r_median"] if total >= 0 else -f["r_median"],
                "mean_s": abs(total) / f["r_n"],
                "total_s": abs(total),
                "share_of_trial": share(total) if total >= 0 else None,
                "trials": f["r_n"],
            }
        )
    return with_run(pl.DataFrame(rows, schema=PHASE_SCHEMA), run)


PHASE_SCHEMA = {
    "phase": pl.String,
    "median_s": pl.Float64,
    "mean_s": pl.Float64,
    "total_s": pl.Float64,
    "share_of_trial": pl.Float64,
    "trials": pl.Int64,
}

STATISTICS: dict[str, Callable[[Path], pl.DataFrame]] = {
    f.__name__: f
    for f in (
        turn_stats,
        turns_by_exception,
        turns_by_outcome,
        turn_percentiles,
        exception_distribution,
        exception_treatment,
        reward_summary,
        trial_phases,
    )
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", choices=sorted(STATISTICS))
    parser.add_argument("run", nargs="?", type=Path)
    parser.add_argument("--list", action="store_true", help="print the statistics implemented")
    args = parser.parse_args(argv)
    if args.list or not args.name:
        print("\n".join(STATISTICS))
        return
    if args.run is None:
        parser.error("RUN_DIR is required")
    sys.stdout.write(STATISTICS[args.name](args.run.resolve()).write_csv())


if __name__ == "__main__":
    main()
