"""The baseline rlsql is measured against: a statistic computed the way the log parser does it.

Usage (from the repository root)::

    python bench/pandas_baseline.py NAME RUN_DIR        # prints the statistic as CSV on stdout
    python bench/pandas_baseline.py --list              # the statistics implemented

Each invocation is one fresh process that reads the run's CSV with ``pandas.read_csv`` (all
columns, default C engine, as the parser's scripts do), then computes one statistic with
groupby / median / quantile / ewm. NAME is the named query it stands for: turn_stats,
turn_percentiles, turns_by_exception, turns_by_outcome, exception_distribution, exception_treatment,
reward_summary, trial_phases, run_overview, reward_curve, async_health, vllm_summary. The figures
follow docs/queries.md, so the output can be compared with ``rlsql query NAME -f csv``;
tests/test_baselines.py checks the trial statistics against tests/oracle.py.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

MASK_DEFAULT = [
    "DaytonaError",
    "EnvironmentStartTimeoutError",
    "NetworkError",
    "ConnectionError",
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
]
ZERO_DEFAULT = ["AgentTimeoutError", "ContextLengthExceededError"]


def newest(run: Path, suffix: str, plain: str | None = None) -> Path:
    """The newest parse's `<ts>_<suffix>` (the prefix sorts by time), else the unprefixed `plain` file."""
    found = sorted(p for p in run.glob(f"*_{suffix}") if re.fullmatch(rf"\d{{8}}_\d{{6}}_{re.escape(suffix)}", p.name))
    if found:
        return found[-1]
    if plain and (run / plain).is_file():
        return run / plain
    raise SystemExit(f"{run}: no *_{suffix}")


TRIAL_NUMBERS = [
    "n_episodes",
    "n_input_tokens",
    "n_output_tokens",
    "reward",
    "agent_duration_sec",
    "trial_duration",
    "environment_setup_duration",
    "agent_setup_duration",
    "agent_execution_duration",
    "verifier_duration",
]


def trials(run: Path) -> pd.DataFrame:
    """Every column of the trials CSV; a column the file lacks is NaN, `inf` is NaN as `nan` is, and so
    is a turn or token count that is not a whole number."""
    df = pd.read_csv(newest(run, "trial_results.csv", "trial_results.csv"))
    for column in TRIAL_NUMBERS:
        df[column] = df[column].replace([np.inf, -np.inf], np.nan) if column in df else np.nan
    for column in TRIAL_NUMBERS[:3]:  # turns and tokens: a whole number up to 2**53, else NaN (a bad cell)
        df[column] = df[column].where((np.floor(df[column]) == df[column]) & (df[column].abs() <= 2**53))
    exception = df["exception_type"].str.strip() if "exception_type" in df else pd.Series(np.nan, index=df.index)
    df["exception_type"] = exception.replace("", np.nan).fillna("No exception")
    return df


def metrics(run: Path) -> pd.DataFrame:
    return pd.read_csv(newest(run, "metrics_table.csv"))


def with_run(df: pd.DataFrame, run: Path) -> pd.DataFrame:
    df.insert(0, "run", run.name)
    return df


def turn_stats(run: Path) -> pd.DataFrame:
    turns = trials(run)["n_episodes"].dropna()
    row = {
        "trials": len(turns),
        "mean": turns.mean(),
        "median": turns.median(),
        "std": turns.std(),
        "min": turns.min(),
        "max": turns.max(),
    }
    return with_run(pd.DataFrame([row]), run)


QUANTILES = [0.5, 0.75, 0.9, 0.95, 0.99]


def turn_percentiles(run: Path) -> pd.DataFrame:
    df = trials(run).dropna(subset=["n_episodes"])

    def row(label: str, s: pd.Series) -> dict:
        q = s.quantile(QUANTILES)
        return {
            "exception_type": label,
            "trials": len(s),
            **{f"p{round(k * 100)}": q[k] for k in QUANTILES},
            "max": s.max(),
        }

    rows = [row("All trials", df["n_episodes"])]
    rows += [row(name, g) for name, g in sorted(df.groupby("exception_type")["n_episodes"])]
    return with_run(pd.DataFrame(rows), run)


def turns_by_exception(run: Path) -> pd.DataFrame:
    df = trials(run).dropna(subset=["n_episodes"])
    out = df.groupby("exception_type")["n_episodes"].agg(trials="count", mean_turns="mean", median_turns="median")
    out = out.reset_index().sort_values(["mean_turns", "exception_type"], ascending=[False, True])
    return with_run(out, run)


