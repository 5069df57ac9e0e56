"""Start-up of the command line, this checkout against an older commit, interleaved so load hits both alike.

Usage: python bench/cli_startup.py [REF] [ROUNDS]   (default REF: fd0c699, the commit before the lazy
`rlsql/__init__`; 15 rounds). Exports REF's rlsql/ and sql/ into a temporary folder, puts it first on
PYTHONPATH for the "before" runs, and prints the median wall seconds of each command per side:
`import rlsql.cli.app`, `rlsql --help`, and `rlsql query turn_stats` over the tiny fixture run.
Also: `python -X importtime -c 'import rlsql.cli.app' 2>&1 | tail -1` for the import alone.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "fixtures" / "runs" / "tiny"
COMMANDS = {
    "import rlsql.cli.app": [sys.executable, "-c", "import rlsql.cli.app"],
    "rlsql --help": [sys.executable, "-m", "rlsql", "--help"],
    "rlsql query turn_stats (tiny)": [sys.executable, "-m", "rlsql", "query", "turn_stats", "-r", str(TINY)],
}


def main() -> None:
    ref = sys.argv[1] if len(sys.argv) > 1 else "fd0c699"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    with tempfile.TemporaryDirectory(prefix="rlsql-before-") as before:
        archive = subprocess.run(["git", "archive", ref, "rlsql", "sql"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", before], input=archive.stdout, check=True)
        sides = {"before": {**os.environ, "PYTHONPATH": before}, "after": dict(os.environ)}
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for side, env in sides.items():
                for label, command in COMMANDS.items():
                    start = time.perf_counter()
                    subprocess.run(
                        command,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        env=env,
                        cwd=tempfile.gettempdir(),
                        check=False,
                    )
                    times.setdefault((side, label), []).append(time.perf_counter() - start)
    print(f"median wall seconds of {rounds} interleaved rounds; load {os.getloadavg()[0]:.2f}")
    for label in COMMANDS:
        before_s = statistics.median(times[("before", label)])
        after_s = statistics.median(times[("after", label)])
        print(f"{label:32s} before {before_s:.3f}  after {after_s:.3f}")


if __name__ == "__main__":
    main()
