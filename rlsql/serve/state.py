"""What a running `rlsql serve` holds: its settings, the runs it serves and how often each changed, the
answers kept in memory, and the sandboxed connections its SQL runs on. Every answer a page or the API
gives comes from `named` (a named query or view, the CLI's own path), `select` (SQL checked read-only,
on a sandboxed connection) or `transcript` (`rlsql trial`'s), each within the time limit, the first two
within the row limit and the answer size, each computed once however many requests ask for it at once.
"""

from __future__ import annotations

import difflib
import threading
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from rlsql.catalog.catalog import load_catalog
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core import settings as rlsql_settings
from rlsql.core.errors import DataError, QueryError, RlsqlError, UsageError
from rlsql.duck.memorydb import Connection, DuckError, interrupt
from rlsql.duck.parsing import inner_statement
from rlsql.engine.copies import Copies
from rlsql.engine.query import run_queries, run_query, sql_failure
from rlsql.engine.sources import SourceContext
from rlsql.outputs import transcript as transcripts
from rlsql.runs.folders import Run, chosen_sources, scan_folder
from rlsql.serve import work
from rlsql.serve.deadline import Deadline
from rlsql.serve.memory import Answer, Memory, fetch_bounded
from rlsql.serve.sandbox import check_select, sandboxed
from rlsql.serve.watch import Watcher

#: sandboxed connections kept open (one per set of runs a page asked about), least recently used out
CONNECTIONS_KEPT = 4
#: changes remembered for the pages' event streams (a page further behind reloads whole)
CHANGES_KEPT = 10_000
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: named queries kept per run: a run's rows come from its own files alone (grain starting with run, nothing
#: compared across runs), ordered by run first, so the answer over many runs is each run's rows in turn and a
#: change to one run recomputes that run's rows alone. run_table's config columns depend on the set of runs:
#: they are worked out over every run asked about and are part of a kept row's key; so are, for compare_runs,
#: the configs and listings of every run asked about (PEERS). Not here: run_diff, task_diff (against a baseline
#: run), group_curves (over the runs), whose rows depend on the others; task_rates (no order). The fleet page's
#: queries, then the compare page's.
PER_RUN = frozenset(
    {
        "findings",
        "run_table",
        "compare_runs",
        "reward_curve",
        "best_checkpoint",
        "step_time_stack",
        "step_signals",
        "turn_histogram",
        "exception_treatment",
    }
)
#: PER_RUN queries whose row for a run depends on the other runs asked about through their configs alone
#: (compare_runs' differing_config): a run's row is computed over that run with every run's config and listing
#: (SourceContext.peers), and kept under their changes as well as its own
PEERS = frozenset({"compare_runs"})
#: the artifacts that are one file each: a run's change counts for the answers that read one of these only when
#: that file moved, grew or was rewritten (an appended metrics row leaves the trials-only answers kept). Every
#: other kind (Harbor's folders, the trajectories, raw training logs) counts as changed with any change of its run;
#: "files" stands for the listing of a run's files (run_files), changed when one appears, goes or moves.
ONE_FILE = ("config", "metrics", "trials", "vllm")
FOLDERS = ("harbor", "trajectories")
KINDS = (*ONE_FILE, "files", *FOLDERS)


class TimeLimit(RlsqlError):
    """A request's DuckDB work ran past the time limit and was interrupted."""


class Refused(RlsqlError):
    """SQL that is not one read-only SELECT."""


class NotFound(UsageError):
    """No such run, query or trial."""


class Gone(RlsqlError):
    """The request's client went away: its work was given up."""


class Stopping(RlsqlError):
    """The server is shutting down: the work under way was interrupted."""


def known(name: str) -> SqlFile:
    """The named query or view `name`; NotFound with the CLI's did-you-mean when there is none."""
    try:
        return load_catalog().query(name)
    except UsageError as exc:
        raise NotFound(str(exc)) from exc


def rescan(run: Run) -> Run:
    """`run` looked at again (a file appeared or went), keeping its name."""
    found = scan_folder(run.path)
    fresh = replace(run, artifacts=found.artifacts if found else {}, ignored=found.ignored if found else ())
    return chosen_sources(fresh)


def per_run(name: str) -> bool:
    """Whether the named query `name`'s rows are kept run by run (PER_RUN)."""
    return name in PER_RUN


