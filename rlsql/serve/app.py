"""The web application of `rlsql serve`: the pages (server-rendered Jinja), the JSON API beside them
(docs/serve.md), the event stream that tells open pages a run changed, and the token check.

Each page's state is its URL's query string, so a link reproduces the view and the back button works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from rlsql.serve import pages
from rlsql.serve import rlsql_core as core
from rlsql.serve.memory import Answer
from rlsql.serve.state import NotFound, Refused, Served, TimeLimit

HERE = Path(__file__).resolve().parent
TOKEN_COOKIE = "rlsql_token"
#: rows a page's table shows (the downloads hold every row)
SHOWN_ROWS = 500
#: seconds between two looks of an event stream at the served version; and between keep-alive comments
STREAM_TICK = 0.25
KEEPALIVE = 15.0
DOWNLOADS = {"csv": "text/csv; charset=utf-8", "json": "application/json", "parquet": "application/vnd.apache.parquet"}


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["cell"] = core.display
    env.filters["numeric"] = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    env.filters["cut"] = core.transcripts.cut
    env.filters["step_title"] = core.transcripts.step_title
    env.filters["segment_name"] = core.transcripts.segment_name
    env.filters["spec"] = lambda chart: json.dumps(chart.spec(), allow_nan=False).replace("</", "<\\/")
    env.globals["url"] = _url
    return env


def _url(path: str, **query: Any) -> str:
    """`path` with a query string of the non-empty values (lists repeat their key)."""
    pairs = [(k, v) for k, vs in query.items() for v in (vs if isinstance(vs, (list, tuple)) else [vs])
             if v not in (None, "", False)]
    return f"{path}?{urlencode(pairs)}" if pairs else path


def _given(request: Request) -> dict[str, str]:
    """The query string as one value per key (the last one), less the token."""
    return {k: v for k, v in request.query_params.items() if k != "token"}


class TokenGate:
    """With a token set: a request passes with `?token=T` (which sets a cookie, so the pages' own links need
    no token) or that cookie; any other gets 403."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            await PlainTextResponse("a token is required: open the URL rlsql serve printed", 403)(scope, receive, send)
            return

        async def send_with_cookie(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and request.query_params.get("token"):
                cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                message.setdefault("headers", []).append((b"set-cookie", cookie.encode()))
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _error_status(exc: Exception) -> int:
    if isinstance(exc, NotFound) or (isinstance(exc, core.UsageError) and "no named query or view" in str(exc)):
        return 404
    if isinstance(exc, Refused):
        return 403
    if isinstance(exc, TimeLimit):
        return 504
    if isinstance(exc, core.UsageError):
        return 400
    if isinstance(exc, core.DataError):
        return 422
    return 400


def make_app(served: Served, stopping: Callable[[], bool] = lambda: False) -> Starlette:
    """The application over `served`; `stopping()` tells the event streams to end (the server is going)."""
    env = _templates()
    settings = served.settings

    def page(template: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        body = env.get_template(template).render(
            request=request, served=served, version=served.version, path=request.url.path, given=_given(request),
            **context)
        return HTMLResponse(body, status)

    def failed(request: Request, exc: Exception) -> HTMLResponse:
        return page("error.html.j2", request, _error_status(exc), error=str(exc))

    def guarded(render: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return render(request)
            except core.RlsqlError as exc:
                return failed(request, exc)
        return endpoint

    # -- pages ----------------------------------------------------------------------------------
    def fleet(request: Request) -> Response:
        given = _given(request)
        state: dict[str, Any] = {k: given.get(k, "")
                                 for k in ("group", "sort", "desc", "x", "y", "span", "page", "band")}
        state["f"] = [f for f in request.query_params.getlist("f") if f.partition("=")[0]]
        return page("fleet.html.j2", request, fleet=pages.fleet(served, state), state=state)

    def run(request: Request) -> Response:
        given = _given(request)
        return page("run.html.j2", request, **pages.run_page(served, given.get("run", ""), given),
                    span=given.get("span") or "5")

    def compare(request: Request) -> Response:
        given = _given(request)
        names = request.query_params.getlist("run")
        return page("compare.html.j2", request, **pages.compare_page(served, names, given),
                    span=given.get("span") or "5", names=names)

    def trials(request: Request) -> Response:
        given = _given(request)
        return page("trials.html.j2", request, **pages.trials_page(served, given.get("run", ""), given))

    def trial(request: Request) -> Response:
        given = _given(request)
        full = given.get("full") in ("1", "true", "on")
        return page("trial.html.j2", request,
                    **pages.trial_page(served, given.get("run", ""), given.get("trial", ""), full))

    def queries(request: Request) -> Response:
        return page("queries.html.j2", request, items=core.items())

    def query(request: Request) -> Response:
        name = request.path_params["name"]
        item = core.item(name)
        names = request.query_params.getlist("run")
        given = {p.name: _given(request).get(p.name, "") for p in item.params}
        answer: Answer | None = None
        error = None
        try:
            answer = served.named(name, served.pick(names), given)
        except core.RlsqlError as exc:
            if isinstance(exc, NotFound):
                raise
            error = str(exc)
        query_string = urlencode([("run", n) for n in names] + [(k, v) for k, v in given.items() if v])
        return page("query.html.j2", request, item=item, answer=answer, error=error, names=names, params=given,
                    shown=SHOWN_ROWS, query_string=query_string)

    def sql(request: Request) -> Response:
        text = request.query_params.get("q", "")
        names = request.query_params.getlist("run")
        answer, error = None, None
        if text.strip():
            try:
                answer = served.select(text, served.pick(names))
            except core.RlsqlError as exc:
                if isinstance(exc, NotFound):
                    raise
                error = str(exc)
        views = core.items()
        query_string = urlencode([("q", text), *[("run", n) for n in names]])
        return page("sql.html.j2", request, text=text, answer=answer, error=error, names=names, views=views,
                    shown=SHOWN_ROWS, query_string=query_string)

    # -- the API --------------------------------------------------------------------------------
    def api_error(exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, _error_status(exc))

    def rows_response(answer: Answer, fmt: str, filename: str) -> Response:
        if fmt == "json-api":
            body: dict[str, Any] = {
                "columns": answer.columns,
                "rows": [{c: core.json_cell(v) for c, v in zip(answer.columns, row, strict=True)}
                         for row in answer.rows],
            }
            if answer.truncated:
                body["truncated"] = True
            return Response(json.dumps(body, ensure_ascii=False), media_type="application/json")
        text = core.to_csv(answer.columns, answer.rows) if fmt == "csv" else core.to_json(answer.columns, answer.rows)
        headers = {"content-disposition": f'attachment; filename="{filename}.{fmt}"'}
        if answer.truncated:
            headers["x-rlsql-truncated"] = f"rows past {settings.serve_row_limit:,} left out"
        return Response(text, media_type=DOWNLOADS[fmt], headers=headers)

    def split_format(name: str) -> tuple[str, str]:
        stem, dot, suffix = name.rpartition(".")
        return (stem, suffix) if dot and suffix in DOWNLOADS else (name, "json-api")

    def api_query(request: Request) -> Response:
        name, fmt = split_format(request.path_params["name"])
        try:
            runs = served.pick(request.query_params.getlist("run"))
            params = {k: v for k, v in _given(request).items() if k != "run"}
            if fmt == "parquet":
                return parquet(name, runs, params)
            return rows_response(served.named(name, runs, params), fmt, name)
        except core.RlsqlError as exc:
            return api_error(exc)

    def parquet(name: str, runs: list[core.Run], params: dict[str, str]) -> Response:
        """The named query's rows as Parquet (DuckDB's types kept): asked afresh, not from memory."""
        core.item(name)
        with tempfile.TemporaryDirectory(prefix="rlsql-serve-") as tmp:
            target = Path(tmp) / f"{name}.parquet"
            deadline = served.deadline()
            try:
                with deadline.running():
                    core.write_parquet(core.run_named(name, runs, params), target)
            except core.RlsqlError as exc:
                if deadline.expired:
                    raise TimeLimit(f"{name}: stopped after the time limit of {settings.serve_time_limit:g} s") from exc
                raise
            body = target.read_bytes()
        return Response(body, media_type=DOWNLOADS["parquet"],
                        headers={"content-disposition": f'attachment; filename="{name}.parquet"'})

    def api_sql(request: Request) -> Response:
        fmt = request.path_params.get("fmt", "json-api")
        if fmt not in ("json-api", "csv", "json"):
            return api_error(NotFound(f"/api/sql.{fmt}: ad hoc SQL comes as /api/sql, /api/sql.csv or /api/sql.json"))
        try:
            runs = served.pick(request.query_params.getlist("run"))
            text = request.query_params.get("q", "")
            if not text.strip():
                raise core.UsageError("no SQL given: /api/sql?q=SELECT ...")
            return rows_response(served.select(text, runs), fmt, "sql")
        except core.RlsqlError as exc:
            return api_error(exc)

    def api_runs(request: Request) -> Response:
        return JSONResponse({"version": served.version, "runs": [
            {"run": r.name, "path": str(r.path), "artifacts": {k: str(a.path) for k, a in sorted(r.artifacts.items())},
             "changes": served.generation[r.name]} for r in served.runs.values()]})

    async def events(request: Request) -> Response:
        """Server-sent events: `change` with the runs whose files changed, as soon as the server noticed."""
        async def stream() -> AsyncIterator[str]:
            seen = served.version
            yield f"event: hello\ndata: {json.dumps({'version': seen})}\n\n"
            quiet = 0.0
            while not stopping():
                await asyncio.sleep(STREAM_TICK)
                if served.version != seen:
                    changed = served.changed_since(seen)
                    seen = served.version
                    yield f"event: change\ndata: {json.dumps({'version': seen, 'runs': changed})}\n\n"
                    quiet = 0.0
                else:
                    quiet += STREAM_TICK
                    if quiet >= KEEPALIVE:
                        yield ": keep-alive\n\n"
                        quiet = 0.0
                if await request.is_disconnected():
                    return
        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        """The watcher: one task on the server's own loop, polling in a worker thread; ends with the server."""
        async def watch() -> None:
            while True:
                await asyncio.sleep(served.poll_seconds)
                await asyncio.to_thread(served.refresh)

        task = asyncio.create_task(watch())
        try:
            yield
        finally:
            served.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    routes = [
        Route("/", guarded(fleet)),
        Route("/run", guarded(run)),
        Route("/compare", guarded(compare)),
        Route("/trials", guarded(trials)),
        Route("/trial", guarded(trial)),
        Route("/queries", guarded(queries)),
        Route("/query/{name}", guarded(query)),
        Route("/sql", guarded(sql)),
        Route("/api/runs", api_runs),
        Route("/api/query/{name}", api_query),
        Route("/api/sql", api_sql),
        Route("/api/sql.{fmt}", api_sql),
        Route("/api/events", events),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(TokenGate, token=served.token)]
    if served.local:
        # bound to the loopback: a page elsewhere that rebinds its DNS name to 127.0.0.1 is refused
        middleware.insert(0, Middleware(TrustedHostMiddleware,
                                        allowed_hosts=["127.0.0.1", "localhost", "[::1]"]))
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
