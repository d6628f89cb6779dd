"""The one registry of an instance's operations: every queue, Lambda handler, container and schedule, by the names
Sleeper gives them, standard library only.

The shapes of these entries are in :mod:`sleeper.core.operation_specs`.

* Each :class:`QueueSpec` names a queue by its logical name (the SQS name is ``sleeper-<id>-<logical name>``, see
  :mod:`sleeper.core.naming`), whether it is FIFO, its visibility timeout and receive limit before its messages go to
  its dead-letter queue, the instance property a deployment records its URL in, and whether a local instance has it.
  The logical names are the module constants below (``INGEST_JOB_Q`` ...): every other module imports them. A
  queue whose messages go to an entry of their own (a local instance's own queues, each bulk import platform's queue)
  names it.
* Each :class:`HandlerSpec` names a Lambda function's handler (``module:function`` in the ``lambdas`` package, run
  by the one Lambda image: ``sleeper.lambdas.sqs:<name>``, the generic SQS handler, for an entry fed by one queue whose
  messages go to a feature entry; ``sleeper.lambdas.table_trigger:<function>``, the generic trigger, for a per-table
  trigger), what triggers it (an SQS queue, an EventBridge schedule, the files log stream, or
  nothing), the queue a scheduled per-table trigger sends to, its default memory and timeout with the instance
  properties that override them, the runtime-neutral feature function it runs (``module:function``, named, not
  imported), and the schedule a local instance runs it on, if any.
* Each :class:`ContainerSpec` names an image built from ``containers/<name>/Dockerfile``, the entry point its
  command runs (in :mod:`sleeper.runtime.aws.containers`, beside the image, not among the Lambda handlers) and the
  feature function that runs.

The CDK stacks, the AWS runtime and its emulated instance, the local runtime and the lambdas read this module, so
what is deployed, what the emulator delivers, what the local runner schedules and what exists in ``sleeper/lambdas/``
cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from sleeper.core import naming
from sleeper.core.operation_specs import (
    ContainerSpec,
    HandlerSpec,
    LocalSchedule,
    QueueSpec,
    Schedule,
    Trigger,
    TriggerKind,
)
from sleeper.core.properties import instance_cdk as cdk

__all__ = [
    "CONTAINERS",
    "HANDLERS",
    "QUEUES",
    "SQS_HANDLER_MODULE",
    "TRIGGER_HANDLER_MODULE",
    "ContainerSpec",
    "HandlerSpec",
    "QueueSpec",
    "Schedule",
    "Trigger",
    "TriggerKind",
    "aws_queues",
    "container",
    "handler",
    "local_queues",
    "queue",
]


# --- queues (logical names) ------------------------------------------------------------------------------------------

STATE_STORE_COMMITTER_Q = "StateStoreCommitterQ.fifo"
INGEST_JOB_Q = "IngestJobQ"
INGEST_BATCHER_SUBMIT_Q = "IngestBatcherSubmitQ"
COMPACTION_JOB_Q = "CompactionJobQ"
PENDING_COMPACTION_JOB_BATCH_Q = "PendingCompactionJobBatchQ"
COMPACTION_COMMIT_Q = "CompactionCommitQ"
PARTITION_SPLITTING_JOB_Q = "PartitionSplittingJobQueue"
QUERY_Q = "QueryQueue"
LEAF_PARTITION_QUERY_Q = "LeafPartitionQueryQueue"
QUERY_RESULTS_Q = "QueryResultsQ"
BULK_IMPORT_EMR_SERVERLESS_Q = "BulkImportEMRServerlessQ"
BULK_IMPORT_EMR_Q = "BulkImportNonPersistentEMRQ"
BULK_IMPORT_PERSISTENT_EMR_Q = "BulkImportPersistentEMRQ"
# Per-table FIFO queues fed by scheduled rules
COMPACTION_JOB_CREATION_Q = "CompactionJobCreationQ.fifo"
FIND_PARTITIONS_TO_SPLIT_Q = "FindPartitionsToSplitQ.fifo"
GC_JOB_Q = "GCJobQ.fifo"
SNAPSHOT_CREATION_Q = "TransactionLogSnapshotQ.fifo"
SNAPSHOT_DELETION_Q = "TransactionLogSnapshotDeletionQ.fifo"
TRANSACTION_DELETION_Q = "TransactionLogTransactionDeletionQ.fifo"
METRICS_JOB_Q = "MetricsJobQ.fifo"
ICEBERG_PUBLISH_Q = "IcebergPublishQ.fifo"
"""Beyond Sleeper: tables to publish as Iceberg views (``sleeper.iceberg``)."""
BULK_IMPORT_EKS_Q = "BulkImportEKSQ"
"""Sleeper's bulk import queue for EKS (``EksBulkImportStack``): its starter starts a Step Functions execution."""
BULK_IMPORT_PLATFORM_QUEUES: Mapping[str, str] = {
    "emr-serverless": BULK_IMPORT_EMR_SERVERLESS_Q,
    "emr": BULK_IMPORT_EMR_Q,
    "persistent-emr": BULK_IMPORT_PERSISTENT_EMR_Q,
    "eks": BULK_IMPORT_EKS_Q,
}
"""The bulk import platforms of an AWS instance (as ``sleeper bulk-import --platform`` names them), each with its
queue; the first is the default."""
BULK_EXPORT_Q = "BulkExport-Q"
"""Bulk export queries (Sleeper names it ``sleeper-<id>-BulkExport-Q``)."""
LEAF_PARTITION_BULK_EXPORT_Q = "BulkExportLeafPartition-Q"
"""Leaf partition exports, one per leaf of a bulk export (``sleeper-<id>-BulkExportLeafPartition-Q``)."""
# A local instance's own queues
BULK_IMPORT_JOB_Q = "BulkImportJobQ"
"""A local instance's one bulk import queue: every bulk import platform of the batcher goes to local Spark."""
INGEST_BATCHER_JOB_CREATION_Q = "IngestBatcherJobCreationQ.fifo"
"""A local instance's scheduler sends here to create batcher jobs (Sleeper's rule invokes the Lambda directly)."""

