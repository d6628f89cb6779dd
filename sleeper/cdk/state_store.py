"""The transaction log state store: the log and snapshot tables shared by all Sleeper tables, snapshot
creation and cleanup on schedules with per-table FIFO queues, and the follower on the files log stream.

Beyond Sleeper, an instance whose tables all use ``S3TransactionLogStateStore`` (its default and every table of the
configuration: ``sleeper.core.deploy.plan.deploys_dynamodb_state_store``) has no DynamoDB log or snapshot tables: the
``StateStore`` stack is not planned, the upkeep functions are granted nothing on them, and there is no follower (there
is no stream to follow). The upkeep functions then work on the logs and snapshot records in the data bucket."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import SleeperCore, per_table_schedule
from sleeper.cdk.tables import N, S, table
from sleeper.core import naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_common as common


class StateStoreStack(cdk.NestedStack):
    """Transaction log tables (``sleeper-<id>-file-transaction-log`` and friends) and their upkeep."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper transaction log state store")
        ctx = core.ctx
        # The transaction logs are the only copy of each table's state: point-in-time recovery is on by default (a
        # deviation from Sleeper's default), for the logs and the snapshots alike; the property turns it off.
        pitr = ctx.get_bool(common.DYNAMO_STATE_STORE_POINT_IN_TIME_RECOVERY)
        log_keys = {"hash_key": ("TABLE_ID", S), "range_key": ("TRANSACTION_NUMBER", N)}
        self.files_log = table(
            self,
            "FilesLog",
            ctx,
            suffix=naming.FILES_LOG,
            point_in_time_recovery=pitr,
            stream=dynamodb.StreamViewType.NEW_IMAGE,
            **log_keys,  # type: ignore[arg-type]
        )
        self.partitions_log = table(
            self,
            "PartitionsLog",
            ctx,
            suffix=naming.PARTITIONS_LOG,
            point_in_time_recovery=pitr,
            **log_keys,  # type: ignore[arg-type]
        )
        self.latest_snapshots = table(
            self,
            "LatestSnapshots",
            ctx,
            suffix=naming.LATEST_SNAPSHOTS,
            hash_key=("TABLE_ID", S),
            point_in_time_recovery=pitr,
        )
        self.all_snapshots = table(
            self,
            "AllSnapshots",
            ctx,
            suffix=naming.ALL_SNAPSHOTS,
            hash_key=("TABLE_ID_AND_SNAPSHOT_TYPE", S),
            range_key=("TRANSACTION_NUMBER", N),
            point_in_time_recovery=pitr,
        )
        core.files_log, core.partitions_log = self.files_log, self.partitions_log
        core.latest_snapshots, core.all_snapshots = self.latest_snapshots, self.all_snapshots
        core.set(cdkp.TRANSACTION_LOG_FILES_TABLENAME, self.files_log.table_name)
        core.set(cdkp.TRANSACTION_LOG_PARTITIONS_TABLENAME, self.partitions_log.table_name)
        core.set(cdkp.TRANSACTION_LOG_LATEST_SNAPSHOTS_TABLENAME, self.latest_snapshots.table_name)
        core.set(cdkp.TRANSACTION_LOG_ALL_SNAPSHOTS_TABLENAME, self.all_snapshots.table_name)


