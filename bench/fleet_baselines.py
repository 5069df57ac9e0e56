"""The fleet's cross-run question answered without rlsql: pandas and polars over every run folder.

Usage (from the repository root)::

    python bench/fleet_baselines.py pandas /work/bench-data/fleet-1000/runs   # CSV on stdout
    python bench/fleet_baselines.py polars /work/bench-data/fleet-1000/runs
    python bench/fleet_baselines.py polars '/work/bench-data/fleet-1000/runs/run-*-[cnt]*'   # a glob of runs

The work is `rlsql query turn_stats --run RUNS`: per run, trials, mean / median / max turns,
over the run's trials CSV (the newest `<ts>_trial_results.csv`, else `trial_results.csv`), as a
user would script it: list the run folders, read each CSV, aggregate, concatenate. pandas reads
each file whole (`read_csv`, as the log parser's scripts do); polars scans only `n_episodes`
(projection pushdown) over all files in one lazy query. Like a quick script, it does not read
Harbor's trace_jobs/*/result.json (those runs are left out) and does not skip damaged rows.
Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import glob
import re
import sys
from pathlib import Path

STAMPED = re.compile(r"\d{8}_\d{6}_trial_results\.csv")


def trials_csv(run: Path) -> Path | None:
    stamped = sorted(p for p in run.glob("*_trial_results.csv") if STAMPED.fullmatch(p.name))
    if stamped:
        return stamped[-1]
    plain = run / "trial_results.csv"
    return plain if plain.is_file() else None


def files(root: Path) -> list[tuple[str, Path]]:
    """(run, trials CSV) for each run folder in `root`, or matched by `root` when it is a glob."""
    found = []
    folders = sorted(Path(p) for p in glob.glob(str(root))) if glob.has_magic(str(root)) else root.iterdir()
    for run in sorted(p for p in folders if p.is_dir()):
        path = trials_csv(run)
        if path is not None:
            found.append((run.name, path))
    return found


def with_pandas(root: Path) -> str:
    import pandas as pd

    frames = []
    for name, path in files(root):
        df = pd.read_csv(path)
        turns = pd.to_numeric(df.get("n_episodes"), errors="coerce")
        frames.append(
            {
                "run": name,
                "trials": len(df),
                "mean_turns": turns.mean(),
                "median_turns": turns.median(),
                "max_turns": turns.max(),
            }
        )
    return pd.DataFrame(frames).to_csv(index=False)


def with_polars(root: Path) -> str:
    import polars as pl

    scans = [
        pl.scan_csv(path, schema_overrides={"n_episodes": pl.Float64}, infer_schema=False)
        .select(pl.col("n_episodes").cast(pl.Float64))
        .with_columns(pl.lit(name).alias("run"))
        for name, path in files(root)
    ]
    out = (
        pl.concat(scans)
        .group_by("run")
        .agg(
            pl.len().alias("trials"),
            pl.col("n_episodes").mean().alias("mean_turns"),
            pl.col("n_episodes").median().alias("median_turns"),
            pl.col("n_episodes").max().alias("max_turns"),
        )
        .sort("run")
        .collect()
    )
    return out.write_csv()


def main() -> None:
    how, root = sys.argv[1], Path(sys.argv[2])
    sys.stdout.write({"pandas": with_pandas, "polars": with_polars}[how](root))


if __name__ == "__main__":
    main()
