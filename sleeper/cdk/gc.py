"""Garbage collection: every 15 minutes per online table, delete unreferenced files after a delay."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, per_table_schedule
from sleeper.core import operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_compaction as cp


class GarbageCollectorStack(cdk.NestedStack):
    """``sleeper-<id>-GCJobQ.fifo`` fed by ``<id>-GarbageCollectorPeriodicTrigger``, and the garbage collector."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["GarbageCollector"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper garbage collector")
        ctx = core.ctx
        self.schedule = per_table_schedule(
            self,
            core,
            prefix="GarbageCollector",
            rule_property=cdkp.GARBAGE_COLLECTOR_CLOUDWATCH_RULE,
            trigger_handler=operations.GARBAGE_COLLECTOR_TRIGGER,
            trigger_suffix="garbage-collector-trigger",
            handler=operations.GARBAGE_COLLECTOR,
            handler_suffix="garbage-collector",
            description="collect garbage",
            batch_size=ctx.get_int(cp.GARBAGE_COLLECTOR_TABLE_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(cp.GARBAGE_COLLECTOR_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(cp.GARBAGE_COLLECTOR_LAMBDA_CONCURRENCY_RESERVED),
            handler_property=cdkp.GARBAGE_COLLECTOR_LAMBDA_FUNCTION,
        )
        collector = self.schedule.handler
        core.grant_table_state_commit(collector)
        grants.bucket_delete(collector, core.data, [grants.DATA_PREFIX])
        # The holds a table's Iceberg view keeps on files it lists (sleeper.core.held_files): never deleted while held.
        grants.bucket_read(collector, core.data, [grants.HOLDS_PREFIX])
