"""Find run folders and the artifacts inside them (data-contract.md section 1).

This module only looks at names, sizes and the first line of each CSV; DuckDB reads the data.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import glob
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlsql.core import settings
from rlsql.core.errors import DataError, RlsqlWarning, UsageError
from rlsql.runs.logfiles import find_logs, has_training_lines, logs_folder, newest_log_date

#: artifact -> (suffix after the `YYYYMMDD_HHMMSS_` prefix, the newest parser's unprefixed name)
CSV_ARTIFACTS: dict[str, tuple[str, str]] = {
    "metrics": ("metrics_table.csv", "metrics.csv"),
    "trials": ("trial_results.csv", "trial_results.csv"),
    "vllm": ("vllm_metrics_table.csv", "vllm_metrics.csv"),
}
CONFIG_NAMES = ("rl_config.yaml", "rl_config.yml")
#: Harbor's trial folders read in place: `trace_jobs/<trial>/result.json` (artifact kind `harbor`)
HARBOR_DIR = "trace_jobs"
HARBOR_RESULT = "result.json"

_PREFIX = re.compile(r"^(?P<ts>\d{8}_\d{6})_(?P<rest>.+)$")
_GLOB_CHARS = re.compile(r"[*?\[]")

SAMPLE_RUN_NAME = "calendar"


@dataclass(frozen=True)
class Artifact:
    """One file rlsql reads for a run."""

    kind: str
    path: Path
    #: the parse time the file name carries (`YYYYMMDD_HHMMSS`), None for unprefixed names
    prefix: str | None = None

    @property
    def prefix_date(self) -> dt.date | None:
        if not self.prefix:
            return None
        # what datetime.strptime(prefix, "%Y%m%d_%H%M%S") accepts, without importing _strptime
        # (~2.5 ms of a small query's start); _PREFIX matched the digits
        p = self.prefix
        hour, minute, second = int(p[9:11]), int(p[11:13]), int(p[13:15])
        if hour > 23 or minute > 59 or second > 59:
            raise ValueError(f"time data {p!r} does not match format '%Y%m%d_%H%M%S'")
        return dt.date(int(p[0:4]), int(p[4:6]), int(p[6:8]))


@dataclass(frozen=True)
class Origin:
    """Where a run given as a URL (`s3://`, `gs://`, `hf://`) came from: its URL, the Hub's commit, when it was
    fetched, and the version (ETag, blob id) of each file fetched, by its path in the run folder. Set by
    rlsql/cache/mirrors.py when it resolves the runs; outputs name a file's origin from it."""

    url: str
    revision: str | None = None
    fetched_at: str | None = None
    versions: Mapping[str, Any] = field(default_factory=dict)

    def shown(self) -> str:
        """The URL, with the Hub commit the copy holds when the URL does not pin it."""
        pinned = self.revision is None or f"@{self.revision}" in self.url
        return self.url if pinned else f"{self.url} (commit {self.revision})"

    def of(self, rel: str) -> dict[str, Any]:
        """The provenance of the file (or folder: trace_jobs) at `rel` in the run folder: its URL, version, the
        Hub commit and when it was fetched; {} for a path that was not fetched."""
        held = rel in self.versions
        if not held and not any(name.startswith(f"{rel}/") for name in self.versions):
            return {}
        out = {"url": self.url.rstrip("/") + (f"/{rel}" if rel else ""), "fetched_at": self.fetched_at}
        if held:  # a folder (trace_jobs) has no version of its own: its files' are in the listing's record
            out["version"] = self.versions[rel]
        if self.revision:
            out["revision"] = self.revision
        return out


