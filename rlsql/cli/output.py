"""The command line's output and errors: notices on stderr, rows out, runs in, exit codes.

stdout carries data only; notices, warnings and errors go to stderr as single lines. Nothing here
imports typer (rlsql/cli/app.py parses the arguments).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rlsql.core.errors import DataError, ExitCode, RlsqlError, UsageError
from rlsql.outputs.formats import OutputFormat, render


def say(message: str) -> None:
    """A notice on stderr (never stdout, which carries data only)."""
    print(f"rlsql: {message}", file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    say(f"warning: {message}")


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
    if any(ch in spec for ch in "*?[") or path.exists():
        return  # a glob, or there: rlsql.runs.folders takes it from here
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
    from rlsql.runs.folders import resolve_runs

    if not run and announce:
        _announce_sample()
    for spec in run or []:
        _suggest_run(spec)
    return resolve_runs(run or None)


def _emit(text: str, output: Path | None, runs) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from rlsql.runs.writes import refuse_run_folders, write_text

    refuse_run_folders(output, runs)
    write_text(output, text)
    say(f"wrote {output}")


def _terminal_width(output: Path | None) -> int | None:
    """The terminal's width when rows go to one; None (print every cell whole) for files and pipes."""
    import shutil

    if output is not None or not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


def _emit_rows(
    fmt: OutputFormat | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    output: Path | None = None,
    runs: Sequence = (),
    limit: int | None = None,
) -> None:
    """Rows in `fmt` (else the one -o's extension names) to stdout or -o; --limit says what it left out."""
    fmt = fmt or OutputFormat.for_output(output)
    shown = rows if limit is None else rows[:limit]
    width = _terminal_width(output) if fmt is OutputFormat.TABLE else None
    _emit(render(fmt, columns, shown, width), output, runs)
    hidden = len(rows) - len(shown)
    if hidden:
        say(f"{hidden} more row{'s' if hidden != 1 else ''} (--limit {limit} of {len(rows)})")


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

    params = _parse_params(param)
    bind_params(name, params)  # a bad name or parameter fails before any file is read
    runs = _resolve(run)
    if settings.current().engine == "spark":
        from rlsql.engine.spark import run_query_spark

        on_spark = run_query_spark(name, runs, params)
        columns, rows = on_spark.columns, on_spark.rows
    else:
        result = run_query(name, runs, params)
        columns, rows = result.columns, result.rows
    _emit_rows(fmt, columns, rows, output, runs, limit)


def run_main(entry: Callable[[], object]) -> None:
    """Run `entry` as the console entry point: expected errors become one stderr line and a documented
    exit code; success exits 0 (as typer's standalone mode does)."""
    warnings.showwarning = _show_warning
    warnings.simplefilter("always")
    try:
        entry()
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
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # the reader (head, less) went away: not an error of ours
        sys.stderr.close()
        sys.exit(int(ExitCode.OK))
    sys.exit(int(ExitCode.OK))
