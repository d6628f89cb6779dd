"""The instance stack: one CloudFormation stack per Sleeper instance, composing the core and optional stacks as
nested stacks, then writing ``instance.properties`` to the config bucket."""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_s3 as s3
from constructs import Construct

from sleeper.cdk import nag
from sleeper.cdk.alarms import AlarmsStack
from sleeper.cdk.artefacts import Images
from sleeper.cdk.athena import AthenaStack
from sleeper.cdk.bulk_export import BulkExportStack
from sleeper.cdk.bulk_import import (
    BulkImportBucketStack,
    CommonEmrBulkImportStack,
    EmrBulkImportStack,
    EmrServerlessBulkImportStack,
)
from sleeper.cdk.committer import StateStoreCommitterStack
from sleeper.cdk.common import SleeperCore
from sleeper.cdk.compaction import CompactionStack
from sleeper.cdk.context import FEATURE_FLAGS, DeployContext
from sleeper.cdk.dashboard import DashboardStack
from sleeper.cdk.eks_bulk_import import EksBulkImportStack
from sleeper.cdk.gc import GarbageCollectorStack
from sleeper.cdk.iceberg import IcebergViewsStack
from sleeper.cdk.ingest import IngestStack
from sleeper.cdk.ingest_batcher import IngestBatcherStack
from sleeper.cdk.monitoring import ConfigBucketStack, MonitoringStack, TableDataStack
from sleeper.cdk.networking import NetworkingStack, use_existing_vpc
from sleeper.cdk.operations import QueueOperationsStack, unclaimed_operations
from sleeper.cdk.persistent_emr import PersistentEmrBulkImportStack
from sleeper.cdk.policies import ManagedPoliciesStack
from sleeper.cdk.properties import InstancePropertiesWriter
from sleeper.cdk.query import QueryStack
from sleeper.cdk.rest_api import RestApiStack
from sleeper.cdk.splitting import PartitionSplittingStack
from sleeper.cdk.state_store import StateStoreStack, StateStoreUpkeepStack
from sleeper.cdk.table_definer import TableDefinerStack
from sleeper.cdk.table_index import TableIndexStack
from sleeper.cdk.table_metrics import TableMetricsStack
from sleeper.cdk.trackers import TrackerStack
from sleeper.cdk.websocket_query import WebSocketQueryStack
from sleeper.core.deploy import (
    EMR_STACKS,
    NEEDS_VPC,
    QUEUE_OPERATIONS,
    SUPPORTED_OPTIONAL_STACKS,
    ignored_optional_stacks,
    planned_stacks,
)

__all__ = [
    "EMR_STACKS",
    "NEEDS_VPC",
    "QUEUE_OPERATIONS",
    "SUPPORTED_OPTIONAL_STACKS",
    "OptionalStacksError",
    "SleeperInstanceStack",
    "check_optional_stacks",
]


AFTER_PROPERTIES = frozenset({"TableDefiner"})
"""Nested stacks deployed after ``instance.properties`` is written (the table definer reads it); the properties
writer waits for every other one, whose resource names and URLs it records."""


class OptionalStacksError(ValueError):
    """``sleeper.optional.stacks`` names a stack without another it needs."""


def check_optional_stacks(wanted: frozenset[str]) -> None:
    """Refuses optional stacks that cannot be deployed as asked.

    Raises:
        OptionalStacksError: If ``BulkExportStack`` is wanted without the query stack (exports are tracked in its
            query tracker table).
    """
    if "BulkExportStack" in wanted and not wanted & {"QueryStack", "WebSocketQueryStack"}:
        raise OptionalStacksError(
            "sleeper.optional.stacks names BulkExportStack without QueryStack: bulk exports are tracked in the query "
            "tracker, which QueryStack deploys; add QueryStack"
        )


