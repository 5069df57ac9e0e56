"""The source templates' context: what `rlsql.runs.folders` found (paths, headers, the flattened config, Harbor's
trial folders, the raw logs to read), turned into the values sql/sources/*.sql is rendered with. Every
value reaches the SQL through the templates' literal, identifier and type filters (rlsql/core/sqltext.py).

rlsql.engine.statements creates the rendered sources on a connection; this module only renders them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from rlsql.catalog.catalog import Catalog
from rlsql.catalog.sqlfile import Column, SqlFile
from rlsql.core.errors import DataError, RlsqlWarning
from rlsql.core.exactpaths import why_unnameable
from rlsql.engine import answer
from rlsql.engine.copies import Copies, without_copies
from rlsql.engine.rawlogs import LOG_SOURCES, log_context, reads_logs
from rlsql.runs import csvfiles as csvread
from rlsql.runs import harbor
from rlsql.runs.artifacts import INTEGER_COLUMNS
from rlsql.runs.config import config_rows, value_type
from rlsql.runs.folders import Run, csv_header, read_header

#: the trial durations the newest parser writes and older ones lack: a run with trace_jobs beside an older
#: CSV takes them from result.json
TRIAL_PHASES = (
    "trial_duration",
    "environment_setup_duration",
    "agent_setup_duration",
    "agent_execution_duration",
    "verifier_duration",
)


@dataclass
class CsvCount:
    """A CSV a source read: its run and artifact, and the rows read and skipped, as far as counted (a cached copy's
    record, the pre-read of statements.note_rejected_rows, Spark's CSV frames)."""

    run: str
    artifact: str
    rows: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class CsvFile:
    """One CSV as a source template sees it; `cached` is its fresh Parquet copy, if any (rlsql/engine/copies.py)."""

    run: str
    path: str
    header: list[str]
    types: dict[str, str]
    cached: str | None = None
    #: the read buffer DuckDB needs for the file's longest line (None: its default)
    buffer: int | None = None
    #: the file DuckDB reads: `path`, or its line-bounded copy (rlsql/runs/csvfiles.py line_bounded_copy)
    read: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "read", self.read or self.path)  # (frozen)


