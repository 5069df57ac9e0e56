"""Starting rlsql's background processes (the cache builder, rlsql/cachebg.py; the questions answered
ahead, rlsql/ahead.py) so that they run this very rlsql.

A process started as `python -m rlsql.X` puts its working folder first on sys.path: started from a
folder holding a folder named `rlsql` (a checkout of the repository, say) it would import that one, not
the rlsql that started it, and compute other answer keys from other code. So the process runs with
`-P` (no working folder on the path, Python 3.11+) and with the folder this package was imported from
first on PYTHONPATH. It gets its own session (neither the terminal's Ctrl-C nor its hang-up stops it),
/dev/null for its standard streams, and no Popen object (whose finalizer would warn at exit about a
child still running).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

#: a detached process can be started here (POSIX); elsewhere the cache builds before the read
CAN_SPAWN = hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_OPEN")


def package_root() -> str:
    """The folder this rlsql package was imported from (site-packages, or a checkout's root)."""
    return str(Path(__file__).resolve().parent.parent)


def start(module: str, args: Sequence[str]) -> int | None:
    """Start `python -m MODULE ARGS...` detached, with this rlsql first on its path; its pid, or None
    when it could not start."""
    if not CAN_SPAWN or not sys.executable:
        return None
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root(), *filter(None, [env.get("PYTHONPATH")])])
    devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        return os.posix_spawn(sys.executable, [sys.executable, "-P", "-m", module, *args], env,
                              file_actions=devnull, setsid=True)
    except (OSError, NotImplementedError):  # NotImplementedError: a libc without POSIX_SPAWN_SETSID
        return None
