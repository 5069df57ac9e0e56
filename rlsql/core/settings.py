"""Every setting of rlsql in one frozen object: its default, its environment variable and its flag.

`Settings.from_env()` is the one place rlsql reads `os.environ`. The command line builds one from
the environment and its flags, the Python API from the environment and its keyword arguments; the
object is then active for the command's (or call's) duration (`active`), and `current()` returns it
anywhere below. Nothing sets module state that a later command would have to reset: outside an
`active` block, `current()` reads the environment afresh. docs/settings.md is generated from the
fields below (`python -m rlsql.outputs.docs`), so the table and the code cannot disagree.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsql.core.errors import UsageError

#: the values RLSQL_CACHE takes, and what each does (docs/caching.md, "The policy")
CACHE_MODES = ("auto", "on", "off")
ENGINES = ("duckdb", "spark")
_TRUE = {"1", "true", "yes", "on"}
_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>|b|k|kb|kib|m|mb|mib|g|gb|gib)\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 10**3,
    "kib": 2**10,
    "m": 2**20,
    "mb": 10**6,
    "mib": 2**20,
    "g": 2**30,
    "gb": 10**9,
    "gib": 2**30,
}
#: the settings that are sizes in bytes (`512MB`, `2GiB` or a number of bytes)
_SIZES = frozenset({"cache_max_bytes", "cache_hint_bytes", "serve_memory", "trajectory_max_bytes"})
_FALSE = {"0", "false", "no", "off", ""}


def _doc(env: str, flag: str, doc: str) -> dict[str, str]:
    """A setting's field metadata: its environment variable, its flag and its meaning (docs/settings.md)."""
    return {"env": env, "flag": flag, "doc": doc}