def turns_by_outcome(run: Path) -> pd.DataFrame:
    df = trials(run).dropna(subset=["n_episodes", "reward"])
    df = df[df["reward"] >= 0]
    df["outcome"] = (df["reward"] > 0).map({True: "Success", False: "Failure"})
    out = df.groupby("outcome")["n_episodes"].agg(trials="count", mean_turns="mean", median_turns="median")
    out = out.reindex(["Success", "Failure"]).dropna(subset=["trials"]).reset_index()
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
    passthrough = found.get("passthrough_exceptions") or []
    mask = found.get("mask_exceptions") if isinstance(found.get("mask_exceptions"), list) else MASK_DEFAULT
    zero = found.get("zero_exceptions") if isinstance(found.get("zero_exceptions"), list) else ZERO_DEFAULT
    default = str(found.get("default_error_treatment", "zero")).lower()

    def route(name: str) -> str:
        if name == "No exception":
            return "none"
        for label, names in (("passthrough", passthrough), ("mask", mask), ("zero", zero)):
            if name in names:  # type: ignore[operator]
                return label
        return default if default in ("zero", "mask", "passthrough") else "zero"

    return route


def exception_distribution(run: Path) -> pd.DataFrame:
    df = trials(run)
    counts = df.groupby("exception_type", sort=False).size()  # groups in order of first appearance
    counts = counts.sort_values(ascending=False, kind="stable")
    out = pd.DataFrame({"exception_type": counts.index, "trials": counts.to_numpy()})
    out["pct"] = 100.0 * out["trials"] / len(df)
    out["treatment"] = out["exception_type"].map(routing(run))
    return with_run(out, run)


def exception_treatment(run: Path) -> pd.DataFrame:
    df = trials(run)
    route = routing(run)
    treatment = df["exception_type"].map({name: route(name) for name in df["exception_type"].unique()})
    treatment = treatment.mask((treatment == "passthrough") & df["reward"].isna(), "mask")  # no reward: masked
    groups = df.groupby(treatment)["exception_type"].agg(
        trials="size", exception_types=lambda s: ", ".join(sorted(s.unique()))
    )
    order = [t for t in ("none", "passthrough", "mask", "zero") if t in groups.index]
    out = groups.reindex(order).rename_axis("treatment").reset_index()
    out.insert(2, "pct", 100.0 * out["trials"] / len(df))
    return with_run(out, run)


def reward_summary(run: Path) -> pd.DataFrame:
    df = trials(run)
    rewards = df["reward"].dropna()
    row = {
        "trials": len(df),
        "trials_with_reward": len(rewards),
        "mean_reward": rewards.mean(),
        "success_rate": (rewards > 0).mean(),
        "trials_with_turns": int(df["n_episodes"].notna().sum()),
    }
    return with_run(pd.DataFrame([row]), run)


PHASES = {
    "environment_setup": ["environment_setup_duration"],
    "agent_setup": ["agent_setup_duration"],
    "agent_execution": ["agent_execution_duration", "agent_duration_sec"],  # older files: agent_duration_sec
    "verifier": ["verifier_duration"],
}


def trial_phases(run: Path) -> pd.DataFrame:
    df = trials(run)
    phases = pd.DataFrame(
        {p: df[cols[0]].fillna(df[cols[1]]) if len(cols) > 1 else df[cols[0]] for p, cols in PHASES.items()}
    )
    columns = ["phase", "median_s", "mean_s", "total_s", "share_of_trial", "trials"]
    if phases.notna().sum().sum() == 0:
        return with_run(pd.DataFrame(columns=columns), run)  # no phase figures at all: no rows
    duration = df["trial_duration"]
    timed = duration.notna()
    total = duration.sum() if timed.any() else None

    def share(amount: float) -> float | None:
        return amount / total if total else None

    rows = [
        {
            "phase": p,
            "median_s": s.median(),
            "mean_s": s.mean(),
            "total_s": s.sum(),
            "share_of_trial": share(s[timed].sum()),
            "trials": int(s.count()),
        }
        for p, s in phases.items()
        if s.count()
    ]
    # per trial with a trial_duration: the seconds no phase covers (negative: the phases overlap)
    residual = (duration - phases.fillna(0).sum(axis=1))[timed]
    if len(residual):
        r_total = residual.sum()
        rows.append(
            {
                "phase": "unattributed" if r_total >= 0 else "overlap",
                "median_s": residual.median() if r_total >= 0 else -residual.median(),
                "mean_s": abs(r_total) / len(residual),
                "total_s": abs(r_total),
                "share_of_trial": share(r_total) if r_total >= 0 else None,
                "trials": len(residual),
            }
        )
    return with_run(pd.DataFrame(rows, columns=columns), run)


