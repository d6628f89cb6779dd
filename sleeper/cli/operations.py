"""Commands that run an operation now (spec 10: compactFiles, compactAllFiles, collectGarbage, partition splitting,
bulk import, sendToIngestBatcher), instead of waiting for the scheduler."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import typer

from sleeper.cli.common import JsonOption, console, open_instance, print_json
from sleeper.core.exceptions import SleeperError

batcher_app = typer.Typer(help="The ingest batcher.", no_args_is_help=True)


def _drain(queues: list[str]) -> dict[str, int]:
    from sleeper.runtime.local_handlers import default_handlers
    from sleeper.runtime.local_runner import LocalRunner, RoundSummary

    runner = LocalRunner(open_instance(), default_handlers())
    total = RoundSummary()
    for queue in queues:
        total.add(runner.drain(queue))
    if total.failed:
        failed = ", ".join(f"{q} {n}" for q, n in total.failed.items())
        raise SleeperError(f"some messages failed and will be retried by 'run': {failed}")
    return total.processed


def compact(
    name: Annotated[str, typer.Argument(help="The table.")],
    compact_all: Annotated[
        bool, typer.Option("--all", help="Compact every file, whatever the strategy says (compactAllFiles).")
    ] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Only create the jobs; let 'run' do them.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create compaction jobs for a table now, and run them and their commits."""
    from sleeper.compaction.creation import create_compaction_jobs

    inst = open_instance()
    table = inst.table(name)
    result = create_compaction_jobs(
        table, inst.queue("CompactionJobQ"), inst.compaction_job_tracker, compact_all=compact_all
    )
    processed = {} if no_wait else _drain(["CompactionJobQ", "CompactionCommitQ", "StateStoreCommitterQ.fifo"])
    if as_json:
        print_json({**result.to_dict(), "messagesHandled": processed})
        return
    console.print(
        f"Table {name}: {result.jobs_created} compaction jobs created over {result.input_files} input files, "
        f"{result.references_pre_split} references pre-split"
    )
    if processed:
        console.print(f"Ran {processed.get('CompactionJobQ', 0)} compaction jobs")


def split(
    name: Annotated[str, typer.Argument(help="The table.")],
    as_json: JsonOption = False,
) -> None:
    """Find a table's partitions over the splitting threshold now, and split them."""
    from sleeper.splitting.finder import send_split_jobs
    from sleeper.splitting.ports import PARTITION_SPLITTING_JOB_QUEUE

    inst = open_instance()
    table = inst.table(name)
    jobs = send_split_jobs(table, inst.queue(PARTITION_SPLITTING_JOB_QUEUE))
    processed = _drain([PARTITION_SPLITTING_JOB_QUEUE, "StateStoreCommitterQ.fifo"])
    leaves = len(inst.table(name).leaf_partitions())
    if as_json:
        print_json(
            {"splitJobs": [j.partition.id for j in jobs], "messagesHandled": processed, "leafPartitions": leaves}
        )
    else:
        console.print(f"Table {name}: {len(jobs)} partitions to split; now {leaves} leaf partitions")


def gc(
    name: Annotated[str, typer.Argument(help="The table.")],
    orphans: Annotated[
        bool, typer.Option("--orphans", help="Also delete files no transaction ever referenced (after 24 h).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --orphans: list orphans, delete none.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Garbage collect a table now: delete files unreferenced for longer than the table's GC delay."""
    from sleeper.gc.collector import run_garbage_collection
    from sleeper.gc.orphans import sweep_orphans

    inst = open_instance()
    table = inst.table(name)
    result = run_garbage_collection(inst, table.table_id)
    _drain(["StateStoreCommitterQ.fifo"])
    swept = sweep_orphans(table, dry_run=dry_run) if orphans else None
    if as_json:
        print_json(
            {
                "deleted": list(result.deleted),
                "orphansDeleted": list(swept.deleted) if swept else [],
                "orphansTooYoung": list(swept.young) if swept else [],
            }
        )
        return
    console.print(f"Table {name}: {len(result.deleted)} files garbage collected")
    if swept is not None:
        verb = "would delete" if dry_run else "deleted"
        console.print(f"Orphans: {verb} {len(swept.deleted)}, {len(swept.young)} too young to delete")


def bulk_import(
    name: Annotated[str, typer.Argument(help="The table.")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories.")],
    job_id: Annotated[str | None, typer.Option("--job-id", help="The job id (default: generated).")] = None,
    queue: Annotated[bool, typer.Option("--queue", help="Send the job to the bulk import queue instead.")] = False,
) -> None:
    """Bulk import Parquet files with Spark (local[*]): one sorted file per leaf partition, committed once."""
    from sleeper.bulk_import.runner import JobOutcome, run_bulk_import
    from sleeper.core.jobs.bulk_import import BulkImportJob
    from sleeper.runtime.local_handlers import BULK_IMPORT_QUEUE

    inst = open_instance()
    files = tuple(str(Path(p).resolve()) if "://" not in p else p for p in paths)
    job = BulkImportJob(id=job_id or str(uuid.uuid4()), files=files, table_name=name)
    if queue:
        inst.queue(BULK_IMPORT_QUEUE).send(job.to_json())
        console.print(f"Sent bulk import job [bold]{job.id}[/] to {BULK_IMPORT_QUEUE}")
        return
    outcome = run_bulk_import(inst, job)
    if outcome.outcome is not JobOutcome.FINISHED or outcome.result is None:
        raise SleeperError(f"bulk import job {job.id} {outcome.outcome.value.lower()}: {'; '.join(outcome.reasons)}")
    result = outcome.result
    if result.already_added:
        console.print(f"Bulk import job [bold]{job.id}[/] was already done: nothing added")
    else:
        console.print(
            f"Bulk import job [bold]{job.id}[/]: {result.rows_written:,} rows in {len(result.references)} files "
            f"({result.seconds:.1f} s)"
        )


@batcher_app.command("submit")
def batcher_submit(
    name: Annotated[str, typer.Argument(help="The table.")],
    paths: Annotated[list[str], typer.Argument(help="Parquet files or directories.")],
) -> None:
    """Send files to the ingest batcher, which groups them into jobs by the table's batcher settings."""
    from sleeper.batcher.submitter import IngestBatcherSubmitter, submit_files

    inst = open_instance()
    files = [str(Path(p).resolve()) if "://" not in p else p for p in paths]
    tracked = submit_files(IngestBatcherSubmitter(inst, inst.batcher_store, allow_local=True), name, files)
    console.print(f"{len(tracked)} files sent to the ingest batcher for table {name}")


def report_batcher(
    pending: Annotated[bool, typer.Option("--pending", help="Only files not yet in a job.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Files tracked by the ingest batcher, with the job each went to."""
    from rich.table import Table

    from sleeper.batcher.report import batcher_report, report_rows

    inst = open_instance()
    rows = report_rows(
        batcher_report(inst.batcher_store, pending_only=pending), {t.table_id: t.table_name for t in inst.tables()}
    )
    if as_json:
        print_json(rows)
        return
    out = Table(title=f"Ingest batcher files ({len(rows)})")
    columns = list(rows[0]) if rows else ["file"]
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        out.add_row(*(str(row.get(c, "")) for c in columns))
    console.print(out)


def register(app: typer.Typer, report_app: typer.Typer) -> None:
    """Adds the run-now operations, bulk import and the batcher to the CLI."""
    app.command("compact")(compact)
    app.command("split")(split)
    app.command("gc")(gc)
    app.command("bulk-import")(bulk_import)
    app.add_typer(batcher_app, name="batcher")
    report_app.command("batcher")(report_batcher)