class StateStoreUpkeepStack(cdk.NestedStack):
    """Snapshot creation (every 60 s), snapshot and transaction deletion (hourly) per online table, and the
    transaction log follower that updates job trackers from the files log stream."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["StateStoreUpkeep"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper transaction log snapshots and cleanup")
        ctx = core.ctx
        log_tables, snapshot_tables = core.log_tables, core.snapshot_tables  # none when no table uses DynamoDB
        creation_period = max(60, ctx.get_int(common.SNAPSHOT_CREATION_LAMBDA_PERIOD_IN_SECONDS))
        self.snapshot_creation = per_table_schedule(
            self,
            core,
            prefix="SnapshotCreation",
            period=cdk.Duration.seconds(creation_period),
            rule_property=cdkp.TRANSACTION_LOG_SNAPSHOT_CREATION_RULE,
            trigger_handler=operations.SNAPSHOT_CREATION_TRIGGER,
            trigger_suffix="state-snapshot-creation-trigger",
            handler=operations.SNAPSHOT_CREATION,
            handler_suffix="state-snapshot-creation",
            description="create transaction log snapshots",
            batch_size=ctx.get_int(common.SNAPSHOT_CREATION_BATCH_SIZE),
            max_concurrency=ctx.get_int(common.SNAPSHOT_CREATION_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(common.SNAPSHOT_CREATION_LAMBDA_CONCURRENCY_RESERVED),
        )
        creator = self.snapshot_creation.handler
        core.grant_table_state_read(creator)
        if snapshot_tables:
            grants.table_read_write(creator, *snapshot_tables)
        grants.bucket_write(creator, core.data, [grants.STATESTORE_PREFIX])

        self.snapshot_deletion = per_table_schedule(
            self,
            core,
            prefix="SnapshotDeletion",
            rule_property=cdkp.TRANSACTION_LOG_SNAPSHOT_DELETION_RULE,
            trigger_handler=operations.SNAPSHOT_DELETION_TRIGGER,
            trigger_suffix="state-snapshot-deletion-trigger",
            handler=operations.SNAPSHOT_DELETION,
            handler_suffix="state-snapshot-deletion",
            description="delete old transaction log snapshots",
            batch_size=ctx.get_int(common.SNAPSHOT_DELETION_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(common.SNAPSHOT_DELETION_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(common.SNAPSHOT_DELETION_LAMBDA_CONCURRENCY_RESERVED),
        )
        deleter = self.snapshot_deletion.handler
        grants.config_read(deleter, core.config)
        grants.table_read(deleter, *core.table_index_tables)
        if snapshot_tables:
            grants.table_read_write(deleter, *snapshot_tables)
        grants.bucket_read(deleter, core.data, [grants.STATESTORE_PREFIX])
        grants.bucket_delete(deleter, core.data, [grants.STATESTORE_PREFIX])

        self.transaction_deletion = per_table_schedule(
            self,
            core,
            prefix="TransactionDeletion",
            rule_property=cdkp.TRANSACTION_LOG_TRANSACTION_DELETION_RULE,
            trigger_handler=operations.TRANSACTION_DELETION_TRIGGER,
            trigger_suffix="state-transaction-deletion-trigger",
            handler=operations.TRANSACTION_DELETION,
            handler_suffix="state-transaction-deletion",
            description="delete old transaction log entries",
            batch_size=ctx.get_int(common.TRANSACTION_DELETION_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(common.TRANSACTION_DELETION_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(common.TRANSACTION_DELETION_LAMBDA_CONCURRENCY_RESERVED),
        )
        cleaner = self.transaction_deletion.handler
        grants.config_read(cleaner, core.config)
        grants.table_read(cleaner, *core.table_index_tables, *snapshot_tables[:1])  # the latest snapshots
        if log_tables:
            grants.table_read_write(cleaner, *log_tables)
        grants.bucket_read(cleaner, core.data, [grants.STATESTORE_PREFIX])
        grants.bucket_delete(cleaner, core.data, [grants.STATESTORE_PREFIX])

        self.follower: lambda_.Function | None = None
        if log_tables:
            self.follower = self._follower(core, files_log=log_tables[0])

    def _follower(self, core: SleeperCore, *, files_log: dynamodb.ITable) -> lambda_.Function:
        """The transaction log follower, fed by the files log's stream."""
        ctx = core.ctx
        follower = core.lambdas.function(
            self,
            "TransactionFollower",
            handler=operations.TRANSACTION_FOLLOWER,
            name_suffix="state-transaction-follower",
            description="Follows the files transaction log to update job trackers",
            reserved_concurrency=ctx.get_optional_int(common.TRANSACTION_FOLLOWER_LAMBDA_CONCURRENCY_RESERVED),
        )
        core.grant_table_state_read(follower)
        grants.table_read_write(follower, *core.ingest_tracker_tables, *core.compaction_tracker_tables)
        nag.acknowledge(follower.role, "IAM5[Resource::*]", nag.STREAM_EVENT_SOURCE)  # type: ignore[arg-type]
        follower.add_event_source(
            sources.DynamoEventSource(
                files_log,
                starting_position=lambda_.StartingPosition.LATEST,
                batch_size=100,
                retry_attempts=10,
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
            )
        )
        return follower
