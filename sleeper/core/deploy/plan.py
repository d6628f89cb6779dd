"""Which nested stacks a deployment creates, decided once: the CDK app builds exactly these
(:mod:`sleeper.cdk.instance`) and ``sleeper deploy`` prints them before it runs the CDK."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sleeper.core import operations
from sleeper.core.deploy.configuration import TableConfiguration
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common
from sleeper.core.properties import instance_defaults as defaults
from sleeper.core.properties import table as table_props

NEEDS_VPC = frozenset(
    {
        "CompactionStack",
        "IngestStack",
        "EmrServerlessBulkImportStack",
        "EmrBulkImportStack",
        "PersistentEmrBulkImportStack",
        "EksBulkImportStack",
        "BulkExportStack",
    }
)
"""Optional stacks running tasks or clusters in the instance's VPC."""
EMR_STACKS = frozenset({"EmrBulkImportStack", "PersistentEmrBulkImportStack"})
"""Optional stacks running bulk import on EMR clusters, sharing their roles and security configuration."""
BULK_IMPORT_STACKS = EMR_STACKS | {"EmrServerlessBulkImportStack", "EksBulkImportStack"}
QUERY_STACKS = frozenset({"QueryStack", "WebSocketQueryStack"})
"""Optional stacks deploying the query queues and functions (the WebSocket API needs them, as in Sleeper)."""

OPTIONAL: dict[str, tuple[str, str]] = {
    "CompactionStack": ("Compaction", "compaction job creation, tasks on ECS (Fargate or EC2) and commits"),
    "IngestStack": ("Ingest", "the ingest job queue and ingest tasks on ECS"),
    "IngestBatcherStack": ("IngestBatcher", "the ingest batcher: files in, ingest jobs out"),
    "PartitionSplittingStack": ("PartitionSplitting", "finding partitions to split, and splitting them"),
    "GarbageCollectorStack": ("GarbageCollector", "deleting files no longer referenced"),
    "QueryStack": ("Query", "queries through SQS, results to S3 or a queue"),
    "WebSocketQueryStack": ("WebSocketQuery", "the WebSocket query API (IAM-authorised), rows back over the socket"),
    "BulkExportStack": ("BulkExport", "bulk export: the planner, leaf export tasks on Fargate, the results bucket"),
    "TableMetricsStack": ("TableMetrics", "per-table metrics to CloudWatch every minute"),
    "AthenaStack": ("Athena", "the Athena connectors"),
    "RestApiStack": ("RestApi", "the REST API: add and inspect tables over HTTP (IAM-authorised)"),
    "DashboardStack": ("Dashboard", "a CloudWatch dashboard of the instance's tables, queues, functions and tasks"),
}
"""Optional stacks that become one nested stack each: (nested stack name, what it holds). The bulk import stacks
and ``KeepLambdaWarmStack`` (part of the query stack) are planned below."""

SUPPORTED_OPTIONAL_STACKS = frozenset(OPTIONAL) | BULK_IMPORT_STACKS | {"KeepLambdaWarmStack"}
"""Optional stacks this port deploys; others named in ``sleeper.optional.stacks`` get a synth warning."""

CORE: tuple[tuple[str, str], ...] = (
    ("Monitoring", "the errors topic (alarms email sleeper.errors.email) and the access logs bucket"),
    ("ConfigBucket", "the config bucket: instance.properties and table properties"),
    ("TableData", "the table data bucket"),
    ("TableIndex", "the table index tables"),
    ("StateStore", "the transaction log and snapshot tables"),
    ("Trackers", "the job and task trackers"),
    ("StateStoreCommitter", "the state store committer queue and function"),
    ("StateStoreUpkeep", "snapshot creation and log cleanup"),
)


QUEUE_OPERATIONS = "QueueOperations"
"""The nested stack deploying the registry's queue-driven operations that no feature stack claims."""

CLAIMED_OPERATIONS: dict[str, tuple[str, ...]] = {
    "StateStoreCommitter": (operations.STATESTORE_COMMITTER,),
    "StateStoreUpkeep": (operations.SNAPSHOT_CREATION, operations.SNAPSHOT_DELETION, operations.TRANSACTION_DELETION),
    "Compaction": (operations.COMPACTION_JOB_CREATION, operations.COMPACTION_JOB_DISPATCHER),
    "IngestBatcher": (operations.INGEST_BATCHER_SUBMITTER,),
    "PartitionSplitting": (operations.FIND_PARTITIONS_TO_SPLIT, operations.SPLIT_PARTITION),
    "GarbageCollector": (operations.GARBAGE_COLLECTOR,),
    "Query": (operations.QUERY, operations.LEAF_PARTITION_QUERY),
    "BulkExport": (operations.BULK_EXPORT_PLANNER,),
    "TableMetrics": (operations.TABLE_METRICS,),
    "IcebergViews": (operations.ICEBERG_PUBLISH,),
}
"""The registry's queue-driven operations each feature stack deploys, by nested stack name (the stack class's
``OPERATIONS``); an entry served by the generic SQS handler that none claims is deployed by ``QueueOperations``."""


def unclaimed_operations() -> tuple[str, ...]:
    """The names of the registry's entries served by the generic SQS handler that no feature stack claims
    (:data:`CLAIMED_OPERATIONS`), in registry order: the ``QueueOperations`` stack deploys them."""
    claimed = {name for names in CLAIMED_OPERATIONS.values() for name in names}
    return tuple(
        spec.name
        for spec in operations.HANDLERS
        if spec.module == operations.SQS_HANDLER_MODULE and spec.name not in claimed
    )


