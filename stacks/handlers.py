"""The Lambda handlers the stacks deploy, looked up by name in the runtime's handler registry."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerSpec:
    """What the stacks need to know about one Lambda handler.

    Attributes:
        name: The handler's name in the registry.
        handler: ``module:function`` run by the Lambda image.
        memory_mb: Default memory.
        timeout_seconds: Default timeout.
    """

    name: str
    handler: str
    memory_mb: int
    timeout_seconds: int


def handler_spec(name: str) -> HandlerSpec:
    """The registered handler of a name (temporary stand-in until the registry exists)."""
    return HandlerSpec(name=name, handler=f"lambdas.{name}:handler", memory_mb=1024, timeout_seconds=900)


# Handler names in the registry, one per Lambda function the stacks deploy.
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