@dataclass(frozen=True)
class Run:
    """A run folder: its identity is the folder name."""

    name: str
    path: Path
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    #: files of an artifact's kind that lost to a newer parse (reported by `rlsql runs`)
    ignored: tuple[Path, ...] = ()
    #: for a run given as a URL, where its folder (the URL's copy) came from; None: a folder given as such
    origin: Origin | None = None

    def artifact(self, kind: str) -> Artifact | None:
        return self.artifacts.get(kind)

    def vllm_base_date(self) -> dt.date | None:
        """The date the vLLM `MM-DD` stamps are read against (semantics.md: vLLM year)."""
        vllm = self.artifacts.get("vllm")
        if vllm is None:
            # vLLM stats read from the raw logs: the date of their last write (semantics.md: vLLM year)
            return newest_log_date(find_logs(self.path)) if "logs" in self.artifacts else None
        for candidate in (vllm, self.artifacts.get("metrics"), self.artifacts.get("trials")):
            if candidate is not None and candidate.prefix_date is not None:
                return candidate.prefix_date
        return dt.datetime.fromtimestamp(vllm.path.stat().st_mtime, tz=dt.UTC).date()


def artifact_name(name: str) -> bool:
    """Whether a file named `name` in a run folder is one of its CSV artifacts (prefixed or not)."""
    match = _PREFIX.match(name)
    return any(
        match["rest"] == suffix if match else name == unprefixed for suffix, unprefixed in CSV_ARTIFACTS.values()
    )


def scan_folder(path: Path) -> Run | None:
    """The run in `path`, or None when the folder holds no artifact at all."""
    prefixed: dict[str, list[tuple[str, Path]]] = {kind: [] for kind in CSV_ARTIFACTS}
    plain: dict[str, Path] = {}
    config: Path | None = None
    try:
        entries = sorted(p for p in path.iterdir() if p.is_file())
    except OSError as exc:
        raise DataError(f"{path}: cannot list the folder ({exc.strerror})") from exc
    for entry in entries:
        name = entry.name
        if name in CONFIG_NAMES and config is None:
            config = entry
            continue
        match = _PREFIX.match(name)
        for kind, (suffix, unprefixed) in CSV_ARTIFACTS.items():
            if match and match["rest"] == suffix:
                prefixed[kind].append((match["ts"], entry))
            elif not match and name == unprefixed:
                plain[kind] = entry
    artifacts: dict[str, Artifact] = {}
    ignored: list[Path] = []
    for kind in CSV_ARTIFACTS:
        candidates = sorted(prefixed[kind])
        if candidates:
            ts, newest = candidates[-1]
            artifacts[kind] = Artifact(kind, newest, ts)
            ignored.extend(p for _, p in candidates[:-1])
            if kind in plain:
                ignored.append(plain[kind])
        elif kind in plain:
            artifacts[kind] = Artifact(kind, plain[kind])
    if config is not None:
        artifacts["config"] = Artifact("config", config)
    if has_harbor_trials(path / HARBOR_DIR):
        artifacts["harbor"] = Artifact("harbor", path / HARBOR_DIR)
    if has_trajectories(path / HARBOR_DIR):  # agents' ATIF trajectories, read with any trials source
        artifacts["trajectories"] = Artifact("trajectories", path / HARBOR_DIR)
    artifacts.update(log_artifacts(path))
    if not artifacts:
        return None
    return Run(name=path.name, path=path, artifacts=artifacts, ignored=tuple(ignored))


def log_artifacts(path: Path) -> dict[str, Artifact]:
    """Artifact kind `logs`: the raw training logs (`*.out`/`*.log` here or in `logs/`), when one of them
    holds a training log's lines (logfiles.has_training_lines)."""
    logs = find_logs(path)
    return {"logs": Artifact("logs", logs_folder(path, logs))} if logs and has_training_lines(logs) else {}


def only_loose_logs(run: Run) -> bool:
    """A folder whose only artifact is `*.out`/`*.log` files lying in it (a `rsync.log` in a folder of
    runs, say): its sub-folders are looked at first, and it is a run only when none of them is."""
    logs = run.artifacts.get("logs")
    return (
        set(run.artifacts) == {"logs"}
        and logs is not None
        and logs.path == run.path
        and not any(p.parent != run.path for p in find_logs(run.path))
    )


