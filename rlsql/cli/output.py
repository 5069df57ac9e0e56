"""The command line's output and errors: notices on stderr, rows out, runs in, exit codes.

stdout carries data only; notices, warnings and errors go to stderr as single lines. Nothing here
imports typer (rlsql/cli/app.py parses the arguments).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsql.cli.notices import Stderr, Warnings, say
from rlsql.core.errors import DataError, ExitCode, ReaderGone, RlsqlError, UsageError
from rlsql.outputs.formats import OutputFormat

if TYPE_CHECKING:
    from rlsql.engine.copies import Copies
    from rlsql.runs.folders import Run


def _parse_format(value: str | OutputFormat | None) -> OutputFormat | None:
    """-f for rows; a bad name is rlsql's one-line usage error (exit 2), not click's boxed one."""
    if value is None or isinstance(value, OutputFormat):
        return value
    try:
        return OutputFormat.parse(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _suggest_run(spec: str) -> None:
    """A run path that does not exist: fail with the closest sibling folder names, if any."""
    path = Path(spec).expanduser()
    if any(ch in spec for ch in "*?[") or "://" in spec or path.exists():
        return  # a glob, a URL, or there: rlsql.runs.folders (rlsql.cache.mirrors) takes it from here
    import difflib

    parent = path.parent
    try:
        siblings = sorted(p.name for p in parent.iterdir() if p.is_dir())
    except OSError:
        siblings = []
    close = difflib.get_close_matches(path.name, siblings, n=3, cutoff=0.6)
    if close:
        hint = " or ".join(str(parent / name) for name in close)
        raise DataError(f"{path}: run folder not found; did you mean {hint}?")


def _announce_sample() -> None:
    from rlsql.runs.folders import sample_run_path

    say(f"no --run given: using the bundled sample run at {sample_run_path()}")


def _resolve(run: list[str] | None, announce: bool = True):
    from rlsql.cache.mirrors import resolve_runs

    if not run and announce:
        _announce_sample()
    for spec in run or []:
        _suggest_run(spec)
    return resolve_runs(run or None)


def copies_for(runs: Sequence[Run], names: Sequence[str] | None = None) -> Copies | None:
    """The cached copies a command hands the engine (rlsql/cache/copies.py): none when the cache is off; under
    --cache, those of the files the queries and views `names` read (None: every source) built first."""
    from rlsql.cache.copies import for_command

    return for_command(runs, names)


def _emit(text: str, output: Path | None) -> None:
    """A text (a script, a document) to stdout or -o (rlsql/outputs/rows.py: a FIFO, a device or - too)."""
    from rlsql.outputs.rows import Output

    out = Output(None, output)
    out.write_text(text)
    out.commit()
    if out.kind == "file":
        say(f"wrote {output}")


def _emit_rows(
    fmt: OutputFormat | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    output: Path | None = None,
    limit: int | None = None,
    grain: Sequence[str] = (),
) -> None:
    """Rows a command holds (a listing, a check's issues) in `fmt` (else the one -o's extension names)."""
    from rlsql.outputs.rows import Output

    out = Output(fmt, output, limit, grain)
    written = out.write_rows(columns, rows)
    out.commit()
    _say_written(out, written)


def _say_written(out, written) -> None:
    """What a limit left out (--limit, or a table on a terminal), and where -o put the rows."""
    if written is not None and written.total is not None:
        more = written.total - written.rows
        hint = "; -f csv or -o FILE gives them all" if written.by_terminal else ""
        say(f"{more:,} more row{'s' if more != 1 else ''} ({written.rows:,} of {written.total:,} shown{hint})")
    if written is not None and written.records:
        say("too wide for the terminal: one field per line; -f csv or -o FILE gives the table")
    if out.kind == "file":
        counted = "" if written is None else f" ({written.rows:,} row{'' if written.rows == 1 else 's'})"
        say(f"wrote {out.target}{counted}")


def emit_query(
    fmt: OutputFormat | None, output: Path | None, limit: int | None, run, grain: Sequence[str] = ()
) -> None:
    """Rows of a query to stdout or -o as DuckDB produces them: `run(consume)` answers with `consume`
    taking the connection and the statement (rlsql/engine/query.py); `grain`: the columns a row is per."""
    from rlsql.engine import answer
    from rlsql.outputs.rows import Output

    out = Output(fmt, output, limit, grain)  # a target that cannot be written is refused before any file is read
    # rows that go to stdout as they come are never answered again: bad cells recorded from the first attempt
    token = answer.at_once.set(out.stream_to is not None)
    try:
        written = run(out.write_query)
        out.commit()
    finally:
        answer.at_once.reset(token)
        out.discard()
    _say_written(out, written)


def _parse_params(pairs: list[str] | None) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-p {pair!r}: write parameters as key=value (e.g. -p span=10)")
        params[key.strip()] = value
    return params


def run_named_query(
    name: str,
    run: list[str] | None,
    param: list[str] | None,
    fmt: OutputFormat | None,
    output: Path | None = None,
    limit: int | None = None,
) -> None:
    """`rlsql query`: run a named query (or a view) over the runs and print its rows."""
    from rlsql.core import settings
    from rlsql.engine.query import bind_params, run_query

    # a bad name or parameter fails before any file is read; the bound values are handed down, not checked again
    params = bind_params(name, _parse_params(param))
    runs = _resolve(run)
    grain = query_grain(name)
    if settings.current().engine == "spark":
        from rlsql.engine.spark import run_query_spark

        if sys.stderr.isatty():  # the JVM takes seconds to start: a person at a terminal is told why
            where = settings.current().spark_remote
            say(f"connecting to Spark Connect at {where}…" if where else "starting a local Spark session…")
        on_spark = run_query_spark(name, runs, params)
        _emit_rows(fmt, on_spark.columns, on_spark.rows, output, limit, grain)
        return
    copies = copies_for(runs, [name])
    emit_query(fmt, output, limit, lambda consume: run_query(name, runs, params, consume, copies=copies), grain)


def query_grain(name: str) -> list[str]:
    """The columns one row of named query (or view) `name` is per: its `grain` header, with `run`."""
    from rlsql.catalog.catalog import load_catalog

    f = load_catalog().files.get(name)
    grain = [c.strip() for c in (f.grain or "").split(",") if c.strip()] if f is not None else []
    return grain if "run" in grain or not grain else ["run", *grain]


def run_main(entry: Callable[[], object]) -> None:
    """Run `entry` as the console entry point: expected errors become one stderr line and a documented
    exit code; success exits 0 (as typer's standalone mode does)."""
    held = Warnings()
    if not isinstance(sys.stderr, Stderr):  # a closed stderr pipe stops no command
        sys.stderr = Stderr(sys.stderr)
    warnings.showwarning = held.show
    warnings.simplefilter("always")
    code = 0
    try:
        try:
            returned = entry()  # click, not standalone: the exit code of `typer.Exit(code)`, else None
            code = returned if isinstance(returned, int) else 0
        finally:
            held.say_all()  # before the error, if any: one line per kind of warning
    except RlsqlError as exc:
        say(f"error: {exc}")
        sys.exit(int(exc.exit_code))
    except OSError as exc:
        # a write path that did not name its failure (each should): still one line with the path
        if isinstance(exc, BrokenPipeError):
            sys.stderr.close()
            sys.exit(int(ExitCode.OK))
        from rlsql.runs.writes import write_failure

        failure = write_failure(exc.filename or "?", exc)
        say(f"error: {failure}")
        sys.exit(int(failure.exit_code))
    except ReaderGone:
        # the reader (head, less) went away: not an error of ours; stdout pointed at /dev/null so that the
        # interpreter's last flush into the closed pipe says nothing either
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(int(ExitCode.OK))
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # the reader (head, less) went away: not an error of ours
        sys.stderr.close()
        sys.exit(int(ExitCode.OK))
    sys.exit(code)
