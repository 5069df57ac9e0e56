"""The web application of `rlsql serve`: the pages (server-rendered Jinja), the JSON API beside them
(docs/serve.md), the event stream that tells open pages a run changed, and the token check.

Each page's state is its URL's query string, so a link reproduces the view and the back button works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

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
from rlsql.serve.state import Gone, NotFound, Refused, Served, Stopping, TimeLimit
from rlsql.serve.work import Slots

HERE = Path(__file__).resolve().parent
TOKEN_COOKIE = "rlsql_token"
#: rows a page's table shows (the downloads hold every row)
SHOWN_ROWS = 500
#: seconds between two looks of an event stream at the served version; and between keep-alive comments
STREAM_TICK = 0.25
KEEPALIVE = 15.0
DOWNLOADS = {"csv": "text/csv; charset=utf-8", "json": "application/json", "parquet": "application/vnd.apache.parquet"}


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = core.display
    env.filters["numeric"] = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    env.filters["cut"] = core.transcripts.cut
    env.filters["step_title"] = core.transcripts.step_title
    env.filters["segment_name"] = core.transcripts.segment_name
    env.filters["repeat_note"] = core.transcripts.repeat_note
    env.filters["spec"] = lambda chart: embedded_json(chart.spec())
    env.globals["url"] = _url
    return env


#: what would end or open markup inside a <script> (`</script>`, `<!--`) or an attribute, written as JSON's
#: own escapes, which every JSON reader turns back into the characters
_EMBEDDED = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def embedded_json(value: Any) -> str:
    """`value` as JSON that is safe inside a page's <script> element: no `<`, `>` or `&` in it."""
    return json.dumps(value, allow_nan=False).translate(_EMBEDDED)


def _url(path: str, **query: Any) -> str:
    """`path` with a query string of the non-empty values (lists repeat their key)."""
    pairs = [
        (k, v)
        for k, vs in query.items()
        for v in (vs if isinstance(vs, (list, tuple)) else [vs])
        if v not in (None, "", False)
    ]
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


