"""A request's time limit: every DuckDB connection its work opens is interrupted once the limit has passed,
or sooner when the client goes away or the server stops (rlsql/serve/work.py and Served.stop fire it).

rlsql.duck.memorydb's `opened` hook hands the deadline each connection the work opens (a named query's own,
the CLI's path), so a statement run anywhere below serve is interrupted as well.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from rlsql.duck import memorydb


class Deadline:
    """Interrupts every DuckDB connection handed to it once `seconds` have passed, or when fire() is called
    sooner (rlsql.duck.memorydb's hook hands it each connection a request opens, and sets its memory limit);
    `why` says what stopped it: "time", or the reason fire() was given."""

    def __init__(self, seconds: float, active: set[Deadline] | None = None, memory_limit: str | None = None):
        self.why: str | None = None
        self._active = active if active is not None else set()
        self._memory_limit = memory_limit
        self._cons: list[memorydb.Connection] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.fire, ["time"])
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        return self.why is not None

    def watch(self, con: memorydb.Connection) -> None:
        with self._lock:
            self._cons.append(con)
            if self.expired:
                memorydb.interrupt(con)

    def _opened(self, con: memorydb.Connection) -> None:
        if self._memory_limit is not None:
            memorydb.limit_memory(con, self._memory_limit)
        self.watch(con)

    def fire(self, why: str = "time") -> None:
        with self._lock:
            self.why = self.why or why
            for con in self._cons:
                with contextlib.suppress(memorydb.DuckError):
                    memorydb.interrupt(con)

    @contextlib.contextmanager
    def running(self) -> Iterator[Deadline]:
        """While the block runs: its connections are watched and the timer is on; both end with it."""
        token = memorydb.opened.set(self._opened)
        self._active.add(self)
        self._timer.start()
        try:
            yield self
        finally:
            self._timer.cancel()
            self._timer.join()
            self._active.discard(self)
            memorydb.opened.reset(token)