def prefer_logs(run: Run) -> Run:
    """`--from-logs`: a run with raw logs reads its trainer metrics and vLLM stats from them, and its
    metrics/vLLM CSVs are listed as ignored (the CSVs win otherwise)."""
    if "logs" not in run.artifacts:
        return run
    dropped = [a for kind, a in run.artifacts.items() if kind in ("metrics", "vllm")]
    kept = {kind: a for kind, a in run.artifacts.items() if kind not in ("metrics", "vllm")}
    return replace(run, artifacts=kept, ignored=run.ignored + tuple(a.path for a in dropped))


def prefer_trace_jobs(run: Run) -> Run:
    """`--json-trials`: a run with Harbor's trace_jobs reads its trials from the result.json files, and its
    trials CSV is listed as ignored (the CSV wins otherwise, the JSON filling the columns it lacks)."""
    if "harbor" not in run.artifacts or "trials" not in run.artifacts:
        return run
    kept = {kind: a for kind, a in run.artifacts.items() if kind != "trials"}
    return replace(run, artifacts=kept, ignored=(*run.ignored, run.artifacts["trials"].path))


def chosen_sources(run: Run) -> Run:
    """`run` with the current settings' choice of sources: --from-logs, --json-trials."""
    chosen = settings.current()
    if chosen.from_logs:
        run = prefer_logs(run)
    if any(fnmatch.fnmatchcase(run.name, pattern) for pattern in chosen.json_trials):
        run = prefer_trace_jobs(run)
    return run


def has_harbor_trials(trace_jobs: Path) -> bool:
    """True when `trace_jobs` holds at least one `<trial>/result.json` (stops at the first one)."""
    try:
        with os.scandir(trace_jobs) as entries:
            return any(e.is_dir() and (Path(e.path) / HARBOR_RESULT).is_file() for e in entries)
    except OSError:
        return False


def run_folder_at_or_above(path: Path) -> Path | None:
    """The run folder that `path` is or lies inside, if any (rlsql never writes into one).

    The walk up stops below the user's home and below top-level folders such as /tmp: a stray
    metrics.csv in ~ must not make every folder under it a run's.
    """
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    home = Path(os.path.expanduser("~"))
    for folder in (path, *path.parents):
        if folder == home or len(folder.parts) <= 2:
            break
        try:
            if folder.is_dir() and scan_folder(folder) is not None:
                return folder
        except (DataError, OSError):
            continue
    return None


def has_trajectories(trace_jobs: Path) -> bool:
    """True when some trial folder of `trace_jobs` holds agent/trajectory.json, an agent's ATIF trajectory
    (rlsql/trajectories.py reads them); stops at the first."""
    try:
        with os.scandir(trace_jobs) as entries:
            return any(e.is_dir() and os.path.isfile(os.path.join(e.path, "agent", "trajectory.json")) for e in entries)
    except OSError:
        return False


def sample_run_path() -> Path:
    """The small realistic run shipped inside the package."""
    from importlib import resources  # here: a query given --run (or answered from a kept answer) never needs it

    return Path(str(resources.files("rlsql.runs.sample").joinpath(SAMPLE_RUN_NAME)))


def _expand(spec: str | Path) -> tuple[list[Path], bool]:
    """The folders `spec` names, and whether they came from a glob (a match may then be skipped).

    A path that exists is that path, even when its name holds `*`, `?` or `[` (legal in folder
    names); only a spec that names nothing is expanded as a pattern.
    """
    text = str(spec)
    path = Path(text).expanduser()
    if _GLOB_CHARS.search(text) and not path.exists():
        matches = sorted(Path(m) for m in glob.glob(str(path)))
        folders = [m for m in matches if m.is_dir()]
        for match in matches:
            if not match.is_dir():
                warnings.warn(f"{match}: not a folder, skipped (matched {text})", RlsqlWarning, stacklevel=3)
        if not folders:
            raise DataError(f"{text}: no folder matches this pattern")
        return folders, True
    if not path.exists():
        raise DataError(f"{path}: run folder not found")
    return [path], False