def cross_site(scope: Scope) -> str | None:
    """Why a request comes from another site's page (the browser says so in Sec-Fetch-Site, or its Origin is not
    this server's), or None: a page elsewhere must not make a browser run SQL here."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    site = headers.get("sec-fetch-site", "").lower()
    if site in ("cross-site", "same-site"):  # same-site: another origin (another port) of this site
        return f"a {site} request"
    origin = headers.get("origin")
    if origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
        return f"a request from another origin ({origin})"
    return None


class SameOrigin:
    """Refuses (403) a request another site's page made, on every route but the static files (which hold
    nothing of the runs)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not scope.get("path", "").startswith("/static/"):
            why = cross_site(scope)
            if why is not None:
                await PlainTextResponse(f"refused: {why}", 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _error_status(exc: Exception) -> int:
    if isinstance(exc, NotFound) or (isinstance(exc, core.UsageError) and "no named query or view" in str(exc)):
        return 404
    if isinstance(exc, Refused):
        return 403
    if isinstance(exc, TimeLimit):
        return 504
    if isinstance(exc, (Gone, Stopping)):
        return 503
    if isinstance(exc, core.UsageError):
        return 400
    if isinstance(exc, core.DataError):
        return 422
    return 400


def make_app(served: Served, stopping: Callable[[], bool] = lambda: False) -> Starlette:
    """The application over `served`; `stopping()` tells the event streams to end (the server is going)."""
    env = _templates()
    settings = served.settings
    slots = Slots(settings.serve_concurrency)

    def page(template: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        body = env.get_template(template).render(
            request=request,
            served=served,
            version=served.version,
            path=request.url.path,
            given=_given(request),
            **context,
        )
        return HTMLResponse(body, status)

    def failed(request: Request, exc: Exception) -> HTMLResponse:
        return page("error.html.j2", request, _error_status(exc), error=str(exc))

    def worked(answer: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
        """`answer` in a worker thread when one of the slots is free (rlsql/serve/work.py); given up when the
        client goes away."""

        async def endpoint(request: Request) -> Response:
            response = await slots.run(request.receive, lambda: answer(request))
            return response if response is not None else PlainTextResponse("the client went away", 503)

        return endpoint

    def guarded(render: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
        def endpoint(request: Request) -> Response:
            try:
                return render(request)
            except core.RlsqlError as exc:
                return failed(request, exc)

        return worked(endpoint)

    # -- pages ----------------------------------------------------------------------------------
    def fleet(request: Request) -> Response:
        given = _given(request)
        state: dict[str, Any] = {
            k: given.get(k, "") for k in ("group", "sort", "desc", "x", "y", "span", "page", "band")
        }
        state["f"] = [f for f in request.query_params.getlist("f") if f.partition("=")[0]]
        return page("fleet.html.j2", request, fleet=pages.fleet(served, state), state=state)

    def run(request: Request) -> Response:
        given = _given(request)
        return page(
            "run.html.j2", request, **pages.run_page(served, given.get("run", ""), given), span=given.get("span") or "5"
        )

    def compare(request: Request) -> Response:
        given = _given(request)
        names = request.query_params.getlist("run")
        return page(
            "compare.html.j2",
            request,
            **pages.compare_page(served, names, given),
            span=given.get("span") or "5",
            names=names,
        )

    def trials(request: Request) -> Response:
        given = _given(request)
        return page("trials.html.j2", request, **pages.trials_page(served, given.get("run", ""), given))

    def trial(request: Request) -> Response:
        given = _given(request)
        full = given.get("full") in ("1", "true", "on")
        return page(
            "trial.html.j2", request, **pages.trial_page(served, given.get("run", ""), given.get("trial", ""), full)
        )

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
        return page(
            "query.html.j2",
            request,
            item=item,
            answer=answer,
            error=error,
            names=names,
            params=given,
            shown=SHOWN_ROWS,
            query_string=query_string,
        )

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
        return page(
            "sql.html.j2",
            request,
            text=text,
            answer=answer,
            error=error,
            names=names,
            views=views,
            shown=SHOWN_ROWS,
            query_string=query_string,
        )

    # -- the API --------------------------------------------------------------------------------
    def api_error(exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, _error_status(exc))

    def rows_response(answer: Answer, fmt: str, filename: str) -> Response:
        if fmt == "json-api":
            body: dict[str, Any] = {
                "columns": answer.columns,
                "rows": [
                    {c: core.json_cell(v) for c, v in zip(answer.columns, row, strict=True)} for row in answer.rows
                ],
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
        """The named query's rows as Parquet (DuckDB's types kept): asked afresh, not from memory, written by
        DuckDB into a temporary file, which is sent from disk (its name removed at once: nothing is left behind
        when the client goes away mid-download)."""
        core.item(name)
        with tempfile.TemporaryDirectory(prefix="rlsql-serve-") as tmp:
            target = Path(tmp) / f"{name}.parquet"
            deadline = served.deadline()
            try:
                with deadline.running():
                    core.write_parquet(name, runs, params, target)
            except core.RlsqlError as exc:
                if deadline.expired:
                    raise served.stopped(deadline, name) from exc
                raise
            handle = target.open("rb")
            size = os.fstat(handle.fileno()).st_size

        def blocks() -> Iterator[bytes]:
            with handle:
                while block := handle.read(2**20):
                    yield block

        return StreamingResponse(
            blocks(),
            media_type=DOWNLOADS["parquet"],
            headers={"content-disposition": f'attachment; filename="{name}.parquet"', "content-length": str(size)},
        )

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
        return JSONResponse(
            {
                "version": served.version,
                "runs": [
                    {
                        "run": r.name,
                        "path": str(r.path),
                        "artifacts": {k: str(a.path) for k, a in sorted(r.artifacts.items())},
                        "changes": served.generation[r.name],
                    }
                    for r in served.runs.values()
                ],
            }
        )

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
        Route("/api/query/{name}", worked(api_query)),
        Route("/api/sql", worked(api_sql)),
        Route("/api/sql.{fmt}", worked(api_sql)),
        Route("/api/events", events),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=guards(served), lifespan=lifespan)


def guards(served: Served) -> list[Middleware]:
    """The checks every request passes before any route (the pages, the API, `rlsql mcp --http`): no
    cross-site request (SameOrigin); bound to the loopback, its Host must be a loopback name; bound beyond
    it, the token (TokenGate)."""
    middleware = [Middleware(SameOrigin), Middleware(TokenGate, token=served.token)]
    if served.local:
        # bound to the loopback: a page elsewhere that rebinds its DNS name to 127.0.0.1 is refused
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"]))
    return middleware


def behind_guards(app: ASGIApp, served: Served) -> ASGIApp:
    """`app` (another ASGI application: the MCP SDK's) behind the same checks, outermost first."""
    for cls, args, kwargs in reversed(guards(served)):
        app = cls(app, *args, **kwargs)
    return app
