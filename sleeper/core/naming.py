"""The names of an instance's AWS resources, exactly as Sleeper names them: the one definition the CDK stacks, the
AWS adapters, the runtime, the emulated instance and the CLI all read (standard library only).

Conventions:

- DynamoDB tables and SQS queues: ``sleeper-<id>-<suffix>`` with the instance id as given.
- S3 buckets: ``sleeper-<cid>-<kind>-<account>`` where ``<cid>`` is the id lower-cased with ``.`` replaced by ``-``.
- EventBridge rules: ``<id>-<RuleName>``, cut to 64 characters.
- Lambda functions, ECS clusters, task families, the EMR Serverless application: ``sleeper-<cid>-<suffix>``, cut to
  64 characters; managed policies and roles likewise, cut to 128.

The logical names of the queues are those of the registry of operations (:mod:`sleeper.core.operations`); the
functions here turn a logical name into the queue's SQS name and its dead-letter queue's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_FUNCTION_NAME = 64
MAX_RULE_NAME = 64
MAX_POLICY_NAME = 128


def clean_id(instance_id: str) -> str:
    """The instance id as it may appear in bucket names: lower case, dots replaced by dashes."""
    return instance_id.lower().replace(".", "-")


def resource_name(instance_id: str, suffix: str) -> str:
    """``sleeper-<id>-<suffix>``: the name of a DynamoDB table (or SQS queue) of an instance."""
    return f"sleeper-{instance_id}-{suffix}"


# --- SQS queues ------------------------------------------------------------------------------------------------------


def queue_name(instance_id: str, logical_name: str) -> str:
    """The SQS name of a queue of an instance: ``sleeper-<id>-<logical name>``, e.g. ``sleeper-x-IngestJobQ``.

    Args:
        instance_id: The instance id.
        logical_name: The queue's logical name (a queue of :mod:`sleeper.core.operations`).
    """
    return resource_name(instance_id, logical_name)


def dead_letter_logical_name(logical_name: str) -> str:
    """The logical name of the dead-letter queue of a queue on AWS.

    A trailing ``Q`` or ``Queue`` becomes ``DLQ`` (``IngestJobQ`` -> ``IngestJobDLQ``, ``QueryQueue`` -> ``QueryDLQ``,
    ``StateStoreCommitterQ.fifo`` -> ``StateStoreCommitterDLQ.fifo``); other names get ``-DLQ``.
    """
    fifo = logical_name.endswith(".fifo")
    base = logical_name.removesuffix(".fifo")
    if base.endswith("Queue"):
        base = base.removesuffix("Queue") + "DLQ"
    elif base.endswith("Q"):
        base = base.removesuffix("Q") + "DLQ"
    else:
        base = base + "-DLQ"
    return base + (".fifo" if fifo else "")


def dead_letter_queue_name(instance_id: str, logical_name: str) -> str:
    """The SQS name of the dead-letter queue of a queue of an instance."""
    return queue_name(instance_id, dead_letter_logical_name(logical_name))


def local_dead_letter_queue_name(logical_name: str) -> str:
    """The name of the dead-letter queue of a queue of a local instance: ``<name>-DLQ`` (``.fifo`` kept last)."""
    fifo = logical_name.endswith(".fifo")
    return f"{logical_name.removesuffix('.fifo')}-DLQ{'.fifo' if fifo else ''}"


# --- S3 buckets ------------------------------------------------------------------------------------------------------

CONFIG_BUCKET: Final = "config"
DATA_BUCKET: Final = "table-data"
QUERY_RESULTS_BUCKET: Final = "query-results"
BULK_IMPORT_BUCKET: Final = "bulk-import"
ACCESS_LOGS_BUCKET: Final = "access-logs"
ATHENA_SPILL_BUCKET: Final = "spill"
BULK_EXPORT_BUCKET: Final = "bulk-export-results"
INGEST_STAGING_PREFIX: Final = "for_ingest"
"""The prefix of the data bucket where files to ingest are staged, as Sleeper's Python client stages them."""


def bucket_name(instance_id: str, kind: str, account: str) -> str:
    """``sleeper-<cid>-<kind>-<account>``, e.g. ``sleeper-my-id-table-data-123456789012``.

    The account may be a deploy-time token: it is appended as given, never lower-cased.
    """
    return f"sleeper-{clean_id(instance_id)}-{kind.lower()}-{account}"


