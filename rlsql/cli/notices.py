"""What a command says on stderr besides its data: notices as they happen, and its warnings, at most one
line per kind.

A warning names what it is about first (a file, or a run: `PATH: problem`, `run 'x' has ...`). A
command over a fleet meets the same problem in many files or runs (a glob's 10,000 matches that are
no runs, 75 runs without vLLM stats), so the warnings are held until the command ends and each kind
is said once: the first message whole, then how many more files or runs had it and the first few of
them. A kind is the message with its subject, paths, quoted names, numbers and details in
parentheses taken out.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

#: the subjects named in a grouped warning line besides the first
SHOWN = 3
#: what a warning is about: a run (`run 'x' ...`) or a path (`runs/x/a.csv:12: ...`), first in the message
_SUBJECT = re.compile(r"^(?P<subject>run '(?:[^']|'')*'(?=[:\s])|[^\s:]*/[^:]*?(?::\d+)?(?=:\s))")
_PATH = re.compile(r"(?<![\w.])/[^\s,;:()'\"]+")
_QUOTED = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"\d[\d,.]*")
#: details in parentheses (which lines, where rlsql looked) and plurals do not make another kind
_DETAIL = re.compile(r"\([^()]*\)")
_PLURAL = re.compile(r"# (\w+?)s\b")
#: the query or view a warning is for (`...; reward_curve has nothing from it`, `skipping tool_usage: ...`):
#: the same problem for several of a command's queries is one kind, which names them all
_FOR_ITEM = (re.compile(r"; (?P<item>[\w.]+) has nothing from it$"), re.compile(r"^skipping (?P<item>[\w.]+): "))


class Stderr:
    """stderr that outlives its reader: once a pipe it writes into is closed (`rlsql report ... 2>&1 | head -1`),
    the notices after it are dropped and the command goes on. stderr carries notices only; the command's work
    (a report, an export) is written elsewhere and must not stop because nobody reads them."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.gone = True

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self.stream, name)


def say(message: str) -> None:
    """A notice on stderr (never stdout, which carries data only)."""
    print(f"rlsql: {message}", file=sys.stderr)


class Progress:
    """One stderr line redrawn at every step of a long command on a terminal (`rlsql cache build`)."""

    def __init__(self, what: str):
        self.what = what
        self.steps = 0
        self.width = 0

    def __call__(self, step: str) -> None:
        self.steps += 1
        line = f"rlsql: {self.what} [{self.steps}] {step}"[: shutil.get_terminal_size().columns - 1]
        sys.stderr.write("\r" + line.ljust(self.width))
        sys.stderr.flush()
        self.width = len(line)

    def end(self) -> None:
        if self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


@dataclass
class _Kind:
    first: str
    subjects: list[str] = field(default_factory=list)
    count: int = 0
    #: the queries it was said for, when it is said for queries (_FOR_ITEM), and how it names them
    items: list[str] = field(default_factory=list)
    form: re.Pattern[str] | None = None

    def line(self) -> str:
        """The first message, naming every query the kind was said for."""
        if self.form is None or len(self.items) < 2:
            return self.first
        match = self.form.search(self.first)
        assert match is not None
        listed = ", ".join(self.items[:-1]) + " and " + self.items[-1]
        if self.form is _FOR_ITEM[0]:
            return self.first[: match.start()] + f"; {listed} have nothing from it"
        return f"skipping {listed}: " + self.first[match.end() :]


class Warnings:
    """The warnings of one command, grouped by kind in the order they first came (module docstring)."""

    def __init__(self) -> None:
        self.kinds: dict[str, _Kind] = {}

    def add(self, message: str) -> None:
        match = _SUBJECT.match(message)
        subject = match["subject"] if match else ""
        rest = message[len(subject) :] if subject else message
        item, form = "", None
        for pattern in _FOR_ITEM:
            if found := pattern.search(rest):
                item, form = found["item"], pattern
                rest = rest[: found.start()] + pattern.pattern + rest[found.end() :]
                break
        key = _PLURAL.sub(r"# \1", _NUMBER.sub("#", _QUOTED.sub("'…'", _DETAIL.sub("(…)", _PATH.sub("<path>", rest)))))
        kind = self.kinds.setdefault(key, _Kind(message, form=form))
        if item and item not in kind.items:
            kind.items.append(item)
        if subject:
            # counted by what it is about: a run lacking vLLM stats is one run however many queries say so
            if subject not in kind.subjects:
                kind.subjects.append(subject)
            kind.count = len(kind.subjects)
        elif item:
            kind.count = 1  # the same problem for another query: named in the line, not another count
        elif message != kind.first or not kind.count:  # the very same warning again: said once
            kind.count += 1

    def say_all(self) -> None:
        for kind in self.kinds.values():
            more = kind.count - 1
            if more <= 0:
                say(f"warning: {kind.line()}")
                continue
            others = kind.subjects[1 : 1 + SHOWN]
            named = f": {', '.join(others)}" + (f" and {more - len(others):,} more" if more > len(others) else "")
            say(f"warning: {kind.line()} (and {more:,} more like it{named if others else ''})")
        self.kinds.clear()

    def show(self, message, category, filename, lineno, file=None, line=None) -> None:
        """warnings.showwarning: held until say_all()."""
        self.add(str(message))