QUEUES: tuple[QueueSpec, ...] = (
    QueueSpec(
        name=INGEST_BATCHER_SUBMIT_Q,
        description="Files submitted to the ingest batcher",
        url_property=cdk.INGEST_BATCHER_SUBMIT_QUEUE_URL.name,
    ),
    QueueSpec(name=INGEST_BATCHER_JOB_CREATION_Q, description="Requests to create the ingest batcher's jobs"),
    QueueSpec(name=INGEST_JOB_Q, description="Ingest jobs", url_property=cdk.INGEST_JOB_QUEUE_URL.name),
    QueueSpec(
        name=BULK_IMPORT_JOB_Q,
        description="Bulk import jobs run by local Spark",
        runs="sleeper.bulk_import.entry:handle_bulk_import_job",
    ),
    QueueSpec(
        name=BULK_IMPORT_EMR_SERVERLESS_Q,
        description="Bulk import jobs for EMR Serverless",
        url_property=cdk.BULK_IMPORT_EMR_SERVERLESS_JOB_QUEUE_URL.name,
        local=False,
        runs="sleeper.bulk_import.entry:handle_emr_serverless_start",
    ),
    QueueSpec(
        name=BULK_IMPORT_EMR_Q,
        description="Bulk import jobs for a cluster made for each job",
        url_property=cdk.BULK_IMPORT_EMR_JOB_QUEUE_URL.name,
        local=False,
        runs="sleeper.bulk_import.entry:handle_non_persistent_emr_start",
    ),
    QueueSpec(
        name=BULK_IMPORT_PERSISTENT_EMR_Q,
        description="Bulk import jobs for the persistent EMR cluster",
        url_property=cdk.BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL.name,
        local=False,
        runs="sleeper.bulk_import.entry:handle_persistent_emr_start",
    ),
    QueueSpec(
        name=BULK_IMPORT_EKS_Q,
        description="Bulk import jobs for the EKS cluster",
        url_property=cdk.BULK_IMPORT_EKS_JOB_QUEUE_URL.name,
        local=False,
        max_receive_count=1,
        runs="sleeper.bulk_import.entry:handle_eks_start",
    ),
    QueueSpec(
        name=FIND_PARTITIONS_TO_SPLIT_Q,
        description="Tables to find partitions to split in",
        url_property=cdk.FIND_PARTITIONS_TO_SPLIT_QUEUE_URL.name,
    ),
    QueueSpec(
        name=PARTITION_SPLITTING_JOB_Q,
        description="Partition splitting jobs",
        url_property=cdk.PARTITION_SPLITTING_JOB_QUEUE_URL.name,
    ),
    QueueSpec(
        name=STATE_STORE_COMMITTER_Q,
        description="Asynchronous state store commit requests (grouped by table)",
        url_property=cdk.STATESTORE_COMMITTER_QUEUE_URL.name,
        max_receive_count=1,
    ),
    QueueSpec(
        name=COMPACTION_JOB_CREATION_Q,
        description="Tables to create compaction jobs for",
        url_property=cdk.COMPACTION_JOB_CREATION_QUEUE_URL.name,
    ),
    QueueSpec(
        name=PENDING_COMPACTION_JOB_BATCH_Q,
        description="Batches of created compaction jobs waiting for their input files to be assigned",
        url_property=cdk.COMPACTION_PENDING_QUEUE_URL.name,
    ),
    QueueSpec(name=COMPACTION_JOB_Q, description="Compaction jobs", url_property=cdk.COMPACTION_JOB_QUEUE_URL.name),
    QueueSpec(
        name=COMPACTION_COMMIT_Q,
        description="Finished compactions waiting to be committed in batches",
        url_property=cdk.COMPACTION_COMMIT_QUEUE_URL.name,
    ),
    QueueSpec(
        name=GC_JOB_Q, description="Tables to collect garbage in", url_property=cdk.GARBAGE_COLLECTOR_QUEUE_URL.name
    ),
    QueueSpec(name=QUERY_Q, description="Queries", url_property=cdk.QUERY_QUEUE_URL.name),
    QueueSpec(
        name=LEAF_PARTITION_QUERY_Q,
        description="Sub-queries, one per leaf partition",
        url_property=cdk.LEAF_PARTITION_QUERY_QUEUE_URL.name,
    ),
    QueueSpec(
        name=QUERY_RESULTS_Q, description="Results of sub-queries", url_property=cdk.QUERY_RESULTS_QUEUE_URL.name
    ),
    QueueSpec(
        name=BULK_EXPORT_Q,
        description="Bulk export queries",
        url_property=cdk.BULK_EXPORT_QUEUE_URL.name,
        max_receive_count=1,
    ),
    QueueSpec(
        name=LEAF_PARTITION_BULK_EXPORT_Q,
        description="Bulk exports of one leaf partition each",
        url_property=cdk.LEAF_PARTITION_BULK_EXPORT_QUEUE_URL.name,
        max_receive_count=1,
    ),
    QueueSpec(
        name=SNAPSHOT_CREATION_Q,
        description="Tables to snapshot the transaction logs of",
        url_property=cdk.TRANSACTION_LOG_SNAPSHOT_CREATION_QUEUE_URL.name,
    ),
    QueueSpec(
        name=SNAPSHOT_DELETION_Q,
        description="Tables to delete old snapshots of",
        url_property=cdk.TRANSACTION_LOG_SNAPSHOT_DELETION_QUEUE_URL.name,
    ),
    QueueSpec(
        name=TRANSACTION_DELETION_Q,
        description="Tables to delete old transactions of",
        url_property=cdk.TRANSACTION_LOG_TRANSACTION_DELETION_QUEUE_URL.name,
    ),
    QueueSpec(
        name=METRICS_JOB_Q,
        description="Tables to publish metrics of",
        url_property=cdk.TABLE_METRICS_QUEUE_URL.name,
        local=False,
    ),
    QueueSpec(
        name=ICEBERG_PUBLISH_Q,
        description="Tables to publish as Iceberg views",
        url_property=cdk.ICEBERG_PUBLISH_QUEUE_URL.name,
    ),
)
"""Every queue of an instance, local or on AWS, in the order a local instance drains them each round: work flows from
earlier queues to later ones (a new queue goes after the queues sending to it)."""

