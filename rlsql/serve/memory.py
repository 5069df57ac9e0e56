"""The answers `rlsql serve` keeps in memory: rows of named queries and SQL, least recently used first out,
within a budget of bytes; an answer is dropped as soon as a file of one of its runs that it reads changes."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """Rows as DuckDB gave them (the pages format them as the CLI's table does, the API as its JSON)."""

    columns: list[str]
    rows: list[tuple]
    #: rows were left out past the row limit
    truncated: bool = False
    runs: frozenset[str] = field(default_factory=frozenset)
    nbytes: int = 0
    #: how many rows the answer had before the cut (len(rows) when nothing was cut; None: more than the row
    #: limit, not counted to the end)
    total: int | None = 0
    #: rlsql's warnings while it was computed (a run lacking what a query reads, a damaged file): `rlsql mcp`
    #: hears them and keeps them here, so an answer from memory says them again
    warnings: list[str] = field(default_factory=list)
    #: the kinds of its runs' files it read (rlsql/serve/state.py KINDS); None: any of them
    reads: frozenset[str] | None = None

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def value_bytes(value: Any) -> int:
    """What one cell takes in memory, its lists, structs and maps included (DuckDB gives them as lists
    and dicts)."""
    size = sys.getsizeof(value)
    if isinstance(value, (list, tuple)):
        size += sum(value_bytes(v) for v in value)
    elif isinstance(value, dict):
        size += sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    return size


def rows_bytes(rows: Sequence[tuple]) -> int:
    """What `rows` take in memory: every row measured."""
    return sum(value_bytes(r) for r in rows) + 64


#: rows fetched in the first batch, before their size says how many the next may hold
FIRST_BATCH = 16
#: the most rows in one batch
MOST_BATCH = 4096


def fetch_bounded(cursor: Any, row_limit: int, byte_limit: int) -> tuple[list[tuple], bool, int]:
    """The rows of `cursor`'s result, fetched in batches sized by what the rows so far took, until the
    result ends, `row_limit` rows, or `byte_limit` bytes: (rows, whether rows were left out, their bytes).
    Nothing past either limit is fetched but the one row that tells the answer is cut."""
    rows: list[tuple] = []
    used = 64
    batch = FIRST_BATCH
    while True:
        got = cursor.fetchmany(min(batch, row_limit + 1 - len(rows)))
        for row in got:
            size = value_bytes(row)
            if len(rows) == row_limit or used + size > byte_limit:
                return rows, True, used
            rows.append(row)
            used += size
        if not got:
            return rows, False, used
        per_row = max(1, (used - 64) // len(rows)) if rows else byte_limit
        batch = max(1, min(MOST_BATCH, (byte_limit - used) // per_row + 1))


class Memory:
    """Answers by key, within `budget` bytes: least recently used first out; one larger than the budget is
    not kept at all."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self._answers: OrderedDict[Hashable, Answer] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Answer | None:
        with self._lock:
            answer = self._answers.get(key)
            if answer is None:
                self.misses += 1
                return None
            self._answers.move_to_end(key)
            self.hits += 1
            return answer

    def put(self, key: Hashable, answer: Answer) -> None:
        answer.nbytes = answer.nbytes or rows_bytes(answer.rows)
        with self._lock:
            old = self._answers.pop(key, None)
            if old is not None:
                self.used -= old.nbytes
            if answer.nbytes > self.budget:
                return
            self._answers[key] = answer
            self.used += answer.nbytes
            while self.used > self.budget:
                _, gone = self._answers.popitem(last=False)
                self.used -= gone.nbytes

    def forget_runs(self, names: set[str], kinds: Mapping[str, set[str]] | None = None) -> int:
        """Drop every answer that read one of the runs `names` (with `kinds`, run -> the kinds of its files that
        changed: only those that read one of them); how many went."""

        def stale_answer(a: Answer) -> bool:
            if kinds is None or a.reads is None:
                return bool(a.runs & names)
            return any(a.reads & kinds.get(run, set()) for run in a.runs & names)

        with self._lock:
            stale = [k for k, a in self._answers.items() if stale_answer(a)]
            for key in stale:
                self.used -= self._answers.pop(key).nbytes
            return len(stale)

    def __len__(self) -> int:
        return len(self._answers)