class SourceContext:
    """What the source templates are rendered with; each piece is computed once, when first needed."""

    #: set on a connection with trajectories.DAMAGED_FUNCTION (trajectories.record_damaged, which returns it):
    #: what the function remembers, and a source's cached copy adds its damaged files to
    damaged_seen: dict[str, tuple[str, str]] | None = None

    def __init__(
        self,
        runs: Sequence[Run],
        config_function: str | None = None,
        bad_cells: str | None = None,
        config_keys: str | None = None,
        trial: str | None = None,
        config_columns: list[dict] | None = None,
        copies: Copies | None = None,
        peers: Sequence[Run] | None = None,
    ):
        self.runs = list(runs)
        #: the fresh cached copies read instead of the files (rlsql/engine/copies.py); None: every file in place
        self.copies = copies
        #: the runs the configs and the listing of files (config_src, run_files) are of: `runs` and the runs they
        #: are compared with (`rlsql serve` computes compare_runs for the runs that changed alone, each row's
        #: differing_config against every run asked about); None: `runs`
        self.peers = list(peers) if peers is not None else self.runs
        #: run_table's config columns worked out over a larger set of runs than these (`rlsql serve` computes
        #: the rows of the runs that changed alone, with the columns of every run it serves); None: these runs'
        self.fixed_config_columns = config_columns
        #: `rlsql trial`: the Harbor sources read that trial folder's result.json alone (the trials CSV is read
        #: whole, a filter picks its row): its row, not the run's, costs the same at 3,000 or 45,000 trials
        self.trial = trial
        #: run_table's `keys` parameter (comma-separated): the config keys that get a column; None: those
        #: whose values differ between the runs
        self.config_keys = config_keys
        #: set by rlsql.connect(): config_src calls this function of the connection for config_docs
        self.config_function = config_function if any(r.artifact("config") for r in self.peers) else None
        #: whole-number cells that read as empty: None, 'fail' or 'record' (rlsql/duck/badcells.py)
        self.bad_cells = bad_cells
        #: what skipped_rows_src says: each CSV rendered so far (path -> its counts), and the files skipped whole
        self.csv_read: dict[str, CsvCount] = {}
        self.files_skipped: list[dict] = []
        #: the CSV sources rendered so far, by name: (source, its SQL), read once more by note_rejected_rows
        self.csv_sources: dict[str, tuple[SqlFile, str]] = {}

    @functools.cached_property
    def run_rows(self) -> list[dict]:
        return [{"name": r.name, "path": str(r.path), "vllm_base_date": r.vllm_base_date()} for r in self.runs]

    @functools.cached_property
    def run_files(self) -> list[dict]:
        files = [
            {"run": r.name, "kind": a.kind, "path": str(a.path), "prefix": a.prefix}
            for r in self.peers
            for a in r.artifacts.values()
        ]
        # a run without a metrics or vLLM CSV reads them from its raw logs: listed as that artifact too
        files.extend(
            {"run": r.name, "kind": kind, "path": str(r.artifacts["logs"].path), "prefix": None}
            for r in self.peers
            for kind in LOG_SOURCES.values()
            if reads_logs(r, kind)
        )
        return files

    @functools.cached_property
    def config_leaves(self) -> dict[str, list[dict]]:
        """run -> its config's flattened leaves (rlsql.runs.config.config_rows), for each run with a config file."""
        return {
            run.name: config_rows(run.name, config.path)
            for run in self.peers
            if (config := run.artifact("config")) is not None
        }

    def differing_keys(self) -> list[str]:
        """The config keys config_diff lists: over the runs with a config file, a key whose JSON values differ
        (a run lacking it counts as one more value), sorted."""
        values: dict[str, set[str]] = {}
        for rows in self.config_leaves.values():
            for r in rows:
                values.setdefault(r["key"], set())
        for rows in self.config_leaves.values():
            own: dict[str, set[str]] = {}
            for r in rows:
                own.setdefault(r["key"], set()).add(r["value_json"])
            for key, seen in values.items():
                seen.update(own.get(key, {"\0absent"}))
        return sorted(key for key, seen in values.items() if len(seen) > 1)

    def config_columns(self, f: SqlFile, keys: str | None = None) -> list[dict]:
        """run_table's config columns: [{key, column, type}] for the `keys` given (else this context's), else
        the differing keys, in key order. A column is named by its key, or `config.KEY` when that name
        (case-insensitively, as DuckDB compares names) is already one of `f`'s own columns or an earlier key's.
        Its type is BIGINT, DOUBLE or BOOLEAN when every run's value (the first in document order) is one
        (rlsql.runs.config.value_type), else VARCHAR: a BI tool then plots lr as a number."""
        keys_given = self.config_keys if keys is None else keys
        if keys_given is not None:
            chosen = sorted({k.strip() for k in keys_given.split(",") if k.strip()})
        else:
            chosen = self.differing_keys()
        taken = {name.lower() for name in f.column_docs if name != "*"}
        first: dict[str, list[str | None]] = {}
        for rows in self.config_leaves.values():
            seen: set[str] = set()
            for r in rows:
                if r["key"] not in seen:
                    seen.add(r["key"])
                    first.setdefault(r["key"], []).append(r["value"])
        columns = []
        for key in chosen:
            column = key if key.lower() not in taken else f"config.{key}"
            n = 2
            while column.lower() in taken:
                column, n = f"config.{key}#{n}", n + 1
            taken.add(column.lower())
            columns.append({"key": key, "column": column, "type": value_type(first.get(key, []))})
        return columns

    @functools.cached_property
    def config_docs(self) -> list[dict]:
        """Per run with a config: its flattened leaves as one JSON text of parallel lists (config_src.sql)."""
        docs: list[dict] = []
        for run_name, rows in self.config_leaves.items():
            doc = {
                "keys": [r["key"] for r in rows],
                "texts": [r["value"] for r in rows],
                "jsons": [r["value_json"] for r in rows],
            }
            docs.append({"run": run_name, "doc": json.dumps(doc, ensure_ascii=False)})
        return docs

    def csv_context(self, source: SqlFile) -> dict:
        """files (one per run that has the artifact) and the union of their columns, declared ones first."""
        columns: list[Column] = list(source.columns)
        seen = {c.name for c in columns}
        files: list[CsvFile] = []
        answering = answer.current()  # the CSVs this answer skips or reads line-bounded
        for run in self.runs:
            artifact = run.artifact(source.artifact or "")
            if artifact is None:
                continue
            unnameable = why_unnameable(artifact.path)
            if unnameable:
                warnings.warn(f"{artifact.path}: {unnameable}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                continue
            unparsable = answering.skipped_because(str(artifact.path)) if answering is not None else None
            if unparsable is not None:
                warnings.warn(f"{unparsable}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                self.skipped_whole(run.name, source.artifact or "", str(artifact.path), unparsable)
                continue
            try:
                read = csv_header(artifact.path)
            except DataError as exc:
                # one damaged file must not cost the other runs their answer: skip it, say so
                warnings.warn(f"{exc}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                self.skipped_whole(run.name, source.artifact or "", str(artifact.path), str(exc))
                continue
            header = read.names
            if read.notice():
                warnings.warn(f"{artifact.path}:1: {read.notice()}", RlsqlWarning, stacklevel=2)
            if not header:
                warnings.warn(f"{artifact.path}: empty file, no rows read", RlsqlWarning, stacklevel=2)
                continue
            types = source.column_types(header)
            # a file DuckDB could not read row by row (a quote that never closes, mixed line endings) was
            # copied line-bounded when this answer met it (rlsql/engine/answer.py): the copy is read, not a cached one
            bounded = answering.read_instead(str(artifact.path)) if answering is not None else None
            cached = None
            count = CsvCount(run.name, source.artifact or "")
            if self.copies is None:
                without_copies(artifact.path)
            elif not bounded and (copy := self.copies.csv_copy(source, artifact.path, header, types)) is not None:
                # what the copy's build read and skipped (a read in place is counted by its pre-read)
                cached, count.rows, count.skipped = copy.parquet, copy.rows, copy.skipped
            buffer = None
            if cached is None:
                try:
                    buffer = csvread.buffer_size([artifact.path])
                except DataError as exc:
                    warnings.warn(f"{exc}; file skipped, no rows read", RlsqlWarning, stacklevel=2)
                    self.skipped_whole(run.name, source.artifact or "", str(artifact.path), str(exc))
                    continue
            files.append(CsvFile(run.name, str(artifact.path), header, types, cached, buffer, bounded or ""))
            self.csv_read[str(artifact.path)] = count
            for name in header:
                if name not in seen:
                    seen.add(name)
                    columns.append(Column(name, source.other_columns_type))
        groups: dict[tuple[bool, tuple[str, ...]], dict] = {}
        for f in files:
            key = (f.cached is not None, tuple(f.header))
            group = groups.setdefault(
                key,
                {"header": f.header, "types": f.types, "files": [], "parquet": f.cached is not None, "buffer": None},
            )
            group["files"].append(f)
            if f.buffer:
                group["buffer"] = max(group["buffer"] or 0, f.buffer)
        integers = INTEGER_COLUMNS.get(source.artifact or "", ())
        return {
            "files": files,
            "groups": list(groups.values()),
            "columns": columns,
            "integers": integers,
            "bad_cells": self.bad_cells,
        }

    def skipped_whole(self, run: str, artifact: str, path: str, why: str) -> None:
        """The CSV at `path` is skipped whole, `why` being rlsql's message (`PATH[:LINE]: problem`): skipped_rows_src
        says so, without the path it names already (its line kept)."""
        if why.startswith(f"{path}:"):
            line, _, rest = why[len(path) + 1 :].partition(": ")
            why = f"line {line}: {rest}" if line.isdigit() and rest else why[len(path) + 1 :].lstrip()
        skipped = {"run": run, "artifact": artifact, "path": path, "rows": None, "read": None, "why": why}
        self.files_skipped.append(skipped)

    @property
    def skipped_rows(self) -> list[dict]:
        """skipped_rows_src's rows: the files skipped whole, then each file with rows skipped (which lines and why:
        `rlsql check`; Spark does not say which line)."""
        return self.files_skipped + [
            {"run": c.run, "artifact": c.artifact, "path": path, "rows": c.skipped, "read": c.rows, "why": None}
            for path, c in sorted(self.csv_read.items())
            if c.skipped
        ]

    def reads_harbor(self) -> bool:
        """Whether any run's trials are read from Harbor's trace_jobs (it has them and no trials CSV)."""
        return any(run.artifact("harbor") is not None and run.artifact("trials") is None for run in self.runs)

    @functools.cached_property
    def json_phases(self) -> dict[str, list[str]]:
        """Duration column -> the runs with trace_jobs beside a trials CSV whose header lacks it (a parser
        before the newest wrote no phase columns): those runs take it from result.json (harbor_fill_src)."""
        phases: dict[str, list[str]] = {}
        for run in self.runs:
            trials = run.artifact("trials")
            if trials is None or run.artifact("harbor") is None:
                continue
            try:
                header = set(read_header(trials.path))
            except DataError:
                continue  # the CSV is skipped with its own warning; nothing to fill
            for column in TRIAL_PHASES:
                if column not in header:
                    phases.setdefault(column, []).append(run.name)
        return phases

    def runs_context(self, f: SqlFile, keys: str | None = None) -> dict:
        """What a view or query whose SQL depends on the runs (SqlFile.per_runs) is rendered with: run_table's
        config columns, trial_rows' duration columns some run takes from result.json."""
        context: dict = {}
        if "config_columns" in f.body:
            fixed = self.fixed_config_columns
            context["config_columns"] = self.config_columns(f, keys) if fixed is None else fixed
        if "json_phases" in f.body:
            context["json_phases"] = self.json_phases
        return context

    def harbor_context(self, beside_csv: bool = False) -> dict:
        """files: per run that has trace_jobs and no trials CSV (the CSV wins), its listed trial folders;
        with `beside_csv`, per run that has both (harbor_fill_src: the columns the CSV lacks).

        `names` holds every listed folder name, sorted and '/'-joined (a name cannot hold a '/');
        `read_names` the ones DuckDB reads, escaped (harbor.reader_path) as `reader_prefix` is, so
        that no path is taken as a glob pattern. `refused`: the files rlsql does not read, and why.
        """
        files: list[dict] = []
        refused: list[dict] = []
        for run in self.runs:
            artifact = run.artifact("harbor")
            if artifact is None or (run.artifact("trials") is not None) != beside_csv:
                continue
            prefix = str(artifact.path)
            listing = harbor.list_trials(artifact.path, self.trial)
            names = [harbor.sql_name(f.folder) for f in listing.files]
            read = [harbor.reader_path(f.folder) for f in listing.files if f.problem is None]
            refused.extend(
                {
                    "run": run.name,
                    "path": f"{prefix}/{harbor.sql_name(f.folder)}/{harbor.HARBOR_RESULT}",
                    "problem": f.problem,
                }
                for f in listing.files
                if f.problem is not None
            )
            files.append(
                {
                    "run": run.name,
                    "prefix": prefix,
                    "names": "/".join(names),
                    "reader_prefix": harbor.reader_path(prefix),
                    "read_names": "/".join(read),
                }
            )
        return {"files": files, "refused": refused}

    def specialised(self, catalog: Catalog, f: SqlFile, keys: str | None = None) -> SqlFile:
        """`f` as these runs give it (for an engine that compiles `rendered`, such as Spark's): a per-runs view
        rendered with its config columns, its fingerprint changed with them; any other file as it is."""
        if not f.per_runs:
            return f
        rendered = catalog.render(f, **self.runs_context(f, keys))
        fingerprint = hashlib.sha256(f"{f.fingerprint}\0{rendered}".encode()).hexdigest()[:16]
        return dataclasses.replace(f, rendered_sql=rendered, fingerprint=fingerprint)

    def object_sql(self, catalog: Catalog, f: SqlFile) -> str:
        """The SQL that defines `f` over these runs: a source rendered with them, a view or query whose
        columns depend on them (SqlFile.per_runs) rendered with its config columns, anything else as loaded."""
        if f.kind == "source":
            return self.render(catalog, f)
        if f.per_runs:
            return catalog.render(f, **self.runs_context(f))
        return f.rendered

    @property
    def record_damaged(self) -> bool:
        """The trajectory sources call DAMAGED_FUNCTION per damaged file (the connection has it)."""
        return self.damaged_seen is not None

    def _said_by_copies(self, copies: list[dict]) -> None:
        """What the files behind cached copies would have said read in place, handed to the same recorder: the
        damaged files (said after the statement). Their bad cells are said by the statement itself, where it reads
        the count (sql/sources/trajectory_steps_src.sql), as the files' are."""
        for copy in copies:
            if self.damaged_seen is not None:
                for d in copy["damaged"]:
                    self.damaged_seen.setdefault(d["path"], (d["run"], d["problem"]))

    def render(self, catalog: Catalog, source: SqlFile) -> str:
        context: dict = {"runs": self.run_rows}
        if source.name == "run_files":
            context["run_files"] = self.run_files
        elif source.name == "skipped_rows_src":
            context["skipped"] = self.skipped_rows
        elif source.artifact == "config":
            context["config_function"] = self.config_function
            context["config_docs"] = [] if self.config_function else self.config_docs
        elif source.artifact == "harbor":
            beside_csv = source.name == "harbor_fill_src"
            context.update(self.harbor_context(beside_csv), columns=source.columns, json_phases=self.json_phases)
        elif source.artifact == "trajectories":  # rlsql/trajectories.py lists the files
            from rlsql.runs.trajectories import render_context

            copies = functools.partial(self.copies.trajectory_rows, source.name) if self.copies is not None else None
            context.update(render_context(self.runs, self.record_damaged, copies=copies), bad_cells=self.bad_cells)
            self._said_by_copies(context["copies"])
        elif source.artifact:
            context.update(self.csv_context(source))
            # runs without the CSV read their raw training logs (rlsql/engine/rawlogs.py)
            context.update(log_context(self.runs, source, context["columns"], self.copies))
            sql = catalog.render(source, **context)
            if any(f.cached is None for f in context["files"]):
                self.csv_sources[source.name] = (source, sql)
            return sql
        return catalog.render(source, **context)
