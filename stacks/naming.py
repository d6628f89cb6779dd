"""Names of an instance's AWS resources, exactly as Sleeper (and so this port's runtime.aws) expects them.

Standard library only. These functions mirror the naming in ``sleeper.adapters.aws.resources``, which stacks may not
import (it imports botocore; see the dependency rule in ARCHITECTURE.md). ``tests/stacks/test_naming.py`` checks that
both give the same names, so they cannot drift. They belong in ``sleeper.core`` (proposed: ``sleeper/core/naming.py``)
so that the adapters and the stacks share one definition.

Conventions (spec 1.5, 2.3, 2.6, 3.4, 3.6, 7.3, 9, 12):

- DynamoDB tables and SQS queues: ``sleeper-<id>-<suffix>`` with the instance id as given.
- S3 buckets: ``sleeper-<cid>-<kind>-<account>`` where ``<cid>`` is the id lower-cased with ``.`` replaced by ``-``.
- EventBridge rules: ``<id>-<RuleName>``, cut to 64 characters.
- Lambda functions, ECS clusters, task families, managed policies: ``sleeper-<cid>-<suffix>``, cut to 64 characters.
"""

from __future__ import annotations

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


def queue_name(instance_id: str, logical_name: str) -> str:
    """The SQS name of a queue of an instance: ``sleeper-<id>-<logical name>``, e.g. ``sleeper-x-IngestJobQ``."""
    return resource_name(instance_id, logical_name)


def dead_letter_logical_name(logical_name: str) -> str:
    """The logical name of the dead-letter queue of a queue.

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


def bucket_name(instance_id: str, kind: str, account: str) -> str:
    """``sleeper-<cid>-<kind>-<account>``, e.g. ``sleeper-my-id-table-data-123456789012``.

    The account may be a deploy-time token: it is appended as given, never lower-cased.
    """
    return f"sleeper-{clean_id(instance_id)}-{kind.lower()}-{account}"


def config_bucket_name(instance_id: str, account: str) -> str:
    """The config bucket, as Sleeper's Python client derives it (spec 13.1)."""
    return bucket_name(instance_id, "config", account)


def data_bucket_name(instance_id: str, account: str) -> str:
    """The table data bucket (spec 1.5)."""
    return bucket_name(instance_id, "table-data", account)


def query_results_bucket_name(instance_id: str, account: str) -> str:
    """The query results bucket (spec 7.2)."""
    return bucket_name(instance_id, "query-results", account)


def bulk_import_bucket_name(instance_id: str, account: str) -> str:
    """The bucket bulk import jobs and their Spark logs are written to (spec 3.5)."""
    return bucket_name(instance_id, "bulk-import", account)


def access_logs_bucket_name(instance_id: str, account: str) -> str:
    """The bucket receiving the server access logs of the instance's other buckets."""
    return bucket_name(instance_id, "access-logs", account)


def rule_name(instance_id: str, rule: str) -> str:
    """``<id>-<rule>`` cut to 64 characters, e.g. ``my-id-CompactionJobCreationRule`` (spec 12)."""
    return f"{instance_id}-{rule}"[:MAX_RULE_NAME]


def function_name(instance_id: str, suffix: str) -> str:
    """``sleeper-<cid>-<suffix>`` cut to 64 characters: Lambda functions, clusters, task families."""
    return f"sleeper-{clean_id(instance_id)}-{suffix}"[:MAX_FUNCTION_NAME]


def policy_name(instance_id: str, suffix: str) -> str:
    """``sleeper-<cid>-<suffix>``: managed policies and roles."""
    return f"sleeper-{clean_id(instance_id)}-{suffix}"[:MAX_POLICY_NAME]


# --- DynamoDB tables (spec 2.3, 3.4, 3.6, 7.3, 9) ---

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


def query_tracker_table_name(instance_id: str) -> str:
    """The query tracker table (``sleeper.query.tracker.table.name``; spec 7.3).

    Spec 7.3 notes Sleeper's CDK builds this from the clean id; the adapters build it from the id as given, so that
    is what the stacks do too (the two agree for ids without upper case letters or dots).
    """
    return resource_name(instance_id, QUERY_TRACKER)


# --- SQS queues (logical names; spec 2.6, 3, 4, 5, 6, 7, 12) ---

STATE_STORE_COMMITTER_Q: Final = "StateStoreCommitterQ.fifo"
INGEST_JOB_Q: Final = "IngestJobQ"
INGEST_BATCHER_SUBMIT_Q: Final = "IngestBatcherSubmitQ"
COMPACTION_JOB_Q: Final = "CompactionJobQ"
PENDING_COMPACTION_JOB_BATCH_Q: Final = "PendingCompactionJobBatchQ"
COMPACTION_COMMIT_Q: Final = "CompactionCommitQ"
PARTITION_SPLITTING_JOB_Q: Final = "PartitionSplittingJobQueue"
QUERY_Q: Final = "QueryQueue"
LEAF_PARTITION_QUERY_Q: Final = "LeafPartitionQueryQueue"
BULK_IMPORT_EMR_SERVERLESS_Q: Final = "BulkImportEMRServerlessQ"
BULK_IMPORT_EMR_Q: Final = "BulkImportNonPersistentEMRQ"
# Per-table FIFO queues fed by scheduled rules (spec 12)
COMPACTION_JOB_CREATION_Q: Final = "CompactionJobCreationQ.fifo"
FIND_PARTITIONS_TO_SPLIT_Q: Final = "FindPartitionsToSplitQ.fifo"
GC_JOB_Q: Final = "GCJobQ.fifo"
SNAPSHOT_CREATION_Q: Final = "TransactionLogSnapshotQ.fifo"
SNAPSHOT_DELETION_Q: Final = "TransactionLogSnapshotDeletionQ.fifo"
TRANSACTION_DELETION_Q: Final = "TransactionLogTransactionDeletionQ.fifo"
METRICS_JOB_Q: Final = "MetricsJobQ.fifo"

# --- EventBridge rules (spec 12) ---

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
