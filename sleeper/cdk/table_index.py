"""The table index: tables by name, by id, and by online status sorted by name."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk.common import SleeperCore
from sleeper.cdk.tables import S, table
from sleeper.core import naming
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_common as common


class TableIndexStack(cdk.NestedStack):
    """``sleeper-<id>-table-index-by-name`` / ``-by-id`` / ``-by-online``."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper table index")
        ctx = core.ctx
        pitr = ctx.get_bool(common.TABLE_INDEX_DYNAMO_POINT_IN_TIME_RECOVERY)
        self.by_name = table(
            self, "ByName", ctx, suffix=naming.INDEX_BY_NAME, hash_key=("TableName", S), point_in_time_recovery=pitr
        )
        self.by_id = table(
            self, "ById", ctx, suffix=naming.INDEX_BY_ID, hash_key=("TableId", S), point_in_time_recovery=pitr
        )
        self.by_online = table(
            self,
            "ByOnline",
            ctx,
            suffix=naming.INDEX_BY_ONLINE,
            hash_key=("Online", S),
            range_key=("TableName", S),
            point_in_time_recovery=pitr,
        )
        core.index_by_name, core.index_by_id, core.index_by_online = self.by_name, self.by_id, self.by_online
        core.set(cdkp.TABLE_NAME_INDEX_DYNAMO_TABLENAME, self.by_name.table_name)
        core.set(cdkp.TABLE_ID_INDEX_DYNAMO_TABLENAME, self.by_id.table_name)
        core.set(cdkp.TABLE_ONLINE_INDEX_DYNAMO_TABLENAME, self.by_online.table_name)