class SleeperInstanceStack(cdk.Stack):
    """Every resource of one Sleeper instance.

    Attributes:
        core: The shared resources and the deployment-set properties.
        parts: The nested stacks by name (e.g. ``"ConfigBucket"``, ``"Compaction"``).
    """

    def __init__(self, scope: Construct, construct_id: str, ctx: DeployContext, **kwargs: object) -> None:
        super().__init__(scope, construct_id, description=f"Sleeper instance {ctx.instance_id}", **kwargs)  # type: ignore[arg-type]
        for flag, enabled in FEATURE_FLAGS.items():  # before any child: the stacks' constructs read them
            if self.node.try_get_context(flag) is None:
                self.node.set_context(flag, enabled)
        self.core = core = SleeperCore(ctx=ctx, images=Images(ctx))
        self.parts: dict[str, cdk.NestedStack] = {}
        check_optional_stacks(ctx.optional_stacks)
        for name in ignored_optional_stacks(ctx.properties):
            cdk.Annotations.of(self).add_warning_v2(
                f"sleeper:unsupported-stack:{name}", f"{name} is not deployed by this port; it is ignored"
            )
        if ctx.optional_stacks & NEEDS_VPC:
            use_existing_vpc(self, core)  # sleeper.vpc given: no Networking stack is planned
        builders = self._builders()
        for planned in planned_stacks(ctx.properties, ctx.tables):
            self.parts[planned.name] = builders[planned.name]()
        policies = self.parts["ManagedPolicies"]
        assert isinstance(policies, ManagedPoliciesStack)
        websocket = self.parts.get("WebSocketQuery")
        if isinstance(websocket, WebSocketQueryStack):
            websocket.grant_connect(policies.query)
        for name, policy in (
            ("Ingest", policies.ingest),
            ("Query", policies.query),
            ("DirectQuery", policies.direct_query),
            ("Admin", policies.admin),
        ):
            cdk.CfnOutput(self, f"{name}PolicyArn", value=policy.managed_policy_arn)
        cdk.CfnOutput(self, "ConfigBucketName", value=core.config.bucket_name)
        self.properties_writer = InstancePropertiesWriter(self, "InstanceProperties", core)
        for name, nested in self.parts.items():
            if name in AFTER_PROPERTIES:
                nested.node.add_dependency(self.properties_writer)
            else:
                self.properties_writer.node.add_dependency(nested)
        if ctx.deploy_paused:
            for rule in core.rules:
                cfn = rule.node.default_child
                assert isinstance(cfn, events.CfnRule)
                cfn.state = "DISABLED"
        nag.acknowledge(self, "IAM5", nag.IAM5_RESOURCES)

    def _builders(self) -> dict[str, Callable[[], cdk.NestedStack]]:
        """How each nested stack of the plan is built (``sleeper.core.deploy.plan`` decides which are)."""
        core = self.core
        wanted = core.ctx.optional_stacks
        parts = self.parts

        def bucket() -> s3.IBucket:
            stack = parts["BulkImportBucket"]
            assert isinstance(stack, BulkImportBucketStack)
            return stack.bucket

        def alarms() -> AlarmsStack:
            stack = parts["Alarms"]
            assert isinstance(stack, AlarmsStack)
            return stack

        def query() -> QueryStack:
            stack = parts["Query"]
            assert isinstance(stack, QueryStack)
            return stack

        def common_emr() -> CommonEmrBulkImportStack:
            stack = parts["CommonEmrBulkImport"]
            assert isinstance(stack, CommonEmrBulkImportStack)
            return stack

        return {
            "Monitoring": lambda: MonitoringStack(self, "Monitoring", core),
            "ConfigBucket": lambda: ConfigBucketStack(self, "ConfigBucket", core),
            "TableData": lambda: TableDataStack(self, "TableData", core),
            "TableIndex": lambda: TableIndexStack(self, "TableIndex", core),
            "StateStore": lambda: StateStoreStack(self, "StateStore", core),
            "Trackers": lambda: TrackerStack(self, "Trackers", core),
            "StateStoreCommitter": lambda: StateStoreCommitterStack(self, "StateStoreCommitter", core),
            "StateStoreUpkeep": lambda: StateStoreUpkeepStack(self, "StateStoreUpkeep", core),
            "Networking": lambda: NetworkingStack(self, "Networking", core),
            "Compaction": lambda: CompactionStack(self, "Compaction", core),
            "Ingest": lambda: IngestStack(self, "Ingest", core),
            "BulkImportBucket": lambda: BulkImportBucketStack(self, "BulkImportBucket", core),
            "EksBulkImport": lambda: EksBulkImportStack(self, "EksBulkImport", core, bucket()),
            "EmrServerlessBulkImport": lambda: EmrServerlessBulkImportStack(
                self, "EmrServerlessBulkImport", core, bucket()
            ),
            "CommonEmrBulkImport": lambda: CommonEmrBulkImportStack(self, "CommonEmrBulkImport", core, bucket()),
            "EmrBulkImport": lambda: EmrBulkImportStack(self, "EmrBulkImport", core, bucket(), common_emr()),
            "PersistentEmrBulkImport": lambda: PersistentEmrBulkImportStack(
                self, "PersistentEmrBulkImport", core, bucket(), common_emr()
            ),
            "IngestBatcher": lambda: IngestBatcherStack(self, "IngestBatcher", core),
            "PartitionSplitting": lambda: PartitionSplittingStack(self, "PartitionSplitting", core),
            "GarbageCollector": lambda: GarbageCollectorStack(self, "GarbageCollector", core),
            "Query": lambda: QueryStack(self, "Query", core, keep_warm="KeepLambdaWarmStack" in wanted),
            "WebSocketQuery": lambda: WebSocketQueryStack(self, "WebSocketQuery", core, query()),
            "BulkExport": lambda: BulkExportStack(self, "BulkExport", core),
            "TableMetrics": lambda: TableMetricsStack(self, "TableMetrics", core),
            "Athena": lambda: AthenaStack(self, "Athena", core),
            "RestApi": lambda: RestApiStack(self, "RestApi", core),
            "IcebergViews": lambda: IcebergViewsStack(self, "IcebergViews", core),
            QUEUE_OPERATIONS: lambda: QueueOperationsStack(self, QUEUE_OPERATIONS, core, unclaimed_operations()),
            "ManagedPolicies": lambda: ManagedPoliciesStack(self, "ManagedPolicies", core),
            "TableDefiner": lambda: TableDefinerStack(self, "TableDefiner", core),
            "Alarms": lambda: AlarmsStack(self, "Alarms", core),
            "Dashboard": lambda: DashboardStack(self, "Dashboard", core, alarms().watched),
        }
