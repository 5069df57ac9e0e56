"""The JSON API of `rlsql serve` (docs/serve.md): a named query's or ad hoc SQL's rows as JSON, CSV, JSON or
Parquet downloads, the runs served, and the event stream that tells open pages a run changed.

Each endpoint is a plain `async def endpoint(request)` over the app's state (`request.app.state`: `served`,
`slots`, `stopping`, set by rlsql/serve/app.py); rlsql's errors propagate to the app's exception handlers,
which answer `{"error": "one line"}` with the error's status.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from rlsql.core.errors import RlsqlError, UsageError
from rlsql.engine.query import run_query
from rlsql.outputs.formats import jsonable, to_csv, to_json
from rlsql.runs.folders import Run
from rlsql.serve.memory import Answer
from rlsql.serve.state import NotFound, Served, known

#: seconds between two looks of an event stream at the served version; and between keep-alive comments
STREAM_TICK = 0.25
KEEPALIVE = 15.0
DOWNLOADS = {"csv": "text/csv; charset=utf-8", "json": "application/json", "parquet": "application/vnd.apache.parquet"}


def given(request: Request) -> dict[str, str]:
    """The query string as one value per key (the last one), less the token."""
    return {k: v for k, v in request.query_params.items() if k != "token"}


async def worked(request: Request, answer: Callable[[], Response]) -> Response:
    """`answer()` in a worker thread when one of the app's slots is free (rlsql/serve/work.py); given up when
    the client goes away."""
    response = await request.app.state.slots.run(request.receive, answer)
    return response if response is not None else PlainTextResponse("the client went away", 503)


def rows_response(answer: Answer, fmt: str, filename: str, row_limit: int) -> Response:
    """`answer` as the API's JSON (`json-api`) or as a CSV or JSON download, saying when rows were left out."""
    if fmt == "json-api":
        body: dict[str, Any] = {
            "columns": answer.columns,
            "rows": [{c: jsonable(v) for c, v in zip(answer.columns, row, strict=True)} for row in answer.rows],
        }
        if answer.truncated:
            body["truncated"] = True
        return Response(json.dumps(body, ensure_ascii=False), media_type="application/json")
    text = to_csv(answer.columns, answer.rows) if fmt == "csv" else to_json(answer.columns, answer.rows)
    headers = {"content-disposition": f'attachment; filename="{filename}.{fmt}"'}
    if answer.truncated:
        headers["x-rlsql-truncated"] = f"rows past {row_limit:,} left out"
    return Response(text, media_type=DOWNLOADS[fmt], headers=headers)


def split_format(name: str) -> tuple[str, str]:
    """`NAME.csv` as (NAME, csv); a name without a download's suffix asks for the API's JSON."""
    stem, dot, suffix = name.rpartition(".")
    return (stem, suffix) if dot and suffix in DOWNLOADS else (name, "json-api")


async def query(request: Request) -> Response:
    """`GET /api/query/NAME[.csv|.json|.parquet]?run=...&PARAM=VALUE`."""
    served: Served = request.app.state.served
    name, fmt = split_format(request.path_params["name"])

    def answer() -> Response:
        runs = served.pick(request.query_params.getlist("run"))
        params = {k: v for k, v in given(request).items() if k != "run"}
        if fmt == "parquet":
            return parquet(served, name, runs, params)
        return rows_response(served.named(name, runs, params), fmt, name, served.settings.serve_row_limit)

    return await worked(request, answer)


def parquet(served: Served, name: str, runs: Sequence[Run], params: dict[str, str]) -> Response:
    """The named query's rows as Parquet (DuckDB's types kept): asked afresh, not from memory, written by DuckDB
    into a temporary file, which is sent from disk (its name removed at once: nothing is left behind when the
    client goes away mid-download)."""
    known(name)
    with tempfile.TemporaryDirectory(prefix="rlsql-serve-") as tmp:
        target = Path(tmp) / f"{name}.parquet"
        deadline = served.deadline()
        try:
            with deadline.running():
                run_query(
                    name, runs, params, lambda con, sql: con.sql(sql).write_parquet(str(target)), copies=served.copies
                )
        except RlsqlError as exc:
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


async def sql(request: Request) -> Response:
    """`GET /api/sql[.csv|.json]?q=SELECT ...&run=...`: one read-only SELECT on the sandboxed connection."""
    served: Served = request.app.state.served

    def answer() -> Response:
        fmt = request.path_params.get("fmt", "json-api")
        if fmt not in ("json-api", "csv", "json"):
            raise NotFound(f"/api/sql.{fmt}: ad hoc SQL comes as /api/sql, /api/sql.csv or /api/sql.json")
        runs = served.pick(request.query_params.getlist("run"))
        text = request.query_params.get("q", "")
        if not text.strip():
            raise UsageError("no SQL given: /api/sql?q=SELECT ...")
        return rows_response(served.select(text, runs), fmt, "sql", served.settings.serve_row_limit)

    return await worked(request, answer)


async def runs(request: Request) -> Response:
    """`GET /api/runs`: the runs served, each with the files rlsql reads and how often they changed."""
    served: Served = request.app.state.served
    return JSONResponse({"version": served.version, "runs": served.listing()})


async def events(request: Request) -> Response:
    """Server-sent events: `change` with the runs whose files changed, as soon as the server noticed; the
    stream ends when the server stops (`request.app.state.stopping()`)."""
    served: Served = request.app.state.served
    stopping: Callable[[], bool] = request.app.state.stopping

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