def config_bucket_name(instance_id: str, account: str) -> str:
    """The config bucket, as Sleeper and its Python client derive it."""
    return bucket_name(instance_id, CONFIG_BUCKET, account)


def data_bucket_name(instance_id: str, account: str) -> str:
    """The table data bucket."""
    return bucket_name(instance_id, DATA_BUCKET, account)


def query_results_bucket_name(instance_id: str, account: str) -> str:
    """The query results bucket."""
    return bucket_name(instance_id, QUERY_RESULTS_BUCKET, account)


def bulk_import_bucket_name(instance_id: str, account: str) -> str:
    """The bucket bulk import jobs and their Spark logs are written to."""
    return bucket_name(instance_id, BULK_IMPORT_BUCKET, account)


def bulk_export_bucket_name(instance_id: str, account: str) -> str:
    """The bucket bulk exports are written to (``<tableId>/<exportId>/<subExportId>.parquet``)."""
    return bucket_name(instance_id, BULK_EXPORT_BUCKET, account)


def access_logs_bucket_name(instance_id: str, account: str) -> str:
    """The bucket receiving the server access logs of the instance's other buckets."""
    return bucket_name(instance_id, ACCESS_LOGS_BUCKET, account)


# --- EventBridge rules, functions, clusters, task families, policies -------------------------------------------------


def rule_name(instance_id: str, rule: str) -> str:
    """``<id>-<rule>`` cut to 64 characters, e.g. ``my-id-CompactionJobCreationRule``."""
    return f"{instance_id}-{rule}"[:MAX_RULE_NAME]


def function_name(instance_id: str, suffix: str) -> str:
    """``sleeper-<cid>-<suffix>`` cut to 64 characters: Lambda functions, clusters, task families."""
    return f"sleeper-{clean_id(instance_id)}-{suffix}"[:MAX_FUNCTION_NAME]


def log_group_name(function: str) -> str:
    """The log group of a Lambda function: ``/aws/lambda/<function name>``."""
    return f"/aws/lambda/{function}"


def policy_name(instance_id: str, suffix: str) -> str:
    """``sleeper-<cid>-<suffix>``: managed policies and roles."""
    return f"sleeper-{clean_id(instance_id)}-{suffix}"[:MAX_POLICY_NAME]


def role_arn(instance_id: str, account: str, suffix: str) -> str:
    """The ARN of a role of an instance: ``arn:aws:iam::<account>:role/sleeper-<cid>-<suffix>``."""
    return f"arn:aws:iam::{account}:role/{policy_name(instance_id, suffix)}"


COMPACTION_JOB_CREATION_RULE: Final = "CompactionJobCreationRule"
COMPACTION_TASK_CREATION_RULE: Final = "CompactionTasksCreationRule"
PARTITION_SPLITTING_RULE: Final = "FindPartitionsToSplitPeriodicTrigger"
GARBAGE_COLLECTOR_RULE: Final = "GarbageCollectorPeriodicTrigger"
INGEST_TASK_CREATION_RULE: Final = "IngestTasksCreationRule"
INGEST_BATCHER_JOB_CREATION_RULE: Final = "IngestBatcherJobCreationRule"
TABLE_METRICS_RULE: Final = "MetricsPublishRule"
QUERY_WARM_RULE: Final = "QueryWarmLambdaRule"
SNAPSHOT_CREATION_RULE: Final = "TransactionLogSnapshotCreationRule"
SNAPSHOT_DELETION_RULE: Final = "TransactionLogSnapshotDeletionRule"
TRANSACTION_DELETION_RULE: Final = "TransactionLogTransactionDeletionRule"
BULK_EXPORT_TASK_CREATION_RULE: Final = "BulkExportJobCreationRule"
ICEBERG_PUBLISH_RULE: Final = "IcebergPublishRule"
"""Beyond Sleeper: starts publishing every online table's Iceberg view."""
ECS_TASK_FAILURE_RULE: Final = "EcsTaskFailureRule"
"""Matches the instance's ECS tasks stopping with a non-zero exit code or failing to start."""
TABLE_DEFINER_FUNCTION: Final = "table-definer"
"""The function creating the tables of a deployed configuration (a ``function_name`` suffix), as in Sleeper."""
METRIC_DIMENSION_INSTANCE: Final = "instanceId"
METRIC_DIMENSION_TABLE: Final = "tableName"
"""The dimensions of the table metrics, as Sleeper publishes them."""
TABLE_METRICS: Final = (
    "ActiveFileCount",
    "RecordCount",
    "PartitionCount",
    "LeafPartitionCount",
    "AverageActiveFilesPerPartition",
    "MinActiveFilesPerPartition",
    "MaxActiveFilesPerPartition",
    "FileCount",
    "UnreferencedFileCount",
)
"""The table metrics' names (``sleeper.statestore.metrics``; the dashboard graphs each): Sleeper's, then this
port's."""


