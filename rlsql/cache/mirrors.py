"""Runs where they live (`s3://`, `gs://`, `hf://`): fetched once into the cache folder, then read in place.

A `--run` value that is a URL becomes a local folder before anything else looks at it: one recursive
listing of the URL decides which files rlsql reads (the names a local run folder is scanned for,
`wanted`: never the weights, optimizer state or anything else), and only the files that are new or
changed since the last fetch (size and ETag, the Hub's blob id; on the Hub, nothing at all while the
repository's commit is the one fetched) are copied, each under a temporary name and renamed. Every
command then reads an ordinary run folder, the mirror: `<cache>/remote/<key>/<bucket or ORG/REPO>/<prefix>`,
beside its record `<key>.json` (the URL, the revision, each file's size and ETag, when it was fetched).

This is the one place a reading command writes: only here, only into rlsql's cache folder (docs/caching.md).
A backend is imported only when a URL of its kind is given; credentials come from where the backend
looks (the AWS chain, Google's application default credentials, HF_TOKEN or the stored Hub login), and
nothing here prints them. When the store cannot be reached, the last fetched copy answers with one
warning saying how old it is; with no copy, one line names the URL and why.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from rlsql.cache import store
from rlsql.core import settings
from rlsql.core.errors import DataError, RlsqlWarning, UsageError
from rlsql.runs import writes
from rlsql.runs.folders import (
    CONFIG_NAMES,
    HARBOR_DIR,
    HARBOR_RESULT,
    Origin,
    Run,
    artifact_name,
    split_alias,
)
from rlsql.runs.folders import (
    resolve_runs as resolve_local,
)
from rlsql.runs.logfiles import LOG_SUFFIXES, LOGS_DIR
from rlsql.runs.trajectories import AGENT_DIR, segments_of

REMOTE_DIR = store.REMOTE_DIR
#: scheme -> (the module it needs, the extra that installs it)
BACKENDS = {"s3": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"), "hf": ("huggingface_hub", "hf")}
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
#: a Hub revision that is a commit: what it names never changes
#: files fetched at once (threads, ended with the refresh)
FETCHES_AT_ONCE = 8
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_url(spec: str | Path) -> bool:
    return isinstance(spec, str) and _URL.match(spec) is not None


@dataclass(frozen=True)
class Location:
    """What a run URL names: a store (`s3`, `gs`, `hf`), its bucket or repository, a path under it."""

    given: str
    scheme: str
    root: str
    prefix: str = ""
    repo_type: str = "model"
    revision: str | None = None

    @property
    def key(self) -> str:
        canonical = json.dumps([self.scheme, self.repo_type, self.root, self.prefix, self.revision])
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def parts(self) -> tuple[str, ...]:
        """The mirror's path under its key: the last part names the run, as a local folder's name does."""
        return tuple(p for p in f"{self.root}/{self.prefix}".split("/") if p)

    def url(self, sub: str = "") -> str:
        """The URL of the location, or of a file or folder `sub` below it (revision included)."""
        path = "/".join(p for p in (self.prefix, sub) if p)
        if self.scheme == "hf":
            kind = "datasets/" if self.repo_type == "dataset" else ""
            revision = f"@{self.revision}" if self.revision else ""
            return f"hf://{kind}{self.root}{revision}" + (f"/{path}" if path else "")
        return f"{self.scheme}://{self.root}" + (f"/{path}" if path else "")


def parse(url: str) -> Location:
    """The Location a run URL names, or a UsageError saying what rlsql reads."""
    match = _URL.match(url)
    if match is None:
        raise UsageError(f"{url}: not a URL")
    scheme, rest = match["scheme"].lower(), match["rest"]
    scheme = "gs" if scheme == "gcs" else scheme
    if scheme not in BACKENDS:
        raise UsageError(
            f"{url}: rlsql reads runs from s3://, gs:// and hf:// URLs, not {scheme}://; "
            "copy the run folder here and give its path"
        )
    parts = [p for p in rest.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise UsageError(f"{url}: a run URL cannot hold . or .. segments")
    if scheme != "hf":
        if not parts:
            raise UsageError(f"{url}: name a bucket ({scheme}://BUCKET/PREFIX)")
        return Location(url, scheme, parts[0], "/".join(parts[1:]))
    repo_type = "model"
    if parts and parts[0] in ("datasets", "models"):
        repo_type = "dataset" if parts[0] == "datasets" else "model"
        parts = parts[1:]
    if len(parts) < 2:
        raise UsageError(f"{url}: name a Hub repository (hf://ORG/REPO[@REVISION], hf://datasets/ORG/REPO)")
    name, at, revision = parts[1].partition("@")
    if not name or (at and not revision):
        raise UsageError(f"{url}: an empty repository name or revision")
    return Location(url, "hf", f"{parts[0]}/{name}", "/".join(parts[2:]), repo_type, revision or None)


# --- which files a run folder's scan reads -----------------------------------------------------


def run_file(parts: Sequence[str]) -> bool:
    """Whether a file at `parts` below a run folder is one rlsql reads (rlsql/runs/folders.py scan_folder,
    logfiles.find_logs, harbor.list_trials, trajectories.list_trajectories look for the same names)."""
    name = parts[-1]
    if len(parts) == 1:
        return name in CONFIG_NAMES or artifact_name(name) or name.endswith(LOG_SUFFIXES)
    if len(parts) == 2:
        return parts[0] == LOGS_DIR and name.endswith(LOG_SUFFIXES)
    if parts[0] != HARBOR_DIR:
        return False
    if len(parts) == 3:
        return name == HARBOR_RESULT
    return len(parts) == 4 and parts[2] == AGENT_DIR and bool(segments_of([name]))


def wanted(rel: str) -> bool:
    """Whether the listed file `rel` (relative to the URL) is read: the URL is a run folder, or a folder of runs."""
    parts = rel.split("/")
    return run_file(parts) or (len(parts) > 1 and run_file(parts[1:]))


def trial_folders(rels: Iterable[str]) -> set[str]:
    """The trial folders (`trace_jobs/<trial>`) the listing holds, made in the mirror even when rlsql reads
    none of their files: a trial Harbor has not finished is counted as a local one is."""
    found = set()
    for rel in rels:
        parts = rel.split("/")
        for start in (0, 1):
            if len(parts) > start + 2 and parts[start] == HARBOR_DIR:
                found.add("/".join(parts[: start + 2]))
    return found


# --- the stores --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """A file of the listing: its path relative to the URL, size and version (ETag, generation, blob id)."""

    rel: str
    size: int
    version: str
    #: when the store last wrote it (its copy keeps that modification time: the vLLM year is read against a
    #: raw log's, docs/semantics.md), None when the store does not say
    mtime: float | None = None


def _epoch(value: Any) -> float | None:
    """A listing's time (a datetime, or an ISO 8601 string) as seconds since the epoch."""
    import datetime as dt

    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.timestamp() if isinstance(value, dt.datetime) else None


