"""The web application of `rlsql serve` in Starlette's shape: the routes (the pages in rlsql/serve/views.py,
the JSON API and the event stream in rlsql/serve/api.py, the static files), the exception handlers that turn
rlsql's errors into a status and one line, the lifespan (the watcher of the runs' files), and the checks every
request passes before any route (Host, token, cross-site).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from rlsql.core.errors import DataError, RlsqlError, UsageError
from rlsql.serve import api, views
from rlsql.serve.state import Gone, NotFound, Refused, Served, Stopping, TimeLimit
from rlsql.serve.work import Slots

TOKEN_COOKIE = "rlsql_token"

ROUTES = [
    Route("/", views.fleet),
    Route("/run", views.run),
    Route("/compare", views.compare),
    Route("/trials", views.trials),
    Route("/trial", views.trial),
    Route("/check", views.check),
    Route("/queries", views.queries),
    Route("/query/{name}", views.query),
    Route("/sql", views.sql),
    Route("/api/runs", api.runs),
    Route("/api/query/{name}", api.query),
    Route("/api/sql", api.sql),
    Route("/api/sql.{fmt}", api.sql),
    Route("/api/events", api.events),
    Mount("/static", StaticFiles(directory=Path(__file__).resolve().parent / "static"), name="static"),
]

#: each error's status; Starlette answers an error with the handler of its nearest class here
STATUS: dict[type[RlsqlError], int] = {
    RlsqlError: 400,
    UsageError: 400,
    NotFound: 404,
    Refused: 403,
    DataError: 422,
    Gone: 503,
    Stopping: 503,
    TimeLimit: 504,
}


def failed(status: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The handler of an error of `status`: the API's `{"error": ...}`, or a page saying it."""

    async def handler(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc)}, status)
        return views.render(request, "error.html.j2", status, error=str(exc))

    return handler


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The watcher: one task on the server's own loop, polling in a worker thread; ends with the server, which
    interrupts the DuckDB work still under way."""
    served: Served = app.state.served

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


def make_app(served: Served, stopping: Callable[[], bool] = lambda: False) -> Starlette:
    """The application over `served`; `stopping()` tells the event streams to end (the server is going)."""
    app = Starlette(
        routes=ROUTES,
        middleware=guards(served),
        exception_handlers={cls: failed(status) for cls, status in STATUS.items()},
        lifespan=lifespan,
    )
    app.state.served = served
    app.state.slots = Slots(served.settings.serve_concurrency)
    app.state.stopping = stopping
    return app


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
