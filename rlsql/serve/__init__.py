"""`rlsql serve`: every run in a browser, live while it trains, over the same versioned SQL (docs/serve.md).

An optional extra (`pip install 'rlsql[serve]'`: Starlette and uvicorn). One process: uvicorn's event loop
serves the pages and the API, one task on that loop looks at the runs' files every second, and DuckDB
work runs in the loop's worker threads; all of it ends with the server (Ctrl-C stops it cleanly).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Sequence

from rlsql.serve.rlsql_core import UsageError

INSTALL_HINT = "pip install 'rlsql[serve]'"
MCP_INSTALL_HINT = "pip install 'rlsql[mcp]'"


def require_serve() -> None:
    """One clear line (exit 2) when the optional web dependencies are missing."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"rlsql serve needs Starlette and uvicorn, which are not installed: {INSTALL_HINT}") from exc


def serve(runs: Sequence[str] | None, host: str | None = None, port: int | None = None, memory: str | None = None,
          say=None) -> None:
    """Serve `runs` (what `--run` takes) on host:port until Ctrl-C."""
    require_serve()
    import uvicorn

    from rlsql.serve import rlsql_core as core
    from rlsql.serve.app import make_app
    from rlsql.serve.state import LOOPBACK, Served

    say = say or (lambda line: print(f"rlsql: {line}", file=sys.stderr))
    settings = core.settings.current().replace(
        serve_host=host, serve_port=port, serve_memory=core.settings.parse_size(memory, "--memory") if memory else None)
    token = None if settings.serve_host in LOOPBACK else secrets.token_urlsafe(18)
    served = Served(core.resolve(runs), settings, token)
    host, port = settings.serve_host, settings.serve_port
    server: uvicorn.Server | None = None
    app = make_app(served, stopping=lambda: server is not None and server.should_exit)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                           lifespan="on", timeout_graceful_shutdown=3))
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if token:
        say(f"warning: serving on {host}, beyond this machine: anyone who can reach it and has the token "
            "can read these runs")
    say(f"serving {len(served.runs)} run(s) at {url} (memory budget {settings.serve_memory / 2**20:,.0f} MiB; "
        "Ctrl-C stops)")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly on Ctrl-C, then raises it again
        server.run()
    say("stopped")


def mcp(runs: Sequence[str] | None, http: bool = False, host: str | None = None, port: int | None = None,
        max_rows: int | None = None, say=None) -> None:
    """`rlsql mcp`: serve `runs` to an MCP client over stdio until its input closes, or with `http` over the SDK's
    streamable HTTP until Ctrl-C (rlsql/serve/mcp_server.py)."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"rlsql mcp needs the MCP Python SDK, which is not installed: {MCP_INSTALL_HINT}") from exc
    from rlsql.serve import mcp_server

    say = say or (lambda line: print(f"rlsql: {line}", file=sys.stderr))
    mcp_server.run(runs, http, host, port, max_rows, say)
