"""The operations of an AWS instance's Lambdas and bulk import driver that need the AWS adapters (issue 6).

Each function takes an :class:`~sleeper.runtime.aws.instance.AwsInstance` and does what one handler invocation does,
with the same domain code the local runtime runs (:mod:`sleeper.runtime.local.handlers`): ingest task creation over ECS,
the ingest batcher over its DynamoDB store, the bulk import starter over EMR Serverless or EMR and the bulk import
bucket, table metrics as CloudWatch embedded metric format log lines, warm-up queries, and the bulk import Spark driver.
Operations whose feature entry needs no AWS adapter (garbage collection, splitting, the log's upkeep) run through the
router (:mod:`sleeper.runtime.router`) instead. The ``lambdas`` modules only parse events and map failures.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sleeper.adapters.aws.batcher_store import DynamoDBIngestBatcherStore
from sleeper.adapters.aws.emf import emf_line, emf_record
from sleeper.adapters.aws.launchers.bulk_import import bulk_import_job_store
from sleeper.adapters.aws.launchers.ecs import EcsTaskLauncher, ingest_task_launcher
from sleeper.adapters.aws.launchers.emr import EmrPlatform, PersistentEmrPlatform, persistent_emr_requeue
from sleeper.adapters.aws.launchers.emr_serverless import EmrServerlessPlatform
from sleeper.bulk_import.driver import BulkImportJobFileError, run_started_bulk_import
from sleeper.bulk_import.launch_ports import BulkImportPlatform, BulkImportRequeue, bulk_import_job_key
from sleeper.bulk_import.runner import BulkImportOutcome
from sleeper.bulk_import.starter import BulkImportStart, start_bulk_import_message
from sleeper.core import operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties.instance_common import METRICS_NAMESPACE
from sleeper.core.queue import QueueNotFoundError
from sleeper.core.trackers.ingest import IngestJobFailed
from sleeper.ingest.batcher.job_creator import CreatedJob, IngestBatcher
from sleeper.ingest.batcher.submitter import SUBMIT_QUEUE, IngestBatcherSubmitter, SubmitOutcome, handle_submit_message
from sleeper.ingest.task_creation import IngestTaskCreation, create_ingest_tasks
from sleeper.io.filesystem import read_bytes, resolve
from sleeper.query.queued import QUERY_QUEUE
from sleeper.query.warm import send_warm_queries
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.metrics import TableMetrics, table_metrics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BULK_IMPORT_PERSISTENT_EMR_Q",
    "bulk_import_platform",
    "create_batcher_jobs",
    "create_ingest_tasks_on_ecs",
    "ingest_batcher_store",
    "print_line",
    "publish_table_metrics",
    "run_bulk_import_driver",
    "send_warm_up_queries",
    "start_bulk_import",
    "submit_to_batcher",
]

_LOG = logging.getLogger(__name__)

BULK_IMPORT_PERSISTENT_EMR_Q = operations.BULK_IMPORT_PERSISTENT_EMR_Q
"""The logical name of the persistent EMR cluster's bulk import queue (the registry's)."""


def print_line(line: str) -> None:
    """Writes a line to standard output as it is: in a Lambda it becomes one log event of its own, so CloudWatch
    finds an EMF record in it (a line through the logging module gets the runtime's prefix, which EMF does not
    parse)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --- ingest (spec 3.3, 3.4) ------------------------------------------------------------------------------------------


def create_ingest_tasks_on_ecs(instance: AwsInstance, **launcher_options: Any) -> IngestTaskCreation:
    """One scheduled run of ingest task creation: an ECS task per visible ingest job, within the maximum.

    Raises:
        PropertyError: If the ingest cluster or task definition is not set (no ingest stack).
    """
    launcher: EcsTaskLauncher = ingest_task_launcher(instance.clients.ecs, instance.properties, **launcher_options)
    return create_ingest_tasks(instance.properties, instance.queue(operations.INGEST_JOB_Q), launcher)


def ingest_batcher_store(instance: AwsInstance) -> DynamoDBIngestBatcherStore:
    """The batcher's DynamoDB store (``sleeper-<id>-ingest-batcher-store``)."""
    return DynamoDBIngestBatcherStore.for_instance(instance.clients.dynamodb, instance.instance_id)


def submit_to_batcher(instance: AwsInstance, body: str) -> SubmitOutcome:
    """Tracks the files of one submit request; a request that can never be stored goes to the submit queue's
    dead-letter queue (``IngestBatcherSubmitDLQ``) and is reported rejected.

    Raises:
        SleeperError: If S3 or DynamoDB cannot be reached (the message should be delivered again).
    """
    submitter = IngestBatcherSubmitter(instance, ingest_batcher_store(instance), options=instance.filesystem_options)
    return handle_submit_message(submitter, body, dead_letter_queue=instance.dead_letter_queue(SUBMIT_QUEUE))


def create_batcher_jobs(instance: AwsInstance) -> list[CreatedJob]:
    """One scheduled run of the batcher's job creator: pending files into jobs on each table's ingest queue (expired
    records are removed by the store table's time to live)."""
    return IngestBatcher(instance, ingest_batcher_store(instance)).create_jobs()


# --- bulk import (spec 3.5) ------------------------------------------------------------------------------------------


