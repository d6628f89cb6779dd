"""What the local runtime's workers run for each queue: the same domain code as Sleeper's Lambdas and tasks.

A handler takes the instance and one message body, returns a line for the log (empty for nothing to say), and raises
when the message should be delivered again (and, after the queue's receive limit, dead-lettered). Job runs are
recorded under the local task the process runs as (``instance.task``), and ingest spills to the task's directory, so
the runs and files of a process that dies are found (``sleeper.runtime.local.tasks``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sleeper.bulk_import.runner import run_bulk_import_message
from sleeper.compaction.task import handle_compaction_job_message
from sleeper.core import operations
from sleeper.core.operations import BULK_IMPORT_JOB_Q as BULK_IMPORT_QUEUE
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest.batcher.job_creator import IngestBatcher, route_bulk_import_to
from sleeper.ingest.batcher.submitter import IngestBatcherSubmitter, handle_submit_message
from sleeper.ingest.job_runner import INGEST_JOB_QUEUE
from sleeper.runtime.faults_env import arm_crash_points_from_environment
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.local.runner import Handler, LocalRunner, RoundSummary
from sleeper.runtime.local.tasks import local_task
from sleeper.runtime.router import RoutedHandler

__all__ = ["BULK_IMPORT_QUEUE", "default_handlers", "drain_in_worker"]


def _task_id(instance: LocalInstance) -> str | None:
    return instance.task.task_id if instance.task is not None else None


def _bulk_import_job(instance: LocalInstance, body: str) -> str:
    outcome = run_bulk_import_message(instance, body, task_id=_task_id(instance))
    if outcome.outcome is JobOutcome.FAILED:
        raise RuntimeError(f"bulk import job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is JobOutcome.REJECTED:
        return f"bulk import job {outcome.job_id} rejected: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result else 0
    return f"bulk import job {outcome.job_id} finished: {rows:,} rows written"


def _batcher_submit(instance: LocalInstance, body: str) -> str:
    submitter = IngestBatcherSubmitter(instance, instance.batcher_store, allow_local=True)
    dead_letters = instance.dead_letter_queue(operations.INGEST_BATCHER_SUBMIT_Q)
    return handle_submit_message(submitter, body, dead_letter_queue=dead_letters).describe()


def _batcher_job_creation(instance: LocalInstance, _body: str) -> str:
    batcher = IngestBatcher(instance, instance.batcher_store, queue_names=route_bulk_import_to(BULK_IMPORT_QUEUE))
    created = batcher.create_jobs()
    instance.batcher_store.delete_expired(datetime.now(tz=UTC))
    unsent = [c for c in created if not c.sent]
    if unsent:
        raise RuntimeError(f"{len(unsent)} ingest batcher jobs were not sent: {unsent[0].error}")
    return f"{len(created)} ingest batcher jobs created" if created else ""


def _compaction_job(instance: LocalInstance, body: str) -> str:
    return handle_compaction_job_message(
        instance, body, task_id=_task_id(instance) or f"local-{instance.directory.name}"
    )


def default_handlers() -> dict[str, Handler]:
    """Every queue's handler, in the order a round drains them (work flows from earlier queues to later ones)."""
    return {
        operations.INGEST_BATCHER_SUBMIT_Q: _batcher_submit,
        operations.INGEST_BATCHER_JOB_CREATION_Q: _batcher_job_creation,
        INGEST_JOB_QUEUE: RoutedHandler(INGEST_JOB_QUEUE),
        BULK_IMPORT_QUEUE: _bulk_import_job,
        operations.FIND_PARTITIONS_TO_SPLIT_Q: RoutedHandler(operations.FIND_PARTITIONS_TO_SPLIT_Q),
        operations.PARTITION_SPLITTING_JOB_Q: RoutedHandler(operations.PARTITION_SPLITTING_JOB_Q),
        operations.STATE_STORE_COMMITTER_Q: RoutedHandler(operations.STATE_STORE_COMMITTER_Q),
        operations.COMPACTION_JOB_CREATION_Q: RoutedHandler(operations.COMPACTION_JOB_CREATION_Q),
        operations.COMPACTION_JOB_Q: _compaction_job,
        operations.COMPACTION_COMMIT_Q: RoutedHandler(operations.COMPACTION_COMMIT_Q),
        operations.GC_JOB_Q: RoutedHandler(operations.GC_JOB_Q),
        operations.QUERY_Q: RoutedHandler(operations.QUERY_Q),
        operations.LEAF_PARTITION_QUERY_Q: RoutedHandler(operations.LEAF_PARTITION_QUERY_Q),
        operations.BULK_EXPORT_Q: RoutedHandler(operations.BULK_EXPORT_Q),
        operations.LEAF_PARTITION_BULK_EXPORT_Q: RoutedHandler(operations.LEAF_PARTITION_BULK_EXPORT_Q),
        operations.SNAPSHOT_CREATION_Q: RoutedHandler(operations.SNAPSHOT_CREATION_Q),
        operations.SNAPSHOT_DELETION_Q: RoutedHandler(operations.SNAPSHOT_DELETION_Q),
        operations.TRANSACTION_DELETION_Q: RoutedHandler(operations.TRANSACTION_DELETION_Q),
    }


def drain_in_worker(directory: str, queue_name: str, retry_failed_now: bool = False) -> RoundSummary:
    """Drains one queue of the instance in a directory with the default handlers (run in a worker process); see
    ``LocalRunner.drain`` for ``retry_failed_now``.

    Crash points named in ``SLEEPER_CRASH_AT`` are armed in the worker as in the process that started it. The worker
    drains as a local task of its own, so its runs and messages are recovered if it dies.
    """
    arm_crash_points_from_environment()
    instance = LocalInstance(directory)
    with local_task(instance):
        return LocalRunner(instance, default_handlers()).drain(queue_name, retry_failed_now=retry_failed_now)
