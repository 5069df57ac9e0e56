"""A query over a run in a bucket or on the Hub against the same query over the local folder.

Usage (from the repository root)::

    python bench/remote.py [--run DIR] [--pairs N] [--query NAME] [--latency-ms MS]

The run's files (and a 64 MiB `model.safetensors` beside them, which must never be fetched) are put in
moto's S3 server and in the Hub stand-in of tests/remote_stores.py, both on 127.0.0.1 in this process.
Each round runs, in a fresh `rlsql` process each (CPU from os.wait4): the query over the local folder,
the first query over `s3://` and `hf://` (an empty cache folder: listing and fetching), and the repeated
query (the same cache folder: one request, nothing fetched). The order of the five rotates from round
to round. `--latency-ms` adds that much to each answer of both stores (a far store). Prints medians
and the requests each kind of query cost. Measured, never asserted: results go into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.remote_stores import HubStore, S3Store, folder_files  # noqa: E402

WEIGHTS = 64 * 2**20


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child from its own rusage, "") of one rlsql process; its stderr dropped."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: stderr to /dev/null, then exec
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        os.execve(args[0], args, env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(args)} exited {status}")
    return wall, usage.ru_utime + usage.ru_stime, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=str(ROOT / "fixtures" / "runs" / "calendar"))
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--query", default="turns_by_exception")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    run = Path(args.run).resolve()
    name = run.name
    exe = shutil.which("rlsql") or str(Path(sys.executable).parent / "rlsql")
    files = folder_files(run)
    weights = {"model.safetensors": os.urandom(1024) * (WEIGHTS // 1024)}
    work = Path(tempfile.mkdtemp(prefix="rlsql-remote-bench-"))
    with S3Store() as s3, HubStore() as hub:
        if args.latency_ms:
            delay = args.latency_ms / 1000
            for store in (s3, hub):
                store.delay = delay
        s3.put("bench", {f"runs/{name}/{k}": v for k, v in {**files, **weights}.items()})
        hub.commit(f"org/{name}", {**files, **weights})
        base = {
            **os.environ,
            **s3.env(),
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HOME": str(work / "hf"),
        }
        urls = {"s3": f"s3://bench/runs/{name}", "hf": f"hf://org/{name}"}
        kinds = ["local", "s3-first", "s3-repeat", "hf-first", "hf-repeat"]
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
        requests: dict[str, list[int]] = {k: [] for k in kinds}
        fetched: dict[str, set[str]] = {k: set() for k in kinds}
        for round_no in range(args.pairs):
            order = kinds[round_no % len(kinds) :] + kinds[: round_no % len(kinds)]
            cache = work / f"cache-{round_no}"
            warm = {"s3": False, "hf": False}
            for kind in order:
                store_name = kind.split("-")[0]
                if kind.endswith("repeat") and not warm[store_name]:
                    # the repeat needs a copy: made here, untimed, when the rotation put the repeat first
                    subprocess.run(
                        [exe, "query", args.query, "-r", urls[store_name], "-f", "csv"],
                        check=True,
                        env={**base, "RLSQL_CACHE_DIR": str(cache)},
                        stdout=subprocess.DEVNULL,
                    )
                    warm[store_name] = True
                if kind.endswith("first"):
                    shutil.rmtree(cache / "remote", ignore_errors=True)
                spec = str(run) if kind == "local" else urls[store_name]
                s3.clear()
                hub.clear()
                env = {**base, "RLSQL_CACHE_DIR": str(cache)}
                argv = [exe, "query", args.query, "-r", spec, "-f", "csv", "-o", str(work / "out.csv")]
                wall, cpu, _ = run_child(argv, env)
                samples[kind].append((wall, cpu))
                if store_name == "s3":
                    requests[kind].append(len(s3.requests))
                    fetched[kind].update(s3.gets())
                    warm["s3"] = True
                elif store_name == "hf":
                    requests[kind].append(len(hub.requests))
                    fetched[kind].update(hub.resolves())
                    warm["hf"] = True
        print(
            f"run {run} ({sum(len(b) for b in files.values()):,} bytes in {len(files)} files, and "
            f"{WEIGHTS // 2**20} MiB of weights beside them), query {args.query}, {args.pairs} rounds, "
            f"latency {args.latency_ms:g} ms"
        )
        print(f"{'kind':10} {'wall_s':>7} {'cpu_s':>6} {'requests':>9}  fetched")
        for kind in kinds:
            wall = statistics.median(w for w, _ in samples[kind])
            cpu = statistics.median(c for _, c in samples[kind])
            reqs = statistics.median(requests[kind]) if requests[kind] else 0
            shown = f"{len(fetched[kind])} files" + (
                " incl. weights!" if any("safetensors" in f for f in fetched[kind]) else ""
            )
            print(f"{kind:10} {wall:7.2f} {cpu:6.2f} {reqs:9g}  {shown}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
