"""The `rlsql` command line: parses arguments, calls the API, formats rows, maps errors to exit codes.

stdout carries data only; notices, warnings and errors go to stderr as single lines. The options
several commands share (`--run`, `--param`, `--format`, `--output`, `--limit`) are declared once
below, and the output formats are one Enum (rlsql/outputs/formats.py).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from rlsql.cli.notices import Progress
from rlsql.cli.output import (
    _emit,
    _emit_rows,
    _parse_format,
    _parse_params,
    _resolve,
    copies_for,
    emit_query,
    run_main,
    run_named_query,
    say,
)
from rlsql.core import settings
from rlsql.core.errors import DataError, ExitCode, UsageError
from rlsql.core.version import __version__
from rlsql.outputs.findings import Severity
from rlsql.outputs.formats import FORMATS, ExportFormat, OutputFormat, Partition, ReportFormat

E = TypeVar("E", bound=StrEnum)
DOCS_HINT = (
    "Every query, view and column: `rlsql docs queries` (docs/queries.md). The files rlsql reads: "
    "`rlsql docs data-contract` (docs/data-contract.md)."
)

app = typer.Typer(
    name="rlsql",
    help="SQL-first analytics for the logs of RL runs of LLM agents (SkyRL trainer, Harbor trials, vLLM). " + DOCS_HINT,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _selectable_names(incomplete: str) -> list[str]:
    """Shell completion: the named queries and views, read from the SQL folder without loading the catalog."""
    from rlsql.catalog.catalog import sql_root

    root = sql_root()
    names = {p.stem for folder in ("queries", "views") for p in (root / folder).glob("*.sql")}
    return sorted(n for n in names if n.startswith(incomplete))


def _choice(enum: type[E], option: str) -> Callable[[str | E], E]:
    """A case-insensitive parser for an Enum-valued option, failing with one line (exit 2)."""

    def parse(value: str | E) -> E:
        if isinstance(value, enum):
            return value
        for member in enum:
            if member.value == str(value).strip().lower():
                return member
        raise UsageError(f"{option} {value!r}: choose one of {', '.join(m.value for m in enum)}")

    return parse


def _metavar(enum: type[StrEnum]) -> str:
    return "[" + "|".join(m.value for m in enum) + "]"


# -- the options commands share, declared once ------------------------------------------------------

RunOption = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        "-r",
        help="A run folder, a folder of run folders, a glob, a URL (s3://, gs://, hf://) or NAME=PATH to name one "
        "run (repeatable). "
        "Default: the bundled sample run.",
        show_default=False,
    ),
]
FormatOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        parser=_parse_format,
        metavar="FORMAT",
        help=f"Output format: {', '.join(FORMATS)} (md for markdown; any case). Default: from -o's extension "
        "(.csv .json .jsonl .md), else table.",
        show_default=False,
    ),
]


def _output_path(value: str) -> Path:
    """`-o ""` is a mistake, not the current folder (which is what Path("") means)."""
    if not value:
        raise UsageError('-o "": the output path is empty; give a file or folder name')
    return Path(value)


OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write to FILE (atomically) instead of stdout.",
        show_default=False,
        parser=_output_path,
        metavar="FILE",
    ),
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="A query parameter as key=value (repeatable).", show_default=False),
]
LimitOption = Annotated[
    int | None, typer.Option("--limit", "-n", min=0, help="Print at most N rows.", show_default=False)
]
NameArgument = Annotated[
    str,
    typer.Argument(
        help="A named query or view (see `rlsql list`, `rlsql list --views`).", autocompletion=_selectable_names
    ),
]


@app.command("query")
def query_command(
    name: NameArgument,
    run: RunOption = None,
    param: ParamOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    limit: LimitOption = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            "-e",
            help="duckdb (default) or spark (SPARK_REMOTE, else a local session); default: $RLSQL_ENGINE, else duckdb.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Say how each file was read (in place, cached copy); show Spark's log."),
    ] = False,
) -> None:
    """Run a named query (or a view) over one or more runs and print its rows."""
    chosen = settings.current().replace(engine=engine and engine.strip().lower(), verbose=verbose or None)
    with settings.active(chosen):
        run_named_query(name, run, param, fmt, output, limit)


def _read_sql(text: str | None, file: Path | None) -> str:
    if file is not None and text is not None:
        raise UsageError("give the SQL as an argument or with --file, not both")
    if file is not None:
        text = "-" if str(file) == "-" else None
        if text is None:
            try:
                return file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"{file}: cannot read the SQL file ({getattr(exc, 'strerror', None) or exc})") from exc
    if text is None:
        raise UsageError('give the SQL: rlsql sql "SELECT ...", rlsql sql - (stdin) or rlsql sql --file FILE')
    if text == "-":
        return sys.stdin.read()
    return text


# an SQL text may begin with a `--` comment: click must not take it for an option
@app.command("sql", context_settings={"ignore_unknown_options": True})
def sql_command(
    sql: Annotated[
        str | None,
        typer.Argument(
            help="The SQL (the last statement's rows are printed); - reads it from stdin.", show_default=False
        ),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", help="Read the SQL from FILE (- for stdin).", show_default=False)
    ] = None,
    run: RunOption = None,
    param: ParamOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    limit: LimitOption = None,
) -> None:
    """Run ad hoc SQL over every rlsql view and macro, e.g. rlsql sql "FROM trials LIMIT 5".

    -p name=value sets a DuckDB variable (typed as the views that read it declare it). A SQL
    error is one line with DuckDB's hint (exit 1).
    """
    from rlsql.engine.query import referenced_objects, run_sql

    text = _read_sql(sql, file)
    if not text.strip():
        raise UsageError("the SQL is empty")
    runs = _resolve(run)
    params = _parse_params(param)
    copies = copies_for(runs, referenced_objects(text))
    emit_query(fmt, output, limit, lambda consume: run_sql(text, runs, params, consume, copies))


@app.command("list")
def list_command(
    views: Annotated[bool, typer.Option("--views", help="List the views instead of the named queries.")] = False,
    fmt: FormatOption = None,
) -> None:
    """List the named queries (or, with --views, the views): name, version, fingerprint, description, params."""
    from rlsql.catalog.catalog import load_catalog
    from rlsql.engine.query import declared_params

    catalog = load_catalog()
    files = catalog.views() if views else catalog.queries()
    if fmt is None:  # for a person: fitted to the terminal, one entry per object (-f table: the table)
        import shutil

        from rlsql.outputs.formats import LISTING_WIDTH, to_entries

        entries = [
            (
                f"{f.name}  version {f.version}  fingerprint {f.fingerprint}",
                [f.description, *(f"param {p.describe()}" for p in declared_params(f.name))],
            )
            for f in files
        ]
        width = shutil.get_terminal_size((LISTING_WIDTH, 24)).columns
        sys.stdout.write(to_entries(entries, width))
        return
    rows = [
        (f.name, f.version, f.fingerprint, f.description, "; ".join(p.describe() for p in declared_params(f.name)))
        for f in files
    ]
    _emit_rows(fmt, ["name", "version", "fingerprint", "description", "params"], rows)


@app.command("describe")
def describe_command(name: NameArgument, run: RunOption = None, fmt: FormatOption = None) -> None:
    """A query's or view's columns (name, type, description), parameters and fingerprint.

    Types are DuckDB's over the runs given (default: the bundled sample run).
    """
    import json

    from rlsql.inspection.describe import describe

    runs = _resolve(run) if run else None
    info = describe(name, runs, copies_for(runs, [name]) if runs is not None else None)
    fmt = fmt or OutputFormat.TABLE
    columns = ["column", "type", "description"]
    rows = [(c.name, c.type, c.description) for c in info.columns]
    if fmt is OutputFormat.JSON:
        sys.stdout.write(json.dumps(info.as_dict(), indent=2, ensure_ascii=False) + "\n")
        return
    if fmt in (OutputFormat.TABLE, OutputFormat.MARKDOWN):
        lines = [f"{info.kind} {info.name} (version {info.version}, fingerprint {info.fingerprint})", info.description]
        lines.extend(f"param {p}" for p in info.params)
        sys.stdout.write("\n".join(lines) + "\n\n")
    _emit_rows(fmt, columns, rows)


@app.command("show", epilog=DOCS_HINT)
def show_command(
    name: NameArgument,
    dialect: Annotated[
        str | None,
        typer.Option(
            "--dialect", help="spark: print it compiled for Spark SQL (default parameters).", show_default=False
        ),
    ] = None,
) -> None:
    """Print a named query's or view's SQL file (header and body)."""
    from rlsql.catalog.catalog import load_catalog

    if dialect is not None and dialect not in ("duckdb", "spark"):
        raise UsageError(f"--dialect {dialect!r}: choose duckdb or spark")
    if dialect == "spark":
        from rlsql.engine.spark import show_spark

        sys.stdout.write(show_spark(name))
        return
    sys.stdout.write(load_catalog().query(name).text)


@app.command("docs")
def docs_command(
    name: Annotated[
        str, typer.Argument(help="queries (every query, view and column) or data-contract (the files rlsql reads).")
    ] = "queries",
) -> None:
    """Print rlsql's contracts: docs/queries.md or docs/data-contract.md, generated from the SQL headers."""
    from rlsql.outputs.docs import DOCS, render

    if name not in DOCS:
        raise UsageError(f"no document {name!r}; choose one of {', '.join(DOCS)}")
    sys.stdout.write(render(name))


