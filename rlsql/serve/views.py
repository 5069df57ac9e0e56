"""The pages of `rlsql serve` (docs/serve.md), server-rendered from rlsql/serve/templates/ with Starlette's
Jinja2Templates: what each shows comes from rlsql/serve/pages.py, and each page's state is its URL's query
string, so a link reproduces the view and the back button works.

Each endpoint is a plain `async def endpoint(request)` over the app's state (`request.app.state.served`); its
work, rendering included, runs in a worker thread when one of the app's slots is free (api.worked). rlsql's
errors propagate to the app's exception handlers, which render error.html.j2 with the error's status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from rlsql.core.errors import RlsqlError
from rlsql.outputs import transcript as transcripts
from rlsql.outputs.formats import display
from rlsql.serve import pages
from rlsql.serve.api import given, worked
from rlsql.serve.memory import Answer
from rlsql.serve.state import NotFound, Served

#: rows a page's table shows (the downloads hold every row)
SHOWN_ROWS = 500

#: what would end or open markup inside a <script> (`</script>`, `<!--`) or an attribute, written as JSON's
#: own escapes, which every JSON reader turns back into the characters
_EMBEDDED = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def embedded_json(value: Any) -> str:
    """`value` as JSON that is safe inside a page's <script> element: no `<`, `>` or `&` in it."""
    return json.dumps(value, allow_nan=False).translate(_EMBEDDED)


def url(path: str, **query: Any) -> str:
    """`path` with a query string of the non-empty values (lists repeat their key)."""
    pairs = [
        (k, v)
        for k, vs in query.items()
        for v in (vs if isinstance(vs, (list, tuple)) else [vs])
        if v not in (None, "", False)
    ]
    return f"{path}?{urlencode(pairs)}" if pairs else path


def _environment() -> jinja2.Environment:
    """The pages' Jinja: every value escaped, an undefined name an error, the CLI's cell formatting."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = display
    env.filters["numeric"] = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    env.filters["cut"] = transcripts.cut
    env.filters["step_title"] = transcripts.step_title
    env.filters["segment_name"] = transcripts.segment_name
    env.filters["repeat_note"] = transcripts.repeat_note
    env.filters["spec"] = lambda chart: embedded_json(chart.spec())
    env.globals["url"] = url
    return env


def _every_page(request: Request) -> dict[str, Any]:
    """What base.html.j2 shows on every page: the runs served, their version, this page's path and state."""
    served: Served = request.app.state.served
    return {"served": served, "version": served.version, "path": request.url.path, "given": given(request)}


templates = Jinja2Templates(env=_environment(), context_processors=[_every_page])


def render(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    """`template` rendered now (in the caller's thread) with `context` and what every page shows."""
    return templates.TemplateResponse(request, template, context, status_code=status)


async def fleet(request: Request) -> Response:
    asked = given(request)
    state: dict[str, Any] = {k: asked.get(k, "") for k in ("group", "sort", "desc", "x", "y", "span", "page", "band")}
    state["f"] = [f for f in request.query_params.getlist("f") if f.partition("=")[0]]

    def answer() -> Response:
        found = pages.fleet(request.app.state.served, state)
        return render(request, "fleet.html.j2", fleet=found, state=state)

    return await worked(request, answer)


async def run(request: Request) -> Response:
    asked = given(request)

    def answer() -> Response:
        found = pages.run_page(request.app.state.served, asked.get("run", ""), asked)
        return render(request, "run.html.j2", **found, span=asked.get("span") or "5")

    return await worked(request, answer)


async def compare(request: Request) -> Response:
    asked = given(request)
    names = request.query_params.getlist("run")

    def answer() -> Response:
        found = pages.compare_page(request.app.state.served, names, asked)
        return render(request, "compare.html.j2", **found, span=asked.get("span") or "5", names=names)

    return await worked(request, answer)


async def trials(request: Request) -> Response:
    asked = given(request)

    def answer() -> Response:
        found = pages.trials_page(request.app.state.served, asked.get("run", ""), asked)
        return render(request, "trials.html.j2", **found)

    return await worked(request, answer)


async def check(request: Request) -> Response:
    asked = given(request)
    return await worked(
        request,
        lambda: render(request, "check.html.j2", **pages.check_page(request.app.state.served, asked.get("run", ""))),
    )


async def trial(request: Request) -> Response:
    asked = given(request)
    full = asked.get("full") in ("1", "true", "on")

    def answer() -> Response:
        found = pages.trial_page(request.app.state.served, asked.get("run", ""), asked.get("trial", ""), full)
        return render(request, "trial.html.j2", **found)

    return await worked(request, answer)


async def queries(request: Request) -> Response:
    return await worked(request, lambda: render(request, "queries.html.j2", items=pages.items()))


async def query(request: Request) -> Response:
    """A named query or view: its parameters as a form and its rows; a bad parameter or a run lacking what it
    reads is said on the page, beside the form."""
    served: Served = request.app.state.served
    names = request.query_params.getlist("run")

    def answer() -> Response:
        item = pages.item(request.path_params["name"])
        asked = given(request)
        params = {p.name: asked.get(p.name, "") for p in item.params}
        found: Answer | None = None
        error = None
        try:
            found = served.named(item.name, served.pick(names), params)
        except RlsqlError as exc:
            if isinstance(exc, NotFound):
                raise
            error = str(exc)
        query_string = urlencode([("run", n) for n in names] + [(k, v) for k, v in params.items() if v])
        return render(
            request,
            "query.html.j2",
            item=item,
            answer=found,
            error=error,
            names=names,
            params=params,
            shown=SHOWN_ROWS,
            query_string=query_string,
        )

    return await worked(request, answer)


async def sql(request: Request) -> Response:
    """The SQL editor and, for a statement given, its rows or its error (the CLI's one line)."""
    served: Served = request.app.state.served
    text = request.query_params.get("q", "")
    names = request.query_params.getlist("run")

    def answer() -> Response:
        found, error = None, None
        if text.strip():
            try:
                found = served.select(text, served.pick(names))
            except RlsqlError as exc:
                if isinstance(exc, NotFound):
                    raise
                error = str(exc)
        return render(
            request,
            "sql.html.j2",
            text=text,
            answer=found,
            error=error,
            names=names,
            views=pages.items(),
            shown=SHOWN_ROWS,
            query_string=urlencode([("q", text), *[("run", n) for n in names]]),
        )

    return await worked(request, answer)
