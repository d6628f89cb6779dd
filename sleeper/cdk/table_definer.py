"""``TableDefiner``: the tables of a deployed configuration (``-c configurationDir=DIR``), created at deployment and
kept on redeploys by a custom resource backed by the table definer function (``sleeper/lambdas/table_definer.py``).

The tables travel in the resource's properties, so CloudFormation calls the function only when they change; the
function then creates the tables that do not exist and updates the properties of those that do
(:mod:`sleeper.runtime.table_definer`). It runs after ``instance.properties`` is written, which it reads.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore
from sleeper.core import naming, operations

MAX_TABLES_JSON_BYTES = 200_000
"""The tables travel in the template (at most 1 MB for a nested stack); beyond this, create the tables (or the
split points) with ``sleeper table create`` after the deployment instead."""


class TableDefinerStack(cdk.NestedStack):
    """``sleeper-<cid>-table-definer`` and the ``Custom::SleeperTables`` resource holding the configuration's tables."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper tables of the deployed configuration")
        ctx = core.ctx
        tables = json.dumps([t.to_json() for t in ctx.tables], sort_keys=True, separators=(",", ":"))
        if len(tables.encode("utf-8")) > MAX_TABLES_JSON_BYTES:
            raise ValueError(
                f"the configuration's tables take {len(tables)} bytes (split points included), over the "
                f"{MAX_TABLES_JSON_BYTES} a deployment can carry: deploy fewer split points and create those tables "
                "with 'sleeper table create --splits FILE' after the deployment"
            )
        self.function = core.lambdas.function(
            self,
            "TableDefiner",
            handler=operations.TABLE_DEFINER,
            name_suffix=naming.TABLE_DEFINER_FUNCTION,
            description="Creates the tables of the deployed configuration and keeps them on redeploys",
        )
        # Create a table: read the instance, write its properties, index it and initialise its partitions.
        core.grant_table_state_commit(self.function)
        grants.table_read_write(self.function, *core.table_index_tables)
        grants.bucket_write(self.function, core.config, ["tables/*"])
        self.resource = cdk.CustomResource(
            self,
            "Tables",
            service_token=self.function.function_arn,
            resource_type="Custom::SleeperTables",
            properties={"Tables": tables},
        )
