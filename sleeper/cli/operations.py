"""Commands that run an operation now, instead of waiting for the scheduler (Sleeper's admin operations compactFiles,
compactAllFiles, collectGarbage, partition splitting, bulk import, sendToIngestBatcher)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from sleeper.cli.common import (
    ChangeJsonOption,
    FormatOption,
    JsonOption,
    chosen_format,
    console,
    open_instance,
    print_json,
    print_report,
    progress,
    refuse_stdin,
)
from sleeper.core import SleeperError, counted

if TYPE_CHECKING:
    from rich.console import RenderableType

    from sleeper.api import Instance, OperationReport
    from sleeper.core.trackers import CompactionJobStatus, CompactionJobTracker

_FILES_BY_PATH = "Parquet files are read by path (write the rows to a Parquet file and give its path)"

batcher_app = typer.Typer(help="The ingest batcher.", no_args_is_help=True)


def _print_report(report: OperationReport, as_json: bool) -> None:
    if as_json:
        print_json(report.data)
        return
    for line in report.lines:
        console.print(line)


def compact(
    name: Annotated[str, typer.Argument(help="The table.")],
    compact_all: Annotated[
        bool, typer.Option("--all", help="Compact every file, whatever the strategy says (compactAllFiles).")
    ] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Only create the jobs; let 'run' do them.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create compaction jobs for a table now, and run them and their commits.

    First the table's compaction jobs on the dead-letter queue (jobs that failed every retry, whose input files are
    still assigned to them) are sent back to the job queue, to run again. A job that fails exits 1 naming it and the
    cause (it is retried, then dead-lettered, as in Sleeper).

    On AWS: send the table to the compaction job creation queue (with --all: create jobs over every file here and
    send them to the compaction job queue); the deployed functions and tasks do the rest."""
    admin = open_instance()
    table_id = admin.table(name).table_id
    retried = _retry_dead_lettered(admin, table_id)
    started = datetime.now(tz=UTC)
    doing = "Creating compaction jobs" if no_wait else "Compacting"
    try:
        with progress(f"{doing} table {name}" + (" (every file)" if compact_all else "")):
            report = admin.compact_now(name, compact_all=compact_all, wait=not no_wait)
    except SleeperError as e:
        failed = _failed_since(admin.compaction_job_tracker, table_id, started)
        if not failed:
            raise
        raise SleeperError(_failures_message(name, failed)) from e
    if retried:
        report.data["retriedFromDeadLetters"] = retried
        report.lines.insert(0, f"Table {name}: {counted(len(retried), 'dead-lettered compaction job')} sent again")
    _print_report(report, as_json)


def _retry_dead_lettered(admin: Instance, table_id: str) -> list[str]:
    """Sends the table's dead-lettered compaction jobs back to the job queue (none if the queue has no dead-letter
    queue)."""
    from sleeper.compaction import retry_dead_lettered_jobs
    from sleeper.core import COMPACTION_JOB_Q, QueueNotFoundError

    try:
        dead_letters = admin.dead_letter_queue(COMPACTION_JOB_Q)
    except (QueueNotFoundError, SleeperError):  # no dead-letter queue: no dead letters to send again
        return []
    return retry_dead_lettered_jobs(admin.queue(COMPACTION_JOB_Q), dead_letters, table_id)


def _failed_since(tracker: CompactionJobTracker, table_id: str, since: datetime) -> list[CompactionJobStatus]:
    """The table's compaction jobs whose latest run failed at or after a time."""
    from sleeper.core.trackers import CompactionJobStatusType

    return [
        job
        for job in tracker.jobs(table_id)
        if job.latest_run is not None
        and job.latest_run.status is CompactionJobStatusType.FAILED
        and job.latest_run.start_time >= since
    ]


def _failures_message(name: str, failed: list[CompactionJobStatus]) -> str:
    causes = "; ".join(
        f"compaction job {job.job_id} failed: {' '.join(job.latest_run.failure_reasons) or 'no reason recorded'}"
        for job in failed
        if job.latest_run is not None
    )
    return (
        f"{causes}. Table {name}: a failed job is run again by 'sleeper run' until it has been received "
        "sleeper.compaction.job.max.retries times, then moved to the dead-letter queue; its input files stay "
        f"assigned to it meanwhile. Mend the cause (e.g. install the iterator's code again), then run 'sleeper "
        f"compact {name}', which sends the table's dead-lettered jobs again (see 'sleeper report compaction-jobs "
        f"{name}')"
    )


