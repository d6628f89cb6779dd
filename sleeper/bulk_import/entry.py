"""Bulk import's runtime-neutral entries, run through the router (:mod:`sleeper.runtime.router`).

* A bulk import platform's queue (``BulkImportEMRServerlessQ``, ``BulkImportNonPersistentEMRQ``,
  ``BulkImportPersistentEMRQ``, ``BulkImportEKSQ``): the starter validates the job, writes it for the Spark driver and
  starts it on the platform the instance gives for the queue
  (:meth:`sleeper.bulk_import.ports.BulkImportStartRuntime.bulk_import_launch`). Each queue names its own entry in
  the registry, so the one starter Lambda that all four feed runs the right one per message.
* A local instance's ``BulkImportJobQ``: the job is validated and run at once with local Spark
  (:func:`sleeper.bulk_import.runner.run_bulk_import_message`), where the instance says a job runs.
"""

from __future__ import annotations

from sleeper.bulk_import.ports import BulkImportLaunch, BulkImportStartRuntime
from sleeper.bulk_import.runner import run_bulk_import_message
from sleeper.bulk_import.starter import start_bulk_import_message
from sleeper.core import operations
from sleeper.core.trackers import JobOutcome
from sleeper.statestore import SleeperRuntime

__all__ = [
    "BulkImportJobFailedError",
    "BulkImportLaunch",
    "BulkImportStartRuntime",
    "handle_bulk_import_job",
    "handle_eks_start",
    "handle_emr_serverless_start",
    "handle_non_persistent_emr_start",
    "handle_persistent_emr_start",
    "start_from_queue",
]


class BulkImportJobFailedError(RuntimeError):
    """A bulk import job run at once failed (its message is delivered again)."""


def start_from_queue(instance: BulkImportStartRuntime, body: str, queue_name: str) -> str:
    """Validates one job from a bulk import platform's queue, writes it for the driver and starts it (a bad job is
    recorded rejected in the ingest job tracker, and nothing is started).

    Returns:
        A line for the log: the job and what the starter did with it.

    Raises:
        Exception: What the job store or platform raised (the run is recorded failed first; delivered again).
    """
    launch = instance.bulk_import_launch(queue_name)
    started = start_bulk_import_message(
        instance,
        body,
        platform=launch.platform,
        job_store=launch.job_store,
        requeue=launch.requeue,
        options=instance.filesystem_options,
    )
    return f"Bulk import job {started.job_id}: {started.outcome.value} {'; '.join(started.reasons)}"


def handle_emr_serverless_start(instance: BulkImportStartRuntime, body: str) -> str:
    """One ``BulkImportEMRServerlessQ`` message: started on EMR Serverless (:func:`start_from_queue`)."""
    return start_from_queue(instance, body, operations.BULK_IMPORT_EMR_SERVERLESS_Q)


def handle_non_persistent_emr_start(instance: BulkImportStartRuntime, body: str) -> str:
    """One ``BulkImportNonPersistentEMRQ`` message: started on an EMR cluster made for it (:func:`start_from_queue`)."""
    return start_from_queue(instance, body, operations.BULK_IMPORT_EMR_Q)


def handle_persistent_emr_start(instance: BulkImportStartRuntime, body: str) -> str:
    """One ``BulkImportPersistentEMRQ`` message: started on the persistent EMR cluster, or put back on its queue when
    the cluster is full (:func:`start_from_queue`)."""
    return start_from_queue(instance, body, operations.BULK_IMPORT_PERSISTENT_EMR_Q)


def handle_eks_start(instance: BulkImportStartRuntime, body: str) -> str:
    """One ``BulkImportEKSQ`` message: started as a Step Functions execution running the Spark driver as a
    Kubernetes job on the EKS cluster (:func:`start_from_queue`)."""
    return start_from_queue(instance, body, operations.BULK_IMPORT_EKS_Q)


def handle_bulk_import_job(instance: SleeperRuntime, body: str) -> str:
    """One ``BulkImportJobQ`` message of a local instance: validates, tracks and runs the job with local Spark.

    Returns:
        A line for the log: the rows written, or why the job was rejected.

    Raises:
        BulkImportJobFailedError: If the job failed (to be delivered again).
    """
    with instance.job_workspace() as workspace:
        outcome = run_bulk_import_message(
            instance, body, task_id=workspace.task_id, options=instance.filesystem_options
        )
    if outcome.outcome is JobOutcome.FAILED:
        raise BulkImportJobFailedError(f"bulk import job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is JobOutcome.REJECTED:
        return f"bulk import job {outcome.job_id} rejected: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result else 0
    return f"bulk import job {outcome.job_id} finished: {rows:,} rows written"