@dataclass(frozen=True)
class Settings:
    """What a command runs with. Build it with `from_env()` and change it with `replace()`."""

    cache_dir: Path | None = field(
        default=None,
        metadata=_doc(
            "RLSQL_CACHE_DIR",
            "",
            "The cache folder (Parquet copies of CSVs, raw-log entries). Default: $XDG_CACHE_HOME/rlsql/parquet, "
            "else ~/.cache/rlsql/parquet.",
        ),
    )
    cache: str = field(
        default="auto",
        metadata=_doc(
            "RLSQL_CACHE",
            "--cache / --no-cache",
            "auto: read a file's fresh cached copy where there is one (made by `rlsql cache build`); on: build the "
            "copy of every file a command reads before reading it; off: read every file in place, touch no cache.",
        ),
    )
    cache_max_bytes: int = field(
        default=20 * 2**30,
        metadata=_doc(
            "RLSQL_CACHE_MAX_BYTES",
            "",
            "The cache's size limit: after a build, the entries least recently built go until it fits.",
        ),
    )
    cache_hint_bytes: int = field(
        default=32 * 2**20,
        metadata=_doc(
            "RLSQL_CACHE_HINT_BYTES",
            "",
            "A file at least this large read in place (no fresh copy) prints one hint line saying what "
            "`rlsql cache build` would save.",
        ),
    )
    from_logs: bool = field(
        default=False,
        metadata=_doc(
            "RLSQL_FROM_LOGS",
            "--from-logs",
            "Read trainer metrics and vLLM stats from a run's raw training logs even where the parser's CSVs exist.",
        ),
    )
    json_trials: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "RLSQL_JSON_TRIALS",
            "--json-trials",
            "Runs (names, or globs over names: `*` every run) whose trials come from Harbor's "
            "trace_jobs/*/result.json outright even where a trials CSV exists (which then fills only the "
            "columns it lacks). Space separated in the variable; the flag is repeatable.",
        ),
    )
    engine: str = field(
        default="duckdb",
        metadata=_doc("RLSQL_ENGINE", "--engine", "duckdb (in process) or spark (SPARK_REMOTE, else a local session)."),
    )
    verbose: bool = field(
        default=False,
        metadata=_doc(
            "RLSQL_VERBOSE",
            "-v / --verbose",
            "Say on stderr how each file was read (in place, or from its cached copy); show Spark's own log.",
        ),
    )
    report_rows: int = field(
        default=100,
        metadata=_doc(
            "RLSQL_REPORT_ROWS",
            "",
            "The most rows a report table shows (the tables of runs show every run); the rest is counted under it "
            "and stays in the named query.",
        ),
    )
    spark_master: str = field(
        default="local[2]",
        metadata=_doc("RLSQL_SPARK_MASTER", "", "The master of a local Spark session (`local[8]`, a cluster URL)."),
    )
    spark_conf: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "RLSQL_SPARK_CONF", "", "More Spark settings for a local session: `key=value` pairs, space separated."
        ),
    )
    spark_java_options: tuple[str, ...] = field(
        default=(),
        metadata=_doc("RLSQL_SPARK_JAVA_OPTIONS", "", "More JVM options for a local Spark session, space separated."),
    )
    spark_remote: str | None = field(
        default=None,
        metadata=_doc(
            "SPARK_REMOTE", "", "Spark's own: `sc://host:port` sends Spark queries to that Spark Connect server."
        ),
    )
    java_home: str | None = field(
        default=None, metadata=_doc("JAVA_HOME", "", "Java's own: the JDK or JRE a local Spark session starts.")
    )
    # a file costs DuckDB a few times its size while it is parsed (one file per reader at a time): 64 MiB keeps
    # a query over any number of files under 1 GB (real trajectories are ~17 KB, the largest seen a few MB)
    trajectory_max_bytes: int = field(
        default=64 * 2**20,
        metadata=_doc(
            "RLSQL_TRAJECTORY_MAX_BYTES",
            "",
            "A trajectory file larger than this is skipped with a warning naming it (the rest of its run is read).",
        ),
    )
    serve_host: str = field(
        default="127.0.0.1",
        metadata=_doc(
            "", "rlsql serve --host", "The address `rlsql serve` binds; beyond the loopback a token is required."
        ),
    )
    serve_port: int = field(default=8765, metadata=_doc("", "rlsql serve --port", "The port `rlsql serve` listens on."))
    serve_memory: int = field(
        default=512 * 2**20,
        metadata=_doc(
            "RLSQL_SERVE_MEMORY",
            "rlsql serve --memory",
            "What `rlsql serve` keeps of answers in memory (and each of its DuckDB connections' memory limit).",
        ),
    )
    serve_time_limit: float = field(
        default=60.0,
        metadata=_doc(
            "RLSQL_SERVE_TIME_LIMIT",
            "",
            "Seconds one `rlsql serve` request's DuckDB work may take before it is stopped.",
        ),
    )
    serve_row_limit: int = field(
        default=100_000,
        metadata=_doc(
            "RLSQL_SERVE_ROW_LIMIT", "", "The most rows one `rlsql serve` answer holds; more are cut, and it says so."
        ),
    )
    serve_concurrency: int = field(
        default=4,
        metadata=_doc(
            "RLSQL_SERVE_CONCURRENCY",
            "",
            "Requests `rlsql serve` works on at once (the others wait their turn); one answer holds at most the "
            "memory budget divided by this many bytes.",
        ),
    )

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise UsageError(f"RLSQL_CACHE={self.cache!r}: choose one of {', '.join(CACHE_MODES)}")
        if self.engine not in ENGINES:
            raise UsageError(f"engine {self.engine!r}: choose one of {', '.join(ENGINES)} (--engine, RLSQL_ENGINE)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment gives (unset or empty variables keep their defaults)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = f.metadata["env"]
            raw = env.get(name, "").strip() if name else ""
            if raw:
                values[f.name] = _parse(f, raw)
        if "cache_dir" not in values:
            values["cache_dir"] = _default_cache_dir(env)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """These settings with `changes` (None leaves a setting as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def parse_size(text: str, what: str = "size") -> int:
    """`512MB`, `1GiB`, `300m`, `1000000` -> bytes; UsageError otherwise."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"{what} {text!r}: give a size such as 512MB or 2GiB, or a number of bytes")
    return int(float(match["n"]) * _UNITS[match["unit"].lower()])


def _parse(f: dataclasses.Field, raw: str) -> Any:
    name = f.metadata["env"]
    kind: type = type(f.default) if f.default is not None else str
    if f.name in _SIZES:
        return parse_size(raw, name)
    if f.name == "cache_dir":
        return Path(raw).expanduser().absolute()
    if f.name == "cache":
        value = raw.lower()
        return {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}.get(value, value)
    if kind is bool:
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise UsageError(f"{name}={raw!r}: give 1 or 0")
    if kind in (int, float):
        try:
            return max(0, kind(raw))
        except ValueError:
            raise UsageError(f"{name}={raw!r}: give a number") from None
    if kind is tuple:
        return tuple(raw.split())
    return raw.lower() if f.name == "engine" else raw


def _default_cache_dir(env: Mapping[str, str]) -> Path | None:
    """$XDG_CACHE_HOME/rlsql/parquet (an absolute one: the XDG spec ignores relative values), else
    ~/.cache/rlsql/parquet; None when there is no home to put it in (never the filesystem's root)."""
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "rlsql" / "parquet"
    home = env.get("HOME", "")
    if not os.path.isabs(home):
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            return None
    if not os.path.isabs(home) or Path(home) == Path("/"):
        return None
    return Path(home) / ".cache" / "rlsql" / "parquet"


_active: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("rlsql_settings", default=None)


def current() -> Settings:
    """The settings of the command or call under way; outside one, those the environment gives now."""
    return _active.get() or Settings.from_env()


@contextlib.contextmanager
def active(settings: Settings | None) -> Iterator[Settings]:
    """Make `settings` current for the block (None: keep what is current)."""
    if settings is None:
        yield current()
        return
    token = _active.set(settings)
    try:
        yield settings
    finally:
        _active.reset(token)


def table() -> list[tuple[str, str, str, str]]:
    """(setting, environment variable, flag, default and meaning) per setting, for docs/settings.md."""
    rows = []
    for f in dataclasses.fields(Settings):
        default = f.default
        shown = "(see meaning)" if f.name == "cache_dir" else "none" if default in (None, ()) else str(default)
        doc = f.metadata["doc"]
        # a meaning that lists the values names the default among them: "(default)" there, not twice
        listed = doc.startswith(f"{shown}:")
        meaning = doc.replace(f"{shown}:", f"{shown} (default):", 1) if listed else f"{shown}: {doc}"
        rows.append((f.name, f.metadata["env"] or "-", f.metadata["flag"] or "-", meaning))
    return rows