def dashboard_name(instance_id: str) -> str:
    """The CloudWatch dashboard of an instance: its cleaned id, as Sleeper names it."""
    return clean_id(instance_id)


# API Gateway APIs and their functions (``function_name`` suffixes), as Sleeper names them
WEBSOCKET_QUERY_FUNCTION: Final = "query-websocket-handler"
WEBSOCKET_QUERY_API: Final = "query-websocket-api"
"""The WebSocket query API (``sleeper-<cid>-query-websocket-api``)."""
WEBSOCKET_QUERY_STAGE: Final = "live"
"""The WebSocket query API's stage: its URL is ``wss://<api id>.execute-api.<region>.amazonaws.com/live``."""
REST_API_FUNCTION: Final = "rest-api-handler"
"""The REST API's function; the HTTP API is named after it, as in Sleeper."""
REST_API_TABLES_PATH: Final = "/sleeper/tables"
"""The REST API's tables resource, as Sleeper's REST API names it."""

# ECS clusters, task definition families and the EMR Serverless application (``function_name`` suffixes)
INGEST_CLUSTER: Final = "ingest-cluster"
COMPACTION_CLUSTER: Final = "compaction-cluster"
INGEST_TASK_FAMILY: Final = "IngestTask"
COMPACTION_FARGATE_FAMILY: Final = "CompactionTaskOnFargate"
COMPACTION_EC2_FAMILY: Final = "CompactionTaskOnEC2"
BULK_EXPORT_CLUSTER: Final = "bulk-export-cluster"
BULK_EXPORT_FARGATE_FAMILY: Final = "BulkExportTaskOnFargate"
BULK_IMPORT_APPLICATION: Final = "bulk-import"
BULK_IMPORT_JOB_ROLE: Final = "bulk-import-job"
"""The role bulk import job runs take (a ``policy_name`` suffix)."""
INGEST_CONTAINER_NAME: Final = "IngestTask"
"""The container of the ingest task definition."""
COMPACTION_CONTAINER_NAME: Final = "CompactionTask"
"""The container of the compaction task definitions."""
BULK_EXPORT_CONTAINER_NAME: Final = "BulkExportContainer"
"""The container of the bulk export task definition."""
BULK_IMPORT_EKS: Final = "bulk-import-eks"
"""Bulk import on EKS (a ``function_name`` suffix, as Sleeper's ``sleeper-<id>-bulk-import-eks``): the EKS cluster, its
Kubernetes namespace and Fargate profile, and the state machine running jobs on it."""
ECS_NETWORK: Final = "ecs"
"""The VPC of an emulated instance's tasks (a ``function_name`` suffix)."""


# --- DynamoDB tables -------------------------------------------------------------------------------------------------

FILES_LOG: Final = "file-transaction-log"
PARTITIONS_LOG: Final = "partition-transaction-log"
LATEST_SNAPSHOTS: Final = "transaction-log-latest-snapshots"
ALL_SNAPSHOTS: Final = "transaction-log-all-snapshots"
INDEX_BY_NAME: Final = "table-index-by-name"
INDEX_BY_ID: Final = "table-index-by-id"
INDEX_BY_ONLINE: Final = "table-index-by-online"
INGEST_JOB_UPDATES: Final = "ingest-job-updates"
INGEST_JOB_LOOKUP: Final = "ingest-job-lookup"
INGEST_TASK_STATUS: Final = "ingest-task-status"
COMPACTION_JOB_UPDATES: Final = "compaction-job-updates"
COMPACTION_JOB_LOOKUP: Final = "compaction-job-lookup"
COMPACTION_TASK_STATUS: Final = "compaction-task-status"
QUERY_TRACKER: Final = "query-tracking-table"
INGEST_BATCHER_STORE: Final = "ingest-batcher-store"


