"""The console entry point: `rlsql query NAME` in its plain forms without typer, everything else by rlsql/cli.py.

Importing typer and building its command tree cost ~40 ms CPU of every start, a fifth of a whole
trial query at 45,711 trials (bench/RESULTS.md, issue 15). A command line made only of `query`,
one NAME and the options `-r/--run`, `-p/--param` and `-f/--format` (each with a value that does
not start with `-`, as `--run X` or `--run=X`) is answered here, through the same functions the
typer command calls (rlsql/cliout.py), so its output, warnings, errors and exit codes are the same.
Anything else (another command or option, `--help`, a value starting with `-`, a second NAME)
goes to typer unchanged.
"""

from __future__ import annotations

import sys

from rlsql.cliout import _parse_format, run_main, run_named_query

#: option spelling -> the field its value goes into
_OPTIONS = {"-r": "run", "--run": "run", "-p": "param", "--param": "param", "-f": "format", "--format": "format"}


def plain_query(args: list[str]) -> dict | None:
    """The fields of a plain `query` command line (name, run, param, format), else None (typer's to parse)."""
    if not args or args[0] != "query":
        return None
    found: dict = {"name": None, "run": [], "param": [], "format": None}
    i = 1
    while i < len(args):
        token = args[i]
        option, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if option in _OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            if not value or value.startswith("-"):
                return None
            field = _OPTIONS[option]
            if field == "format":
                if found["format"] is not None:
                    return None
                found["format"] = value
            else:
                found[field].append(value)
        elif token.startswith("-") or found["name"] is not None:
            return None
        else:
            found["name"] = token
        i += 1
    return found if found["name"] else None


def _answer(plain: dict) -> None:
    # the resets the typer callback makes before every command, for a process that runs several
    if "rlsql.cache" in sys.modules:
        from rlsql import cache

        cache.choose(None)
    if "rlsql.logfiles" in sys.modules:
        from rlsql.logfiles import request_from_logs

        request_from_logs(None)
    if "rlsql.cachebuild" in sys.modules:
        from rlsql import cachebuild

        cachebuild.VERBOSE = False
    run_named_query(plain["name"], plain["run"] or None, plain["param"] or None, _parse_format(plain["format"]))


def main() -> None:
    plain = plain_query(sys.argv[1:])
    if plain is None:
        from rlsql.cli import main as full

        full()
        return
    run_main(lambda: _answer(plain))


if __name__ == "__main__":
    main()
