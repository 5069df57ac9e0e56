"""The floor rlsql is held to: a bare DuckDB read_csv + GROUP BY in Python, one trial statistic, one run.

Usage (from the repository root)::

    python bench/duckdb_baseline.py NAME RUN_DIR        # prints the statistic as CSV on stdout
    python bench/duckdb_baseline.py --sql NAME RUN_DIR  # prints the statement instead
    python bench/duckdb_baseline.py --list              # the statistics implemented

Each invocation is one fresh process: ``import duckdb``, one statement over the run's trials CSV
(``read_csv`` sniffs the dialect, the needed columns' types are given), print the rows. It
applies the cleaning the figures need and nothing else: nan/inf and fractional turns are
null, an empty exception_type is ``No exception``. No row accounting, no rejects table, no run
list: what rlsql adds on top of this is what the benchmark measures. NAME is the trial-level
named query it stands for; the figures are rlsql's (tests/test_baselines.py checks them).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

MASK_DEFAULT = [
    "DaytonaError",
    "EnvironmentStartTimeoutError",
    "NetworkError",
    "ConnectionError",
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
]
ZERO_DEFAULT = ["AgentTimeoutError", "ContextLengthExceededError"]
NUMBERS = [
    "n_episodes",
    "reward",
    "trial_duration",
    "environment_setup_duration",
    "agent_setup_duration",
    "agent_execution_duration",
    "agent_duration_sec",
    "verifier_duration",
]


def trials_csv(run: Path) -> Path:
    """The newest parse's trials CSV (the timestamp prefix sorts by time), else the unprefixed one."""
    pattern = re.compile(r"\d{8}_\d{6}_trial_results\.csv")
    stamped = sorted(p for p in run.glob("*_trial_results.csv") if pattern.fullmatch(p.name))
    if stamped:
        return stamped[-1]
    if (run / "trial_results.csv").is_file():
        return run / "trial_results.csv"
    raise SystemExit(f"{run}: no trial_results.csv")


def source(run: Path, columns: list[str]) -> str:
    """A subquery over the trials CSV with `columns` cleaned; absent ones NULL."""
    path = trials_csv(run)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), [])
    quoted = str(path).replace("'", "''")
    types = ", ".join(f"'{c}': '{'VARCHAR' if c == 'exception_type' else 'DOUBLE'}'" for c in columns if c in header)
    exprs = []
    for c in columns:
        if c not in header:
            exprs.append(f"CAST(NULL AS {'VARCHAR' if c == 'exception_type' else 'DOUBLE'}) AS {c}")
        elif c == "exception_type":
            exprs.append("coalesce(nullif(trim(exception_type), ''), 'No exception') AS exception_type")
        elif c == "n_episodes":  # a whole number of turns, else empty
            exprs.append(
                "CASE WHEN n_episodes = trunc(n_episodes) AND abs(n_episodes) <= 9007199254740992 "
                "THEN n_episodes END AS n_episodes"
            )
        else:
            exprs.append(f"CASE WHEN isfinite({c}) THEN {c} END AS {c}")
    return f"(SELECT {', '.join(exprs)} FROM read_csv('{quoted}', types = {{{types}}}))"


def turn_stats(run: Path) -> str:
    return f"""SELECT count(n_episodes) AS trials, avg(n_episodes) AS mean, median(n_episodes) AS median,
        stddev_samp(n_episodes) AS std, min(n_episodes) AS min, max(n_episodes) AS max
    FROM {source(run, ["n_episodes"])}"""


def turns_by_exception(run: Path) -> str:
    return f"""SELECT exception_type, count(*) AS trials, avg(n_episodes) AS mean_turns,
        median(n_episodes) AS median_turns
    FROM {source(run, ["n_episodes", "exception_type"])}
    WHERE n_episodes IS NOT NULL
    GROUP BY exception_type
    ORDER BY mean_turns DESC, exception_type"""


def turns_by_outcome(run: Path) -> str:
    return f"""SELECT CASE WHEN reward > 0 THEN 'Success' ELSE 'Failure' END AS outcome, count(*) AS trials,
        avg(n_episodes) AS mean_turns, median(n_episodes) AS median_turns
    FROM {source(run, ["n_episodes", "reward"])}
    WHERE n_episodes IS NOT NULL AND reward >= 0
    GROUP BY outcome
    ORDER BY outcome = 'Failure'"""


def turn_percentiles(run: Path) -> str:
    return f"""SELECT coalesce(exception_type, 'All trials') AS exception_type, trials,
        q[1] AS p50, q[2] AS p75, q[3] AS p90, q[4] AS p95, q[5] AS p99, max
    FROM (
        SELECT exception_type, grouping(exception_type) AS every, count(*) AS trials,
            quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]) AS q, max(n_episodes) AS max
        FROM {source(run, ["n_episodes", "exception_type"])}
        WHERE n_episodes IS NOT NULL
        GROUP BY GROUPING SETS ((), (exception_type))
    )
    WHERE trials > 0
    ORDER BY every DESC, exception_type"""


def exception_distribution(run: Path) -> str:
    # ties in order of first appearance: the row number of each type's first trial
    return f"""SELECT exception_type, count(*) AS trials, 100.0 * count(*) / sum(count(*)) OVER () AS pct
    FROM (SELECT row_number() OVER () AS row, * FROM {source(run, ["exception_type"])})
    GROUP BY exception_type
    ORDER BY trials DESC, min(row)"""


