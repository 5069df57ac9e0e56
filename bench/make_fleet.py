"""Write a fleet of N run folders for the many-runs report benchmark: copies of the fixture runs.

Usage (from the repository root)::

    python bench/make_fleet.py 300 /tmp/fleet300           # 300 runs: tiny, calendar, harbor_csv, newest in turn
    python bench/make_fleet.py 300 /tmp/fleet300 --vary    # each copy's rewards scaled: the runs rank apart

Each copy with an rl_config.yaml gets a `fleet:` block (its index and a learning rate that differs
per run), so the cross-run table has config keys that differ. Every 4th run is a copy of
`newest` (no vLLM stats, no config), so the report's one summary warning for missing artifacts
is exercised. With `--vary` (`vary=True`) each copy's trainer metrics have their
reward/avg_raw_reward scaled by a factor of its own (scale_rewards), so that the runs' final EMAs
differ and a report's ranking, best and worst are those of a real fleet rather than ties broken by
name. Keep OUT outside the repository.
"""

from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("tiny", "calendar", "harbor_csv", "newest")


REWARD = "reward/avg_raw_reward"


def scale_rewards(run: Path, factor: float) -> None:
    """Multiply every reward/avg_raw_reward cell of the run's trainer metrics CSVs by `factor` (capped at 1)."""
    for path in sorted(run.glob("*metrics*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        if not rows or REWARD not in rows[0]:
            continue
        column = rows[0].index(REWARD)
        for row in rows[1:]:
            if column < len(row) and row[column].strip():
                row[column] = f"{min(float(row[column]) * factor, 1.0):.4f}"
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, lineterminator="\n").writerows(rows)


def make_fleet(count: int, out: Path, vary: bool = False) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(count):
        source = ROOT / "fixtures" / "runs" / SOURCES[i % len(SOURCES)]
        target = out / f"run_{i:03d}"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target)
        config = target / "rl_config.yaml"
        if config.exists():
            with config.open("a", encoding="utf-8") as fh:
                fh.write(f"\nfleet:\n  index: {i}\n  lr: {1e-6 * (1 + i % 7):.1e}\n")
        if vary:
            scale_rewards(target, 0.55 + 0.45 * ((i * 37) % 101) / 100)  # 0.55-1.0, a different one per run
        made.append(target)
    return made


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--vary"]
    if len(args) != 2:
        sys.exit("usage: python bench/make_fleet.py COUNT OUT_DIR [--vary]")
    runs = make_fleet(int(args[0]), Path(args[1]), vary="--vary" in sys.argv[1:])
    print(f"wrote {len(runs)} runs under {sys.argv[2]}")