#: the loggers of the backends and what they call: a failure they log (gcsfs logs each retry, with its
#: traceback) would reach stderr through logging's last-resort handler beside rlsql's one line
_BACKEND_LOGGERS = ("s3fs", "gcsfs", "fsspec", "huggingface_hub", "aiobotocore", "botocore", "google")


def _backend(loc: Location) -> Any:
    import logging

    module, extra = BACKENDS[loc.scheme]
    try:
        imported = __import__(module)
    except ImportError:
        raise UsageError(
            f"{loc.given}: reading {loc.scheme}:// runs needs {module}: pip install 'rlsql[{extra}]'"
        ) from None
    for name in _BACKEND_LOGGERS:
        logger = logging.getLogger(name)
        if not logger.handlers:  # a program that configured its own logging keeps it
            logger.addHandler(logging.NullHandler())
    return imported


class _Bucket:
    """An S3 or GCS bucket through its fsspec filesystem (no listing cache: each refresh lists once)."""

    def __init__(self, loc: Location):
        self.loc = loc
        backend = _backend(loc)
        if loc.scheme == "s3":
            self.fs = backend.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)
            # s3fs retries a failed call 5 times over botocore's own attempts (AWS_MAX_ATTEMPTS): a store that
            # cannot be reached cost ~11 s before the copy answered; twice is enough for a dropped connection
            self.fs.retries = 2
        else:
            self.fs = backend.GCSFileSystem(skip_instance_cache=True, use_listings_cache=False)
        self.base = f"{loc.root}/{loc.prefix}".rstrip("/")

    def revision(self) -> str | None:
        return None

    def files(self, revision: str | None) -> list[Listed]:
        found = self.fs.find(self.base, detail=True)
        out = []
        for path, info in found.items():
            if info.get("type", "file") != "file" or not path.startswith(self.base + "/"):
                continue
            version = info.get("ETag") or info.get("etag") or info.get("generation") or info.get("md5Hash") or ""
            out.append(
                Listed(
                    path[len(self.base) + 1 :],
                    int(info.get("size") or 0),
                    str(version).strip('"'),
                    _epoch(info.get("LastModified") or info.get("updated")),
                )
            )
        if not out and not self.fs.exists(self.loc.root):
            raise FileNotFoundError(self.loc.root)
        return out

    def fetch(self, file: Listed, revision: str | None, target: Path) -> None:
        self.fs.get_file(f"{self.base}/{file.rel}", str(target))