@app.command("runs")
def runs_command(run: RunOption = None, fmt: FormatOption = None) -> None:
    """List the runs found and what each holds: files, row counts, steps, trials, parser format."""
    from rlsql.inspection.inventory import READS, inventory
    from rlsql.runs.folders import HARBOR_DIR

    runs = _resolve(run)
    for found in runs:
        trials, harbor = found.artifact("trials"), found.artifact("harbor")
        if trials is not None and harbor is not None:
            say(
                f"run {found.name!r}: trials from the CSV {trials.path.name}; {HARBOR_DIR}/ fills the columns it "
                "lacks (--json-trials reads it instead)"
            )
    columns, rows = inventory(runs, copies_for(runs, READS))
    _emit_rows(fmt, columns, rows)


@app.command("trial")
def trial_command(
    name: Annotated[str, typer.Argument(help="The trial's name: its trace_jobs folder (trials.trial_name).")],
    run: RunOption = None,
    full: Annotated[bool, typer.Option("--full", help="Print long texts whole and copied context unfolded.")] = False,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="[json|markdown]",
            help="json or markdown (md) for other tools; default: drawn for the terminal.",
            show_default=False,
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """One trial's transcript: its outcome, then every step of its agent trajectory (messages, tool calls,
    observations, tokens), long texts cut unless --full."""
    from rlsql.outputs import transcript

    chosen = (fmt or "").strip().lower()
    chosen = {"md": "markdown"}.get(chosen, chosen)
    if chosen not in ("", "json", "markdown"):
        raise UsageError(f"--format {fmt!r}: choose json or markdown")
    runs = _resolve(run)
    found = transcript.transcript(runs, name)
    text = transcript.render(found, chosen or ("markdown" if output is not None else ""), full)
    if text is None:
        transcript.print_terminal(found, full)
        return
    _emit(text, output)


@app.command("findings")
def findings_command(
    run: RunOption = None,
    param: ParamOption = None,
    fail_on: Annotated[
        Severity | None,
        typer.Option(
            "--fail-on",
            parser=_choice(Severity, "--fail-on"),
            metavar=_metavar(Severity),
            help="Exit 1 when a finding of this severity or worse exists (for cron jobs and CI watching "
            "a run that is still training).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """What is unusual in each run, one line per finding, criticals first, each with the command that shows it;
    "no findings" when there are none. The rows, in every format: rlsql query findings.

    -p sets a threshold, e.g. -p slow_factor=3 (every parameter: rlsql describe findings).
    """
    from rlsql.engine.query import run_query
    from rlsql.outputs.findings import at_or_above, findings_text

    runs = _resolve(run)
    rows = run_query("findings", runs, _parse_params(param), copies=copies_for(runs, ["findings"])).to_dicts()
    sys.stdout.write(findings_text(rows))
    sys.stdout.flush()
    if fail_on is None:
        return
    failing = at_or_above(rows, fail_on)
    if failing:
        say(f"{len(failing)} finding{'s' if len(failing) > 1 else ''} at or above {fail_on.value} (--fail-on)")
        raise typer.Exit(int(ExitCode.QUERY_FAILED))


@app.command("check")
def check_command(run: RunOption = None, fmt: FormatOption = None) -> None:
    """Validate runs: every problem found with its file and line, and a summary per run.

    Exits 3 when a run is unusable (no readable rows in any of its CSV files).
    """
    import json

    from rlsql.inspection.check import ISSUE_COLUMNS, READS, SUMMARY_COLUMNS, check_runs, summary_rows

    fmt = fmt or OutputFormat.TABLE
    runs = _resolve(run)
    reports = check_runs(runs, copies_for(runs, READS))
    if fmt is OutputFormat.JSON:
        sys.stdout.write(json.dumps({"runs": [r.as_dict() for r in reports]}, indent=2) + "\n")
    else:
        issues = [(i.run, i.severity, i.file, i.line, i.problem) for r in reports for i in r.issues]
        _emit_rows(fmt, ISSUE_COLUMNS, issues)
        if fmt in (OutputFormat.TABLE, OutputFormat.MARKDOWN):
            sys.stdout.write("\n")
            _emit_rows(fmt, SUMMARY_COLUMNS, summary_rows(reports))
    unusable = [r.run for r in reports if not r.usable]
    if unusable:
        raise DataError(f"unusable run(s): {', '.join(unusable)} (no readable rows in any CSV file)")


@app.command("report")
def report_command(
    run: RunOption = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The folder to write the report into: new, empty, or a report folder "
            "rlsql wrote (replaced whole); never a run folder.",
        ),
    ] = Path("rlsql-report"),
    report_format: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            parser=_choice(ReportFormat, "--format"),
            metavar=_metavar(ReportFormat),
            help="md: report.md and PNG figures beside it; html: one self-contained "
            "report.html with the figures embedded.",
        ),
    ] = ReportFormat.MD,
    param: ParamOption = None,
    per_run: Annotated[
        bool, typer.Option("--per-run", help="With more than 6 runs, add the per-run sections (tables per run).")
    ] = False,
) -> None:
    """Write the run report (findings first, then tables and figures from the named queries) as markdown or HTML.

    -p sets a parameter of the report's queries, e.g. -p span=10 -p save_every=20
    -p keys=trainer.policy.optimizer_config.lr.
    """
    from rlsql.outputs.report import build_report
    from rlsql.outputs.report.data import bind_report_params
    from rlsql.outputs.report.figures import require_matplotlib

    require_matplotlib()  # before any file is read
    params = _parse_params(param)
    bind_report_params(params)  # a bad parameter fails before any file is read
    runs = _resolve(run)
    # the report reads nearly every source: under --cache, the copies of all of them
    copies = copies_for(runs)
    written = build_report(runs, output, report_format.value, params=params, per_run=per_run, notify=say, copies=copies)
    figures = len(written) - 1
    say(f"wrote {written[-1]}" + (f" and {figures} figure{'s' if figures > 1 else ''}" if figures else ""))


@app.command("export")
def export_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Named queries and views to export.", autocompletion=_selectable_names, show_default=False),
    ] = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The folder to write into (created if needed; never a run folder).",
            parser=_output_path,
            metavar="FOLDER",
        ),
    ] = ...,  # type: ignore[assignment]
    all_queries: Annotated[bool, typer.Option("--all", help="Export every named query.")] = False,
    views: Annotated[
        bool,
        typer.Option(
            "--views", help="Export the base views: trials, steps, metric_rows, metrics_long, vllm_seconds, config."
        ),
    ] = False,
    run: RunOption = None,
    export_format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            "-f",
            parser=_choice(ExportFormat, "--format"),
            metavar=_metavar(ExportFormat),
            help="The file format.",
        ),
    ] = ExportFormat.PARQUET,
    partition_by: Annotated[
        Partition | None,
        typer.Option(
            "--partition-by",
            parser=_choice(Partition, "--partition-by"),
            metavar=_metavar(Partition),
            help="'run': an item with many rows per run (steps, trials, seconds) as a hive tree "
            "NAME/run=RUN/data_0.parquet, one with about one row per run as NAME.parquet; either way an "
            "export replaces only the exported runs' rows.",
            show_default=False,
        ),
    ] = None,
    param: ParamOption = None,
    replace_all: Annotated[
        bool,
        typer.Option(
            "--replace-all",
            help="With --partition-by: replace each tree or file whole, dropping the "
            "runs not exported (default: replace only the exported runs' partitions and rows).",
        ),
    ] = False,
    relative_to: Annotated[
        Path | None,
        typer.Option(
            "--paths-relative-to",
            metavar="FOLDER",
            show_default=False,
            help="Name the run folders and source files in the provenance relative to FOLDER "
            "(default: absolute paths).",
        ),
    ] = None,
) -> None:
    """Write named queries and views to files for BI tools (Parquet carries provenance metadata)."""
    from rlsql.outputs.export import check_params, export, select_items, summary

    params = _parse_params(param)
    items = select_items(names or [], all_queries, views)
    check_params(items, params)  # bad names and parameters fail before any file is read
    explicit = set(names or [])
    skippable = {item.name for item in items if item.name not in explicit}
    runs = _resolve(run)
    written = export(
        runs,
        items,
        output,
        export_format.value,
        partition_by.value if partition_by else None,
        params,
        skippable,
        progress=say,
        replace_all=replace_all,
        relative_to=relative_to,
        copies=copies_for(runs, [item.name for item in items]),
    )
    say(summary(written, output))


@app.command("shell-init")
def shell_init_command(run: RunOption = None, output: OutputOption = None) -> None:
    """Print a DuckDB init script creating every rlsql view and macro: `duckdb -init FILE`, `harlequin -i FILE`."""
    from rlsql.outputs.shellinit import init_script

    runs = _resolve(run)
    _emit(init_script(runs), output)


@app.command("shell", context_settings={"allow_interspersed_args": False})
def shell_command(
    run: RunOption = None,
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Passed on to duckdb (after --), e.g. -- -c 'FROM turn_stats'.", show_default=False),
    ] = None,
) -> None:
    """Start the DuckDB shell with every rlsql view and macro (needs the duckdb-cli package)."""
    import os
    import signal
    import subprocess
    import tempfile

    from rlsql.outputs.shellinit import init_script, require_duckdb_cli

    exe = require_duckdb_cli()
    runs = _resolve(run)
    fd, script = tempfile.mkstemp(prefix="rlsql-init-", suffix=".sql")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(init_script(runs))
        # Ctrl-C belongs to the shell (it cancels a query there); a Python handler is reset in the child
        previous = signal.signal(signal.SIGINT, lambda *_: None)
        try:
            code = subprocess.call([exe, "-init", script, *(args or [])])
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        os.unlink(script)
    raise typer.Exit(code)


db_app = typer.Typer(
    help="A DuckDB database file of rlsql's views and macros, for tools that want a file.", no_args_is_help=True
)
app.add_typer(db_app, name="db")


@db_app.command("build")
def db_build_command(
    file: Annotated[Path, typer.Argument(help="The database file to write, e.g. runs.duckdb (replaced atomically).")],
    run: RunOption = None,
    materialize: Annotated[
        bool, typer.Option("--materialize", help="Store sources and views as tables (named queries stay views).")
    ] = False,
    storage_version: Annotated[
        str | None,
        typer.Option(
            "--storage-version",
            help="DuckDB storage format, e.g. v1.4.0 (default: one DuckDB 1.4 and later can open) or latest.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Build a DuckDB database file with every view (absolute paths) or table, and an rlsql_metadata table."""
    from rlsql.outputs.dbfile import DEFAULT_STORAGE_VERSION, build_database

    built = build_database(_resolve(run), file, materialize, storage_version or DEFAULT_STORAGE_VERSION)
    say(
        f"wrote {built.path}: views {built.views}, tables {built.tables} (rlsql_metadata included), "
        f"macros {built.macros}; {built.bytes:,} bytes"
    )


cache_app = typer.Typer(
    help="Parquet copies of runs' large CSVs and raw logs in rlsql's cache folder, for fast repeated queries.",
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")


@cache_app.command("build")
def cache_build_command(
    run: RunOption = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild entries that are still fresh.")] = False,
    fmt: FormatOption = None,
) -> None:
    """Convert each run's CSVs and raw logs to Parquet in the cache folder (never in a run), with progress.

    The raw logs are those its queries read (a run without the parser's CSVs, or --from-logs). Only
    what is missing, stale or damaged is built (a log that grew: only its new bytes); leftovers of a
    killed build are swept first.
    """
    from rlsql.cache import admin

    progress = Progress("cache: building") if sys.stderr.isatty() else None
    try:
        done = admin.build(_resolve(run), force, progress)
    finally:
        if progress is not None:
            progress.end()
    _emit_rows(fmt, admin.BUILD_COLUMNS, done.rows)
    say(done.summary)


@cache_app.command("status")
def cache_status_command(fmt: FormatOption = None) -> None:
    """List the cache entries (CSVs and logs): state and why, rows, size, last use; the folder's size and limit."""
    from rlsql.cache import admin

    done = admin.status()
    _emit_rows(fmt, admin.STATUS_COLUMNS, done.rows)
    say(done.summary)


@cache_app.command("clear")
def cache_clear_command(
    stale_only: Annotated[
        bool, typer.Option("--stale", help="Remove only stale, orphaned and damaged entries.")
    ] = False,
) -> None:
    """Delete cache entries rlsql wrote (all, or with --stale those whose file changed or is gone).

    Files in the cache folder that rlsql did not write are never deleted.
    """
    from rlsql.cache import admin

    say(admin.clear(stale_only))


@app.command("serve")
def serve_command(
    run: RunOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; beyond 127.0.0.1 a token is required in the URL (printed).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8765,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            metavar="SIZE",
            show_default=False,
            help="Memory budget for the answers kept (e.g. 512MB, 2GiB; default RLSQL_SERVE_MEMORY, else 512MiB).",
        ),
    ] = None,
) -> None:
    """Serve the runs in a browser, live while they train: fleet, run, compare, trials, queries, SQL.

    Needs the serve extra (Starlette, uvicorn); docs/serve.md describes the pages and the JSON API.
    """
    from rlsql.serve import serve

    runs = _resolve(run)
    serve(runs, host=host, port=port, memory=memory, say=say, copies=copies_for(runs))


@app.command("mcp")
def mcp_command(
    run: RunOption = None,
    http: Annotated[
        bool,
        typer.Option(
            "--http", help="Serve the MCP streamable HTTP transport at http://HOST:PORT/mcp instead of stdin/stdout."
        ),
    ] = False,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="With --http: the address to bind; beyond 127.0.0.1 a token is required in the URL (printed).",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="With --http: the port to listen on.")] = 8765,
    max_rows: Annotated[
        int,
        typer.Option(
            "--max-rows", min=1, help="The most rows one answer holds; more are cut, saying how many there were."
        ),
    ] = 1000,
) -> None:
    """Serve the runs to a coding agent over MCP: named queries, read-only SQL, transcripts, findings.

    Over stdin/stdout until the input closes (a client starts it). Needs the mcp extra; docs/mcp.md: setup.
    """
    from rlsql.serve import mcp

    runs = _resolve(run)
    mcp(runs, http=http, host=host, port=port, max_rows=max_rows, say=say, copies=copies_for(runs))


def _version(value: bool) -> None:
    if value:
        from rlsql.duck import memorydb

        print(f"rlsql {__version__} (duckdb {memorydb.duckdb_version()})")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    use_cache: Annotated[
        bool,
        typer.Option("--cache", help="Build the cached copy of every file read, before reading it (RLSQL_CACHE=on)."),
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache", help="Read every file in place: neither read nor build cached copies (RLSQL_CACHE=off)."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Say how each file was read (in place, cached copy); show Spark's log."),
    ] = False,
    from_logs: Annotated[
        bool,
        typer.Option(
            "--from-logs",
            help="Read trainer metrics and vLLM stats from a run's raw training logs even "
            "when its parser CSVs exist (RLSQL_FROM_LOGS=1).",
        ),
    ] = False,
    json_trials: Annotated[
        list[str] | None,
        typer.Option(
            "--json-trials",
            metavar="RUN",
            help="Read this run's trials (a name, or a glob over names: "
            "'*' every run) from trace_jobs/*/result.json even when it has a trials CSV; repeatable "
            "(RLSQL_JSON_TRIALS).",
        ),
    ] = None,
) -> None:
    """rlsql reads a run folder in place: trainer metrics, trial results, vLLM stats and rl_config.yaml.

    Every setting: `rlsql docs settings`.
    """
    if use_cache and no_cache:
        raise UsageError("--cache and --no-cache contradict each other; give one")
    chosen = settings.Settings.from_env().replace(
        cache="on" if use_cache else "off" if no_cache else None,
        verbose=verbose or None,
        from_logs=from_logs or None,
        json_trials=tuple(json_trials) if json_trials else None,
    )
    # current for the command's duration: the context closes it when the command returns, so nothing
    # carries over to a later command in the same process (tests, a notebook calling main)
    ctx.with_resource(settings.active(chosen))


@functools.cache
def command() -> Callable[[], object]:
    """The click command typer makes of `app` (click's, or the copy of it newer typers carry), made once per
    process: typer makes it anew on every call of `app()`, ~17 ms of reading every command's signature that
    each in-process call of main() paid (a test's, a notebook's)."""
    return typer.main.get_command(app)


#: click's UsageError (an unknown command or option, a bad value), or that of the copy of click newer typers carry:
#: typer.BadParameter is one, whichever
_CLICK_USAGE: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def main() -> None:
    """Console entry point: expected errors become one stderr line and a documented exit code, a usage error
    (an unknown command or option, a bad value: click's) as one line too, exit 2."""

    def parsed() -> object:
        try:
            return command().main(prog_name="rlsql", standalone_mode=False)  # type: ignore[attr-defined]
        except _CLICK_USAGE as exc:  # click would draw it in a box of five lines
            context = getattr(exc, "ctx", None)
            where = f" ({context.command_path} -h for help)" if context is not None else ""
            raise UsageError(f"{exc.format_message()}{where}") from exc  # type: ignore[attr-defined]
        except typer.Abort as exc:
            raise KeyboardInterrupt from exc

    run_main(parsed)


if __name__ == "__main__":
    main()
