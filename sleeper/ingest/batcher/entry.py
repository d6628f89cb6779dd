"""The ingest batcher's runtime-neutral entries, run by either runtime: the local runner routes
``IngestBatcherSubmitQ`` and its scheduler's ``IngestBatcherJobCreationQ.fifo`` to them through the router
(:mod:`sleeper.runtime.router`), and the submitter and job creation Lambdas run the same functions.

What differs between the runtimes comes from the instance (:class:`sleeper.ingest.ports.IngestRuntime`): its batcher
store (SQLite or DynamoDB), whether requests may name local files, which queue each
``sleeper.table.ingest.batcher.ingest.queue`` value sends jobs to (a local instance has one bulk import queue for every
platform), and how expired records go (a local instance deletes them after each run; DynamoDB's time to live removes
them on AWS).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sleeper.core import INGEST_BATCHER_SUBMIT_Q
from sleeper.ingest.batcher.job_creator import CreatedJob, IngestBatcher
from sleeper.ingest.batcher.submitter import IngestBatcherSubmitter, SubmitOutcome, handle_submit_message
from sleeper.ingest.ports import IngestRuntime

__all__ = [
    "BatcherJobsNotSentError",
    "create_batcher_jobs",
    "handle_batcher_job_creation",
    "handle_batcher_submit",
    "submit_to_batcher",
]


class BatcherJobsNotSentError(RuntimeError):
    """Some jobs the batcher created could not be sent (their files stay assigned, as in Sleeper)."""


def submit_to_batcher(instance: IngestRuntime, body: str) -> SubmitOutcome:
    """Tracks the files of one ``IngestBatcherSubmitQ`` request; a request that can never be stored goes to the
    queue's dead-letter queue and is reported rejected.

    Raises:
        SleeperError: If the files or the store cannot be reached (the message should be delivered again).
    """
    submitter = IngestBatcherSubmitter(
        instance,
        instance.batcher_store,
        options=instance.filesystem_options,
        allow_local=instance.accepts_local_files,
    )
    return handle_submit_message(submitter, body, dead_letter_queue=instance.dead_letter_queue(INGEST_BATCHER_SUBMIT_Q))


def handle_batcher_submit(instance: IngestRuntime, body: str) -> str:
    """One ``IngestBatcherSubmitQ`` message (:func:`submit_to_batcher`).

    Returns:
        A line for the log: the files tracked, or why the request went to the dead-letter queue.
    """
    return submit_to_batcher(instance, body).describe()


def create_batcher_jobs(instance: IngestRuntime, *, now: datetime | None = None) -> list[CreatedJob]:
    """One run of the batcher's job creator: pending files into jobs on the queue each table's batcher settings
    name; then the store's expired records are removed (where the store does not remove them itself)."""
    batcher = IngestBatcher(instance, instance.batcher_store, queue_names=instance.batcher_queue_names)
    created = batcher.create_jobs()
    instance.delete_expired_batcher_records(now or datetime.now(tz=UTC))
    return created


def handle_batcher_job_creation(instance: IngestRuntime, body: str) -> str:
    """One scheduled run of the batcher's job creator (:func:`create_batcher_jobs`; the message body is ignored).

    Returns:
        A line for the log (empty when no job was created).

    Raises:
        BatcherJobsNotSentError: If some jobs could not be sent.
    """
    created = create_batcher_jobs(instance)
    unsent = [c for c in created if not c.sent]
    if unsent:
        raise BatcherJobsNotSentError(f"{len(unsent)} ingest batcher jobs were not sent: {unsent[0].error}")
    return f"{len(created)} ingest batcher jobs created" if created else ""