class _HubRepo:
    """A Hugging Face Hub repository through huggingface_hub's API (HF_ENDPOINT, HF_TOKEN or the stored login)."""

    def __init__(self, loc: Location):
        self.loc = loc
        backend = _backend(loc)
        self.api = backend.HfApi()
        self.modified: float | None = None

    def revision(self) -> str | None:
        info = self.api.repo_info(self.loc.root, repo_type=self.loc.repo_type, revision=self.loc.revision)
        self.modified = _epoch(getattr(info, "last_modified", None))  # the listing has no times of its own
        return str(info.sha)

    def files(self, revision: str | None) -> list[Listed]:
        from huggingface_hub.hf_api import RepoFile

        tree = self.api.list_repo_tree(
            self.loc.root,
            path_in_repo=self.loc.prefix or None,
            recursive=True,
            revision=revision,
            repo_type=self.loc.repo_type,
        )
        skip = len(self.loc.prefix) + 1 if self.loc.prefix else 0
        return [Listed(f.path[skip:], f.size, f.blob_id, self.modified) for f in tree if isinstance(f, RepoFile)]

    def fetch(self, file: Listed, revision: str | None, target: Path) -> None:
        from urllib.parse import quote

        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        path = "/".join(p for p in (self.loc.prefix, file.rel) if p)
        # the resolve route of the API's own endpoint (hf_hub_url keeps the endpoint read at its import)
        kind = "datasets/" if self.loc.repo_type == "dataset" else ""
        url = f"{self.api.endpoint}/{kind}{self.loc.root}/resolve/{quote(revision or 'main', safe='')}/{quote(path)}"
        with get_session().stream("GET", url, headers=build_hf_headers(), follow_redirects=True) as response:
            hf_raise_for_status(response)
            with target.open("xb") as fh:
                for chunk in response.iter_bytes(1 << 20):
                    fh.write(chunk)


#: exception class names (anywhere in the chain) -> (why, the store could not be reached at all)
_WHY = [
    (
        ("NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError", "RefreshError"),
        "no credentials (rlsql uses the store's usual ones: the AWS chain, Google's application default "
        "credentials, HF_TOKEN or the stored Hub login)",
        False,
    ),
    (("RevisionNotFoundError",), "no such revision", False),
    (("GatedRepoError",), "no permission (a gated repository: accept its terms and set HF_TOKEN)", False),
    (("RepositoryNotFoundError",), "no such repository (or no permission to see it: set HF_TOKEN)", False),
    (("PermissionError",), "no permission (check the credentials)", False),
    (("FileNotFoundError", "NoSuchBucket"), "no such bucket or prefix", False),
    (("OfflineModeIsEnabled",), "HF_HUB_OFFLINE is set", True),
    (
        (
            "EndpointConnectionError",
            "ClientConnectorError",
            "ConnectError",
            "ConnectTimeout",
            "ConnectionError",
            "ServerDisconnectedError",
            "ReadTimeout",
            "TimeoutError",
            "TransportError",
            "ConnectionRefusedError",
            "ClientOSError",
        ),
        "the store cannot be reached",
        True,
    ),
]


