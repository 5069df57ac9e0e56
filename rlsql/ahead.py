"""Questions answered ahead: once a first question over a set of runs is answered and kept, the other
named queries over the same files are answered in a detached process and kept too, so that the next
question is printed from a kept answer (rlsql/answers.py) as a repeated one is.

An analyst rarely asks one question of a run: `turn_stats`, then `turns_by_exception`, then
`reward_summary`. Each of those reads the same trials CSV; answered one by one, each pays DuckDB's
start and a read of the file (or of its Parquet copy), where polars' script pays its own start and
read too (bench/RESULTS.md, issue 15). Answered ahead, the second question costs ~0.05 s at every size.

Which questions: the named queries (`sql/queries/`) whose data files are among the asked query's: a
query over the trials (its sources read the trials CSV or Harbor's result.json files) brings the other
trial queries, one over the trainer's metrics the other metrics queries. rl_config.yaml and the run list
are read by many queries and are small, so they do not count. Each is answered with its parameters'
defaults (what `rlsql query NAME` asks), under the key `rlsql query NAME` with the same `--run` values
computes, and stored by answers.store under the same rules as any answer (no input changed while it
was read or in the racy window, small enough, only rlsql's own warnings).

When: only after the asked question's answer was stored (so its files are settled and its answers
small: a question over a fleet too large to keep starts nothing), over at most MAX_RUNS runs, and only
for questions not kept already, and not while another such process answers into the same cache folder
(one at a time: it claims the folder in its pid's name). The process waits for the builders of the runs' cached copies
(rlsql/cachebg.py) first, so that a large CSV is read once more from its Parquet copy, not again in
place; it runs at low CPU priority, prints nothing, and never writes outside the cache folder.
RLSQL_CACHE_AHEAD=0 turns it off, as do RLSQL_CACHE_ANSWERS=0 and RLSQL_CACHE=0 / --no-cache.

Usage (started by the command line, not by hand): `python -m rlsql.ahead CACHE_ROOT NAME... -- RUN...`
(no RUN: the bundled sample run, as `rlsql query` without --run).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from rlsql import answers, cache, detached, writes
from rlsql.errors import RlsqlError, RlsqlWarning
from rlsql.runs import Run, resolve_runs

if TYPE_CHECKING:
    from rlsql.catalog import Catalog

#: a set of more runs than this is not answered ahead: each question over a fleet costs seconds, and
#: most fleets' answers are too large to keep (answers.MAX_ROWS)
MAX_RUNS = 64
#: the process's CPU priority, as the cache builder's: it must not slow the user's next command
NICE = 10
#: how long to wait for a builder of the runs' cached copies before answering from the files in place
BUILDER_WAIT_SECONDS = 900.0
#: sources that do not make two queries read "the same files": the config and the run list are small
_SHARED_ARTIFACTS = {None, "config"}


def _data_artifacts(catalog: Catalog, name: str) -> set[str]:
    return {f.artifact for f in catalog.closure([name]) if f.kind == "source"} - _SHARED_ARTIFACTS


def questions_over_the_same_files(name: str) -> list[str]:
    """The named queries other than `name` whose data files are among `name`'s, in catalogue order."""
    from rlsql.catalog import load_catalog

    catalog = load_catalog()
    if name not in catalog.files:
        return []
    asked = _data_artifacts(catalog, name)
    if not asked:
        return []
    return [f.name for f in catalog.order
            if f.kind == "query" and f.name != name and _data_artifacts(catalog, f.name) <= asked]


def unanswered(names: Sequence[str], runs: Sequence[Run]) -> list[str]:
    """Those of `names` with no kept answer over `runs` (with their parameters' defaults)."""
    try:
        inputs = answers.inputs_of(runs)  # once for all the keys: the same files
    except OSError:
        return []
    left = []
    for name in names:
        keyed = answers.key_of(name, {}, runs, inputs)
        if keyed is not None and not answers.is_kept(keyed[0]):
            left.append(name)
    return left