def step_column(df: pd.DataFrame) -> pd.Series:
    return df["trainer/global_step"].fillna(df["global_step"])


def run_overview(run: Path) -> pd.DataFrame:
    df = metrics(run)
    df["step"] = step_column(df)
    out = df.groupby("log_file").agg(
        total_steps=("step", "max"),
        metric_blocks=("step", "size"),
        mean_reward=("reward/avg_raw_reward", "mean"),
        max_reward=("reward/avg_raw_reward", "max"),
        total_time_s=("timing/step", "sum"),
    )
    return with_run(out.reset_index(), run)


def deduplicated(df: pd.DataFrame) -> pd.DataFrame:
    """One row per step, the first seen in CSV order (the checkpoint selector's rule)."""
    df = df.assign(step=step_column(df)).dropna(subset=["step"])
    return df.drop_duplicates("step", keep="first").sort_values("step")


def reward_curve(run: Path, span: int = 5) -> pd.DataFrame:
    df = deduplicated(metrics(run))
    pass_cols = sorted(
        (c for c in df.columns if c.startswith("reward/avg_pass_at_")), key=lambda c: int(c.rsplit("_", 1)[1])
    )
    reward = df["reward/avg_raw_reward"]
    out = pd.DataFrame(
        {
            "step": df["step"].astype(int),
            "log_file": df["log_file"],
            "reward": reward,
            "pass_at_k": df[pass_cols[0]] if pass_cols else float("nan"),
            "k": int(pass_cols[0].rsplit("_", 1)[1]) if pass_cols else None,
            "ema": reward.ewm(span=span, adjust=False, ignore_na=True).mean().where(reward.notna()),
            "rolling_mean": reward.rolling(span, min_periods=1).mean(),
        }
    )
    return with_run(out, run)


def async_health(run: Path) -> pd.DataFrame:
    df = metrics(run)
    steps = deduplicated(df)
    discards = (
        steps["async/discarded_count"]
        .gt(0)
        .where(steps["async/discarded_count"].notna(), steps["async/discard_rate"].gt(0))
    )
    row = {
        "mean_staleness": df["async/staleness_mean"].mean(),
        "max_staleness": df["async/staleness_max"].max(),
        "mean_discard_rate": df["async/discard_rate"].mean(),
        "steps_with_discards": int(discards.fillna(False).astype(bool).sum()),
    }
    return with_run(pd.DataFrame([row]), run)


def vllm_summary(run: Path) -> pd.DataFrame:
    df = pd.read_csv(newest(run, "vllm_metrics_table.csv"))
    out = df.groupby("log_file").agg(
        seconds=("datetime_str", "size"),
        mean_engines_reporting=("n_engines_reporting", "mean"),
        mean_running_per_engine=("avg_running_requests_per_engine", "mean"),
        max_total_running=("total_running_requests", "max"),
        mean_total_waiting=("total_waiting_requests", "mean"),
        max_total_waiting=("total_waiting_requests", "max"),
        mean_generation_tps_per_engine=("avg_generation_throughput_per_engine", "mean"),
        max_total_generation_tps=("total_generation_throughput_tokens_per_sec", "max"),
        mean_kv_cache_pct=("avg_gpu_kv_cache_usage_pct", "mean"),
        mean_prefix_cache_hit_pct=("avg_prefix_cache_hit_rate_pct", "mean"),
    )

    def verdict(r: pd.Series) -> str:
        if r.mean_total_waiting == 0 and r.mean_running_per_engine < 5:
            return "underutilized"
        if r.mean_total_waiting > 0:
            return "well-utilized"
        if r.mean_generation_tps_per_engine < 300:
            return "low throughput"
        return "moderate"

    out["utilization"] = out.apply(verdict, axis=1)
    return with_run(out.reset_index(), run)


STATISTICS: dict[str, Callable[[Path], pd.DataFrame]] = {
    f.__name__: f
    for f in (
        turn_stats,
        turn_percentiles,
        turns_by_exception,
        turns_by_outcome,
        exception_distribution,
        exception_treatment,
        reward_summary,
        trial_phases,
        run_overview,
        reward_curve,
        async_health,
        vllm_summary,
    )
}
TRIAL_STATISTICS = list(STATISTICS)[:8]


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
    STATISTICS[args.name](args.run.resolve()).to_csv(sys.stdout, index=False)


if __name__ == "__main__":
    main()