def why(exc: BaseException) -> tuple[str, bool]:
    """(why a listing failed, in words that name no secret; whether the store was unreachable)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    names = {cls.__name__ for e in chain for cls in type(e).__mro__}
    for classes, reason, unreachable in _WHY:
        if names.intersection(classes):
            return reason, unreachable
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status in (401, 403):
        return "no permission (check the credentials)", False
    first = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}{': ' + first if first else ''}", False


# --- the mirror --------------------------------------------------------------------------------


def _root() -> Path:
    root = settings.current().cache_dir
    if root is None:
        raise UsageError(
            f"run URLs are fetched into the cache folder, and there is none: HOME is not set; set {store.CACHE_ENV}"
        )
    try:
        return store.ensure_root(root)
    except store.CacheUnavailable as exc:
        raise UsageError(f"run URLs are fetched into the cache folder: {exc}") from exc


def _age(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{int(seconds)} seconds"


class _Progress:
    """One line on stderr, rewritten as files arrive; only on a terminal."""

    def __init__(self, url: str, total: int, size: int):
        self.on = total > 0 and sys.stderr.isatty()
        self.url, self.total, self.size, self.done, self.bytes = url, total, size, 0, 0

    def step(self, size: int) -> None:
        self.done, self.bytes = self.done + 1, self.bytes + size
        if self.on:
            sys.stderr.write(
                f"\rfetching {self.url}: {self.done}/{self.total} files, "
                f"{self.bytes / 2**20:.1f} of {self.size / 2**20:.1f} MiB"
            )
            sys.stderr.flush()

    def end(self) -> None:
        if self.on:
            sys.stderr.write("\n")


def mirror(url: str) -> Path:
    """The local folder holding what rlsql reads of `url`, fetched or refreshed now."""
    loc = parse(url)
    root = _root()
    base = root / REMOTE_DIR
    record_path, folder = base / f"{loc.key}.json", base / loc.key
    target = folder.joinpath(*loc.parts)
    record = store.read_mirror_record(record_path)
    if (
        record
        and target.is_dir()
        and loc.revision
        and _COMMIT.match(loc.revision)
        and record.get("revision") == loc.revision
    ):
        store.touch(store.Entry(record_path, record_path))
        return target  # a commit never changes: its complete copy answers without a request
    source: _Bucket | _HubRepo = _HubRepo(loc) if loc.scheme == "hf" else _Bucket(loc)
    try:
        revision = source.revision()
        if revision is not None and record.get("revision") == revision and target.is_dir():
            store.touch(store.Entry(record_path, record_path))
            return target
        listing = source.files(revision)
    except Exception as exc:
        reason, _ = why(exc)
        if record and target.is_dir():
            age = _age(max(0.0, time.time() - float(record.get("fetched_epoch", 0))))
            warnings.warn(
                f"{url}: {reason}; answering from the copy fetched {age} ago ({record.get('fetched_at')})",
                RlsqlWarning,
                stacklevel=3,
            )
            return target
        raise DataError(f"{url}: {reason}") from None
    with store.build_lock(root):
        _refresh(loc, source, revision, listing, record, record_path, target)
    return target


def _refresh(
    loc: Location,
    source: _Bucket | _HubRepo,
    revision: str | None,
    listing: list[Listed],
    record: dict[str, Any],
    record_path: Path,
    target: Path,
) -> None:
    """Copy the wanted files that changed, remove those gone, and record what the mirror now holds."""
    files = {f.rel: f for f in listing if wanted(f.rel) and _safe(f.rel)}
    if not files:
        raise DataError(
            f"{loc.given}: no run files there (looked for what a run folder holds: metrics, trials and "
            f"vLLM CSVs, rl_config.yaml, {HARBOR_DIR}/*/{HARBOR_RESULT}, *.out/*.log logs)"
        )
    held: dict[str, Any] = record.get("files", {}) if record.get("url") == loc.url() else {}
    changed = [
        f
        for rel, f in sorted(files.items())
        if held.get(rel) != {"size": f.size, "version": f.version} or not (target / rel).is_file()
    ]
    progress = _Progress(loc.given, len(changed), sum(f.size for f in changed))
    # a few files at once: each GET waits on the store's latency far more than on this machine
    with ThreadPoolExecutor(max_workers=FETCHES_AT_ONCE) as pool:
        try:
            for size in pool.map(lambda f: _fetch_one(loc, source, revision, f, target), changed):
                progress.step(size)
        finally:
            progress.end()
    for rel in sorted(set(held) - set(files)):
        with contextlib.suppress(OSError):
            (target / rel).unlink()
    for rel in sorted(trial_folders(f.rel for f in listing if _safe(f.rel))):
        (target / rel).mkdir(parents=True, exist_ok=True)
    now = time.time()
    store.write_json(
        record_path,
        {
            "format": store.MIRROR_FORMAT,
            "url": loc.url(),
            "revision": revision,
            "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
            "fetched_epoch": now,
            "files": {rel: {"size": f.size, "version": f.version} for rel, f in sorted(files.items())},
        },
    )


def _fetch_one(loc: Location, source: _Bucket | _HubRepo, revision: str | None, file: Listed, target: Path) -> int:
    """One file fetched under a temporary name, given the store's modification time, renamed into the mirror."""
    path = target / file.rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = writes.temp_name(path)
    try:
        source.fetch(file, revision, tmp)
        if file.mtime is not None:
            os.utime(tmp, (file.mtime, file.mtime))
        os.replace(tmp, path)
    except Exception as exc:
        reason, _ = why(exc)
        raise DataError(f"{loc.url(file.rel)}: cannot fetch ({reason})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return file.size


def _safe(rel: str) -> bool:
    """A listed name that stays inside the mirror (no empty, `.` or `..` parts)."""
    return all(p not in ("", ".", "..") for p in rel.split("/"))


# --- runs given as URLs ------------------------------------------------------------------------


def local_specs(specs: Iterable[str | Path]) -> list[str | Path]:
    """`--run` values with each URL (or NAME=URL) replaced by its mirror, fetched or refreshed."""
    out: list[str | Path] = []
    fetched: set[Path] = set()
    for spec in specs:
        alias, target = split_alias(spec)
        if isinstance(target, str) and is_url(target):
            path = mirror(target)
            out.append(f"{alias}={path}" if alias else path)
            fetched.add(_mirror_folder(path))
            store.MIRRORS_IN_USE.add(_mirror_folder(path))
        else:
            out.append(spec)
    if fetched:  # the size limit counts the mirrors: the least recently used go, never one this command reads
        root = _root()
        store.evict(root, settings.current().cache_max_bytes, keep=frozenset(fetched))
    return out


def _mirror_folder(path: Path) -> Path:
    """The mirror folder (`<cache>/remote/<key>`) a path inside one lies in."""
    while not store.MIRROR_KEY.match(path.name) or path.parent.name != REMOTE_DIR:
        path = path.parent
    return path


def resolve_runs(specs: Iterable[str | Path] | str | Path | None) -> list[Run]:
    """rlsql/runs/folders.py resolve_runs, where a value may also be a URL (a run or a folder of runs): each run
    of a URL carries where it came from (Run.origin), so that outputs name its files' URLs and versions."""
    if isinstance(specs, (str, Path)):
        specs = [specs]
    runs = resolve_local(None if specs is None else local_specs(specs))
    return [replace(run, origin=found) if (found := origin(run.path)) else run for run in runs]


def _located(path: Path) -> tuple[dict[str, Any], str] | None:
    """(the mirror's record, `path` relative to the record's URL) for a path inside a mirror, else None."""
    root = settings.current().cache_dir
    if root is None:
        return None
    try:
        rel = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(root)) / REMOTE_DIR)
    except ValueError:
        return None
    if len(rel.parts) < 2 or not store.MIRROR_KEY.match(rel.parts[0]):
        return None
    record = store.read_mirror_record(root / REMOTE_DIR / f"{rel.parts[0]}.json")
    try:
        skip = 1 + len(parse(str(record["url"])).parts)
    except (KeyError, UsageError):
        return None
    return record, PurePosixPath(*rel.parts[skip:]).as_posix() if len(rel.parts) > skip else ""


def origin(path: Path) -> Origin | None:
    """The Origin of a run folder that is a mirror (`<cache>/remote/<key>/...`), else None."""
    found = _located(path)
    if found is None:
        return None
    record, below = found
    prefix = f"{below}/" if below else ""
    versions = {
        rel[len(prefix) :]: v.get("version") for rel, v in record.get("files", {}).items() if rel.startswith(prefix)
    }
    url = str(record["url"]).rstrip("/") + (f"/{below}" if below else "")
    return Origin(url, record.get("revision"), record.get("fetched_at"), versions)
