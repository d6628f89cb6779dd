"""Table metrics: every minute per online table, publish file and row counts to CloudWatch."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, per_table_schedule
from sleeper.core import operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_common as common


class TableMetricsStack(cdk.NestedStack):
    """``sleeper-<id>-MetricsJobQ.fifo`` fed by ``<id>-MetricsPublishRule``, and the metrics publisher."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["TableMetrics"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper table metrics")
        ctx = core.ctx
        self.schedule = per_table_schedule(
            self,
            core,
            prefix="Metrics",
            rule_property=cdkp.TABLE_METRICS_RULE,
            trigger_handler=operations.TABLE_METRICS_TRIGGER,
            trigger_suffix="metrics-trigger",
            handler=operations.TABLE_METRICS,
            handler_suffix="metrics-publisher",
            description="publish table metrics",
            batch_size=ctx.get_int(common.METRICS_TABLE_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(common.METRICS_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(common.METRICS_LAMBDA_CONCURRENCY_RESERVED),
            trigger_property=cdkp.TABLE_METRICS_LAMBDA_FUNCTION,
        )
        publisher = self.schedule.handler
        core.grant_table_state_read(publisher)
        # PutMetricData supports no resource-level permissions; the namespace is pinned by condition.
        grants.allow(
            publisher,
            ["cloudwatch:PutMetricData"],
            ["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": ctx.get(common.METRICS_NAMESPACE) or "Sleeper"}},
        )
