"""Peak memory and time of the commands that write every row of a large run: issue 25's targets.

Usage (a venv with ``pip install '.[bench,report]'``, a run from ``bench/make_run.py --preset 10m DIR``)::

    python bench/streaming.py /work/bench-data/10m            # every case below, once each
    python bench/streaming.py /work/bench-data/10m --only query-csv,export-csv

Each case is one fresh process under ``/usr/bin/time -v`` (wall, user + system CPU, peak RSS), its
output in a scratch folder that is deleted after. Cases: ``query trials -f FMT -o FILE`` for every
format of ``-f`` (table included: a file gets every row), the same rows through ``export trials``
(CSV, JSON, Parquet: what ``query -o`` is held to, within 1.5x), ``sql 'SELECT * FROM trials'``
to a file, and ``report`` to a folder. Targets: every ``query -o`` and ``sql`` under 500 MB peak,
``report`` under 1 GB and 30 s. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

# bench/fleet.py: one fresh process under /usr/bin/time -v (this script's folder is on sys.path)
from fleet import timed

RLSQL = str(Path(sys.executable).parent / "rlsql")


def cases(run: Path, out: Path) -> dict[str, list[str]]:
    r = ["-r", str(run)]
    found = {
        f"query-{fmt}": ["query", "trials", *r, "-f", fmt, "-o", str(out / f"q.{fmt}")]
        for fmt in ("csv", "json", "jsonl", "markdown", "table")
    }
    for fmt in ("csv", "json", "parquet"):
        found[f"export-{fmt}"] = ["export", "trials", *r, "-f", fmt, "-o", str(out / f"e-{fmt}")]
    found["sql-csv"] = ["sql", "SELECT * FROM trials", *r, "-f", "csv", "-o", str(out / "s.csv")]
    found["sql-json"] = ["sql", "SELECT * FROM trials", *r, "-f", "json", "-o", str(out / "s.json")]
    found["report"] = ["report", *r, "-o", str(out / "report")]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    print("| case | wall s | CPU s | peak RSS MB | output MB | status |\n|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="rlsql-stream-") as scratch:
        for name, command in cases(args.run, Path(scratch)).items():
            if args.only and name not in args.only.split(","):
                continue
            # the rows read in place, as a first command reads them
            result = timed([RLSQL, *command], env={"RLSQL_CACHE": "off"})
            size = sum(p.stat().st_size for p in Path(scratch).rglob("*") if p.is_file()) / 2**20
            status = "ok" if result["rc"] == 0 else f"exit {result['rc']}: {' '.join(result['err'])}"
            print(
                f"| {name} | {result['wall_s']:.1f} | {result['cpu_s']:.1f} | {result['rss_mb']:,} | {size:,.0f} "
                f"| {status} |",
                flush=True,
            )
            for entry in Path(scratch).iterdir():
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


if __name__ == "__main__":
    main()