def _scan_or_skip(path: Path) -> Run | None:
    """scan_folder for a folder found by looking around (a sub-folder, a glob match): unlistable is skipped."""
    try:
        return scan_folder(path)
    except DataError as exc:
        warnings.warn(f"{exc}; skipped", RlsqlWarning, stacklevel=4)
        return None


@dataclass(frozen=True)
class _Found:
    """A run found from one --run value: the path it was reached by (its name comes from there) and the run."""

    given: Path
    run: Run


def _runs_at(path: Path, matched: bool = False) -> list[_Found]:
    """The run at `path`, else the runs in its sub-folders.

    `matched`: `path` is one match of a glob, so a problem with it skips it with a warning instead
    of failing the command (the other matches still answer). The run's path is resolved (every
    artifact path rlsql hands to SQL is absolute: shell scripts, db files); its name comes from the
    path as given, so a symlinked run is named by the link.
    """
    given = Path(os.path.abspath(path))
    path = path.resolve()
    if not path.is_dir():
        raise DataError(f"{path}: not a folder (give the run folder, not a file inside it)")
    try:
        run = scan_folder(path)
        if run is not None and not only_loose_logs(run):
            return [_Found(given, run)]
        subs = sorted(p for p in path.iterdir() if p.is_dir())
    except DataError as exc:
        if not matched:
            raise
        warnings.warn(f"{exc}; skipped", RlsqlWarning, stacklevel=3)
        return []
    scanned = [(sub, _scan_or_skip(sub)) for sub in subs]
    found = [_Found(given / sub.name, r) for sub, r in scanned if r is not None]
    _warn_nested([sub for sub, r in scanned if r is None], path)
    if not found and run is not None:
        return [_Found(given, run)]  # loose logs and no run below: a run of its logs
    if not found:
        wanted = ", ".join(f"*_{s}" for s, _ in CSV_ARTIFACTS.values())
        problem = (
            f"{path}: no run artifacts here or in its sub-folders "
            f"(looked for {wanted}, rl_config.yaml, {HARBOR_DIR}/*/{HARBOR_RESULT}, *.out/*.log training logs)"
        )
        if not matched:
            raise DataError(problem)
        warnings.warn(f"{problem}; skipped", RlsqlWarning, stacklevel=3)
    return found


def _warn_nested(others: list[Path], path: Path) -> None:
    """One warning for the sub-folders of a folder of runs that are no run but hold runs themselves (a
    folder of runs grouped one level deeper, `runs/sweep/<run>`): they are not read, and the user is told how."""
    nested = []
    for sub in others:
        try:
            inner = sorted(p for p in sub.iterdir() if p.is_dir())
        except OSError:
            continue
        count = 0
        for folder in inner:
            try:
                count += scan_folder(folder) is not None
            except DataError:
                continue
        if count:
            nested.append((sub, count))
    if nested:
        named = ", ".join(f"{sub.name} ({count} run{'s' if count > 1 else ''})" for sub, count in nested)
        warnings.warn(
            f"{path}: sub-folder(s) {named} hold runs one level deeper, not read; give such a folder "
            f"with its own -r (e.g. -r {nested[0][0]})",
            RlsqlWarning,
            stacklevel=4,
        )


#: the NAME of `--run NAME=PATH`: what a folder name usually is, and never a path or a pattern
_ALIAS = re.compile(r"^(?P<name>[A-Za-z0-9_][A-Za-z0-9_.+-]*)=(?P<path>.+)$")
ALIAS_HINT = "name a run with --run NAME=PATH (e.g. -r lr3e-6=runs/a/run1)"