def bulk_import_platform(
    instance: AwsInstance, queue_logical_name: str
) -> tuple[BulkImportPlatform, BulkImportRequeue | None]:
    """The platform that runs the jobs of a bulk import queue, and where jobs go back when it is full.

    Raises:
        ValueError: If the queue is not a bulk import queue.
        PropertyError: If the platform's resources are not set (its stack is not deployed).
    """
    clients, props = instance.clients, instance.properties
    if queue_logical_name == operations.BULK_IMPORT_EMR_SERVERLESS_Q:
        return EmrServerlessPlatform(clients.emr_serverless, props), None
    if queue_logical_name == operations.BULK_IMPORT_EMR_Q:
        return EmrPlatform(clients.emr, props), None
    if queue_logical_name == BULK_IMPORT_PERSISTENT_EMR_Q:
        return PersistentEmrPlatform(clients.emr, props), persistent_emr_requeue(clients.sqs, props)
    raise ValueError(f"{queue_logical_name} is not a bulk import queue")


def start_bulk_import(instance: AwsInstance, body: str, queue_logical_name: str) -> BulkImportStart:
    """Validates one bulk import job from a platform's queue, writes it to the bulk import bucket and starts it there
    (a bad job is recorded rejected in the ingest job tracker, and nothing is started).

    Raises:
        Exception: What the job store or platform raised (the run is recorded failed first).
    """
    platform, requeue = bulk_import_platform(instance, queue_logical_name)
    return start_bulk_import_message(
        instance,
        body,
        platform=platform,
        job_store=bulk_import_job_store(instance.clients.s3, instance.properties),
        requeue=requeue,
        options=instance.filesystem_options,
    )


def _spark_for_driver() -> SparkSession | None:
    """The session spark-submit made (on EMR and EMR Serverless); None elsewhere, so the job starts a local one."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.builder.appName("sleeper-bulk-import").getOrCreate()


def run_bulk_import_driver(
    instance: AwsInstance, job_id: str, task_id: str, job_run_id: str, *, spark: SparkSession | None = None
) -> BulkImportOutcome:
    """What the bulk import Spark driver does with its arguments: reads ``bulk_import/<jobId>-<jobRunId>.json`` from
    the bulk import bucket and runs the job under the starter's run id.

    Raises:
        BulkImportJobFileError: If the job file cannot be read (recorded as a failed run when the tracker knows the
            job's table).
    """
    key = bulk_import_job_key(job_id, job_run_id)
    location = f"s3a://{instance.properties.get(cdk.BULK_IMPORT_BUCKET.name) or ''}/{key}"
    try:
        filesystem, path = resolve(location, instance.filesystem_options)
        job = BulkImportJob.from_json(read_bytes(filesystem, path).decode())
    except (OSError, UnicodeDecodeError, SleeperError) as e:
        error = BulkImportJobFileError(f"cannot read bulk import job file {location}: {e}")
        _record_driver_failure(instance, job_id, task_id, job_run_id, str(error))
        raise error from e
    return run_started_bulk_import(
        instance,
        job,
        job_run_id=job_run_id,
        task_id=task_id,
        spark=spark if spark is not None else _spark_for_driver(),
        options=instance.filesystem_options,
    )


def _record_driver_failure(instance: AwsInstance, job_id: str, task_id: str, job_run_id: str, reason: str) -> None:
    status = instance.ingest_job_tracker.job(job_id)
    if status is None or status.table_id is None:
        _LOG.error("bulk import job %s is not tracked; cannot record its failure: %s", job_id, reason)
        return
    instance.ingest_job_tracker.record(
        IngestJobFailed(
            job_id=job_id,
            table_id=status.table_id,
            update_time=datetime.now(tz=UTC),
            job_run_id=job_run_id,
            task_id=task_id,
            reasons=(reason,),
        )
    )


# --- table metrics and warm queries ----------------------------------------------------------------------------------


def publish_table_metrics(
    instance: AwsInstance, table_id: str, *, now: datetime | None = None, emit: Callable[[str], None] = print_line
) -> TableMetrics:
    """Computes a table's metrics and emits them as one CloudWatch embedded metric format line (to standard output,
    the function's log stream, by default), with dimensions ``instanceId`` and ``tableName`` in the namespace
    ``sleeper.cloudwatch.table.metrics.namespace``.

    Raises:
        TableNotFoundError: If there is no such table.
    """
    table = instance.table_by_id(table_id.strip())
    metrics = table_metrics(instance.instance_id, table.name, table.state_store)
    record = emf_record(
        namespace=instance.properties.get(METRICS_NAMESPACE) or "Sleeper",
        dimensions={"instanceId": metrics.instance_id, "tableName": metrics.table_name},
        metrics=metrics.values(),
        timestamp=now or datetime.now(tz=UTC),
    )
    emit(emf_line(record))
    return metrics


def send_warm_up_queries(instance: AwsInstance) -> int:
    """Sends a warm-up query per online table to the query queue; nothing if the instance has no query queue.

    Returns:
        How many queries were sent.
    """
    try:
        queue = instance.queue(QUERY_QUEUE)
    except QueueNotFoundError:
        _LOG.info("no query queue: no warm-up queries sent")
        return 0
    tables = []
    for status in instance.online_tables():
        table = instance.table_by_id(status.table_id)
        tables.append((table.name, table.schema))
    return len(send_warm_queries(tables, queue))
