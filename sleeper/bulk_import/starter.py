"""The bulk import starter: validate a job taken from a bulk import queue, leave it in the bulk import
bucket for the Spark driver, and start it on the platform.

For each job:

1. The job is checked as the starter checks it (:func:`sleeper.bulk_import.validation.validate_job`: the table
   exists, every path holds Parquet files readable as the table's schema; the id and files were checked when the
   message was read). A rejected job is recorded in the ingest job tracker with its reasons and the message, and
   nothing else happens.
2. An accepted job gets a new run id and is recorded as validated under it.
3. The job, with its table id and name both set and its paths expanded to files, is written to
   ``bulk_import/<jobId>-<jobRunId>.json`` through the job store.
4. The platform starts it. If the platform is full (the persistent EMR cluster), the job goes back on its queue,
   delayed. If starting fails, the run is recorded as failed and the error is raised again, so the queue delivers
   the message again (and, after enough failures, moves it to the dead letter queue).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from pyarrow import fs as pafs

from sleeper.bulk_import.exceptions import BulkImportError
from sleeper.bulk_import.launch_ports import (
    BulkImportJobStore,
    BulkImportPlatform,
    BulkImportRequeue,
    BulkImportRun,
    PlatformStart,
    bulk_import_job_key,
)
from sleeper.bulk_import.validation import validate_job
from sleeper.core.jobs import BulkImportJob, MessageError
from sleeper.core.trackers import IngestRun, RunFailure
from sleeper.io import FileSystemOptions
from sleeper.statestore import SleeperRuntime

__all__ = [
    "BulkImportStart",
    "PlatformFullError",
    "StartOutcome",
    "start_bulk_import",
    "start_bulk_import_message",
]

_LOG = logging.getLogger(__name__)


class PlatformFullError(BulkImportError):
    """The platform is full and the starter has no queue to put the job back on."""


class StartOutcome(Enum):
    """What the starter did with a job."""

    STARTED = "STARTED"
    REJECTED = "REJECTED"
    REQUEUED = "REQUEUED"


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportStart:
    """What the starter did with one job.

    Attributes:
        job_id: The job id.
        outcome: Started on the platform, rejected, or put back on the queue because the platform was full.
        table_id: The job's table, if it was found.
        job_run_id: The run the start began (None for a job rejected before it had one).
        job_file_key: Where the job was written in the bulk import bucket, if it was.
        reasons: Why the job was rejected.
    """

    job_id: str
    outcome: StartOutcome
    table_id: str | None = None
    job_run_id: str | None = None
    job_file_key: str | None = None
    reasons: tuple[str, ...] = ()


def start_bulk_import(
    instance: SleeperRuntime,
    job: BulkImportJob,
    *,
    platform: BulkImportPlatform,
    job_store: BulkImportJobStore,
    requeue: BulkImportRequeue | None = None,
    job_run_id: str | None = None,
    options: FileSystemOptions | None = None,
    filesystem: pafs.FileSystem | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> BulkImportStart:
    """Validates a bulk import job, writes it to the bulk import bucket and starts it on the platform.

    Args:
        instance: The instance (tables, ingest job tracker).
        job: The job, as read from the queue.
        platform: Where the job runs.
        job_store: Where the job file is written.
        requeue: Puts the job back on its queue when the platform is full.
        job_run_id: The run id to use (a new UUID if omitted).
        options: How to reach S3, to check the input paths.
        filesystem: A filesystem to read every input path from instead of the one its form names (tests).
        clock: The time of tracker updates (timezone-aware).

    Returns:
        What was done with the job.

    Raises:
        PlatformFullError: If the platform is full and there is no ``requeue``.
        Exception: Whatever the job store or the platform raised; the run is recorded as failed first.
    """
    validation = validate_job(instance, job, options=options, filesystem=filesystem)
    table = validation.table
    run = IngestRun(
        instance.ingest_job_tracker,
        job_id=job.id,
        table_id=table.table_id if table is not None else None,
        run_id=job_run_id,
        clock=clock,
    )
    run_id = run.run_id
    if table is None or not validation.accepted:
        _LOG.warning("bulk import job %s rejected: %s", job.id, "; ".join(validation.reasons))
        run.rejected(
            validation.reasons,
            json_message=job.json_message if job.json_message is not None else job.to_json(),
            file_count=len(job.files),
        )
        return BulkImportStart(
            job_id=job.id,
            outcome=StartOutcome.REJECTED,
            table_id=run.table_id,
            job_run_id=run_id,
            reasons=validation.reasons,
        )
    table_id = table.table_id
    resolved = job.with_table(table_id=table_id, table_name=table.properties.table_name).with_files(
        f.uri for f in validation.files
    )
    run.validated(file_count=len(resolved.files))
    key = bulk_import_job_key(job.id, run_id)
    run_request = BulkImportRun(job=resolved, job_run_id=run_id, table_properties=table.properties, job_file_key=key)

    def start() -> StartOutcome:
        job_store.write_job(key, resolved.to_json())
        if platform.start(run_request) is not PlatformStart.PLATFORM_FULL:
            return StartOutcome.STARTED
        if requeue is None:
            raise PlatformFullError(f"the platform is full and bulk import job {job.id} cannot be put back")
        _LOG.info("platform full, returning bulk import job %s to its queue", job.id)
        requeue.requeue(resolved)
        return StartOutcome.REQUEUED

    outcome = run.attempt(start)
    if isinstance(outcome, RunFailure):
        raise outcome.error
    return BulkImportStart(job_id=job.id, outcome=outcome, table_id=table_id, job_run_id=run_id, job_file_key=key)


def start_bulk_import_message(
    instance: SleeperRuntime,
    body: str,
    *,
    platform: BulkImportPlatform,
    job_store: BulkImportJobStore,
    requeue: BulkImportRequeue | None = None,
    allow_local: bool = False,
    options: FileSystemOptions | None = None,
    filesystem: pafs.FileSystem | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> BulkImportStart:
    """Reads a bulk import job message and starts it (see :func:`start_bulk_import`).

    An unreadable message (bad JSON, a bad id, no files, no table) is a rejected job: recorded in the tracker with
    the message and the reason, under the message's id or a new one.

    Args:
        instance: The instance.
        body: The message body (Sleeper's bulk import job JSON).
        platform: Where the job runs.
        job_store: Where the job file is written.
        requeue: Puts the job back on its queue when the platform is full.
        allow_local: Whether local file paths are accepted (local runtime only).
        options: How to reach S3.
        filesystem: A filesystem to read every input path from (tests).
        clock: The time of tracker updates.
    """
    try:
        job = BulkImportJob.from_json(body, allow_local=allow_local)
    except MessageError as e:
        reasons = (str(e),)
        job_id = IngestRun.reject_unreadable(
            instance.ingest_job_tracker,
            job_id=e.job_id,
            reason=str(e),
            json_message=e.json_message if e.json_message is not None else body,
            clock=clock,
        )
        return BulkImportStart(job_id=job_id, outcome=StartOutcome.REJECTED, reasons=reasons)
    return start_bulk_import(
        instance,
        job,
        platform=platform,
        job_store=job_store,
        requeue=requeue,
        options=options,
        filesystem=filesystem,
        clock=clock,
    )
