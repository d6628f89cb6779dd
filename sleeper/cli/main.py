"""The ``sleeper`` command: instance, tables, properties and reports.

Every command reports a problem as one line naming what is wrong and exits non-zero, changing nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sleeper.cli import (
    admin_commands,
    aws_local,
    common,
    delete_cmd,
    operations,
    properties_cmd,
    render,
    reports,
    upsert_cmd,
)
from sleeper.cli import deploy as deploy_cli
from sleeper.cli import export as export_cli
from sleeper.cli import iceberg as iceberg_cli
from sleeper.cli import sql_cmd as sql_cli
from sleeper.cli.common import DEFAULT_INGEST_WAIT_SECONDS, DISPLAY_ROWS
from sleeper.cli.log_lines import TRACEBACKS_VARIABLE, configure_cli_logging
from sleeper.core import IMAGE_ENVIRONMENT, SleeperError, counted

if TYPE_CHECKING:
    from rich.console import RenderableType

app = typer.Typer(
    help="Sleeper: a log-structured merge tree key-value store, on one machine or on AWS.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
instance_app = typer.Typer(help="Create and inspect instances.", no_args_is_help=True)
table_app = typer.Typer(help="Create, list and change tables.", no_args_is_help=True)
report_app = typer.Typer(help="Status reports.", no_args_is_help=True)
app.add_typer(instance_app, name="instance")
app.add_typer(table_app, name="table")
app.add_typer(report_app, name="report")

_context = common.context
console = common.console
err_console = common.err_console
JsonOption = common.JsonOption
_open = common.open_instance
_print_json = common.print_json
_parse_assignments = common.parse_assignments


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(common.version_line() + "\n")
        raise typer.Exit()


@app.callback()
def _main(
    instance: Annotated[
        str | None,
        typer.Option(
            "--instance",
            "-i",
            envvar="SLEEPER_INSTANCE",
            help="The instance directory, or aws:ID for an instance on AWS (or set SLEEPER_INSTANCE).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the installed version and exit."),
    ] = False,
) -> None:
    common.choose_instance(instance)


# --- instance ---------------------------------------------------------------------------------------------------


@instance_app.command("create")
def instance_create(
    instance_id: Annotated[str | None, typer.Option("--id", help="The instance id (default: generated).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the instance id and directory as JSON.")] = False,
) -> None:
    """Create a new local instance in the instance directory."""
    from sleeper.runtime import create_instance

    inst = create_instance(common.instance_location(), instance_id=instance_id)
    if as_json:
        _print_json({"instanceId": inst.instance_id, **inst.location_fields})
    else:
        console.print(f"Created instance [bold]{inst.instance_id}[/] in {inst.location}")


@instance_app.command("show")
def instance_show(as_json: JsonOption = False) -> None:
    """Show the instance properties that are set."""
    inst = _open()
    values = dict(inst.properties.items())
    if as_json:
        _print_json(values)
    else:
        console.print(render.properties_table("Instance properties", values))


# --- tables -----------------------------------------------------------------------------------------------------


@table_app.command("create")
def table_create(
    name: Annotated[str, typer.Argument(help="The table name.")],
    schema: Annotated[
        Path | None, typer.Option("--schema", help="Sleeper schema JSON file (- reads standard input).")
    ] = None,
    from_parquet: Annotated[
        Path | None,
        typer.Option(
            "--from-parquet",
            help="Take the schema from this Parquet file's columns (with --row-key; - reads standard input).",
        ),
    ] = None,
    row_keys: Annotated[
        list[str] | None, typer.Option("--row-key", help="With --from-parquet: a row key column; repeatable, in order.")
    ] = None,
    sort_keys: Annotated[
        list[str] | None,
        typer.Option("--sort-key", help="With --from-parquet: a sort key column; repeatable, in order."),
    ] = None,
    split_points: Annotated[
        Path | None, typer.Option("--split-points", help="File of split points, one per line (- reads standard input).")
    ] = None,
    base64: Annotated[bool, typer.Option("--base64", help="String split points are base64 encoded.")] = False,
    prop: Annotated[list[str] | None, typer.Option("--property", "-p", help="A table property name=value.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table name, id and partitions as JSON.")] = False,
) -> None:
    """Create a table from a schema (a schema file, or a Parquet file's columns) and optional split points."""
    table_schema = common.read_table_schema(schema, from_parquet, row_keys or [], sort_keys or [])
    points = None
    if split_points is not None:
        points = common.read_split_points_file(split_points, table_schema, base64=base64)
    props = _parse_assignments(prop, "property")
    if points is not None and props.get("sleeper.table.splits.file"):
        raise SleeperError("give split points once: --split-points or the property sleeper.table.splits.file")
    table = _open().create_table(name, table_schema, split_points=points, properties=props)
    leaves = len(table.leaf_partitions())
    if as_json:
        _print_json({"tableName": table.name, "tableId": table.table_id, "leafPartitions": leaves})
    else:
        console.print(
            f"Created table [bold]{table.name}[/] (id {table.table_id}) with {counted(leaves, 'leaf partition')}"
        )


@table_app.command("list")
def table_list(output_format: common.FormatOption = None, as_json: JsonOption = False) -> None:
    """List the tables with their ids, online state and row counts."""
    chosen = common.chosen_format(output_format, as_json)
    inst = _open()
    tables = inst.tables()
    rows = {t.table_id: sum(r.number_of_rows for r in inst.table_by_id(t.table_id).file_references()) for t in tables}
    data = [
        {"tableName": t.table_name, "tableId": t.table_id, "online": t.online, "rows": rows[t.table_id]} for t in tables
    ]
    common.print_report(chosen, data, lambda: render.tables_table(tables, rows))


@table_app.command("show")
def table_show(name: str, as_json: JsonOption = False) -> None:
    """Show a table: id, schema, partitions and files."""
    table = _open().table(name)
    summary = render.table_summary(table)
    if as_json:
        _print_json(summary)
    else:
        console.print(render.summary_panel(summary))


@table_app.command("rename")
def table_rename(old: str, new: str, as_json: common.ChangeJsonOption = False) -> None:
    """Rename a table."""
    table = _open().rename_table(old, new)
    if as_json:
        _print_json({"tableId": table.table_id, "oldName": old, "tableName": table.name})
    else:
        console.print(f"Renamed table {old} to [bold]{table.name}[/]")


@table_app.command("delete")
def table_delete(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: common.ChangeJsonOption = False,
) -> None:
    """Delete a table with all its data."""
    inst = _open()
    table_id = inst.table(name).table_id
    if not yes and not typer.confirm(f"Delete table {name} and all its data?"):
        raise SleeperError("not confirmed; nothing deleted")
    inst.delete_table(name)
    if as_json:
        _print_json({"tableName": name, "tableId": table_id, "deleted": True})
    else:
        console.print(f"Deleted table {name}")


@table_app.command("offline")
def table_offline(name: str, as_json: common.ChangeJsonOption = False) -> None:
    """Take a table offline: no scheduled compaction, splitting or garbage collection."""
    _set_online(name, False, as_json)


@table_app.command("online")
def table_online(name: str, as_json: common.ChangeJsonOption = False) -> None:
    """Put a table online."""
    _set_online(name, True, as_json)


def _set_online(name: str, online: bool, as_json: bool) -> None:
    inst = _open()
    inst.set_table_online(name, online)
    if as_json:
        _print_json({"tableName": name, "tableId": inst.table(name).table_id, "online": online})
    else:
        console.print(f"Table {name} is {'online' if online else 'offline'}")


# --- reports ----------------------------------------------------------------------------------------------------


@report_app.command("partitions")
def report_partitions(name: str, output_format: common.FormatOption = None, as_json: JsonOption = False) -> None:
    """The partition tree, with the rows referenced on each partition."""
    chosen = common.chosen_format(output_format, as_json)
    table = _open().table(name)
    data = render.partitions_report(table)
    common.print_report(chosen, data, lambda: render.partitions_tree(table, data))


@report_app.command("history")
def report_history(name: str, output_format: common.FormatOption = None, as_json: JsonOption = False) -> None:
    """The table's kept transactions, oldest first: log, number, type, time, files and rows added and removed, and
    whether the state as of each files transaction can be read with 'query --as-of' (time travel)."""
    chosen = common.chosen_format(output_format, as_json)
    history = _open().table(name).history()
    rows = [{**r, "time": r["time"].isoformat()} for r in history.to_pylist()]

    def table() -> RenderableType:
        from rich.table import Table as RichTable

        out = RichTable(title=f"History of table {name}")
        for column in ("log", "number", "type", "time", "files +", "files -", "rows +", "rows -", "readable"):
            out.add_column(column)
        for r in rows:
            out.add_row(
                r["log"],
                str(r["transaction_number"]),
                r["type"],
                r["time"],
                str(r["files_added"]),
                str(r["files_removed"]),
                f"{r['rows_added']:,}",
                f"{r['rows_removed']:,}",
                "yes" if r["readable"] else "",
            )
        return out

    common.print_report(chosen, rows, table)


@report_app.command("query")
def report_query(
    query_id: Annotated[str | None, typer.Argument(help="A query id (default: every tracked query).")] = None,
    state: Annotated[
        str | None,
        typer.Option("--state", help="Only rows in a state: queued, in_progress, completed, failed, partially_failed."),
    ] = None,
    output_format: common.FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queries from the query tracker: a query with its sub-queries, or every query (or only those in a state)."""
    from sleeper.api import query_row, tracker_rows
    from sleeper.cli.queued_query import parse_state, tracker_table

    chosen = common.chosen_format(output_format, as_json)
    rows = [query_row(r) for r in tracker_rows(_open().query_tracker, query_id, parse_state(state))]
    if query_id is not None and state is None and not rows:
        raise SleeperError(f"no query with id {query_id!r} in the query tracker")
    common.print_report(chosen, rows, lambda: tracker_table(f"Query {query_id}" if query_id else "Queries", rows))


@report_app.command("status")
def report_status(output_format: common.FormatOption = None, as_json: JsonOption = False) -> None:
    """The whole instance: tables, queues, jobs by status, tasks running."""
    from sleeper.cli import status

    chosen = common.chosen_format(output_format, as_json)
    inst = _open()
    inst.recover_dead_tasks()
    data = status.status_report(inst)
    common.print_report(chosen, data, lambda: status.status_renderable(data), lambda: status.status_sections(data))


@report_app.command("tasks")
def report_tasks(
    kind: Annotated[str, typer.Argument(help="compaction or ingest.")],
    unfinished: Annotated[bool, typer.Option("--unfinished", help="Only tasks still running.")] = False,
    output_format: common.FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compaction or ingest tasks from the task tracker."""
    from sleeper.api import reports as reports_data
    from sleeper.cli import status

    chosen = common.chosen_format(output_format, as_json)
    data = reports_data.tasks_report(_open().task_statuses(kind, unfinished=unfinished))
    common.print_report(chosen, data, lambda: status.tasks_table(kind, data))


@report_app.command("dead-letters")
def report_dead_letters(output_format: common.FormatOption = None, as_json: JsonOption = False) -> None:
    """Messages on the dead-letter queues, with a sample of each."""
    from sleeper.api import reports as reports_data
    from sleeper.cli import status

    chosen = common.chosen_format(output_format, as_json)
    data = reports_data.dead_letters_report(_open())
    if chosen == "table" and not data:
        console.print("No dead letters")
        return
    common.print_report(chosen, data, lambda: status.dead_letters_table(data))


# --- data -------------------------------------------------------------------------------------------------------


@app.command("ingest")
def ingest(
    name: Annotated[str, typer.Argument(help="The table.")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories (local paths or s3a:// URIs).")],
    job_id: Annotated[str | None, typer.Option("--job-id", help="The job id (default: generated).")] = None,
    queue: Annotated[
        bool,
        typer.Option("--job-queue", "--queue", help="Send the job to the ingest job queue instead of running it now."),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="For a job sent to the queue (on AWS always): wait until the ingest job tracker has it done."
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="With --wait: the most seconds to wait.", min=0)
    ] = DEFAULT_INGEST_WAIT_SECONDS,
    as_json: common.ChangeJsonOption = False,
) -> None:
    """Ingest Parquet files into a table as an ingest job (validated, tracked, idempotent per job id); waits.

    On an instance on AWS the job is always sent to the ingest job queue, for the ingest tasks (local files are first
    staged in the data bucket); --wait then polls the ingest job tracker until the job finished (exit 1 if it failed or
    was rejected, with the tracker's reasons)."""
    import uuid

    from sleeper.api import IngestJobReport

    common.refuse_stdin(
        paths, "a path to ingest", "Parquet files are read by path (write the rows to a Parquet file and give its path)"
    )

    inst = _open()
    job = job_id or str(uuid.uuid4())

    with common.progress(f"Ingesting {counted(len(paths), 'path')} into {name} as job {job}") as update:

        def sent(report: IngestJobReport) -> None:
            if wait and not as_json:
                console.print(f"Sent ingest job [bold]{report.job_id}[/] to {report.sent_to}; waiting for it to finish")
            update(f"Waiting for ingest job {report.job_id} in the ingest job tracker (at most {timeout:g} s)")

        report = inst.ingest_files(
            name, paths, job_id=job, via_queue=queue, wait=wait, timeout_seconds=timeout, on_sent=sent
        )
    if as_json:
        _print_json(report.to_dict())
    elif report.status == "SENT":
        console.print(f"Sent ingest job [bold]{report.job_id}[/] to {report.sent_to}")
    elif report.already_added:
        console.print(f"Ingest job [bold]{report.job_id}[/] was already done: nothing added")
    else:
        done = f"Ingest job [bold]{report.job_id}[/]: {counted(report.rows_read or 0, 'row')} read, "
        done += f"{report.rows_written:,} written"
        console.print(done if report.files is None else f"{done} to {counted(len(report.files), 'file')}")


@app.command("query")
def query(
    name: Annotated[str, typer.Argument(help="The table.")],
    exact: Annotated[
        list[str] | None,
        typer.Option("--exact", help="An exact row key field=value (k1=a,k2=5 for several row keys); repeatable."),
    ] = None,
    ranges: Annotated[
        list[str] | None,
        typer.Option("--range", help="A range of a row key: 'field=[min,max)'; [ ] include, ( ) exclude; repeatable."),
    ] = None,
    fields: Annotated[str | None, typer.Option("--fields", help="Value fields to return, comma separated.")] = None,
    output_format: common.RowsFormatOption = "table",
    output: common.RowsOutputOption = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            help="Return at most this many rows, in key order, in every format (reading stops there). Without it every "
            f"row is returned; the table format then shows the first {DISPLAY_ROWS} and counts the rest.",
        ),
    ] = None,
    via_queue: Annotated[
        bool,
        typer.Option("--via-queue", help="Send the query to the query queue, run it as sub-queries, show the tracker."),
    ] = False,
    results: Annotated[
        str,
        typer.Option("--results", help="With --via-queue: Parquet files (s3) or batches on the results queue (sqs)."),
    ] = "s3",
    wait: Annotated[
        float, typer.Option("--wait", help="With --via-queue: seconds to wait for the results (0: only send it).")
    ] = 300.0,
    iterator: Annotated[
        str | None,
        typer.Option(
            "--iterator",
            help="A query-time iterator class (package.module.Class), applied after the table's, e.g. "
            "sleeper.iterators.examples.SecurityFilteringIterator.",
        ),
    ] = None,
    iterator_config: Annotated[
        str | None,
        typer.Option("--iterator-config", help="The query-time iterator's config, e.g. visibility,auth1,auth2."),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Time travel: the rows as of a files transaction number, or a time (ISO 8601, e.g. "
            "2025-01-02T03:04:05Z; naive is UTC). See 'report history TABLE'.",
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="Only the rows this filter selects, on any column, such as \"age > 30 and name starts with 'a'\" "
            "(applied after the table's rules; with --exact or --range, among the rows they select).",
        ),
    ] = None,
) -> None:
    """Query a table for exact keys and/or ranges of row keys; with neither, every row; --where filters on any column.
    Rows are written as they are read, so any number of rows can go to a file or a pipe (with --via-queue they are
    gathered first)."""
    import pyarrow as pa

    from sleeper.api import QueuedScan
    from sleeper.cli import query_output
    from sleeper.cli.query_args import parse_exact, parse_range
    from sleeper.core import parse_filter

    if limit is not None and limit < 1:
        raise SleeperError(f"--limit must be a positive number of rows, got {limit}")
    if common.is_stdin(output):
        output = None  # -o - is standard output, where the rows go without --output
    query_output.check_output(output_format, output)
    if via_queue:
        from sleeper.query import RESULTS_DESTINATIONS

        if results not in RESULTS_DESTINATIONS:
            raise SleeperError(f"--results must be one of {', '.join(RESULTS_DESTINATIONS)}, got {results!r}")
        if wait < 0:
            raise SleeperError(f"--wait must be a number of seconds of at least 0, got {wait:g}")
    table = _open().table(name)
    schema = table.schema
    keys = [parse_exact(schema, k) for k in exact or []]
    regions = [parse_range(schema, r) for r in ranges or []]
    selected = bool(keys or regions)
    scan = table.scan(
        keys=keys if selected else None,
        ranges=regions if selected else None,
        columns=None if fields is None else [*schema.key_names, *(f.strip() for f in fields.split(",") if f.strip())],
        limit=limit,
        as_of=as_of,
        via_queue=via_queue,
        queue_results=results if via_queue else None,
        queue_timeout_seconds=(wait or None) if via_queue else None,
        filter=None if where is None else parse_filter(where, schema),
        iterator=iterator,
        iterator_config=iterator_config,
    )
    if isinstance(scan, QueuedScan):
        from sleeper.cli.queued_query import run_through_queue

        rows = run_through_queue(scan, send_only=wait == 0, console=err_console)
        if rows is None:
            return
        reader = pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches())
    else:
        reader = scan.to_arrow_batch_reader()
    query_output.write(reader, output_format, output, console=console, limit=limit)


