"""`rlsql mcp`: the runs for a coding agent over the Model Context Protocol (docs/mcp.md).

An optional extra (`pip install 'rlsql[mcp]'`: the official MCP Python SDK). The tools answer from the same
`Served` state as `rlsql serve` (rlsql/serve/state.py): named queries by the CLI's own path, SQL checked
read-only on the sandboxed connection within the time and row limits, `rlsql trial`'s transcripts, and the
runs re-scanned when their files change (looked at before every call). Over stdio (the default) the server
ends when its input closes; `--http` serves the SDK's streamable HTTP behind `rlsql serve`'s Host and token
checks until Ctrl-C. Nothing is written anywhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import secrets
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from rlsql.core import settings as rlsql_settings
from rlsql.core.errors import RlsqlError, RlsqlWarning, UsageError
from rlsql.core.version import __version__
from rlsql.duck.memorydb import DuckError
from rlsql.engine.copies import Copies
from rlsql.engine.query import sql_failure
from rlsql.inspection.describe import describe
from rlsql.outputs import transcript as transcripts
from rlsql.outputs.formats import jsonable
from rlsql.runs.folders import Run
from rlsql.serve.memory import Answer
from rlsql.serve.pages import items
from rlsql.serve.state import LOOPBACK, Served

#: the rows one answer holds unless --max-rows says otherwise: an agent reads them all, so fewer than a page
ROW_LIMIT = 1_000
#: the named query the findings tool answers with (another query file may add it: the tool finds it then)
FINDINGS = "findings"

INSTRUCTIONS = (
    "rlsql answers questions about the folders of RL training runs of LLM agents (SkyRL trainer metrics, "
    "Harbor trials, vLLM stats, agent trajectories) with versioned, read-only SQL. Start with `runs` (what is "
    "served) and `list_queries` (the named queries and views); `describe` gives a query's or view's columns; "
    "`query` runs a named query; `sql` runs one SELECT over every view, macro and named query; `trial` shows "
    "one trial's transcript; `findings` says what is unusual in a run. Answers are cut at {limit:,} rows, "
    "saying how many there were: narrow with `runs`, WHERE, GROUP BY or LIMIT."
)

RunsArg = Annotated[
    list[str] | None, Field(description="Names of served runs (see the `runs` tool); omit for every run served.")
]
ParamsArg = Annotated[
    dict[str, str | int | float] | None,
    Field(
        description="The query's parameters by name (see `list_queries` or `describe`: type, default, minimum, "
        "maximum), "
        'e.g. {"span": 10}; omit for the defaults.'
    ),
]


#: rlsql's warnings heard during the tool call under way in this context (None: outside a call)
_heard: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("rlsql_mcp_heard", default=None)


@contextlib.contextmanager
def hearing_warnings():
    """While the server runs, rlsql's warnings raised in a tool call go into that call's answer (the agent reads
    them there); any other warning goes where it went."""
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        heard = _heard.get()
        if heard is None or not issubclass(category, RlsqlWarning):
            previous(message, category, filename, lineno, file, line)
        elif str(message) not in heard:
            heard.append(str(message))

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def _result(data: dict[str, Any]) -> CallToolResult:
    """`data` as structured content, and as the same JSON in a text block for clients that read only text.
    A value JSON has no type for becomes its text, as `rlsql trial -f json` writes it; NaN is refused (strict
    JSON: the rows' cells are null already, as `rlsql query -f json` writes them)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))


def _failed(message: str) -> CallToolResult:
    """A tool error: the CLI's one line, for the agent to read and act on; the server goes on."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _rows(answer: Answer, limit: int, narrow: str) -> dict[str, Any]:
    """An answer's rows as `rlsql query -f json` prints them, with how many there were and, when cut, a note."""
    answer.warnings = answer.warnings or list(_heard.get() or [])  # said again when answered from memory
    body: dict[str, Any] = {
        "columns": answer.columns,
        "rows": [{c: jsonable(v) for c, v in zip(answer.columns, row, strict=True)} for row in answer.rows],
        "row_count": answer.total,
        "truncated": answer.truncated,
    }
    if answer.warnings:
        body["warnings"] = answer.warnings
    if answer.truncated:
        there = f"{answer.total:,} rows" if answer.total is not None else f"more than {limit:,} rows (not counted)"
        body["note"] = f"{there}; only the first {limit:,} are here. Narrow the question: {narrow}"
    return body


class Tools:
    """The tools over one `Served` state; each returns a CallToolResult (an error is one of them, never a
    raised exception, so the message is rlsql's own line and the server goes on)."""

    def __init__(self, served: Served):
        self.served = served
        self.limit = served.settings.serve_row_limit

    def call(self, work: Callable[[], dict[str, Any]]) -> CallToolResult:
        """`work()` under the server's settings, after a look at the runs' files; rlsql's and DuckDB's errors
        as tool errors."""
        heard: list[str] = []
        token = _heard.set(heard)
        try:
            with rlsql_settings.active(self.served.settings):
                self.served.refresh()  # a run still training: its grown files are read again, as serve does
                data = work()
            kept = data.pop("warnings", [])
            said = [*kept, *(w for w in heard if w not in kept)]
            return _result({**data, "warnings": said} if said else data)
        except RlsqlError as exc:
            return _failed(str(exc))
        except DuckError as exc:
            return _failed(sql_failure(exc))
        finally:
            _heard.reset(token)

    def list_queries(self) -> CallToolResult:
        """Every named query and view rlsql has: name, kind (query or view), description and parameters (name,
        type, default, minimum, maximum, doc). Use a name with `describe`, `query`, or in `sql` as a table."""

        def work() -> dict[str, Any]:
            return {
                "queries": [
                    {
                        "name": i.name,
                        "kind": i.kind,
                        "description": i.description,
                        "params": [
                            {
                                "name": p.name,
                                "type": p.type,
                                "default": jsonable(p.default),
                                "minimum": p.minimum,
                                "maximum": p.maximum,
                                "doc": p.doc,
                            }
                            for p in i.params
                        ],
                    }
                    for i in items()
                ]
            }

        return self.call(work)

    def describe(
        self, name: Annotated[str, Field(description="A named query or view (see `list_queries`).")]
    ) -> CallToolResult:
        """A named query's or view's columns (name, DuckDB type over the served runs, description), parameters,
        version and fingerprint: what `rlsql describe NAME -f json` prints."""
        return self.call(lambda: describe(name, list(self.served.runs.values()), self.served.copies).as_dict())

    def query(
        self,
        name: Annotated[str, Field(description="A named query or view (see `list_queries`).")],
        runs: RunsArg = None,
        params: ParamsArg = None,
    ) -> CallToolResult:
        """Run a named query (or a view) over the served runs: its rows exactly as `rlsql query NAME -f json`
        prints them (NULL and NaN as null, dates ISO 8601), with `columns` in order and `row_count`. A bad name
        or parameter is an error saying what there is."""

        def work() -> dict[str, Any]:
            given = {k: str(v) for k, v in (params or {}).items()}
            picked = self.served.pick(runs)
            answer = self.served.named(name, picked, given)
            narrow = (
                f"ask for fewer runs, or use `sql` over it: SELECT ... FROM {name} WHERE ... (its "
                "parameters at their defaults), with GROUP BY or LIMIT"
            )
            return {"query": name, "runs": [r.name for r in picked], **_rows(answer, self.limit, narrow)}

        return self.call(work)

    def sql(
        self,
        sql: Annotated[
            str,
            Field(
                description="One read-only SELECT (WITH, FROM ..., DESCRIBE, "
                "SUMMARIZE, VALUES are SELECTs) in DuckDB's dialect."
            ),
        ],
        runs: RunsArg = None,
    ) -> CallToolResult:
        """Run one read-only SELECT over every rlsql view, macro and named query (named queries are tables here,
        at their default parameters) for the served runs, on a sandboxed connection: it reads only the run
        folders, cannot write, attach, install or change settings, and stops at the time limit. Any other
        statement, or a failure, is an error with DuckDB's hint (`Did you mean trials?`)."""

        def work() -> dict[str, Any]:
            if not sql.strip():
                raise UsageError("no SQL given: one SELECT, e.g. SELECT outcome, count(*) FROM trials GROUP BY 1")
            picked = self.served.pick(runs)
            answer = self.served.select(sql, picked)
            narrow = "add WHERE, GROUP BY (aggregate) or LIMIT, or ask for fewer runs"
            return {"runs": [r.name for r in picked], **_rows(answer, self.limit, narrow)}

        return self.call(work)

    def trial(
        self,
        trial: Annotated[str, Field(description="The trial's name: trials.trial_name, its trace_jobs folder.")],
        run: Annotated[str | None, Field(description="The served run holding it; omit to look in every run.")] = None,
        full: Annotated[
            bool,
            Field(
                description="Every text whole and copied context unfolded (long "
                "texts are otherwise cut at 600 characters)."
            ),
        ] = False,
    ) -> CallToolResult:
        """One trial's transcript: its outcome, reward, exception and turns, then every step of its agent
        trajectory (messages, reasoning, tool calls, observations, tokens): what `rlsql trial TRIAL -f json`
        prints, with the markdown `rlsql trial -f markdown` prints as `markdown`."""

        def work() -> dict[str, Any]:
            found = self.served.transcript(self.served.pick([run] if run else None), trial, facts=True)
            return {**transcripts.as_dict(found, full), "markdown": transcripts.as_markdown(found, full)}

        return self.call(work)

    def runs(self) -> CallToolResult:
        """The runs served: each run's name, folder, the files rlsql reads in it by kind, and how often they
        changed since the server started (a run still training is read again when its files change)."""

        def work() -> dict[str, Any]:
            return {"runs": self.served.listing()}

        return self.call(work)

    def findings(self, runs: RunsArg = None) -> CallToolResult:
        """What is unusual in the runs and where (slow steps, idle engines, reward drops, looping agents, ...):
        the rows of the `findings` named query, each with a severity, a message and the command that shows its
        evidence. Start here when asked why a run went wrong; its thresholds are parameters (`query` with name
        findings and `params`)."""
        if FINDINGS not in {i.name for i in items()}:
            return _failed(
                f"this rlsql has no `{FINDINGS}` named query (`list_queries` shows what it has): "
                "use `query` and `sql` over the views instead"
            )
        return self.query(FINDINGS, runs)


def make_server(served: Served) -> MCPServer:
    """An MCP server whose tools answer from `served` (read-only: every tool says so to the client)."""
    tools = Tools(served)
    server: MCPServer = MCPServer(
        "rlsql", version=__version__, log_level="WARNING", instructions=INSTRUCTIONS.format(limit=tools.limit)
    )
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    for fn in (tools.list_queries, tools.describe, tools.query, tools.sql, tools.trial, tools.runs, tools.findings):
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=read_only)
    return server