# --- handlers ---------------------------------------------------------------------------------------------------------

# Handler names
STATESTORE_COMMITTER = "statestore_committer"
SNAPSHOT_CREATION_TRIGGER = "snapshot_creation_trigger"
SNAPSHOT_CREATION = "snapshot_creation"
SNAPSHOT_DELETION_TRIGGER = "snapshot_deletion_trigger"
SNAPSHOT_DELETION = "snapshot_deletion"
TRANSACTION_DELETION_TRIGGER = "transaction_deletion_trigger"
TRANSACTION_DELETION = "transaction_deletion"
TRANSACTION_FOLLOWER = "transaction_follower"
COMPACTION_JOB_CREATION_TRIGGER = "compaction_job_creation_trigger"
COMPACTION_JOB_CREATION = "compaction_job_creation"
COMPACTION_JOB_DISPATCHER = "compaction_job_dispatcher"
COMPACTION_COMMIT_BATCHER = "compaction_commit_batcher"
COMPACTION_TASK_CREATION = "compaction_task_creation"
INGEST_TASK_CREATION = "ingest_task_creation"
INGEST_BATCHER_SUBMITTER = "ingest_batcher_submitter"
INGEST_BATCHER_JOB_CREATION = "ingest_batcher_job_creation"
BULK_IMPORT_STARTER = "bulk_import_starter"
BULK_IMPORT_EKS_FAILURE = "bulk_import_eks_failure"
PARTITION_SPLITTING_TRIGGER = "partition_splitting_trigger"
FIND_PARTITIONS_TO_SPLIT = "find_partitions_to_split"
SPLIT_PARTITION = "split_partition"
GARBAGE_COLLECTOR_TRIGGER = "garbage_collector_trigger"
GARBAGE_COLLECTOR = "garbage_collector"
QUERY = "query"
LEAF_PARTITION_QUERY = "leaf_partition_query"
QUERY_WARM = "query_warm"
TABLE_METRICS_TRIGGER = "table_metrics_trigger"
TABLE_METRICS = "table_metrics"
ICEBERG_PUBLISH_TRIGGER = "iceberg_publish_trigger"
ICEBERG_PUBLISH = "iceberg_publish"
BULK_EXPORT_PLANNER = "bulk_export_planner"
BULK_EXPORT_TASK_CREATION = "bulk_export_task_creation"
ATHENA_SIMPLE = "athena_simple"
ATHENA_ITERATOR_APPLYING = "athena_iterator_applying"
TABLE_DEFINER = "table_definer"
WEB_SOCKET_QUERY = "web_socket_query"
REST_API = "rest_api"