@app.command("run")
def run_instance(
    until_idle: Annotated[bool, typer.Option("--until-idle", help="Return once no work is left.")] = False,
    poll: Annotated[float, typer.Option("--poll", help="Seconds to wait when a round found no work.")] = 1.0,
    workers: Annotated[
        int, typer.Option("--workers", help="Processes that run compaction jobs together (default: this one).")
    ] = 1,
) -> None:
    """Run the scheduler and queue workers of the instance (until stopped with Ctrl-C, or until idle).

    Logs go to standard error at the levels of the instance's ``sleeper.logging.*`` properties, with the ids of the
    work (table, job, task) on each line."""
    import threading

    from sleeper.runtime import arm_crash_points_from_environment, configure_text_logging

    configure_text_logging()
    arm_crash_points_from_environment()
    inst = _open()
    configure_text_logging(inst.properties)
    stop = threading.Event()
    try:
        summary = inst.run(until_idle=until_idle, poll_seconds=poll, workers=workers, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        console.print("stopped")
        return
    handled = ", ".join(f"{queue} {count}" for queue, count in sorted(summary.processed.items())) or "nothing"
    failed = sum(summary.failed.values())
    if summary.pending:
        left = ", ".join(
            f"{queue} {counts.visible} visible and {counts.in_flight} in flight"
            for queue, counts in sorted(summary.pending.items())
        )
        raise SleeperError(
            f"not idle: work is left on {left}, after the most rounds --until-idle runs. Messages handled: "
            f"{handled}; failed attempts: {failed}. Run it again, or see 'sleeper report status'"
        )
    console.print(f"Idle: no message left on any queue. Messages handled: {handled}; failed attempts: {failed}")


@app.command("demo")
def demo(
    directory: Annotated[str | None, typer.Argument(help="Instance directory (default: a new temporary one).")] = None,
    rows: Annotated[int, typer.Option("--rows", help="Rows to generate.")] = 5_000_000,
    batches: Annotated[int, typer.Option("--batches", help="Ingest batches.")] = 10,
) -> None:
    """Run the demo: a local instance, a table, generated rows ingested in batches, queries, and the status."""
    from sleeper.cli.demo import run_demo

    if common.is_aws_instance():
        raise SleeperError("demo works only on a local instance directory, not on an instance on AWS")
    run_demo(directory, rows=rows, batches=batches, console=console)


# Typer raises click's exceptions: from the click package in older releases, from its own vendored copy in newer
# ones. The base class of usage errors is found through typer's public BadParameter so both work.
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _error(message: str) -> int:
    err_console.print(f"error: {' '.join(message.splitlines())}", markup=False, highlight=False, soft_wrap=True)
    return 1


def _os_error_text(error: OSError) -> str:
    """An OSError in one line naming the path: ``cannot use /x/y: Permission denied``."""
    reason = error.strerror or str(error)
    paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
    return f"cannot use {' or '.join(paths)}: {reason}" if paths else reason


def run(argv: list[str]) -> int:
    """Runs the command line with arguments; returns the exit code (used by ``main`` and the tests)."""
    try:
        result = app(args=argv, prog_name="sleeper", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except SleeperError as e:
        return _error(str(e))
    except ImportError as e:
        from sleeper.core import missing_extra

        missing = missing_extra(e, "this command")
        if missing is None:
            raise  # not an optional dependency: a bug, shown with its traceback
        return _error(str(missing))
    except OSError as e:  # a file or directory the user named cannot be read or written
        return _error(_os_error_text(e))
    except typer.Abort:
        err_console.print("aborted")
        return 1
    except typer.Exit as e:
        return int(e.exit_code)
    except _USAGE_ERROR as e:
        e.show()  # type: ignore[attr-defined]
        return int(e.exit_code)  # type: ignore[attr-defined]


admin_commands.register(app, instance_app, table_app, run)
properties_cmd.register(instance_app, table_app)
reports.register(report_app)
operations.register(app, report_app)
aws_local.register(app)
export_cli.register(app)
sql_cli.register(app)
deploy_cli.register(app)
iceberg_cli.register(table_app)
delete_cmd.register(app)
upsert_cmd.register(app)


PRIVATE_UMASK = 0o077
"""The ``sleeper`` command writes files and directories for its user alone (files 0600, directories 0700): a local
instance holds table data, and its directory is also made 0700 by the instance itself for library users."""


def main() -> None:
    """Entry point of the ``sleeper`` command.

    The process starts as Sleeper's images start theirs (:data:`sleeper.core.IMAGE_ENVIRONMENT`, before anything
    imports pyarrow), except where the user's environment sets a variable itself. Logged warnings and errors are
    printed one line each (:mod:`sleeper.cli.log_lines`).
    """
    for name, value in IMAGE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    os.umask(PRIVATE_UMASK)
    configure_cli_logging(tracebacks=os.environ.get(TRACEBACKS_VARIABLE) == "1")
    sys.exit(run(sys.argv[1:]))