def reads(name: str) -> frozenset[str]:
    """The kinds of file the named query or view `name` reads (KINDS): its sources' artifacts, "files" for a
    source over the runs' listing."""
    return frozenset(f.artifact or "files" for f in load_catalog().closure([name]) if f.kind == "source")


def looks(run: Run) -> dict[str, Hashable]:
    """What `run`'s files of each kind (KINDS) are now: a one-file artifact's path, size and modification time,
    None for a kind the run lacks, its listing for "files". A kind whose look differs from the last changed; a
    kind without a look (Harbor's folders, a kind read from the raw training logs) changes with every change of
    its run."""
    seen: dict[str, Hashable] = {"files": tuple(sorted((k, str(a.path)) for k, a in run.artifacts.items()))}
    for kind in FOLDERS:
        if kind not in run.artifacts:
            seen[kind] = None
    for kind in ONE_FILE:
        artifact = run.artifact(kind)
        if artifact is None:
            if "logs" not in run.artifacts:
                seen[kind] = None
            continue
        try:
            st = artifact.path.stat()
        except OSError:
            continue
        seen[kind] = (str(artifact.path), st.st_size, st.st_mtime_ns)
    return seen


def config_columns(name: str, runs: Sequence[Run], params: dict[str, str]) -> list[dict]:
    """The config columns the query `name` has over `runs` (run_table's: the keys that differ, typed), [] for
    a query whose columns do not depend on the runs."""
    f = load_catalog().query(name)
    if "config_columns" not in f.body:
        return []
    return SourceContext(runs, config_keys=params.get("keys")).config_columns(f)