# Container names
LAMBDA_IMAGE = "lambda"
COMPACTION_IMAGE = "compaction"
INGEST_IMAGE = "ingest"
BULK_IMPORT_IMAGE = "bulk-import"
BULK_EXPORT_IMAGE = "bulk-export"
BULK_IMPORT_EKS_IMAGE = "bulk-import-eks"

SQS_HANDLER_MODULE = "sleeper.lambdas.sqs"
"""The one generic SQS handler's module: ``sleeper.lambdas.sqs:<name>`` serves the registry entry of that name,
running each message of its one queue through the feature entry the registry names for the queue."""
TRIGGER_HANDLER_MODULE = "sleeper.lambdas.table_trigger"
"""The one generic per-table trigger's module: ``sleeper.lambdas.table_trigger:<function>`` serves the registry entry
whose handler it is, sending one message per online table to the queue the entry ``sends_to``."""


def _sqs(name: str) -> str:
    """The handler of a registry entry served by the generic SQS handler."""
    return f"{SQS_HANDLER_MODULE}:{name}"


_TABLE_BATCH_MEMORY = "sleeper.batch.table.lambdas.memory.mb"
_TABLE_BATCH_TIMEOUT = "sleeper.batch.table.lambdas.timeout.seconds"


def _per_table_trigger(
    name: str,
    function: str,
    *,
    rule: str,
    period_property: str,
    sends_to: str,
    unit_seconds: int = 60,
    what: str,
    local_schedule: str | None = None,
) -> HandlerSpec:
    return HandlerSpec(
        name=name,
        handler=f"{TRIGGER_HANDLER_MODULE}:{function}",
        description=f"Sends one message per online table to {sends_to} to start {what}",
        trigger=Trigger.schedule(rule, period_property, unit_seconds=unit_seconds),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=sends_to,
        local_schedule=None if local_schedule is None else LocalSchedule(name=local_schedule, queue=sends_to),
    )


