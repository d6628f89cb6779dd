"""Job and task trackers of ingest and compaction: updates, lookup and task status tables."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore
from sleeper.cdk.tables import N, S, table
from sleeper.core import naming

EXPIRY = "ExpiryDate"


class TrackerStack(cdk.NestedStack):
    """``sleeper-<id>-{ingest,compaction}-job-updates`` / ``-job-lookup`` / ``-task-status`` (TTL ``ExpiryDate``)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper job and task trackers")
        ctx = core.ctx
        self.ingest = self._tracker(core, "Ingest", naming.INGEST_JOB_UPDATES, naming.INGEST_JOB_LOOKUP,
                                    naming.INGEST_TASK_STATUS, validation_index=True)  # fmt: skip
        self.compaction = self._tracker(core, "Compaction", naming.COMPACTION_JOB_UPDATES,
                                        naming.COMPACTION_JOB_LOOKUP, naming.COMPACTION_TASK_STATUS)  # fmt: skip
        core.ingest_tracker_tables = self.ingest
        core.compaction_tracker_tables = self.compaction
        del ctx

    def _tracker(
        self, core: SleeperCore, kind: str, updates: str, lookup: str, tasks: str, *, validation_index: bool = False
    ) -> tuple[dynamodb.Table, dynamodb.Table, dynamodb.Table]:
        ctx = core.ctx
        updates_table = table(self, f"{kind}JobUpdates", ctx, suffix=updates, hash_key=("TableId", S),
                              range_key=("JobIdAndUpdate", S), time_to_live=EXPIRY)  # fmt: skip
        lookup_table = table(self, f"{kind}JobLookup", ctx, suffix=lookup, hash_key=("JobId", S), time_to_live=EXPIRY)
        if validation_index:
            lookup_table.add_global_secondary_index(
                index_name="by-validation",
                partition_key=dynamodb.Attribute(name="LastValidationResult", type=S),
                projection_type=dynamodb.ProjectionType.KEYS_ONLY,
            )
            grants.mark_indexed(lookup_table, ctx.table_name(lookup))
        task_table = table(self, f"{kind}TaskStatus", ctx, suffix=tasks, hash_key=("TaskId", S),
                           range_key=("UpdateTime", N), time_to_live=EXPIRY)  # fmt: skip
        return updates_table, lookup_table, task_table
