"""The instance stack: one CloudFormation stack per Sleeper instance, composing the core and optional stacks as
nested stacks, then writing ``instance.properties`` to the config bucket."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from stacks import nag
from stacks.artefacts import Images
from stacks.athena import AthenaStack
from stacks.bulk_export import BulkExportStack
from stacks.bulk_import import (
    BulkImportBucketStack,
    CommonEmrBulkImportStack,
    EmrBulkImportStack,
    EmrServerlessBulkImportStack,
)
from stacks.committer import StateStoreCommitterStack
from stacks.common import SleeperCore
from stacks.compaction import CompactionStack
from stacks.eks_bulk_import import EksBulkImportStack
from stacks.context import DeployContext
from stacks.gc import GarbageCollectorStack
from stacks.ingest import IngestStack
from stacks.ingest_batcher import IngestBatcherStack
from stacks.monitoring import ConfigBucketStack, MonitoringStack, TableDataStack
from stacks.networking import NetworkingStack, use_existing_vpc
from stacks.persistent_emr import PersistentEmrBulkImportStack
from stacks.policies import ManagedPoliciesStack
from stacks.properties import InstancePropertiesWriter
from stacks.query import QueryStack
from stacks.splitting import PartitionSplittingStack
from stacks.state_store import StateStoreStack, StateStoreUpkeepStack
from stacks.table_index import TableIndexStack
from stacks.table_metrics import TableMetricsStack
from stacks.trackers import TrackerStack
from stacks.rest_api import RestApiStack
from stacks.websocket_query import WebSocketQueryStack

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
EMR_STACKS = frozenset({"EmrBulkImportStack", "PersistentEmrBulkImportStack"})
"""Optional stacks running bulk import on EMR clusters, sharing their roles and security configuration."""
SUPPORTED_OPTIONAL_STACKS = frozenset(
    {
        "AthenaStack",
        "CompactionStack",
        "IngestStack",
        "IngestBatcherStack",
        "EmrServerlessBulkImportStack",
        "EmrBulkImportStack",
        "PersistentEmrBulkImportStack",
        "EksBulkImportStack",
        "QueryStack",
        "WebSocketQueryStack",
        "BulkExportStack",
        "KeepLambdaWarmStack",
        "GarbageCollectorStack",
        "PartitionSplittingStack",
        "TableMetricsStack",
        "RestApiStack",
    }
)
"""Optional stacks this port deploys; others named in ``sleeper.optional.stacks`` get a synth warning."""
QUERY_STACKS = frozenset({"QueryStack", "WebSocketQueryStack"})
"""Optional stacks deploying the query stack (its tracker table also tracks bulk exports)."""


class OptionalStacksError(ValueError):
    """``sleeper.optional.stacks`` names a stack without another it needs."""


def check_optional_stacks(wanted: frozenset[str]) -> None:
    """Refuses optional stacks that cannot be deployed as asked.

    Raises:
        OptionalStacksError: If ``BulkExportStack`` is wanted without the query stack (exports are tracked in its
            query tracker table).
    """
    if "BulkExportStack" in wanted and not wanted & QUERY_STACKS:
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
        self.core = core = SleeperCore(ctx=ctx, images=Images(ctx))
        self.parts: dict[str, cdk.NestedStack] = {}
        wanted = ctx.optional_stacks
        check_optional_stacks(wanted)
        for name in sorted(wanted - SUPPORTED_OPTIONAL_STACKS):
            cdk.Annotations.of(self).add_warning_v2(
                f"sleeper:unsupported-stack:{name}", f"{name} is not deployed by this port; it is ignored"
            )

        self._add("Monitoring", MonitoringStack(self, "Monitoring", core))
        self._add("ConfigBucket", ConfigBucketStack(self, "ConfigBucket", core))
        self._add("TableData", TableDataStack(self, "TableData", core))
        self._add("TableIndex", TableIndexStack(self, "TableIndex", core))
        self._add("StateStore", StateStoreStack(self, "StateStore", core))
        self._add("Trackers", TrackerStack(self, "Trackers", core))
        self._add("StateStoreCommitter", StateStoreCommitterStack(self, "StateStoreCommitter", core))
        self._add("StateStoreUpkeep", StateStoreUpkeepStack(self, "StateStoreUpkeep", core))
        if wanted & NEEDS_VPC and not use_existing_vpc(self, core):
            self._add("Networking", NetworkingStack(self, "Networking", core))
        self._optional(wanted)
        self.properties_writer = InstancePropertiesWriter(self, "InstanceProperties", core)
        for nested in self.parts.values():
            self.properties_writer.node.add_dependency(nested)
        nag.acknowledge(self, "IAM5", nag.IAM5_RESOURCES)

    def _add(self, name: str, stack: cdk.NestedStack) -> None:
        self.parts[name] = stack

    def _optional(self, wanted: frozenset[str]) -> None:
        core = self.core
        if "CompactionStack" in wanted:
            self._add("Compaction", CompactionStack(self, "Compaction", core))
        if "IngestStack" in wanted:
            self._add("Ingest", IngestStack(self, "Ingest", core))
        if wanted & (EMR_STACKS | {"EmrServerlessBulkImportStack", "EksBulkImportStack"}):
            self._bulk_import(wanted)
        if "IngestBatcherStack" in wanted:
            self._add("IngestBatcher", IngestBatcherStack(self, "IngestBatcher", core))
        if "PartitionSplittingStack" in wanted:
            self._add("PartitionSplitting", PartitionSplittingStack(self, "PartitionSplitting", core))
        if "GarbageCollectorStack" in wanted:
            self._add("GarbageCollector", GarbageCollectorStack(self, "GarbageCollector", core))
        websocket = None
        if wanted & QUERY_STACKS:  # the WebSocket API needs the query stack, as in Sleeper
            stack = QueryStack(self, "Query", core, keep_warm="KeepLambdaWarmStack" in wanted)
            self._add("Query", stack)
            if "WebSocketQueryStack" in wanted:
                websocket = WebSocketQueryStack(self, "WebSocketQuery", core, stack)
                self._add("WebSocketQuery", websocket)
        if "BulkExportStack" in wanted:  # after the query stack, whose tracker table it uses
            self._add("BulkExport", BulkExportStack(self, "BulkExport", core))
        if "TableMetricsStack" in wanted:
            self._add("TableMetrics", TableMetricsStack(self, "TableMetrics", core))
        if "AthenaStack" in wanted:
            self._add("Athena", AthenaStack(self, "Athena", core))
        if "RestApiStack" in wanted:
            self._add("RestApi", RestApiStack(self, "RestApi", core))
        policies = ManagedPoliciesStack(self, "ManagedPolicies", core)
        self._add("ManagedPolicies", policies)
        if websocket is not None:
            websocket.grant_connect(policies.query)
        for name, policy in (("Ingest", policies.ingest), ("Query", policies.query), ("Admin", policies.admin)):
            cdk.CfnOutput(self, f"{name}PolicyArn", value=policy.managed_policy_arn)
        cdk.CfnOutput(self, "ConfigBucketName", value=core.config.bucket_name)

    def _bulk_import(self, wanted: frozenset[str]) -> None:
        """The bulk import bucket, then each wanted bulk import platform (the EMR ones on their shared roles)."""
        core = self.core
        bucket_stack = BulkImportBucketStack(self, "BulkImportBucket", core)
        self._add("BulkImportBucket", bucket_stack)
        bucket = bucket_stack.bucket
        if "EmrServerlessBulkImportStack" in wanted:
            self._add(
                "EmrServerlessBulkImport", EmrServerlessBulkImportStack(self, "EmrServerlessBulkImport", core, bucket)
            )
        if "EksBulkImportStack" in wanted:
            self._add("EksBulkImport", EksBulkImportStack(self, "EksBulkImport", core, bucket))
        if not wanted & EMR_STACKS:
            return
        common = CommonEmrBulkImportStack(self, "CommonEmrBulkImport", core, bucket)
        self._add("CommonEmrBulkImport", common)
        if "EmrBulkImportStack" in wanted:
            self._add("EmrBulkImport", EmrBulkImportStack(self, "EmrBulkImport", core, bucket, common))
        if "PersistentEmrBulkImportStack" in wanted:
            stack = PersistentEmrBulkImportStack(self, "PersistentEmrBulkImport", core, bucket, common)
            self._add("PersistentEmrBulkImport", stack)
