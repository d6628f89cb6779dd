"""The asynchronous state store committer: a FIFO queue grouped by table id feeding a Lambda."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, registered_queue, sqs_trigger
from sleeper.core import naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_common as common

COMMITTER_FUNCTION = "statestore-committer"
"""The suffix of the committer function's name."""


class StateStoreCommitterStack(cdk.NestedStack):
    """``sleeper-<id>-StateStoreCommitterQ.fifo`` -> ``sleeper-<cid>-statestore-committer`` (batch 10)."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["StateStoreCommitter"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper state store committer")
        ctx = core.ctx
        timeout = ctx.get_int(common.STATESTORE_COMMITTER_LAMBDA_TIMEOUT_IN_SECONDS)
        self.queue = registered_queue(
            self,
            "CommitterQueue",
            core,
            operations.STATE_STORE_COMMITTER_Q,
            visibility_timeout_seconds=timeout,
            alarm_description="State store commits failed",
        )
        core.committer_queue = self.queue.queue
        self.function = core.lambdas.function(
            self,
            "Committer",
            handler=operations.STATESTORE_COMMITTER,
            name_suffix=COMMITTER_FUNCTION,
            description="Applies asynchronous commits to the state stores of Sleeper tables",
            timeout_seconds=timeout,
            reserved_concurrency=ctx.get_int(common.STATESTORE_COMMITTER_LAMBDA_CONCURRENCY_RESERVED),
        )
        core.grant_table_state_read(self.function)
        if core.log_tables:  # none on an instance whose tables all keep their logs in S3
            grants.table_read_write(self.function, *core.log_tables)
        grants.table_read_write(self.function, *core.ingest_tracker_tables, *core.compaction_tracker_tables)
        sqs_trigger(
            self.function,
            self.queue.queue,
            batch_size=ctx.get_int(common.STATESTORE_COMMITTER_BATCH_SIZE),
            max_concurrency=ctx.get_optional_int(common.STATESTORE_COMMITTER_LAMBDA_CONCURRENCY_MAXIMUM),
        )
        core.set(cdkp.STATESTORE_COMMITTER_LOG_GROUP, naming.log_group_name(ctx.function_name(COMMITTER_FUNCTION)))
