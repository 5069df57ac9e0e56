"""A request's DuckDB work: at most `serve_concurrency` requests work at once (the others wait their turn,
so a dozen heavy requests cost what a few do), and a request whose client went away, waiting or working,
is given up: its statements are interrupted at once rather than at the time limit.

The request's `Work` reaches Served (rlsql/serve/state.py) through a context variable, which the worker
thread inherits: each time limit Served starts registers with it, and cancel() fires them all.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from rlsql.serve.deadline import Deadline

T = TypeVar("T")

#: the work of the request being answered (None outside a request: a test calling Served itself)
current: contextvars.ContextVar[Work | None] = contextvars.ContextVar("rlsql_serve_work", default=None)


class Work:
    """One request's time limits; cancel() fires those under way and any started later."""

    def __init__(self) -> None:
        self.cancelled = False
        self._deadlines: set[Deadline] = set()
        self._lock = threading.Lock()

    def add(self, deadline: Deadline) -> None:
        with self._lock:
            self._deadlines.add(deadline)
            if self.cancelled:
                deadline.fire("gone")

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            for deadline in self._deadlines:
                deadline.fire("gone")


Receive = Callable[[], Awaitable[Mapping[str, Any]]]


async def _client_gone(receive: Receive) -> None:
    """Returns once the client has disconnected (a GET's one body message is read and dropped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Slots:
    """At most `count` requests' work at once, in a worker thread each; a request whose client goes away
    while it waits is dropped, and while it works is cancelled (its thread still ends before the request)."""

    def __init__(self, count: int):
        self.count = max(1, count)
        self._slots: asyncio.Semaphore | None = None

    async def run(self, receive: Receive, call: Callable[[], T]) -> T | None:
        """`call()` in a worker thread when a slot is free; None when the client went away before."""
        if self._slots is None:  # made on the server's own loop
            self._slots = asyncio.Semaphore(self.count)
        gone = asyncio.ensure_future(_client_gone(receive))
        try:
            waiting = asyncio.ensure_future(self._slots.acquire())
            await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                return None
            try:
                work = Work()
                token = current.set(work)
                try:  # the task copies the context, Work included; the thread inherits it from the task
                    job = asyncio.ensure_future(asyncio.to_thread(call))
                finally:
                    current.reset(token)
                try:
                    await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
                finally:  # the client went away, or the server gave up waiting for this request
                    if not job.done():
                        work.cancel()
                return await job
            finally:
                self._slots.release()
        finally:
            gone.cancel()