def split_alias(spec: str | Path) -> tuple[str | None, str | Path]:
    """(NAME, PATH) for `NAME=PATH`, else (None, spec).

    `=` is legal in folder names (`lr=3e-6`, hive partitions such as `run=1`), so a value is an
    alias only when it is a string, is not itself an existing path, and its left side is a plain
    name (letters, digits, `_ . + -`, no `/`). A Path object is always a path.
    """
    if isinstance(spec, Path):
        return None, spec
    match = _ALIAS.match(spec)
    if match is None or Path(spec).expanduser().exists():
        return None, spec
    return match["name"], match["path"]


def resolve_runs(specs: Iterable[str | Path] | str | Path | None) -> list[Run]:
    """Turn `--run` values into runs, ordered by name; None or empty means the packaged sample.

    Names (docs/semantics.md, run names): NAME=PATH names that one run NAME; otherwise a run is
    named by its folder as given (a symlink by the link's name). Runs given together that share a
    folder name are named by as many parent folders as tell them apart (`a/run1`, `b/run1`). One
    folder reached twice is read once: under its alias if it has one, else under its real folder
    name if it was given by it, else the first name in sort order.
    """
    if specs is None:
        specs = [sample_run_path()]
    elif isinstance(specs, (str, Path)):
        specs = [specs]
    specs = list(specs)
    if not specs:
        specs = [sample_run_path()]
    by_path: dict[Path, list[tuple[str | None, Path]]] = {}  # real folder -> (alias, path given)
    runs_by_path: dict[Path, Run] = {}
    for spec in specs:
        alias, target = split_alias(spec)
        try:
            paths, matched = _expand(target)
        except DataError as exc:
            if alias is None:
                raise
            raise DataError(f"{exc} (--run {spec} read as NAME=PATH: run {alias!r} at {target})") from exc
        found = [f for path in paths for f in _runs_at(path, matched)]
        if alias is not None and len(found) != 1:
            raise UsageError(
                f"--run {spec}: NAME=PATH names one run, and {target} holds {len(found)}; "
                "give each run its own NAME=PATH"
            )
        for f in found:
            real = f.run.path.resolve()
            runs_by_path.setdefault(real, f.run)
            by_path.setdefault(real, []).append((alias, f.given))
        if matched and not by_path:
            raise DataError(f"{spec}: no run folder among the folders this pattern matches")
    names = _names(by_path)
    runs = sorted(
        (Run(names[real], real, run.artifacts, run.ignored) for real, run in runs_by_path.items()), key=lambda r: r.name
    )
    for pattern in settings.current().json_trials:
        if not any(fnmatch.fnmatchcase(r.name, pattern) for r in runs):
            # a warning, not an error: RLSQL_JSON_TRIALS may name runs of another command's set
            shown = ", ".join(r.name for r in runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
            warnings.warn(
                f"--json-trials {pattern} (RLSQL_JSON_TRIALS): no run is named so (the runs: {shown}); "
                "their trials come from their trials CSVs",
                RlsqlWarning,
                stacklevel=2,
            )
    return [chosen_sources(r) for r in runs]


def _names(by_path: dict[Path, list[tuple[str | None, Path]]]) -> dict[Path, str]:
    """Each real run folder's name (resolve_runs' rules)."""
    aliased: dict[Path, str] = {}
    given: dict[Path, Path] = {}
    for real, ways in by_path.items():
        aliases = sorted({a for a, _ in ways if a is not None})
        if len(aliases) > 1:
            raise UsageError(f"{real}: one run given under two names ({', '.join(aliases)}); give it one NAME=PATH")
        if aliases:
            aliased[real] = aliases[0]
            continue
        paths = sorted({p for _, p in ways}, key=lambda p: (p.name != real.name, str(p)))
        given[real] = paths[0]
    taken: dict[str, Path] = {}
    for real, name in aliased.items():
        if name in taken:
            raise UsageError(f"two runs are both named {name!r} ({taken[name]} and {real}); {ALIAS_HINT}")
        taken[name] = real
    by_name: dict[str, list[Path]] = {}
    for real, path in given.items():
        by_name.setdefault(path.name, []).append(real)
    names = dict(aliased)
    for name, reals in by_name.items():
        if len(reals) == 1 and name not in taken:
            names[reals[0]] = name
            continue
        for real, label in _by_parents([given[r] for r in reals], reals).items():
            if label in taken or label in names.values():
                raise UsageError(
                    f"two runs are both named {label!r} ({taken.get(label, real)} and {real}); {ALIAS_HINT}"
                )
            names[real] = label
    return names


def _by_parents(paths: Sequence[Path], reals: Sequence[Path]) -> dict[Path, str]:
    """Names for runs sharing a folder name: the fewest trailing path parts that tell them all apart."""
    depth = 2
    longest = max(len(p.parts) for p in paths)
    while True:
        labels = ["/".join(p.parts[-depth:]).lstrip("/") or "/" for p in paths]
        if len(set(labels)) == len(labels) or depth >= longest:
            return dict(zip(reals, labels, strict=True))
        depth += 1


class HeaderError(DataError):
    """A CSV header rlsql cannot read as columns: the file is skipped (`problem` names no file)."""

    def __init__(self, path: Path, problem: str):
        self.path, self.line, self.problem = path, 1, problem
        super().__init__(f"{path}:1: {problem}")


@dataclass(frozen=True)
class Header:
    """A CSV's column names as rlsql reads them, and the names it had to strip of spaces."""

    names: list[str]
    stripped: list[str] = field(default_factory=list)

    def notice(self) -> str | None:
        if not self.stripped:
            return None
        return f"spaces around column name(s) {', '.join(repr(n) for n in self.stripped)}: read without them"


def _first_line(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            raw = fh.readline()  # bytes: a bad byte further down the file is DuckDB's to report, per row
        if b"\0" in raw:
            # a zero-filled file (what a crash leaves) or a damaged header: no column name can hold a NUL
            raise HeaderError(path, "header holds a NUL byte (a zero-filled or damaged file)")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise HeaderError(path, f"header is not valid UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from exc


def csv_header(path: Path) -> Header:
    """The header of a CSV rlsql reads, or HeaderError when its columns cannot be told apart.

    Spaces around a name are dropped (` reward` is `reward`); a repeated name, an empty name (a
    trailing comma, pandas' index column) or a header split by `;` or tabs instead of commas is
    refused: the reader would bind the wrong cells to a name, or none.
    """
    first = _first_line(path)
    if not first.strip():
        return Header([])
    raw = next(csv.reader([first]))
    names = [n.strip() for n in raw]
    empty = [i + 1 for i, n in enumerate(names) if not n]
    if len(names) == 1 and (";" in first or "\t" in first):
        raise HeaderError(path, "delimiter is not a comma (the header has one column and holds ';' or a tab)")
    if empty:
        raise HeaderError(path, f"header has an empty column name (column {', '.join(map(str, empty))})")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise HeaderError(path, f"header repeats column {', '.join(repeated)}")
    return Header(names, [r for r, n in zip(raw, names, strict=True) if r != n])


def unreadable(path: Path) -> str | None:
    """Why this process cannot open `path` for reading (no permission, gone), or None: a file DuckDB would
    fail on as a whole is skipped with a warning before it is handed to DuckDB, so the other files answer."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    return None


def read_header(path: Path) -> list[str]:
    """Column names from the first line of a CSV, spaces around them dropped (a UTF-8 BOM is dropped;
    an empty file has none). Lenient: csv_header says whether the names can be read at all."""
    first = _first_line(path)
    if not first.strip():
        return []
    return [n.strip() for n in next(csv.reader([first]))]
