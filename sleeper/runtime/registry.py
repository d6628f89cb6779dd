"""The one registry of every Lambda handler and container of an AWS instance (ARCHITECTURE.md, issue 6 item 3).

Each :class:`HandlerSpec` names a Lambda function's handler (``module:function`` in the ``lambdas`` package, run by
the one Lambda image), what triggers it (an SQS queue by Sleeper's logical name, an EventBridge schedule, the files
log stream, or nothing), the queue a scheduled per-table trigger sends to, and its default memory and timeout with the
instance properties that override them. Each :class:`ContainerSpec` names an image built from
``containers/<name>/Dockerfile`` and the entry point its command runs.

The CDK stacks import only this module (with ``sleeper.core``), so it stays standard library plus ``sleeper.core``;
handler names are the ones ``stacks/handlers.py`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "CONTAINERS",
    "HANDLERS",
    "ContainerSpec",
    "HandlerSpec",
    "Trigger",
    "TriggerKind",
    "container",
    "handler",
]


class TriggerKind(Enum):
    """What invokes a Lambda function."""

    SQS = "sqs"
    """Batches of messages from an SQS queue (partial batch failures reported)."""
    SCHEDULE = "schedule"
    """An EventBridge scheduled rule."""
    STREAM = "stream"
    """The DynamoDB stream of the files transaction log."""
    NONE = "none"
    """Invoked directly (by a client or another function)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """What invokes a handler.

    Attributes:
        kind: The kind of trigger.
        queues: For SQS: the logical names of the queues feeding it (``sleeper-<id>-<name>``).
        batch_size: For SQS: messages per invocation.
        rule: For a schedule: the EventBridge rule name (``<id>-<rule>``).
        period_property: For a schedule: the instance property holding its period (None for a fixed period).
        period_unit_seconds: For a schedule: seconds per unit of ``period_property`` (60 for minutes).
        fixed_period_seconds: For a schedule without a period property: its period.
    """

    kind: TriggerKind
    queues: tuple[str, ...] = ()
    batch_size: int = 1
    rule: str | None = None
    period_property: str | None = None
    period_unit_seconds: int = 60
    fixed_period_seconds: int | None = None

    @classmethod
    def sqs(cls, *queues: str, batch_size: int = 1) -> Trigger:
        """Fed by SQS queues."""
        return cls(kind=TriggerKind.SQS, queues=tuple(queues), batch_size=batch_size)

    @classmethod
    def schedule(
        cls, rule: str, period_property: str | None, *, unit_seconds: int = 60, fixed_period_seconds: int | None = None
    ) -> Trigger:
        """Invoked by a scheduled rule, with its period from an instance property or fixed."""
        return cls(
            kind=TriggerKind.SCHEDULE,
            rule=rule,
            period_property=period_property,
            period_unit_seconds=unit_seconds,
            fixed_period_seconds=fixed_period_seconds,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerSpec:
    """One Lambda handler.

    Attributes:
        name: The handler's name in the registry (and in ``stacks/handlers.py``).
        handler: ``module:function`` run by the Lambda image.
        description: What it does.
        trigger: What invokes it.
        memory_mb: Default memory (the default of ``memory_property`` when one is named).
        timeout_seconds: Default timeout (the default of ``timeout_property`` when one is named).
        memory_property: The instance property overriding the memory, if any.
        timeout_property: The instance property overriding the timeout, if any.
        sends_to: For a per-table scheduled trigger: the FIFO queue it sends one message per online table to.
        offline_property: For a per-table trigger: an instance property that, when true, includes offline tables.
    """

    name: str
    handler: str
    description: str
    trigger: Trigger
    memory_mb: int = 1024
    timeout_seconds: int = 900
    memory_property: str | None = None
    timeout_property: str | None = None
    sends_to: str | None = None
    offline_property: str | None = None

    @property
    def module(self) -> str:
        """The module holding the handler function."""
        return self.handler.partition(":")[0]

    @property
    def function(self) -> str:
        """The handler function's name."""
        return self.handler.partition(":")[2]

    @property
    def lambda_command(self) -> str:
        """The image command the Lambda runtime interface client takes: ``module.function``."""
        return f"{self.module}.{self.function}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerSpec:
    """One container image.

    Attributes:
        name: The image name (``containers/<name>/Dockerfile``; the ECR repository ``<prefix>/<name>``).
        description: What runs in it.
        entry_point: ``module:function`` its command runs, or None when the command is chosen per use (the Lambda
            image runs the handler named in ``SLEEPER_HANDLER``).
        consumes: The logical name of the queue its tasks take work from, if any.
    """

    name: str
    description: str
    entry_point: str | None
    consumes: str | None = None

    @property
    def dockerfile(self) -> str:
        """The Dockerfile, relative to the repository root."""
        return f"containers/{self.name}/Dockerfile"

    @property
    def module(self) -> str | None:
        """The module of the entry point, if any."""
        return self.entry_point.partition(":")[0] if self.entry_point else None


# Queue logical names (spec 2.6, 3, 4, 5, 6, 7, 12)
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
COMPACTION_JOB_CREATION_Q = "CompactionJobCreationQ.fifo"
FIND_PARTITIONS_TO_SPLIT_Q = "FindPartitionsToSplitQ.fifo"
GC_JOB_Q = "GCJobQ.fifo"
SNAPSHOT_CREATION_Q = "TransactionLogSnapshotQ.fifo"
SNAPSHOT_DELETION_Q = "TransactionLogSnapshotDeletionQ.fifo"
TRANSACTION_DELETION_Q = "TransactionLogTransactionDeletionQ.fifo"
METRICS_JOB_Q = "MetricsJobQ.fifo"

# Handler names (as in stacks/handlers.py)
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
ATHENA_SIMPLE = "athena_simple"
ATHENA_ITERATOR_APPLYING = "athena_iterator_applying"

# Container names (as in stacks/context.py)
LAMBDA_IMAGE = "lambda"
COMPACTION_IMAGE = "compaction"
INGEST_IMAGE = "ingest"
BULK_IMPORT_IMAGE = "bulk-import"

_TABLE_BATCH_MEMORY = "sleeper.batch.table.lambdas.memory.mb"
_TABLE_BATCH_TIMEOUT = "sleeper.batch.table.lambdas.timeout.seconds"


def _per_table_trigger(
    name: str, function: str, *, rule: str, period_property: str, sends_to: str, unit_seconds: int = 60, what: str
) -> HandlerSpec:
    return HandlerSpec(
        name=name,
        handler=f"lambdas.table_trigger:{function}",
        description=f"Sends one message per online table to {sends_to} to start {what}",
        trigger=Trigger.schedule(rule, period_property, unit_seconds=unit_seconds),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=sends_to,
    )


HANDLERS: tuple[HandlerSpec, ...] = (
    # --- state store (spec 2.5-2.7) ---
    HandlerSpec(
        name=STATESTORE_COMMITTER,
        handler="lambdas.statestore_committer:handler",
        description="Applies state store commit requests, refreshing each table once per batch",
        trigger=Trigger.sqs(STATE_STORE_COMMITTER_Q, batch_size=10),
        memory_mb=4096,
        memory_property="sleeper.statestore.committer.lambda.memory.mb",
        timeout_property="sleeper.statestore.committer.lambda.timeout.seconds",
    ),
    _per_table_trigger(
        SNAPSHOT_CREATION_TRIGGER,
        "snapshot_creation",
        rule="TransactionLogSnapshotCreationRule",
        period_property="sleeper.statestore.snapshot.creation.lambda.period.seconds",
        unit_seconds=1,
        sends_to=SNAPSHOT_CREATION_Q,
        what="transaction log snapshot creation",
    ),
    HandlerSpec(
        name=SNAPSHOT_CREATION,
        handler="lambdas.snapshot_creation:handler",
        description="Snapshots each transaction log of a table that advanced past its latest snapshot",
        trigger=Trigger.sqs(SNAPSHOT_CREATION_Q),
        memory_mb=4096,
        memory_property="sleeper.statestore.snapshot.creation.memory.mb",
        timeout_property="sleeper.statestore.snapshot.creation.lambda.timeout.seconds",
    ),
    _per_table_trigger(
        SNAPSHOT_DELETION_TRIGGER,
        "snapshot_deletion",
        rule="TransactionLogSnapshotDeletionRule",
        period_property="sleeper.statestore.snapshot.deletion.lambda.period.minutes",
        sends_to=SNAPSHOT_DELETION_Q,
        what="old snapshot deletion",
    ),
    HandlerSpec(
        name=SNAPSHOT_DELETION,
        handler="lambdas.snapshot_deletion:handler",
        description="Deletes a table's expired snapshots, never the latest of each log",
        trigger=Trigger.sqs(SNAPSHOT_DELETION_Q),
    ),
    _per_table_trigger(
        TRANSACTION_DELETION_TRIGGER,
        "transaction_deletion",
        rule="TransactionLogTransactionDeletionRule",
        period_property="sleeper.statestore.transaction.deletion.lambda.period.minutes",
        sends_to=TRANSACTION_DELETION_Q,
        what="old transaction deletion",
    ),
    HandlerSpec(
        name=TRANSACTION_DELETION,
        handler="lambdas.transaction_deletion:handler",
        description="Deletes a table's transactions far enough behind a snapshot, with their large bodies",
        trigger=Trigger.sqs(TRANSACTION_DELETION_Q),
        timeout_property="sleeper.statestore.transaction.deletion.lambda.timeout.seconds",
    ),
    HandlerSpec(
        name=TRANSACTION_FOLLOWER,
        handler="lambdas.transaction_follower:handler",
        description="Follows the files log stream and updates the job trackers from committed transactions",
        trigger=Trigger(kind=TriggerKind.STREAM),
        memory_mb=4096,
        memory_property="sleeper.statestore.transaction.follower.memory.mb",
        timeout_property="sleeper.statestore.transaction.follower.lambda.timeout.seconds",
    ),
    # --- compaction (spec 4) ---
    _per_table_trigger(
        COMPACTION_JOB_CREATION_TRIGGER,
        "compaction_job_creation",
        rule="CompactionJobCreationRule",
        period_property="sleeper.compaction.job.creation.period.minutes",
        sends_to=COMPACTION_JOB_CREATION_Q,
        what="compaction job creation",
    ),
    HandlerSpec(
        name=COMPACTION_JOB_CREATION,
        handler="lambdas.compaction_job_creation:handler",
        description="Creates compaction jobs for a table with its strategy, pre-splitting file references",
        trigger=Trigger.sqs(COMPACTION_JOB_CREATION_Q),
        memory_mb=4096,
        memory_property="sleeper.compaction.job.creation.memory.mb",
        timeout_property="sleeper.compaction.job.creation.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_JOB_DISPATCHER,
        handler="lambdas.compaction_job_dispatcher:handler",
        description="Sends a batch of created compaction jobs once their input files are assigned",
        trigger=Trigger.sqs(PENDING_COMPACTION_JOB_BATCH_Q),
        memory_mb=4096,
        memory_property="sleeper.compaction.job.dispatch.memory.mb",
        timeout_property="sleeper.compaction.job.dispatch.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_COMMIT_BATCHER,
        handler="lambdas.compaction_commit_batcher:handler",
        description="Batches compaction commits per table into state store commit requests",
        trigger=Trigger.sqs(COMPACTION_COMMIT_Q, batch_size=10),
        memory_mb=4096,
        memory_property="sleeper.compaction.commit.batcher.memory.mb",
        timeout_property="sleeper.compaction.commit.batcher.timeout.seconds",
    ),
    HandlerSpec(
        name=COMPACTION_TASK_CREATION,
        handler="lambdas.compaction_task_creation:handler",
        description="Starts compaction tasks for the visible compaction jobs, up to the maximum",
        trigger=Trigger.schedule("CompactionTasksCreationRule", "sleeper.compaction.task.creation.period.minutes"),
        memory_property="sleeper.task.runner.memory.mb",
        timeout_property="sleeper.task.runner.timeout.seconds",
    ),
    # --- ingest (spec 3) ---
    HandlerSpec(
        name=INGEST_TASK_CREATION,
        handler="lambdas.ingest_task_creation:handler",
        description="Starts ingest tasks for the visible ingest jobs, up to the maximum",
        trigger=Trigger.schedule("IngestTasksCreationRule", "sleeper.ingest.task.creation.period.minutes"),
        memory_property="sleeper.task.runner.memory.mb",
        timeout_property="sleeper.task.runner.timeout.seconds",
    ),
    HandlerSpec(
        name=INGEST_BATCHER_SUBMITTER,
        handler="lambdas.ingest_batcher_submitter:handler",
        description="Records files sent to the ingest batcher",
        trigger=Trigger.sqs(INGEST_BATCHER_SUBMIT_Q),
        memory_property="sleeper.ingest.batcher.submitter.memory.mb",
        timeout_seconds=20,
        timeout_property="sleeper.ingest.batcher.submitter.timeout.seconds",
    ),
    HandlerSpec(
        name=INGEST_BATCHER_JOB_CREATION,
        handler="lambdas.ingest_batcher_job_creation:handler",
        description="Groups the batcher's pending files into ingest or bulk import jobs",
        trigger=Trigger.schedule("IngestBatcherJobCreationRule", "sleeper.ingest.batcher.job.creation.period.minutes"),
        memory_property="sleeper.ingest.batcher.job.creation.memory.mb",
        timeout_property="sleeper.ingest.batcher.job.creation.timeout.seconds",
    ),
    HandlerSpec(
        name=BULK_IMPORT_STARTER,
        handler="lambdas.bulk_import_starter:handler",
        description="Validates bulk import jobs and starts them on the platform of their queue",
        trigger=Trigger.sqs(BULK_IMPORT_EMR_SERVERLESS_Q, BULK_IMPORT_EMR_Q, BULK_IMPORT_PERSISTENT_EMR_Q),
        memory_mb=4096,
        memory_property="sleeper.bulk.import.starter.memory.mb",
    ),
    # --- partition splitting (spec 5) ---
    _per_table_trigger(
        PARTITION_SPLITTING_TRIGGER,
        "find_partitions_to_split",
        rule="FindPartitionsToSplitPeriodicTrigger",
        period_property="sleeper.partition.splitting.period.minutes",
        sends_to=FIND_PARTITIONS_TO_SPLIT_Q,
        what="finding partitions to split",
    ),
    HandlerSpec(
        name=FIND_PARTITIONS_TO_SPLIT,
        handler="lambdas.find_partitions_to_split:handler",
        description="Finds a table's leaf partitions over the split threshold and sends split jobs",
        trigger=Trigger.sqs(FIND_PARTITIONS_TO_SPLIT_Q),
        memory_mb=4096,
        memory_property="sleeper.partition.splitting.finder.memory.mb",
        timeout_property="sleeper.partition.splitting.finder.timeout.seconds",
    ),
    HandlerSpec(
        name=SPLIT_PARTITION,
        handler="lambdas.split_partition:handler",
        description="Splits a partition at the median of its files' sketches",
        trigger=Trigger.sqs(PARTITION_SPLITTING_JOB_Q),
        memory_mb=4096,
        memory_property="sleeper.partition.splitting.memory.mb",
        timeout_property="sleeper.partition.splitting.timeout.seconds",
    ),
    # --- garbage collection (spec 6) ---
    HandlerSpec(
        name=GARBAGE_COLLECTOR_TRIGGER,
        handler="lambdas.table_trigger:garbage_collection",
        description=f"Sends one message per online table to {GC_JOB_Q} to start garbage collection",
        trigger=Trigger.schedule("GarbageCollectorPeriodicTrigger", "sleeper.gc.period.minutes"),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=GC_JOB_Q,
        offline_property="sleeper.run.gc.offline",
    ),
    HandlerSpec(
        name=GARBAGE_COLLECTOR,
        handler="lambdas.garbage_collector:handler",
        description="Deletes a table's files no longer referenced after the delay, then commits DELETE_FILES",
        trigger=Trigger.sqs(GC_JOB_Q),
        memory_mb=4096,
        memory_property="sleeper.gc.memory.mb",
        timeout_seconds=840,
        timeout_property="sleeper.gc.lambda.timeout.seconds",
    ),
    # --- queries (spec 7) ---
    HandlerSpec(
        name=QUERY,
        handler="lambdas.query:handler",
        description="Validates and plans queries, sending one sub-query per leaf partition",
        trigger=Trigger.sqs(QUERY_Q),
        memory_mb=4096,
        memory_property="sleeper.query.processor.memory.mb",
        timeout_property="sleeper.query.processor.timeout.seconds",
    ),
    HandlerSpec(
        name=LEAF_PARTITION_QUERY,
        handler="lambdas.leaf_partition_query:handler",
        description="Runs a sub-query on one leaf partition and publishes its rows",
        trigger=Trigger.sqs(LEAF_PARTITION_QUERY_Q),
        memory_mb=4096,
        memory_property="sleeper.query.processor.memory.mb",
        timeout_property="sleeper.query.processor.timeout.seconds",
    ),
    HandlerSpec(
        name=QUERY_WARM,
        handler="lambdas.query_warm:handler",
        description="Keeps the query functions warm with a small query per table",
        trigger=Trigger.schedule("QueryWarmLambdaRule", "sleeper.query.warm.lambda.period.minutes"),
    ),
    # --- table metrics ---
    HandlerSpec(
        name=TABLE_METRICS_TRIGGER,
        handler="lambdas.table_trigger:table_metrics",
        description=f"Sends one message per online table to {METRICS_JOB_Q} to publish table metrics",
        trigger=Trigger.schedule("MetricsPublishRule", None, fixed_period_seconds=60),
        memory_mb=1024,
        timeout_seconds=60,
        memory_property=_TABLE_BATCH_MEMORY,
        timeout_property=_TABLE_BATCH_TIMEOUT,
        sends_to=METRICS_JOB_Q,
        offline_property="sleeper.run.table.metrics.offline",
    ),
    HandlerSpec(
        name=TABLE_METRICS,
        handler="lambdas.table_metrics:handler",
        description="Publishes a table's file and row counts as CloudWatch metrics",
        trigger=Trigger.sqs(METRICS_JOB_Q),
    ),
    # --- Athena (spec 11): invoked by Athena through the query federation protocol ---
    HandlerSpec(
        name=ATHENA_SIMPLE,
        handler="lambdas.athena:simple",
        description="Athena connector: one split per data file, no table processing",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=4096,
        memory_property="sleeper.athena.handler.memory.mb",
        timeout_property="sleeper.athena.handler.timeout.seconds",
    ),
    HandlerSpec(
        name=ATHENA_ITERATOR_APPLYING,
        handler="lambdas.athena:iterator_applying",
        description="Athena connector: one split per leaf partition, merged and processed like a Sleeper query",
        trigger=Trigger(kind=TriggerKind.NONE),
        memory_mb=4096,
        memory_property="sleeper.athena.handler.memory.mb",
        timeout_property="sleeper.athena.handler.timeout.seconds",
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
        entry_point="lambdas.compaction_task:main",
        consumes=COMPACTION_JOB_Q,
    ),
    ContainerSpec(
        name=INGEST_IMAGE,
        description="Ingest task: runs ingest jobs until idle",
        entry_point="lambdas.ingest_task:main",
        consumes=INGEST_JOB_Q,
    ),
    ContainerSpec(
        name=BULK_IMPORT_IMAGE,
        description="Bulk import Spark driver on EMR Serverless (or EMR)",
        entry_point="lambdas.bulk_import_driver:main",
    ),
)
"""Every container image of an instance."""

_BY_NAME = {spec.name: spec for spec in HANDLERS}
_CONTAINERS_BY_NAME = {spec.name: spec for spec in CONTAINERS}


def handler(name: str) -> HandlerSpec:
    """The handler registered under a name.

    Raises:
        KeyError: If no handler has the name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no handler named {name!r} in the registry") from None


def container(name: str) -> ContainerSpec:
    """The container registered under a name.

    Raises:
        KeyError: If no container has the name.
    """
    try:
        return _CONTAINERS_BY_NAME[name]
    except KeyError:
        raise KeyError(f"no container named {name!r} in the registry") from None