HANDLERS: tuple[HandlerSpec, ...] = (
    # --- state store ---
    HandlerSpec(
        name=STATESTORE_COMMITTER,
        handler=_sqs(STATESTORE_COMMITTER),
        runs="sleeper.statestore.committer:handle_commit_request",
        description="Applies state store commit requests, refreshing each table once per batch",
        trigger=Trigger.sqs(STATE_STORE_COMMITTER_Q, batch_size=10),
        memory_mb=4096,
        memory_property="sleeper.statestore.committer.lambda.memory.mb",
        timeout_property="sleeper.statestore.committer.lambda.timeout.seconds",
    ),
    _per_table_trigger(
        SNAPSHOT_CREATION_TRIGGER,
        "snapshot_creation",
        rule=naming.SNAPSHOT_CREATION_RULE,
        period_property="sleeper.statestore.snapshot.creation.lambda.period.seconds",
        unit_seconds=1,
        sends_to=SNAPSHOT_CREATION_Q,
        what="transaction log snapshot creation",
        local_schedule="snapshot-creation",
    ),
    HandlerSpec(
        name=SNAPSHOT_CREATION,
        handler=_sqs(SNAPSHOT_CREATION),
        runs="sleeper.statestore.upkeep:handle_snapshot_creation",
        description="Snapshots each transaction log of a table that advanced past its latest snapshot",
        trigger=Trigger.sqs(SNAPSHOT_CREATION_Q),
        memory_mb=4096,
        memory_property="sleeper.statestore.snapshot.creation.memory.mb",
        timeout_property="sleeper.statestore.snapshot.creation.lambda.timeout.seconds",
    ),
    _per_table_trigger(
        SNAPSHOT_DELETION_TRIGGER,
        "snapshot_deletion",
        rule=naming.SNAPSHOT_DELETION_RULE,
        period_property="sleeper.statestore.snapshot.deletion.lambda.period.minutes",
        sends_to=SNAPSHOT_DELETION_Q,
        what="old snapshot deletion",
        local_schedule="snapshot-deletion",
    ),
    HandlerSpec(
        name=SNAPSHOT_DELETION,
        handler=_sqs(SNAPSHOT_DELETION),
        runs="sleeper.statestore.upkeep:handle_snapshot_deletion",
        description="Deletes a table's expired snapshots, never the latest of each log",
        trigger=Trigger.sqs(SNAPSHOT_DELETION_Q),
    ),
    _per_table_trigger(
        TRANSACTION_DELETION_TRIGGER,
        "transaction_deletion",
        rule=naming.TRANSACTION_DELETION_RULE,
        period_property="sleeper.statestore.transaction.deletion.lambda.period.minutes",
        sends_to=TRANSACTION_DELETION_Q,
        what="old transaction deletion",
        local_schedule="transaction-deletion",
    ),
    HandlerSpec(
        name=TRANSACTION_DELETION,
        handler=_sqs(TRANSACTION_DELETION),
        runs="sleeper.statestore.upkeep:handle_transaction_deletion",
        description="Deletes a table's transactions far enough behind a snapshot, with their large bodies",
        trigger=Trigger.sqs(TRANSACTION_DELETION_Q),
        timeout_property="sleeper.statestore.transaction.deletion.lambda.timeout.seconds",
    ),
    HandlerSpec(
        name=TRANSACTION_FOLLOWER,
        handler="sleeper.lambdas.transaction_follower:handler",
        description="Follows the files log stream and updates the job trackers from committed transactions",
        trigger=Trigger(kind=TriggerKind.STREAM),
        memory_mb=4096,
        memory_property="sleeper.statestore.transaction.follower.memory.mb",
        timeout_property="sleeper.statestore.transaction.follower.lambda.timeout.seconds",
    ),
    # --- compaction ---
    _per_table_trigger(
        COMPACTION_JOB_CREATION_TRIGGER,
        "compaction_job_creation",
        rule=naming.COMPACTION_JOB_CREATION_RULE,
        period_property="sleeper.compaction.job.creation.period.minutes",
        sends_to=COMPACTION_JOB_CREATION_Q,
        what="compaction job creation",
        local_schedule="compaction-job-creation",
    ),
    HandlerSpec(
        name=COMPACTION_JOB_CREATION,
        handler=_sqs(COMPACTION_JOB_CREATION),
        runs="sleeper.compaction.entry:handle_compaction_job_creation",
        description="Creates compaction jobs for a table with its strategy, pre-splitting file references",
        trigger=Trigger.sqs(COMPACTION_JOB_CREATION_Q),
        memory_mb=4096,
        memory_property="sleeper.compaction.job.creation.memory.mb",
        timeout_property="sleeper.compaction.job.creation.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_JOB_DISPATCHER,
        handler=_sqs(COMPACTION_JOB_DISPATCHER),
        runs="sleeper.compaction.entry:handle_compaction_job_dispatch",
        description="Sends a batch of created compaction jobs once their input files are assigned",
        trigger=Trigger.sqs(PENDING_COMPACTION_JOB_BATCH_Q),
        memory_mb=4096,
        memory_property="sleeper.compaction.job.dispatch.memory.mb",
        timeout_property="sleeper.compaction.job.dispatch.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_COMMIT_BATCHER,
        handler="sleeper.lambdas.compaction_commit_batcher:handler",
        runs="sleeper.compaction.entry:handle_compaction_commit",
        description="Batches compaction commits per table into state store commit requests",
        trigger=Trigger.sqs(COMPACTION_COMMIT_Q, batch_size=10),
        memory_mb=4096,
        memory_property="sleeper.compaction.commit.batcher.memory.mb",
        timeout_property="sleeper.compaction.commit.batcher.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_TASK_CREATION,
        handler="sleeper.lambdas.compaction_task_creation:handler",
        runs="sleeper.compaction.task_creation:create_compaction_tasks",
        description="Starts compaction tasks for the visible compaction jobs, up to the maximum",
        trigger=Trigger.schedule(
            naming.COMPACTION_TASK_CREATION_RULE, "sleeper.compaction.task.creation.period.minutes"
        ),
        memory_property="sleeper.task.runner.memory.mb",
        timeout_property="sleeper.task.runner.timeout.seconds",
    ),
    # --- ingest ---
    HandlerSpec(
        name=INGEST_TASK_CREATION,
        handler="sleeper.lambdas.ingest_task_creation:handler",
        runs="sleeper.ingest.task_creation:create_ingest_tasks",
        description="Starts ingest tasks for the visible ingest jobs, up to the maximum",
        trigger=Trigger.schedule(naming.INGEST_TASK_CREATION_RULE, "sleeper.ingest.task.creation.period.minutes"),
        memory_property="sleeper.task.runner.memory.mb",
        timeout_property="sleeper.task.runner.timeout.seconds",
    ),
    HandlerSpec(
        name=INGEST_BATCHER_SUBMITTER,
        handler=_sqs(INGEST_BATCHER_SUBMITTER),
        runs="sleeper.ingest.batcher.entry:handle_batcher_submit",
        description="Records files sent to the ingest batcher",
        trigger=Trigger.sqs(INGEST_BATCHER_SUBMIT_Q),
        memory_property="sleeper.ingest.batcher.submitter.memory.mb",
        timeout_seconds=20,
        timeout_property="sleeper.ingest.batcher.submitter.timeout.seconds",
    ),
    HandlerSpec(
        name=INGEST_BATCHER_JOB_CREATION,
        handler="sleeper.lambdas.ingest_batcher_job_creation:handler",
        runs="sleeper.ingest.batcher.entry:handle_batcher_job_creation",
        description="Groups the batcher's pending files into ingest or bulk import jobs",
        trigger=Trigger.schedule(
            naming.INGEST_BATCHER_JOB_CREATION_RULE, "sleeper.ingest.batcher.job.creation.period.minutes"
        ),
        memory_property="sleeper.ingest.batcher.job.creation.memory.mb",
        local_schedule=LocalSchedule(
            name="ingest-batcher-job-creation", queue=INGEST_BATCHER_JOB_CREATION_Q, per_table=False
        ),
        timeout_property="sleeper.ingest.batcher.job.creation.timeout.seconds",
    ),
    HandlerSpec(
        name=BULK_IMPORT_STARTER,
        handler="sleeper.lambdas.bulk_import_starter:handler",
        description="Validates bulk import jobs and starts them on the platform of their queue",
        trigger=Trigger.sqs(
            BULK_IMPORT_EMR_SERVERLESS_Q, BULK_IMPORT_EMR_Q, BULK_IMPORT_PERSISTENT_EMR_Q, BULK_IMPORT_EKS_Q
        ),
        memory_mb=4096,
        memory_property="sleeper.bulk.import.starter.memory.mb",
    ),
    HandlerSpec(
        name=BULK_IMPORT_EKS_FAILURE,
        handler="sleeper.lambdas.bulk_import_starter:platform_failure",
        runs="sleeper.bulk_import.outcome:record_platform_failure",
        description="Records a bulk import run failed when its Kubernetes job on EKS did not succeed",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=1024,
        timeout_seconds=60,
    ),
    # --- bulk export ---
    HandlerSpec(
        name=BULK_EXPORT_PLANNER,
        handler=_sqs(BULK_EXPORT_PLANNER),
        runs="sleeper.bulk_export.entry:handle_bulk_export",
        description="Plans bulk exports, sending one leaf partition export per leaf partition",
        trigger=Trigger.sqs(BULK_EXPORT_Q),
        memory_mb=4096,
        memory_property="sleeper.bulk.export.memory.mb",
        timeout_property="sleeper.bulk.export.timeout.seconds",
    ),
    HandlerSpec(
        name=BULK_EXPORT_TASK_CREATION,
        handler="sleeper.lambdas.bulk_export_task_creation:handler",
        runs="sleeper.bulk_export.task_creation:create_bulk_export_tasks",
        description="Starts bulk export tasks for the visible leaf partition exports, up to the maximum",
        trigger=Trigger.schedule(
            naming.BULK_EXPORT_TASK_CREATION_RULE, "sleeper.bulk.export.task.creation.period.minutes"
        ),
        memory_property="sleeper.task.runner.memory.mb",
        timeout_property="sleeper.task.runner.timeout.seconds",
    ),
    # --- partition splitting ---
    _per_table_trigger(
        PARTITION_SPLITTING_TRIGGER,
        "find_partitions_to_split",
        rule=naming.PARTITION_SPLITTING_RULE,
        period_property="sleeper.partition.splitting.period.minutes",
        sends_to=FIND_PARTITIONS_TO_SPLIT_Q,
        what="finding partitions to split",
        local_schedule="find-partitions-to-split",
    ),
    HandlerSpec(
        name=FIND_PARTITIONS_TO_SPLIT,
        handler=_sqs(FIND_PARTITIONS_TO_SPLIT),
        runs="sleeper.splitting.finder:handle_find_partitions_to_split",
        description="Finds a table's leaf partitions over the split threshold and sends split jobs",
        trigger=Trigger.sqs(FIND_PARTITIONS_TO_SPLIT_Q),
        memory_mb=4096,
        memory_property="sleeper.partition.splitting.finder.memory.mb",
        timeout_property="sleeper.partition.splitting.finder.timeout.seconds",
    ),
    HandlerSpec(
        name=SPLIT_PARTITION,
        handler=_sqs(SPLIT_PARTITION),
        runs="sleeper.splitting.splitter:handle_split_partition",
        description="Splits a partition at the median of its files' sketches",
        trigger=Trigger.sqs(PARTITION_SPLITTING_JOB_Q),
        memory_mb=4096,
        memory_property="sleeper.partition.splitting.memory.mb",
        timeout_property="sleeper.partition.splitting.timeout.seconds",
    ),
    # --- garbage collection ---
    HandlerSpec(
        name=GARBAGE_COLLECTOR_TRIGGER,
        handler=f"{TRIGGER_HANDLER_MODULE}:garbage_collection",
        description=f"Sends one message per online table to {GC_JOB_Q} to start garbage collection",
        trigger=Trigger.schedule(naming.GARBAGE_COLLECTOR_RULE, "sleeper.gc.period.minutes"),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=GC_JOB_Q,
        offline_property="sleeper.run.gc.offline",
        local_schedule=LocalSchedule(name="garbage-collection", queue=GC_JOB_Q),
    ),
    HandlerSpec(
        name=GARBAGE_COLLECTOR,
        handler=_sqs(GARBAGE_COLLECTOR),
        runs="sleeper.gc.entry:handle_garbage_collection",
        description="Deletes a table's files no longer referenced after the delay, then commits DELETE_FILES",
        trigger=Trigger.sqs(GC_JOB_Q),
        memory_mb=4096,
        memory_property="sleeper.gc.memory.mb",
        timeout_seconds=840,
        timeout_property="sleeper.gc.lambda.timeout.seconds",
    ),
    # --- queries ---
    HandlerSpec(
        name=QUERY,
        handler=_sqs(QUERY),
        runs="sleeper.query.entry:handle_query",
        description="Validates and plans queries, sending one sub-query per leaf partition",
        trigger=Trigger.sqs(QUERY_Q),
        memory_mb=4096,
        memory_property="sleeper.query.processor.memory.mb",
        timeout_property="sleeper.query.processor.timeout.seconds",
    ),
    HandlerSpec(
        name=LEAF_PARTITION_QUERY,
        handler=_sqs(LEAF_PARTITION_QUERY),
        runs="sleeper.query.entry:handle_leaf_query",
        description="Runs a sub-query on one leaf partition and publishes its rows",
        trigger=Trigger.sqs(LEAF_PARTITION_QUERY_Q),
        memory_mb=4096,
        memory_property="sleeper.query.processor.memory.mb",
        timeout_property="sleeper.query.processor.timeout.seconds",
    ),
    HandlerSpec(
        name=QUERY_WARM,
        handler="sleeper.lambdas.query_warm:handler",
        runs="sleeper.query.warm:send_warm_queries",
        description="Keeps the query functions warm with a small query per table",
        trigger=Trigger.schedule(naming.QUERY_WARM_RULE, "sleeper.query.warm.lambda.period.minutes"),
    ),
    HandlerSpec(
        name=WEB_SOCKET_QUERY,
        handler="sleeper.lambdas.websocket_query:handler",
        runs="sleeper.query.websocket:handle_websocket_event",
        description="Prepares queries received via the WebSocket API and queues them for processing",
        trigger=Trigger(kind=TriggerKind.API),
        memory_mb=1024,
        timeout_seconds=29,
    ),
    # --- the REST API (Sleeper's RestApiStack) ---
    HandlerSpec(
        name=REST_API,
        handler="sleeper.lambdas.rest_api:handler",
        runs="sleeper.rest_api.handler:handle_rest_request",
        description="Implements a REST API for interacting with Sleeper",
        trigger=Trigger(kind=TriggerKind.API),
        memory_mb=1024,
        timeout_seconds=29,
    ),
    # --- table metrics ---
    HandlerSpec(
        name=TABLE_METRICS_TRIGGER,
        handler=f"{TRIGGER_HANDLER_MODULE}:table_metrics",
        description=f"Sends one message per online table to {METRICS_JOB_Q} to publish table metrics",
        trigger=Trigger.schedule(naming.TABLE_METRICS_RULE, None, fixed_period_seconds=60),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=METRICS_JOB_Q,
        offline_property="sleeper.run.table.metrics.offline",
    ),
    HandlerSpec(
        name=TABLE_METRICS,
        handler=_sqs(TABLE_METRICS),
        runs="sleeper.statestore.metrics:handle_table_metrics",
        description="Publishes a table's file and row counts as CloudWatch metrics",
        trigger=Trigger.sqs(METRICS_JOB_Q),
    ),
    # --- Iceberg views (beyond Sleeper) ---
    _per_table_trigger(
        ICEBERG_PUBLISH_TRIGGER,
        "iceberg_publish",
        rule=naming.ICEBERG_PUBLISH_RULE,
        period_property="sleeper.iceberg.publish.period.minutes",
        sends_to=ICEBERG_PUBLISH_Q,
        what="publishing Iceberg views",
        local_schedule="iceberg-publish",
    ),
    HandlerSpec(
        name=ICEBERG_PUBLISH,
        handler=_sqs(ICEBERG_PUBLISH),
        runs="sleeper.iceberg.entry:handle_publish_iceberg",
        description="Publishes a table that names an Iceberg view as a new snapshot of it",
        trigger=Trigger.sqs(ICEBERG_PUBLISH_Q),
        memory_mb=4096,
        timeout_seconds=900,
    ),
    # --- Athena: invoked by Athena through the query federation protocol ---
    HandlerSpec(
        name=ATHENA_SIMPLE,
        handler="sleeper.lambdas.athena:simple",
        runs="sleeper.athena.handlers:simple_connector",
        description="Athena connector: one split per data file, no table processing",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=4096,
        memory_property="sleeper.athena.handler.memory.mb",
        timeout_property="sleeper.athena.handler.timeout.seconds",
    ),
    HandlerSpec(
        name=ATHENA_ITERATOR_APPLYING,
        handler="sleeper.lambdas.athena:iterator_applying",
        runs="sleeper.athena.handlers:iterator_applying_connector",
        description="Athena connector: one split per leaf partition, merged and processed like a Sleeper query",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=4096,
        memory_property="sleeper.athena.handler.memory.mb",
        timeout_property="sleeper.athena.handler.timeout.seconds",
    ),
    # --- deployment: invoked by CloudFormation as a custom resource ---
    HandlerSpec(
        name=TABLE_DEFINER,
        handler="sleeper.lambdas.table_definer:handler",
        description="Creates the tables of a deployed configuration and keeps them on redeploys",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=2048,
        timeout_seconds=900,
    ),
)
"""Every Lambda handler of an instance."""

