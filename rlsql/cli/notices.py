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
        line = f"rlsql: {self.what} [{self.steps}] {step}"[:shutil.get_terminal_size().columns - 1]
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


class Warnings:
    """The warnings of one command, grouped by kind in the order they first came (module docstring)."""

    def __init__(self) -> None:
        self.kinds: dict[str, _Kind] = {}

    def add(self, message: str) -> None:
        match = _SUBJECT.match(message)
        subject = match["subject"] if match else ""
        rest = message[len(subject):] if subject else message
        key = _PLURAL.sub(r"# \1", _NUMBER.sub("#", _QUOTED.sub("'…'", _DETAIL.sub("(…)", _PATH.sub("<path>", rest)))))
        kind = self.kinds.setdefault(key, _Kind(message))
        if message == kind.first and kind.count:
            return  # the very same warning again (a file read by several questions): said once
        kind.count += 1
        if subject and subject not in kind.subjects:
            kind.subjects.append(subject)

    def say_all(self) -> None:
        for kind in self.kinds.values():
            more = kind.count - 1
            if more <= 0:
                say(f"warning: {kind.first}")
                continue
            others = kind.subjects[1:1 + SHOWN]
            named = f": {', '.join(others)}" + (f" and {more - len(others):,} more" if more > len(others) else "")
            say(f"warning: {kind.first} (and {more:,} more like it{named if others else ''})")
        self.kinds.clear()

    def show(self, message, category, filename, lineno, file=None, line=None) -> None:
        """warnings.showwarning: held until say_all()."""
        self.add(str(message))
