"""`rlsql serve`: every run in a browser, live while it trains, over the same versioned SQL (docs/serve.md).

An optional extra (`pip install 'rlsql[serve]'`: Starlette and uvicorn). One process: uvicorn's event loop
serves the pages and the API, one task on that loop looks at the runs' files every second, and DuckDB
work runs in the loop's worker threads; all of it ends with the server (Ctrl-C stops it cleanly).
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rlsql.core.errors import UsageError

if TYPE_CHECKING:
    from rlsql.engine.copies import Copies
    from rlsql.runs.folders import Run

INSTALL_HINT = "pip install 'rlsql[serve]'"
MCP_INSTALL_HINT = "pip install 'rlsql[mcp]'"


def require_serve() -> None:
    """One clear line (exit 2) when the optional web dependencies are missing."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"rlsql serve needs Starlette and uvicorn, which are not installed: {INSTALL_HINT}") from exc


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port and listening (port 0: one the system picks); UsageError in one line when
    it cannot be (the port in use, an address not of this machine)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise UsageError(f"--host {host!r}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    return sock


def bind_host(host: str) -> str:
    """--host as the address to bind: `[::1]` as ::1; an empty one refused."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise UsageError("--host '': give an address (127.0.0.1, ::1, or 0.0.0.0 for every interface)")
    return host


def serve(
    runs: Sequence[Run],
    host: str | None = None,
    port: int | None = None,
    memory: str | None = None,
    say=None,
    copies: Copies | None = None,
) -> None:
    """Serve `runs` (found by the command) on host:port until Ctrl-C, the named queries reading their fresh
    `copies` (rlsql/engine/copies.py)."""
    require_serve()
    import uvicorn

    from rlsql.core import settings as rlsql_settings
    from rlsql.serve.app import make_app
    from rlsql.serve.state import LOOPBACK, Served

    say = say or (lambda line: print(f"rlsql: {line}", file=sys.stderr))
    settings = rlsql_settings.current().replace(
        serve_host=None if host is None else bind_host(host),
        serve_port=port,
        serve_memory=rlsql_settings.parse_size(memory, "--memory") if memory else None,
    )
    token = None if settings.serve_host in LOOPBACK else secrets.token_urlsafe(18)
    served = Served(runs, settings, token, copies=copies)
    host = settings.serve_host
    sock = listening_socket(host, settings.serve_port)
    port = sock.getsockname()[1]

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            # Ctrl-C: the statements under way are interrupted now, not after the grace period
            served.stop()
            super().handle_exit(sig, frame)

    server: uvicorn.Server | None = None
    app = make_app(served, stopping=lambda: server is not None and server.should_exit)
    server = Server(
        uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=3
        )
    )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if token:
        say(
            f"warning: serving on {host}, beyond this machine: anyone who can reach it and has the token "
            "can read these runs"
        )
    say(
        f"serving {len(served.runs)} run(s) at {url} (memory budget {settings.serve_memory / 2**20:,.0f} MiB; "
        "Ctrl-C stops)"
    )
    with sock, contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly on Ctrl-C, then raises it again
        server.run(sockets=[sock])
    say("stopped")


def mcp(
    runs: Sequence[Run],
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    max_rows: int | None = None,
    say=None,
    copies: Copies | None = None,
) -> None:
    """`rlsql mcp`: serve `runs` (found by the command, their fresh `copies` read) to an MCP client over stdio
    until its input closes, or with `http` over the SDK's streamable HTTP until Ctrl-C (rlsql/serve/mcp_server.py)."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"rlsql mcp needs the MCP Python SDK, which is not installed: {MCP_INSTALL_HINT}") from exc
    from rlsql.serve import mcp_server

    say = say or (lambda line: print(f"rlsql: {line}", file=sys.stderr))
    mcp_server.run(runs, http, host, port, max_rows, say, copies)