CONTAINERS: tuple[ContainerSpec, ...] = (
    ContainerSpec(
        name=LAMBDA_IMAGE,
        description="Every Lambda function; the command (or SLEEPER_HANDLER) names the handler",
        entry_point=None,
    ),
    ContainerSpec(
        name=COMPACTION_IMAGE,
        description="Compaction task: runs compaction jobs until idle",
        entry_point="sleeper.runtime.aws.containers.compaction:main",
        runs="sleeper.compaction.entry:handle_compaction_job",
        consumes=COMPACTION_JOB_Q,
    ),
    ContainerSpec(
        name=INGEST_IMAGE,
        description="Ingest task: runs ingest jobs until idle",
        entry_point="sleeper.runtime.aws.containers.ingest:main",
        runs="sleeper.ingest.entry:handle_ingest_job",
        consumes=INGEST_JOB_Q,
    ),
    ContainerSpec(
        name=BULK_EXPORT_IMAGE,
        description="Bulk export task: runs one leaf partition export, then stops",
        entry_point="sleeper.runtime.aws.containers.bulk_export:main",
        runs="sleeper.bulk_export.entry:handle_leaf_partition_export",
        consumes=LEAF_PARTITION_BULK_EXPORT_Q,
    ),
    ContainerSpec(
        name=BULK_IMPORT_IMAGE,
        description="Bulk import Spark driver on EMR Serverless (or EMR)",
        entry_point="sleeper.runtime.aws.containers.bulk_import:main",
        runs="sleeper.bulk_import.driver:run_started_bulk_import",
    ),
    ContainerSpec(
        name=BULK_IMPORT_EKS_IMAGE,
        description="Bulk import on EKS: spark-submit in a Kubernetes job, the Spark driver and executors as pods",
        entry_point="sleeper.runtime.aws.containers.bulk_import:main",
        runs="sleeper.bulk_import.driver:run_started_bulk_import",
    ),
)
"""Every container image of an instance."""

