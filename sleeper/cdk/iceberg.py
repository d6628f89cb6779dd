"""Iceberg views (beyond Sleeper): every ``sleeper.iceberg.publish.period.minutes`` per online table, publish the
tables naming a view (``sleeper.table.iceberg.name``) as a new snapshot in the Glue Data Catalog."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, per_table_schedule
from sleeper.core import operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp

GLUE_ACTIONS = (
    "glue:GetDatabase",
    "glue:CreateDatabase",
    "glue:GetTable",
    "glue:CreateTable",
    "glue:UpdateTable",
    "glue:DeleteTable",
)
"""What the publisher does in the Glue Data Catalog: find or create a view's database and table, point the table
at each new ``metadata.json`` (pyiceberg's Glue catalog), and drop the view of a table that gained filters,
aggregations or an iterator (``sleeper.iceberg.withdrawal``)."""


class IcebergViewsStack(cdk.NestedStack):
    """``sleeper-<id>-IcebergPublishQ.fifo`` fed by ``<id>-IcebergPublishRule``, and the publisher."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["IcebergViews"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper Iceberg views")
        self.schedule = per_table_schedule(
            self,
            core,
            prefix="IcebergPublish",
            rule_property=cdkp.ICEBERG_PUBLISH_RULE,
            trigger_handler=operations.ICEBERG_PUBLISH_TRIGGER,
            trigger_suffix="iceberg-publish-trigger",
            handler=operations.ICEBERG_PUBLISH,
            handler_suffix="iceberg-publisher",
            description="publish Iceberg views",
        )
        publisher = self.schedule.handler
        core.grant_table_state_read(publisher)
        grants.bucket_read(publisher, core.data, [grants.DATA_PREFIX])
        grants.bucket_read_write(publisher, core.data, [grants.ICEBERG_PREFIX])
        grants.bucket_delete(publisher, core.data, [grants.ICEBERG_PREFIX])
        region, account, partition = cdk.Aws.REGION, cdk.Aws.ACCOUNT_ID, cdk.Aws.PARTITION
        glue = f"arn:{partition}:glue:{region}:{account}"
        # Views are named by a table property, so only known at run time: any database and table in the catalog.
        grants.allow(publisher, GLUE_ACTIONS, [f"{glue}:catalog", f"{glue}:database/*", f"{glue}:table/*/*"])