def start(name: str, run_specs: Sequence[str] | None, runs: Sequence[Run]) -> int | None:
    """After `name`'s answer over `runs` (given as `run_specs`) was stored: start the detached process
    that answers the other questions over the same files; its pid, or None when there is nothing to do
    (off, too many runs, all kept already) or it could not start."""
    root = cache.cache_root()
    if not cache.ahead_wanted() or root is None or len(runs) > MAX_RUNS:
        return None
    folder = root / answers.ANSWERS_DIR
    if folder.is_symlink() or running_in(folder):
        return None  # one at a time per cache folder: a script asking a question of each of 500 runs starts one
    names = unanswered(questions_over_the_same_files(name), runs)
    if not names:
        return None
    pid = detached.start("rlsql.ahead", [str(root), *names, "--", *(run_specs or [])])
    if pid is None:
        return None
    # not waited for: the command exits straight after (the process is then init's to reap)
    with contextlib.suppress(OSError):  # claimed in its name now, as a cache builder is (its own claim: none)
        folder.mkdir(exist_ok=True)
        writes.claim(folder / CLAIM, pid)
    return pid


#: the name whose temporary names (rlsql/writes.py, with the process's pid) claim the answers folder
#: for a process answering ahead
CLAIM = "ahead"


def running_in(folder: Path) -> bool:
    """Whether a live process on this host (other than this one) answers ahead into answers folder `folder`."""
    return writes.claimant(folder / CLAIM, other_than=os.getpid()) is not None


def wait_for_builders(runs: Sequence[Run], root: Path, timeout: float = BUILDER_WAIT_SECONDS) -> None:
    """Return once no live process builds a cached copy of the runs' files (or after `timeout`)."""
    try:
        entries = [cache.entry_for(path, root) for path in answers.input_files(answers.inputs_of(runs))]
    except OSError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(cache.builder_of(entry) is not None for entry in entries):
        time.sleep(0.2)


def answer(names: Sequence[str], runs: Sequence[Run], started_ns: int | None = None) -> list[str]:
    """Answer and keep each of `names` over `runs` that has no kept answer; the names kept. A question
    that fails or cannot be kept is skipped: the user's own `rlsql query` says why, if it must. Once a
    `cache clear` has run since `started_ns` (as a builder does: cache.cleared_since), nothing more is kept."""
    from rlsql.api import run_query

    root = cache.cache_root()
    kept = []
    for name in names:
        if started_ns is not None and root is not None and cache.cleared_since(root, started_ns):
            break
        keyed = answers.key_of(name, {}, runs)
        if keyed is None or answers.is_kept(keyed[0]):
            continue
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                result = run_query(name, runs, {})
        except (RlsqlError, OSError, duckdb.Error):
            continue
        if any(w.category is not RlsqlWarning for w in said):
            continue
        found = answers.Answer(result.columns, result.rows, [str(w.message) for w in said])
        after = answers.key_of(name, {}, runs)
        if started_ns is not None and root is not None and cache.cleared_since(root, started_ns):
            break  # cleared while it was answered: the user asked for an empty folder
        if answers.store(keyed[0], keyed[1], name, runs, found, after[0] if after else None):
            kept.append(name)
    return kept


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or "--" not in args:
        print("usage: python -m rlsql.ahead CACHE_ROOT NAME... -- RUN...", file=sys.stderr)
        return 2
    split = args.index("--")
    root, names, specs = Path(args[0]), args[1:split], args[split + 1:]
    if cache.cache_root() != root or not cache.ahead_wanted():
        return 0  # started for another folder, or turned off since: nothing of ours to do
    # a clear from now on stops it (a folder not made yet has nothing to clear: the first store makes it)
    started_ns = time.time_ns() if cache.has_marker(root) else None
    with contextlib.suppress(OSError):
        os.nice(NICE)
    try:
        try:
            runs = resolve_runs(specs or None)
        except RlsqlError:
            return 0
        wait_for_builders(runs, root)
        answer(names, runs, started_ns)
    finally:
        writes.drop_claims(root / answers.ANSWERS_DIR / CLAIM, os.getpid())
    return 0


if __name__ == "__main__":
    sys.exit(main())