def run(
    runs: Sequence[Run],
    http: bool,
    host: str | None,
    port: int | None,
    max_rows: int | None,
    say: Callable[[str], None],
    copies: Copies | None = None,
) -> None:
    """Serve `runs` (found by the command) to an MCP client, its named queries reading their fresh `copies`
    (rlsql/engine/copies.py): over stdin and stdout until the input closes, or with `http` over streamable HTTP
    on host:port until Ctrl-C."""
    settings = rlsql_settings.current().replace(serve_host=host, serve_port=port, serve_row_limit=max_rows or ROW_LIMIT)
    token = None if not http or settings.serve_host in LOOPBACK else secrets.token_urlsafe(18)
    served = Served(runs, settings, token, copies=copies)
    server = make_server(served)
    with hearing_warnings():
        try:
            if not http:
                # stdout is the protocol's: every notice goes to stderr
                say(f"serving {len(served.runs)} run(s) over MCP on stdin/stdout (ends when the input closes)")
                with contextlib.suppress(KeyboardInterrupt):
                    anyio.run(server.run_stdio_async)
                return
            _serve_http(server, served, say)
        finally:
            served.stop()


def _serve_http(server: MCPServer, served: Served, say: Callable[[str], None]) -> None:
    """The SDK's streamable HTTP application at /mcp, behind `rlsql serve`'s Host and token checks."""
    import uvicorn

    from rlsql.serve.app import behind_guards

    host, port = served.settings.serve_host, served.settings.serve_port
    app = behind_guards(server.streamable_http_app(host=host), served)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp" + (f"?token={served.token}" if served.token else "")
    if served.token:
        say(
            f"warning: serving on {host}, beyond this machine: anyone who can reach it and has the token "
            "can read these runs"
        )
    say(f"serving {len(served.runs)} run(s) over MCP at {url} (Ctrl-C stops)")
    uv = uvicorn.Server(
        uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=3
        )
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly on Ctrl-C, then raises it again
        uv.run()
    say("stopped")
