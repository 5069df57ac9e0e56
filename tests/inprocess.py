"""rlsql's console entry run in the test's own process (cheaper than a process per call), with one
function of rlsql made to fail: a command that calls it exits 99, so a kept answer or entry is proved
used when the command still succeeds (tests/test_answers.py, test_ahead.py, test_configcache.py)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import pytest

from rlsql import quickcli

#: the exit code of a command that called the function made to fail
TRAPPED = 99


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class _Trapped(Exception):
    pass


def run_cli(args: Sequence[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
            env: Mapping[str, str] | None = None, names: Sequence[str] = (),
            trap: tuple[object, str] | None = None) -> Ran:
    """`rlsql ARGS` through the console entry; `names`: the variables set from `env` (unset when absent
    there) for the rest of the test; `trap`: (module, function name) that fails the command if called."""
    for name in names:
        if env is not None and name in env:
            monkeypatch.setenv(name, env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    with monkeypatch.context() as patched:
        if trap is not None:
            def trapped(*_args, **_kwargs):
                raise _Trapped
            patched.setattr(trap[0], trap[1], trapped)
        patched.setattr(sys, "argv", ["rlsql", *args])
        try:
            quickcli.main()
            code = 0
        except SystemExit as stop:
            code = int(stop.code or 0)
        except _Trapped:
            code = TRAPPED
    out, err = capsys.readouterr()
    return Ran(code, out, err)
