"""Write a fleet of N run folders for the many-runs report benchmark: copies of the fixture runs.

Usage (from the repository root)::

    python bench/make_fleet.py 300 /tmp/fleet300     # 300 runs: tiny, calendar, newest, harbor_csv in turn

Each copy with an rl_config.yaml gets a `fleet:` block (its index and a learning rate that differs
per run), so the cross-run table has config keys that differ. Every 4th run is a copy of
`newest` (no vLLM stats, no config), so the report's one summary warning for missing artifacts
is exercised. Keep OUT outside the repository.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("tiny", "calendar", "harbor_csv", "newest")


def make_fleet(count: int, out: Path) -> list[Path]:
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
        made.append(target)
    return made


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python bench/make_fleet.py COUNT OUT_DIR")
    runs = make_fleet(int(sys.argv[1]), Path(sys.argv[2]))
    print(f"wrote {len(runs)} runs under {sys.argv[2]}")