def split(
    name: Annotated[str, typer.Argument(help="The table.")],
    as_json: JsonOption = False,
) -> None:
    """Find a table's partitions over the splitting threshold now, and split them.

    On AWS: send the table to the queue of the function that finds partitions to split."""
    with progress(f"Splitting the partitions of table {name}"):
        report = open_instance().split_now(name)
    _print_report(report, as_json)


def gc(
    name: Annotated[str, typer.Argument(help="The table.")],
    orphans: Annotated[
        bool, typer.Option("--orphans", help="Also delete files no transaction ever referenced (after 24 h).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --orphans: list orphans, delete none.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Garbage collect a table now: delete files unreferenced for longer than the table's GC delay.

    On AWS: send the table to the garbage collector's queue (--orphans works only locally)."""
    with progress(f"Collecting the garbage of table {name}" + (" and its orphans" if orphans else "")):
        report = open_instance().gc_now(name, orphans=orphans, dry_run=dry_run)
    _print_report(report, as_json)


def bulk_import(
    name: Annotated[str, typer.Argument(help="The table.")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories.")],
    job_id: Annotated[str | None, typer.Option("--job-id", help="The job id (default: generated).")] = None,
    queue: Annotated[bool, typer.Option("--queue", help="Send the job to the bulk import queue instead.")] = False,
    platform: Annotated[
        str | None,
        typer.Option("--platform", help="With --queue on AWS: emr-serverless (default), emr, persistent-emr or eks."),
    ] = None,
    class_name: Annotated[
        str | None,
        typer.Option(
            "--class-name",
            help="The algorithm: local-sort, dataframe-sort or a Sleeper driver class (default: the instance's "
            "sleeper.bulk.import.class.name).",
        ),
    ] = None,
    as_json: ChangeJsonOption = False,
) -> None:
    """Bulk import Parquet files with Spark (local[*]): one sorted file per leaf partition, committed once.

    On AWS only --queue works: the job goes to the queue of the --platform (EMR Serverless by default)."""
    refuse_stdin(paths, "a path to bulk import", _FILES_BY_PATH)
    with progress(f"Bulk importing {counted(len(paths), 'path')} into {name}"):
        report = open_instance().bulk_import_files(
            name, paths, job_id=job_id, class_name=class_name, via_queue=queue, platform=platform
        )
    if as_json:
        print_json(report.to_dict())
    elif report.status == "SENT":
        console.print(f"Sent bulk import job [bold]{report.job_id}[/] to {report.sent_to}")
    elif report.already_added:
        console.print(f"Bulk import job [bold]{report.job_id}[/] was already done: nothing added")
    else:
        phases = ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in report.seconds.items())
        console.print(
            f"Bulk import job [bold]{report.job_id}[/]: {counted(report.rows_written or 0, 'row')} in "
            f"{counted(report.files or 0, 'file')}" + (f" ({phases})" if phases else "")
        )


@batcher_app.command("submit")
def batcher_submit(
    name: Annotated[str, typer.Argument(help="The table.")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories.")],
    as_json: ChangeJsonOption = False,
) -> None:
    """Send files to the ingest batcher, which groups them into jobs by the table's batcher settings.

    On AWS the files (bucket/key) are sent to the batcher's submit queue."""
    refuse_stdin(paths, "a path sent to the batcher", _FILES_BY_PATH)
    said = open_instance().submit_to_batcher(name, paths)
    if as_json:
        print_json({"tableName": name, "files": list(paths), "message": said})
    else:
        console.print(said)


def report_batcher(
    pending: Annotated[bool, typer.Option("--pending", help="Only files not yet in a job.")] = False,
    output_format: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Files tracked by the ingest batcher, with the job each went to."""
    from sleeper.ingest.batcher import batcher_report, report_rows

    chosen = chosen_format(output_format, as_json)
    inst = open_instance()
    rows = report_rows(
        batcher_report(inst.batcher_store, pending_only=pending), {t.table_id: t.table_name for t in inst.tables()}
    )

    def table() -> RenderableType:
        from rich.table import Table

        out = Table(title=f"Ingest batcher files ({len(rows)})")
        columns = list(rows[0]) if rows else ["file"]
        for column in columns:
            out.add_column(column, overflow="fold")
        for row in rows:
            out.add_row(*(str(row.get(c, "")) for c in columns))
        return out

    print_report(chosen, rows, table)


def register(app: typer.Typer, report_app: typer.Typer) -> None:
    """Adds the run-now operations, bulk import and the batcher to the CLI."""
    app.command("compact")(compact)
    app.command("split")(split)
    app.command("gc")(gc)
    app.command("bulk-import")(bulk_import)
    app.add_typer(batcher_app, name="batcher")
    report_app.command("batcher")(report_batcher)