def exception_treatment(run: Path) -> str:
    return f"""SELECT exception_type, reward IS NULL AS no_reward, count(*) AS trials
    FROM {source(run, ["exception_type", "reward"])}
    GROUP BY ALL"""


def reward_summary(run: Path) -> str:
    return f"""SELECT count(*) AS trials, count(reward) AS trials_with_reward, avg(reward) AS mean_reward,
        avg(CASE WHEN reward > 0 THEN 1.0 WHEN reward IS NOT NULL THEN 0.0 END) AS success_rate,
        count(n_episodes) AS trials_with_turns
    FROM {source(run, ["reward", "n_episodes"])}"""


PHASES = {
    "environment_setup": "environment_setup_duration",
    "agent_setup": "agent_setup_duration",
    "agent_execution": "coalesce(agent_execution_duration, agent_duration_sec)",
    "verifier": "verifier_duration",
}


def trial_phases(run: Path) -> str:
    figures = []
    for p, e in PHASES.items():
        figures += [
            f"median({e}) AS {p}_median",
            f"avg({e}) AS {p}_mean",
            f"sum({e}) AS {p}_total",
            f"coalesce(sum({e}) FILTER (WHERE trial_duration IS NOT NULL), 0) AS {p}_timed",
            f"count({e}) AS {p}_trials",
        ]
    residual = "trial_duration - " + " - ".join(f"coalesce({e}, 0)" for e in PHASES.values())
    return f"""SELECT sum(trial_duration) AS total, {", ".join(figures)},
        median({residual}) AS r_median, sum({residual}) AS r_total, count({residual}) AS r_n
    FROM {source(run, [c for c in NUMBERS if c.endswith(("_duration", "_sec"))])}"""


def routing(run: Path):
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
    for key, default in (("passthrough", []), ("mask", MASK_DEFAULT), ("zero", ZERO_DEFAULT)):
        value = found.get(f"{key}_exceptions")
        lists[key] = value if isinstance(value, list) else default
    default = str(found.get("default_error_treatment", "zero")).lower()
    default = default if default in ("zero", "mask", "passthrough") else "zero"

    def route(name: str) -> str:
        if name == "No exception":
            return "none"
        return next((label for label in ("passthrough", "mask", "zero") if name in lists[label]), default)

    return route


def answer(name: str, run: Path) -> tuple[list[str], list[tuple]]:
    """Columns and rows of statistic `name` (without the run column)."""
    import duckdb

    cursor = duckdb.connect().execute(STATISTICS[name](run))
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    if name == "exception_distribution":
        route = routing(run)
        return [*columns, "treatment"], [(*r, route(r[0])) for r in rows]
    if name == "exception_treatment":
        route = routing(run)
        per: dict[str, tuple[int, set[str]]] = {}
        for exc, no_reward, count in rows:
            t = route(exc)
            t = "mask" if t == "passthrough" and no_reward else t  # passthrough without a reward is masked
            trials, names = per.get(t, (0, set()))
            per[t] = (trials + count, names | {exc})
        total = sum(c for _, _, c in rows)
        out = [
            (t, per[t][0], 100.0 * per[t][0] / total, ", ".join(sorted(per[t][1])))
            for t in ("none", "passthrough", "mask", "zero")
            if t in per
        ]
        return ["treatment", "trials", "pct", "exception_types"], out
    if name == "trial_phases":
        return ["phase", "median_s", "mean_s", "total_s", "share_of_trial", "trials"], phase_rows(
            dict(zip(columns, rows[0], strict=True))
        )
    return columns, rows


def phase_rows(f: dict) -> list[tuple]:
    if not any(f[f"{p}_trials"] for p in PHASES):
        return []  # no phase figures at all: no rows

    def share(amount: float) -> float | None:
        return amount / f["total"] if f["total"] else None

    out = [
        (p, f[f"{p}_median"], f[f"{p}_mean"], f[f"{p}_total"], share(f[f"{p}_timed"]), f[f"{p}_trials"])
        for p in PHASES
        if f[f"{p}_trials"]
    ]
    if f["r_n"]:
        total = f["r_total"]
        if total >= 0:
            out.append(("unattributed", f["r_median"], total / f["r_n"], total, share(total), f["r_n"]))
        else:
            out.append(("overlap", -f["r_median"], -total / f["r_n"], -total, None, f["r_n"]))
    return out


STATISTICS = {
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


def write_csv(name: str, run: Path, out) -> None:
    columns, rows = answer(name, run)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", *columns])
    writer.writerows([run.name, *("" if v is None else v for v in row)] for row in rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", choices=sorted(STATISTICS))
    parser.add_argument("run", nargs="?", type=Path)
    parser.add_argument("--list", action="store_true", help="print the statistics implemented")
    parser.add_argument("--sql", action="store_true", help="print the statement instead of running it")
    args = parser.parse_args(argv)
    if args.list or not args.name:
        print("\n".join(STATISTICS))
        return
    if args.run is None:
        parser.error("RUN_DIR is required")
    run = args.run.resolve()
    if args.sql:
        print(STATISTICS[args.name](run))
        return
    write_csv(args.name, run, sys.stdout)


if __name__ == "__main__":
    main()