def table_name(instance_id: str, suffix: str) -> str:
    """The DynamoDB table of an instance with a suffix above, e.g. ``sleeper-x-file-transaction-log``."""
    return resource_name(instance_id, suffix)


def task_tracker_table_name(instance_id: str, kind: str) -> str:
    """The task tracker table of a kind of task (``"ingest"`` or ``"compaction"``): ``sleeper-<id>-<kind>-task-status``.

    Hash ``TaskId``, range ``UpdateTime`` (epoch milliseconds).
    """
    return table_name(instance_id, f"{kind}-task-status")


def query_tracker_table_name(instance_id: str) -> str:
    """The query tracker table (``sleeper.query.tracker.table.name``): hash ``queryId``, range ``subQueryId``.

    Spec 7.3 notes Sleeper's CDK builds this from the clean id; the adapters build it from the id as given, so that
    is what the stacks do too (the two agree for ids without upper case letters or dots).
    """
    return table_name(instance_id, QUERY_TRACKER)


def batcher_store_table_name(instance_id: str) -> str:
    """The ingest batcher's store: ``sleeper-<id>-ingest-batcher-store``."""
    return table_name(instance_id, INGEST_BATCHER_STORE)


@dataclass(frozen=True, slots=True, kw_only=True)
class StateStoreTableNames:
    """The DynamoDB tables of the transaction-log state store of an instance, shared by all its Sleeper tables.

    Attributes:
        files_log: The files transaction log (hash ``TABLE_ID``, range ``TRANSACTION_NUMBER``).
        partitions_log: The partitions transaction log (same keys).
        latest_snapshots: The latest snapshot of each log per table (hash ``TABLE_ID``).
        all_snapshots: Every snapshot (hash ``TABLE_ID_AND_SNAPSHOT_TYPE``, range ``TRANSACTION_NUMBER``).
    """

    files_log: str
    partitions_log: str
    latest_snapshots: str
    all_snapshots: str

    @classmethod
    def for_instance(cls, instance_id: str) -> StateStoreTableNames:
        """The names Sleeper gives these tables in an instance."""
        return cls(
            files_log=table_name(instance_id, FILES_LOG),
            partitions_log=table_name(instance_id, PARTITIONS_LOG),
            latest_snapshots=table_name(instance_id, LATEST_SNAPSHOTS),
            all_snapshots=table_name(instance_id, ALL_SNAPSHOTS),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TableIndexTableNames:
    """The DynamoDB tables of the table index of an instance.

    Attributes:
        by_name: Hash ``TableName``.
        by_id: Hash ``TableId``.
        by_online: Hash ``Online`` (``"true"``/``"false"``), range ``TableName``.
    """

    by_name: str
    by_id: str
    by_online: str

    @classmethod
    def for_instance(cls, instance_id: str) -> TableIndexTableNames:
        """The names Sleeper gives these tables in an instance."""
        return cls(
            by_name=table_name(instance_id, INDEX_BY_NAME),
            by_id=table_name(instance_id, INDEX_BY_ID),
            by_online=table_name(instance_id, INDEX_BY_ONLINE),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class JobTrackerTableNames:
    """The DynamoDB tables of one job tracker (ingest or compaction) of an instance.

    Attributes:
        updates: Every update (hash ``TableId``, range ``JobIdAndUpdate`` = ``<jobId>|<ms>|<random>``).
        lookup: One item per job (hash ``JobId``) naming its table; ingest lookups carry a ``by-validation`` index
            on ``LastValidationResult``.
    """

    updates: str
    lookup: str

    @classmethod
    def ingest(cls, instance_id: str) -> JobTrackerTableNames:
        """The names Sleeper gives the ingest job tracker tables of an instance."""
        return cls(
            updates=table_name(instance_id, INGEST_JOB_UPDATES), lookup=table_name(instance_id, INGEST_JOB_LOOKUP)
        )

    @classmethod
    def compaction(cls, instance_id: str) -> JobTrackerTableNames:
        """The names Sleeper gives the compaction job tracker tables of an instance."""
        return cls(
            updates=table_name(instance_id, COMPACTION_JOB_UPDATES),
            lookup=table_name(instance_id, COMPACTION_JOB_LOOKUP),
        )


# --- everything of one instance in one account ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceNames:
    """The names of the resources of an instance in an account that are not named by a logical queue or table name
    alone: buckets, ECS clusters and task families, the EMR Serverless application, roles, rules and images.

    Attributes:
        instance_id: The instance id.
        account: The AWS account (a deploy-time token in the stacks).
    """

    instance_id: str
    account: str

    @property
    def config_bucket(self) -> str:
        """The config bucket."""
        return config_bucket_name(self.instance_id, self.account)

    @property
    def data_bucket(self) -> str:
        """The table data bucket."""
        return data_bucket_name(self.instance_id, self.account)

    @property
    def query_results_bucket(self) -> str:
        """The query results bucket."""
        return query_results_bucket_name(self.instance_id, self.account)

    @property
    def bulk_import_bucket(self) -> str:
        """The bucket of bulk import job files and Spark logs."""
        return bulk_import_bucket_name(self.instance_id, self.account)

    @property
    def bulk_export_bucket(self) -> str:
        """The bucket bulk exports are written to."""
        return bulk_export_bucket_name(self.instance_id, self.account)

    @property
    def bulk_export_cluster(self) -> str:
        """The ECS cluster of bulk export tasks."""
        return function_name(self.instance_id, BULK_EXPORT_CLUSTER)

    @property
    def bulk_export_task_family(self) -> str:
        """The Fargate task definition family of bulk export tasks."""
        return function_name(self.instance_id, BULK_EXPORT_FARGATE_FAMILY)

    @property
    def bulk_import_eks(self) -> str:
        """The EKS cluster of bulk import, its namespace, Fargate profile and state machine."""
        return function_name(self.instance_id, BULK_IMPORT_EKS)

    @property
    def ingest_cluster(self) -> str:
        """The ECS cluster of ingest tasks."""
        return function_name(self.instance_id, INGEST_CLUSTER)

    @property
    def ingest_task_family(self) -> str:
        """The task definition family of ingest tasks."""
        return function_name(self.instance_id, INGEST_TASK_FAMILY)

    @property
    def compaction_cluster(self) -> str:
        """The ECS cluster of compaction tasks."""
        return function_name(self.instance_id, COMPACTION_CLUSTER)

    @property
    def compaction_fargate_family(self) -> str:
        """The Fargate task definition family of compaction tasks."""
        return function_name(self.instance_id, COMPACTION_FARGATE_FAMILY)

    @property
    def compaction_ec2_family(self) -> str:
        """The EC2 task definition family of compaction tasks."""
        return function_name(self.instance_id, COMPACTION_EC2_FAMILY)

    @property
    def emr_serverless_application(self) -> str:
        """The EMR Serverless application of bulk import."""
        return function_name(self.instance_id, BULK_IMPORT_APPLICATION)

    @property
    def bulk_import_role_arn(self) -> str:
        """The role bulk import job runs take."""
        return role_arn(self.instance_id, self.account, BULK_IMPORT_JOB_ROLE)

    @property
    def ecs_network(self) -> str:
        """The network (VPC) of an emulated instance's tasks."""
        return function_name(self.instance_id, ECS_NETWORK)

    def function(self, suffix: str) -> str:
        """A Lambda function (or cluster, task family) of the instance."""
        return function_name(self.instance_id, suffix)

    def image(self, container: str) -> str:
        """The image of a container: ``<account>.dkr.ecr.amazonaws.com/sleeper-<cid>/<name>:latest`` (region-less, as
        the emulated instance registers it)."""
        return f"{self.account}.dkr.ecr.amazonaws.com/sleeper-{clean_id(self.instance_id)}/{container}:latest"

    def rule(self, rule: str) -> str:
        """An EventBridge rule: ``<id>-<rule>`` cut to 64 characters."""
        return rule_name(self.instance_id, rule)