_Spec = TypeVar("_Spec", HandlerSpec, ContainerSpec, QueueSpec)


def _named(specs: tuple[_Spec, ...], name: str, what: str) -> _Spec:
    found = next((spec for spec in specs if spec.name == name), None)
    if found is None:
        raise KeyError(f"no {what} named {name!r} in the registry")
    return found


def handler(name: str) -> HandlerSpec:
    """The handler registered under a name (in :data:`HANDLERS` as it is when called).

    Raises:
        KeyError: If no handler has the name.
    """
    return _named(HANDLERS, name, "handler")


def container(name: str) -> ContainerSpec:
    """The container registered under a name.

    Raises:
        KeyError: If no container has the name.
    """
    return _named(CONTAINERS, name, "container")


def queue(name: str) -> QueueSpec:
    """The queue registered under a logical name.

    Raises:
        KeyError: If no queue has the name.
    """
    return _named(QUEUES, name, "queue")


def local_queues() -> tuple[QueueSpec, ...]:
    """The queues of a local instance, in registry order (the order a round drains them)."""
    return tuple(spec for spec in QUEUES if spec.local)


def aws_queues() -> tuple[QueueSpec, ...]:
    """The queues of an AWS instance (those a deployment records the URL of)."""
    return tuple(spec for spec in QUEUES if spec.on_aws)