class Served:
    """The runs served and everything kept about them."""

    def __init__(
        self,
        runs: Sequence[Run],
        settings: rlsql_settings.Settings | None = None,
        token: str | None = None,
        poll_seconds: float = 1.0,
        copies: Copies | None = None,
    ):
        #: rlsql's one settings object: serve_memory, serve_time_limit, serve_row_limit, serve_host
        self.settings = settings or rlsql_settings.current()
        #: the fresh cached copies the named queries read (rlsql/engine/copies.py), handed in by the command
        self.copies = copies
        #: required in every request's URL (or its cookie) when bound beyond the loopback
        self.token = token
        #: seconds between two looks at the runs' files
        self.poll_seconds = poll_seconds
        self.runs: dict[str, Run] = {r.name: r for r in sorted(runs, key=lambda r: r.name)}
        self.generation: dict[str, int] = dict.fromkeys(self.runs, 0)
        #: per run, how often each kind of its files changed (KINDS), and what its one-file kinds were at the last
        #: look: a named answer is kept under the counts of the kinds it reads (reads())
        self._kinds: dict[str, dict[str, int]] = {name: dict.fromkeys(KINDS, 0) for name in self.runs}
        self._looks: dict[str, dict[str, Hashable]] = {name: looks(run) for name, run in self.runs.items()}
        #: bumped on every change; changes lists (version, run) for the event streams
        self.version = 0
        self.changes: deque[tuple[int, str]] = deque(maxlen=CHANGES_KEPT)
        self.memory = Memory(self.settings.serve_memory)
        self.watcher = Watcher({name: run.path for name, run in self.runs.items()})
        self._connections: OrderedDict[tuple[tuple[str, int], ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        #: the deadlines of the DuckDB work under way (stop() fires them: the server is going)
        self._active: set[Deadline] = set()
        self.stopping = False
        #: answers being computed, by key: a second request for one waits for the first's
        self._inflight: dict[Hashable, Future[Answer]] = {}
        #: run_table's config columns over a set of runs, by the runs' stamp (YAML read once per change)
        self._shapes: dict[Hashable, tuple[dict, ...]] = {}

    @property
    def memory_limit(self) -> str:
        """Every DuckDB connection's memory_limit: the budget."""
        return f"{max(self.settings.serve_memory // 2**20, 64)}MiB"

    @property
    def answer_bytes(self) -> int:
        """The most bytes one answer's rows take: the budget shared by the requests worked on at once."""
        return self.settings.serve_memory // max(1, self.settings.serve_concurrency)

    def deadline(self) -> Deadline:
        """A time limit for one request's DuckDB work (each of its connections given the memory budget), fired
        early when its client goes away or by stop()."""
        deadline = Deadline(self.settings.serve_time_limit, self._active, self.memory_limit)
        if self.stopping:
            deadline.fire("stopping")
        request = work.current.get()
        if request is not None:
            request.add(deadline)
        return deadline

    def stopped(self, deadline: Deadline, what: str) -> RlsqlError:
        """Why `deadline`'s work ended early, as the error the request answers with."""
        if deadline.why == "gone":
            return Gone(f"{what}: given up, its client went away")
        if deadline.why == "stopping":
            return Stopping(f"{what}: interrupted, the server is stopping")
        return TimeLimit(f"{what}: stopped after the time limit of {self.limit:g} s")

    def stop(self) -> None:
        """Interrupt every DuckDB statement still running, and any started later (the server is shutting
        down)."""
        self.stopping = True
        for deadline in list(self._active):
            deadline.fire("stopping")

    @property
    def limit(self) -> float:
        """Seconds one request's DuckDB work may take (Settings.serve_time_limit)."""
        return self.settings.serve_time_limit

    @property
    def local(self) -> bool:
        """Bound to the loopback only (no token needed)."""
        return self.settings.serve_host in LOOPBACK

    # -- runs -----------------------------------------------------------------------------------
    def pick(self, names: Sequence[str] | None) -> list[Run]:
        """The runs named (all of them for none), in the served order; NotFound names one that is not served."""
        if not names:
            return list(self.runs.values())
        picked = []
        for name in dict.fromkeys(names):
            run = self.runs.get(name)
            if run is None:
                close = difflib.get_close_matches(name, list(self.runs), n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise NotFound(f"no run {name!r} is served{hint}")
            picked.append(run)
        return sorted(picked, key=lambda r: r.name)

    def _stamp(self, runs: Sequence[Run]) -> tuple[tuple[str, int], ...]:
        return tuple((r.name, self.generation[r.name]) for r in runs)

    def _read_stamp(self, runs: Sequence[Run], kinds: frozenset[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """`runs` as a named answer reading `kinds` of their files depends on them: each run's changes of those."""
        return tuple((r.name, tuple(self._kinds[r.name][k] for k in sorted(kinds))) for r in runs)

    def refresh(self) -> list[str]:
        """Look at the files; the runs that changed are scanned again, and every answer kept about them that read
        a kind of their files that changed (KINDS) is dropped."""
        changed = self.watcher.poll()
        if not changed:
            return []
        bumped: dict[str, set[str]] = {}
        with self._lock:
            for name in changed:
                self.runs[name] = rescan(self.runs[name])
                self.generation[name] += 1
                self.version += 1
                self.changes.append((self.version, name))
                before, now = self._looks[name], looks(self.runs[name])
                self._looks[name] = now
                bumped[name] = {k for k in KINDS if k not in now or k not in before or now[k] != before[k]}
                for kind in bumped[name]:
                    self._kinds[name][kind] += 1
            for key in [k for k in self._connections if any(n in changed for n, _ in k)]:
                del self._connections[key]
            self._shapes.clear()
        self.memory.forget_runs(set(changed), bumped)
        return changed

    def listing(self) -> list[dict[str, Any]]:
        """The runs served, each with the files rlsql reads and how often they changed (`/api/runs`, the MCP
        `runs` tool)."""
        return [
            {
                "run": r.name,
                "path": str(r.path),
                "artifacts": {k: str(a.path) for k, a in sorted(r.artifacts.items())},
                "changes": self.generation[r.name],
            }
            for r in self.runs.values()
        ]

    def changed_since(self, version: int) -> list[str] | None:
        """The runs changed after `version` (None: too far behind to say)."""
        if version == self.version:
            return []
        if self.changes and self.changes[0][0] > version + 1:
            return None
        return sorted({name for v, name in self.changes if v > version})

    # -- answers --------------------------------------------------------------------------------
    def named(self, name: str, runs: Sequence[Run], params: Mapping[str, str] | None = None) -> Answer:
        """`rlsql query NAME -p ...` over `runs`, from memory when its files have not changed since; a PER_RUN
        query's rows kept per run, so that only the runs changed since are computed again."""
        params = {k: str(v) for k, v in (params or {}).items() if v is not None and str(v) != ""}
        known(name)  # an unknown name is NotFound with a did-you-mean, before any file is read
        kinds = reads(name)
        key = ("named", name, self._read_stamp(runs, kinds), tuple(sorted(params.items())))
        if name in PER_RUN and len(runs) > 1:
            return self._once(
                key, lambda: self._by_run(name, runs, params, kinds) or self._compute(name, runs, params), kinds
            )
        return self._once(key, lambda: self._compute(name, runs, params), kinds)

    def _compute(
        self,
        name: str,
        runs: Sequence[Run],
        params: dict[str, str],
        config_columns: list[dict] | None = None,
        peers: Sequence[Run] | None = None,
    ) -> Answer:
        """One statement of `name` over `runs` (with `peers`' configs: SourceContext.peers), within the time
        limit and the answer's bounds."""
        deadline = self.deadline()
        try:
            with deadline.running():
                if deadline.expired:
                    raise self.stopped(deadline, name)
                return run_query(
                    name,
                    runs,
                    params,
                    lambda con, sql: self._fetch(con.execute(sql), runs, lambda: self._count(con, sql, None)),
                    config_columns,
                    copies=self.copies,
                    peers=peers,
                )
        except (RlsqlError, DuckError) as exc:
            if deadline.expired:
                raise self.stopped(deadline, name) from exc
            raise

    def _by_run(self, name: str, runs: Sequence[Run], params: dict[str, str], kinds: frozenset[str]) -> Answer | None:
        """A PER_RUN query over `runs` as each run's rows in turn: the rows kept for a run since it last changed,
        the others computed in one statement over those runs alone and kept per run. None when the rows do not
        fit one answer (the row limit, the answer size): the caller computes the whole answer, cut as usual."""
        stamp = self._stamp(runs)
        with self._lock:
            shape = self._shapes.get((name, stamp, tuple(sorted(params.items()))))
        if shape is None:
            shape = tuple(config_columns(name, runs, params))
            with self._lock:
                self._shapes[(name, stamp, tuple(sorted(params.items())))] = shape
        shape_key = tuple(tuple(sorted(c.items())) for c in shape) + self._peers_key(name, runs)
        peers = runs if name in PEERS else None
        kept = {r.name: a for r in runs if (a := self.memory.get(self._run_key(name, r, kinds, params, shape_key)))}
        missing = [r for r in runs if r.name not in kept]
        if missing:
            try:
                fresh = self._compute(name, missing, params, list(shape) if shape else None, peers)
            except DataError:
                if len(missing) == len(runs):
                    raise
                # a run lacking what the query reads is refused alone, yet has its row (of NULLs) among others
                missing = list(runs)
                fresh = self._compute(name, missing, params, list(shape) if shape else None, peers)
            mine = self._keep_per_run(name, fresh, missing, kinds, params, shape_key)
            if mine is None:
                return None
            kept.update(mine)
        columns = next((a.columns for a in kept.values() if a.columns), [])
        rows = [row for r in runs for row in kept[r.name].rows]
        nbytes = sum(a.nbytes for a in kept.values())
        if len(rows) > self.settings.serve_row_limit or nbytes > self.answer_bytes:
            return None
        return Answer(columns, rows, False, frozenset(r.name for r in runs), nbytes, total=len(rows))

    def _peers_key(self, name: str, runs: Sequence[Run]) -> tuple[Hashable, ...]:
        """What else a PEERS query's row of a run is kept under: the configs and listings of every run asked
        about (`runs`); () for any other query."""
        return self._read_stamp(runs, frozenset({"config", "files"})) if name in PEERS else ()

    def _run_key(
        self, name: str, run: Run, kinds: frozenset[str], params: dict[str, str], shape_key: tuple = ()
    ) -> Hashable:
        """Where a PER_RUN query's rows of `run` are kept."""
        return ("run", name, self._read_stamp([run], kinds), shape_key, tuple(sorted(params.items())))

    def _keep_per_run(
        self,
        name: str,
        fresh: Answer,
        runs: Sequence[Run],
        kinds: frozenset[str],
        params: dict[str, str],
        shape_key: tuple = (),
    ) -> dict[str, Answer] | None:
        """`fresh`'s rows over `runs` kept run by run; None (nothing kept) when it was cut or has no run column.
        Rows of other runs (the peers a statement read the configs and listings of, Served.warm) are dropped."""
        if fresh.truncated or (fresh.rows and "run" not in fresh.columns):
            return None
        ri = fresh.columns.index("run") if fresh.columns else 0
        mine: dict[str, list[tuple]] = {r.name: [] for r in runs}
        for row in fresh.rows:
            if row[ri] in mine:
                mine[row[ri]].append(row)
        kept = {}
        for r in runs:
            kept[r.name] = Answer(
                fresh.columns, mine[r.name], False, frozenset({r.name}), total=len(mine[r.name]), reads=kinds
            )
            self.memory.put(self._run_key(name, r, kinds, params, shape_key), kept[r.name])
        return kept

    def warm(self, names: Sequence[str], runs: Sequence[Run], params: Mapping[str, Mapping[str, str]]) -> None:
        """Compute the rows of the PER_RUN queries `names` that are not kept for some of `runs` on one connection
        per set of runs missing (statements.queries_connection), and keep them per run: the page's named() calls
        then find them. Over a few small runs a statement's connection and rendering are most of its cost, so a
        compare page's per-run queries after one of its runs changed cost about one statement, not five. With a
        PEERS query among them, the connection reads the configs and listings of every run of `runs`
        (SourceContext.peers), as compare_runs must. A PER_RUN query's row of a run depends on another run's
        config only through config_diff, which only the PEERS queries and run_table read: the others' rows are
        the same, and the peers' own rows are dropped. What cannot be done so (a query refused, run_table's
        config columns, rows past the bounds, any failure) is left to named(), which computes it alone and says
        why."""
        if len(runs) < 2:
            return
        catalog = load_catalog()
        wanted: dict[tuple[str, ...], list[tuple[str, frozenset[str], dict[str, str], tuple[Hashable, ...]]]] = {}
        for name in names:
            if not per_run(name) or catalog.query(name).per_runs:
                continue
            given = {k: str(v) for k, v in (params.get(name) or {}).items() if v is not None and str(v) != ""}
            kinds = reads(name)
            if self.memory.get(("named", name, self._read_stamp(runs, kinds), tuple(sorted(given.items())))):
                continue
            peers_key = self._peers_key(name, runs)
            lacking = tuple(
                r.name for r in runs if not self.memory.get(self._run_key(name, r, kinds, given, peers_key))
            )
            if lacking:
                wanted.setdefault(lacking, []).append((name, kinds, given, peers_key))
        for missing_names, queries in wanted.items():
            if len(queries) < 2:
                continue  # one query: named() computes it as it would
            missing = [self.runs[n] for n in missing_names]

            def fetch(con: Any, sql: str, runs: Sequence[Run] = missing) -> Answer:
                return self._fetch(con.execute(sql), runs, lambda: None)

            deadline = self.deadline()
            try:
                with warnings.catch_warnings(record=True) as said, deadline.running():
                    warnings.simplefilter("always")
                    if deadline.expired:
                        return
                    answers = run_queries(
                        [q for q, _, _, _ in queries],
                        missing,
                        {q: given for q, _, given, _ in queries},
                        fetch,
                        copies=self.copies,
                        # the peers' configs only where a query needs them (not over the fleet page's 300 runs)
                        peers=runs if any(q in PEERS for q, _, _, _ in queries) else None,
                    )
            except (RlsqlError, DuckError):
                continue  # said by named(), which asks each query alone
            for w in said:  # said once: named() finds the rows kept and says nothing
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            for name, kinds, given, peers_key in queries:
                self._keep_per_run(name, answers[name], missing, kinds, given, peers_key)

    def select(self, sql: str, runs: Sequence[Run], params: Mapping[str, Any] | None = None) -> Answer:
        """SQL over every view of `runs`: one SELECT (checked), on a connection that cannot read other files,
        write any, load extensions or change settings; bound `params` ($name in the SQL)."""
        key = ("select", sql, self._stamp(runs), tuple(sorted((params or {}).items())))

        def compute() -> Answer:
            cursor = self._connection(runs).cursor()
            try:
                try:
                    check_select(cursor, sql)
                except PermissionError as exc:
                    raise Refused(str(exc)) from exc
                deadline = self.deadline()
                try:
                    with deadline.running():
                        deadline.watch(cursor)
                        if deadline.expired:
                            raise self.stopped(deadline, "SQL")
                        result = cursor.execute(sql, dict(params)) if params else cursor.execute(sql)
                        return self._fetch(result, runs, lambda: self._count(cursor, sql, params))
                except DuckError as exc:
                    if deadline.expired:
                        raise self.stopped(deadline, "SQL") from exc
                    raise QueryError(f"SQL: {sql_failure(exc)}") from exc
            finally:
                cursor.close()

        return self._once(key, compute)

    def _once(self, key: Hashable, compute: Callable[[], Answer], kinds: frozenset[str] | None = None) -> Answer:
        """The answer kept under `key`, else computed once and kept (dropped when one of `kinds` of its runs'
        files changes; None: any): requests asking for it meanwhile wait for that one computation and share its
        answer (or its error)."""
        while True:
            kept = self.memory.get(key)
            if kept is not None:
                return kept
            with self._lock:
                future = self._inflight.get(key)
                mine = future is None
                if future is None:
                    future = self._inflight[key] = Future()
            if mine:
                break
            try:
                return future.result()
            except Gone:
                if (request := work.current.get()) is not None and request.cancelled:
                    raise
                # the first asker's client went away: ask again (this request may be the one to compute)
        try:
            answer = compute()
            answer.reads = kinds
            self.memory.put(key, answer)
            future.set_result(answer)
            return answer
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._inflight[key]

    def _fetch(self, result: Connection, runs: Sequence[Run], count: Callable[[], int | None]) -> Answer:
        """A statement's rows within the row limit and the answer size (rows past either are not fetched); a
        cut answer's `total` counted by `count` (DuckDB runs the statement again under count(*))."""
        if not result.description:
            return Answer([], [], False, frozenset(r.name for r in runs))
        columns = [d[0] for d in result.description]
        rows, cut, nbytes = fetch_bounded(result, self.settings.serve_row_limit, self.answer_bytes)
        total: int | None = len(rows)
        if cut:  # the rest of the statement is not wanted: stop it rather than let it run on
            interrupt(result)
            total = count()
        return Answer(columns, rows, cut, frozenset(r.name for r in runs), nbytes, total=total)

    @staticmethod
    def _count(cursor: Any, sql: str, params: Mapping[str, Any] | None) -> int | None:
        """The rows of `sql` counted by DuckDB (the statement run again under count(*), within the same time
        limit: no row reaches Python); None when it cannot say (the time limit, or a text that does not read as
        a subquery)."""
        counting = f"SELECT count(*) FROM (\n{inner_statement(sql)})"
        try:
            found = cursor.execute(counting, dict(params)) if params else cursor.execute(counting)
            return int(found.fetchone()[0])
        except DuckError:
            return None

    def check(self, run: Run) -> Answer:
        """`rlsql check --run RUN`'s problems (run, severity, file, line, problem), kept until the run's files
        change."""
        from rlsql.inspection.check import ISSUE_COLUMNS, check_runs

        def compute() -> Answer:
            issues = [(i.run, i.severity, i.file, i.line, i.problem) for r in check_runs([run]) for i in r.issues]
            return Answer(list(ISSUE_COLUMNS), issues, runs=frozenset({run.name}), total=len(issues))

        return self._once(("check", self._stamp([run])), compute)

    def transcript(self, runs: Sequence[Run], trial: str, facts: bool = False) -> transcripts.Transcript:
        """`rlsql trial TRIAL`'s steps over `runs` (with its trials row if `facts`: the trial page has it
        already), within the time limit. Not kept: it reads that one trial's files, and a trial in flight grows."""
        deadline = self.deadline()
        try:
            with deadline.running():
                return transcripts.transcript(runs, trial, facts=facts)
        except (RlsqlError, DuckError) as exc:
            if deadline.expired:
                raise self.stopped(deadline, f"{trial}'s transcript") from exc
            raise

    def _connection(self, runs: Sequence[Run]) -> Any:
        key = self._stamp(runs)
        with self._lock:
            con = self._connections.get(key)
            if con is not None:
                self._connections.move_to_end(key)
                return con
        con = sandboxed(runs, self.memory_limit)
        with self._lock:
            self._connections[key] = con
            while len(self._connections) > CONNECTIONS_KEPT:
                self._connections.popitem(last=False)
        return con
