"""The `rlsql` command line: parses arguments, calls the API, formats rows, maps errors to exit codes.

stdout carries data only; notices, warnings and errors go to stderr as single lines.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from rlsql import __version__
from rlsql.errors import ExitCode, RlsqlError, UsageError
from rlsql.formats import FORMATS, render

app = typer.Typer(
    name="rlsql",
    help="SQL-first analytics for the logs of RL runs of LLM agents (SkyRL trainer, Harbor trials, vLLM).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def say(message: str) -> None:
    """A notice on stderr (never stdout, which carries data only)."""
    print(f"rlsql: {message}", file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    say(f"warning: {message}")


def _query_names(incomplete: str) -> list[str]:
    """Shell completion: the named queries, read from the SQL folder without loading the catalog."""
    from rlsql.catalog import sql_root

    return sorted(p.stem for p in (sql_root() / "queries").glob("*.sql") if p.stem.startswith(incomplete))


RunOption = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        "-r",
        help="A run folder, a folder of run folders, or a glob (repeatable). Default: the bundled sample run.",
        show_default=False,
    ),
]
FormatOption = Annotated[
    str, typer.Option("--format", "-f", help=f"Output format: {', '.join(FORMATS)}.", show_default=True)
]
OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to FILE (atomically) instead of stdout.", show_default=False),
]


def _resolve(run: list[str] | None):
    from rlsql.runs import resolve_runs, sample_run_path

    if not run:
        say(f"no --run given: using the bundled sample run at {sample_run_path()}")
    return resolve_runs(run or None)


def _emit(text: str, output: Path | None, runs) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from rlsql.atomic import refuse_run_folders, write_text

    refuse_run_folders(output, runs)
    write_text(output, text)
    say(f"wrote {output}")


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def _parse_params(pairs: list[str] | None) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-p {pair!r}: write parameters as key=value (e.g. -p span=10)")
        params[key.strip()] = value
    return params


@app.command("query")
def query_command(
    name: Annotated[str, typer.Argument(help="A named query (see `rlsql list`).", autocompletion=_query_names)],
    run: RunOption = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="A query parameter as key=value (repeatable).")
    ] = None,
    fmt: FormatOption = "table",
    output: OutputOption = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help="Print at most N rows.")] = None,
) -> None:
    """Run a named query over one or more runs and print its rows."""
    from rlsql.api import bind_params, run_query

    _check_format(fmt)
    params = _parse_params(param)
    bind_params(name, params)  # a bad name or parameter fails before any file is read
    runs = _resolve(run)
    result = run_query(name, runs, params)
    rows = result.rows if limit is None else result.rows[:limit]
    _emit(render(fmt, result.columns, rows), output, runs)


@app.command("list")
def list_command(fmt: FormatOption = "table") -> None:
    """List the named queries: name, version, description, parameters."""
    from rlsql.catalog import load_catalog

    _check_format(fmt)
    rows = [
        (q.name, q.version, q.fingerprint, q.description, "; ".join(p.describe() for p in q.params))
        for q in load_catalog().queries()
    ]
    sys.stdout.write(render(fmt, ["name", "version", "fingerprint", "description", "params"], rows))


@app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="A named query.", autocompletion=_query_names)],
) -> None:
    """Print a named query's SQL file (header and body)."""
    from rlsql.catalog import load_catalog

    sys.stdout.write(load_catalog().query(name).text)


@app.command("runs")
def runs_command(run: RunOption = None, fmt: FormatOption = "table") -> None:
    """List the runs found and what each holds: files, row counts, steps, trials, parser format."""
    from rlsql.inventory import inventory

    _check_format(fmt)
    columns, rows = inventory(_resolve(run))
    sys.stdout.write(render(fmt, columns, rows))


def _version(value: bool) -> None:
    if value:
        import duckdb

        print(f"rlsql {__version__} (duckdb {duckdb.__version__})")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """rlsql reads a run folder in place: trainer metrics, trial results, vLLM stats and rl_config.yaml."""


def main() -> None:
    """Console entry point: expected errors become one stderr line and a documented exit code.

    Typer (click) handles its own usage errors (exit 2) in standalone mode; ours arrive here.
    """
    warnings.showwarning = _show_warning
    warnings.simplefilter("always")
    try:
        app()
    except RlsqlError as exc:
        say(f"error: {exc}")
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # the reader (head, less) went away: not an error of ours
        sys.stderr.close()
        sys.exit(int(ExitCode.OK))


if __name__ == "__main__":
    main()
