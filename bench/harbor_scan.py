"""Time reading Harbor's trace_jobs/<trial>/result.json in place (the harbor_trials_src source).

Usage (from the repository root)::

    python bench/harbor_scan.py --make 20000 /work/bench-data/harbor20k   # write the folder once
    python bench/harbor_scan.py /work/bench-data/harbor20k                 # time reward_summary

`--make N` writes N trial folders by cycling the 59 result.json files of fixtures/runs/harbor
(each ~8 kB, as Harbor writes them; trial names made unique). The timing runs `reward_summary`
three times in this process (the first warms the catalog and the page cache) and prints wall
and CPU seconds (user + system, all threads): on a shared machine CPU time is the steadier
figure. To compare two commits, run the same command from each checkout, interleaved.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import warnings
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "harbor" / "trace_jobs"


def make(out: Path, n: int) -> None:
    trials = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(FIXTURE.glob("*/result.json"))]
    for i in range(n):
        data = dict(trials[i % len(trials)])
        data["trial_name"] = f"{data['trial_name']}-{i:06d}"
        folder = out / "trace_jobs" / data["trial_name"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "result.json").write_text(json.dumps(data, indent=4), encoding="utf-8")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--make", type=int, metavar="N", help="write N trial folders into RUN first")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.make:
        make(args.run, args.make)
    import rlsql

    warnings.simplefilter("ignore")
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), cpu_seconds()
        rows = rlsql.query("reward_summary", [args.run]).to_dicts()
        print(f"wall {time.perf_counter() - wall:.2f} s  cpu {cpu_seconds() - cpu:.2f} s  trials {rows[0]['trials']}")


if __name__ == "__main__":
    main()