@dataclass(frozen=True, slots=True)
class PlannedStack:
    """A nested stack of the instance stack: its construct name and what it holds."""

    name: str
    description: str


def wanted_optional_stacks(properties: InstanceProperties) -> frozenset[str]:
    """The optional stacks named in ``sleeper.optional.stacks``, matched case-insensitively to Sleeper's names."""
    by_lower = {name.lower(): name for name in common.OPTIONAL_STACKS_ALL}
    listed = properties.get_list(common.OPTIONAL_STACKS)
    return frozenset(by_lower[s.lower()] for s in listed if s.lower() in by_lower)


def ignored_optional_stacks(properties: InstanceProperties) -> list[str]:
    """The optional stacks asked for that this port does not deploy."""
    return sorted(wanted_optional_stacks(properties) - SUPPORTED_OPTIONAL_STACKS)


def deploys_dynamodb_state_store(properties: InstanceProperties, tables: Iterable[TableConfiguration] = ()) -> bool:
    """Whether the deployment creates the DynamoDB transaction log and snapshot tables (beyond Sleeper, which always
    does): unless the instance's ``sleeper.default.table.statestore.classname`` and every table of the configuration
    name ``S3TransactionLogStateStore``, whose logs are objects in the data bucket.

    Raises:
        PropertyError: If the default or a table names no state store of this port.
    """
    default = table_props.state_store_class(properties.get(defaults.DEFAULT_STATESTORE_CLASSNAME))
    stores = {default}
    for table in tables:
        stores.add(
            table_props.state_store_class(table.properties.get(table_props.STATESTORE_CLASSNAME.name) or default)
        )
    return stores != {table_props.S3_TRANSACTION_LOG_STATE_STORE}


def planned_stacks(properties: InstanceProperties, tables: Iterable[TableConfiguration] = ()) -> list[PlannedStack]:
    """The nested stacks an instance with these properties and the configuration's tables deploys, in the order they
    are built. ``StateStore`` (the DynamoDB log and snapshot tables) is left out when no table can use it
    (:func:`deploys_dynamodb_state_store`); ``QueueOperations`` is there when the registry has an operation no
    feature stack claims (:func:`unclaimed_operations`)."""
    wanted = wanted_optional_stacks(properties)
    dynamodb_logs = deploys_dynamodb_state_store(properties, tables)
    plan = [PlannedStack(name, description) for name, description in CORE if name != "StateStore" or dynamodb_logs]
    if wanted & NEEDS_VPC and not properties.get(common.VPC_ID):
        plan.append(PlannedStack("Networking", "a VPC with private subnets, a NAT gateway and S3/DynamoDB endpoints"))
    for stack in ("CompactionStack", "IngestStack"):
        if stack in wanted:
            plan.append(PlannedStack(*OPTIONAL[stack]))
    if wanted & BULK_IMPORT_STACKS:
        plan.append(PlannedStack("BulkImportBucket", "the bulk import bucket"))
        if "EmrServerlessBulkImportStack" in wanted:
            plan.append(PlannedStack("EmrServerlessBulkImport", "bulk import on EMR Serverless"))
        if "EksBulkImportStack" in wanted:
            plan.append(PlannedStack("EksBulkImport", "bulk import on EKS (Fargate), jobs run by a state machine"))
        if wanted & EMR_STACKS:
            plan.append(PlannedStack("CommonEmrBulkImport", "the EMR roles and security configuration"))
        if "EmrBulkImportStack" in wanted:
            plan.append(PlannedStack("EmrBulkImport", "bulk import on an EMR cluster per job"))
        if "PersistentEmrBulkImportStack" in wanted:
            plan.append(PlannedStack("PersistentEmrBulkImport", "bulk import on an EMR cluster that runs always"))
    for stack in ("IngestBatcherStack", "PartitionSplittingStack", "GarbageCollectorStack", "QueryStack"):
        if stack in wanted or (stack == "QueryStack" and wanted & QUERY_STACKS):
            name, description = OPTIONAL[stack]
            if stack == "QueryStack" and "KeepLambdaWarmStack" in wanted:
                description += ", kept warm every 5 minutes"
            plan.append(PlannedStack(name, description))
    if "WebSocketQueryStack" in wanted:
        plan.append(PlannedStack(*OPTIONAL["WebSocketQueryStack"]))
    if "BulkExportStack" in wanted:  # after the query stack, whose tracker table tracks exports
        plan.append(PlannedStack(*OPTIONAL["BulkExportStack"]))
    for stack in ("TableMetricsStack", "AthenaStack", "RestApiStack"):
        if stack in wanted:
            plan.append(PlannedStack(*OPTIONAL[stack]))
    plan.append(PlannedStack("IcebergViews", "publishing tables that name an Iceberg view, on a schedule"))
    unclaimed = unclaimed_operations()
    if unclaimed:  # before the policies and alarms, which cover every queue and function built before them
        plan.append(PlannedStack(QUEUE_OPERATIONS, "the operations no feature stack deploys: " + ", ".join(unclaimed)))
    plan.append(PlannedStack("ManagedPolicies", "the ingest, query and admin managed policies"))
    plan.append(PlannedStack("TableDefiner", "creates the configuration's tables at deployment and keeps them"))
    plan.append(PlannedStack("Alarms", "alarms on function errors and throttles, work queue ages and failed tasks"))
    if "DashboardStack" in wanted:
        plan.append(PlannedStack(*OPTIONAL["DashboardStack"]))
    return plan
