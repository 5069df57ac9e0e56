"""The answer loop (rlsql/engine/answer.py) on hand-made attempts: which failures it mends, what each attempt
is given, which warnings it says, and that what an answer skips is its own, not the process's."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from rlsql.core.errors import BAD_CELL_MARK, QueryError, RlsqlWarning, UnparsableCsv
from rlsql.duck.badcells import BadCells
from rlsql.engine import answer as answering


def test_a_bad_cell_stops_the_first_attempt_and_the_second_records_saying_its_warnings_once() -> None:
    given: list[BadCells | None] = []

    def work(bad: BadCells | None) -> str:
        given.append(bad)
        warnings.warn("said by every attempt", RlsqlWarning, stacklevel=1)
        if bad is None:
            raise QueryError(f"trials: Invalid Input Error: {BAD_CELL_MARK}")
        return "rows"

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert answering.Answer().run(work) == "rows"
    assert given[0] is None and isinstance(given[1], BadCells) and len(given) == 2
    assert [str(w.message) for w in said] == ["said by every attempt"]


def test_a_failure_no_attempt_mends_is_raised_after_one_attempt() -> None:
    calls = []

    def work(bad: BadCells | None) -> None:
        calls.append(bad)
        raise QueryError("trials: Binder Error: no such column")

    with pytest.raises(QueryError, match="no such column"):
        answering.Answer().run(work)
    assert calls == [None]


def test_an_unparsable_csv_is_skipped_by_this_answer_only(tmp_path: Path) -> None:
    """A CSV whose line-bounded copy would change nothing (plain LF lines, every quote closed) is skipped on the
    next attempt; the answer under way says so to the sources (`current`), and the next answer starts afresh."""
    csv = tmp_path / "trials.csv"
    csv.write_text("a,b\n1,2\n")
    seen: list[str | None] = []

    def work(bad: BadCells | None) -> str:
        now = answering.current()
        assert now is not None
        skipped = now.skipped_because(str(csv))
        seen.append(skipped)
        if skipped is None:
            raise UnparsableCsv(str(csv), 3, "mixed line endings")
        return "without it"

    first = answering.Answer()
    assert first.run(work) == "without it"
    assert seen == [None, f"{csv}:3: mixed line endings"]
    assert first.read_instead(str(csv)) is None  # looked at: no copy needed
    assert answering.current() is None
    seen.clear()
    assert answering.Answer().run(work) == "without it"
    assert seen[0] is None  # a new answer reads the file again


def test_an_unparsable_csv_that_fails_again_once_skipped_fails_the_answer(tmp_path: Path) -> None:
    csv = tmp_path / "trials.csv"
    csv.write_text("a,b\n1,2\n")
    calls = []

    def work(bad: BadCells | None) -> None:
        calls.append(bad)
        raise UnparsableCsv(str(csv), None, "still")

    with pytest.raises(UnparsableCsv, match="still"):
        answering.Answer().run(work)
    assert len(calls) == 2
