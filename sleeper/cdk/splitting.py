"""Partition splitting: a per-table finder every 30 minutes and a splitter fed by split jobs."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, per_table_schedule, registered_queue, sqs_trigger
from sleeper.core import operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_compaction as cp


class PartitionSplittingStack(cdk.NestedStack):
    """``FindPartitionsToSplitQ.fifo`` (per table) and ``PartitionSplittingJobQueue`` with their functions."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["PartitionSplitting"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper partition splitting")
        ctx = core.ctx
        split_timeout = ctx.get_int(cp.SPLIT_PARTITIONS_TIMEOUT_IN_SECONDS)
        self.job_queue = registered_queue(
            self,
            "JobQueue",
            core,
            operations.PARTITION_SPLITTING_JOB_Q,
            visibility_timeout_seconds=max(split_timeout * 6, 30),
            alarm_description="Partitions could not be split",
        )
        self.finder = per_table_schedule(
            self,
            core,
            prefix="FindPartitions",
            rule_property=cdkp.PARTITION_SPLITTING_CLOUDWATCH_RULE,
            trigger_handler=operations.PARTITION_SPLITTING_TRIGGER,
            trigger_suffix="find-partitions-to-split-trigger",
            handler=operations.FIND_PARTITIONS_TO_SPLIT,
            handler_suffix="find-partitions-to-split",
            description="find partitions to split",
            batch_size=ctx.get_int(cp.FIND_PARTITIONS_TO_SPLIT_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(cp.FIND_PARTITIONS_TO_SPLIT_LAMBDA_CONCURRENCY_MAXIMUM),
            reserved_concurrency=ctx.get_optional_int(cp.FIND_PARTITIONS_TO_SPLIT_LAMBDA_CONCURRENCY_RESERVED),
            trigger_property=cdkp.PARTITION_SPLITTING_TRIGGER_LAMBDA_FUNCTION,
        )
        core.grant_table_state_read(self.finder.handler)
        grants.queue_send(self.finder.handler, self.job_queue.queue)

        self.splitter = core.lambdas.function(
            self,
            "Splitter",
            handler=operations.SPLIT_PARTITION,
            name_suffix="split-partition",
            description="Splits a partition at the median of its files' sketches",
            timeout_seconds=split_timeout,
            reserved_concurrency=ctx.get_optional_int(cp.SPLIT_PARTITIONS_RESERVED_CONCURRENCY),
        )
        core.grant_table_state_commit(self.splitter)
        grants.bucket_read(self.splitter, core.data, [grants.DATA_PREFIX])
        sqs_trigger(self.splitter, self.job_queue.queue)
