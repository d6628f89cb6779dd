"""Athena: the spill bucket (objects expire), a Lambda function per connector named in
``sleeper.athena.handler.classes``, and an Athena data catalog of type LAMBDA for each, so users query Sleeper tables
with SQL as ``"<catalog>"."<instance id>"."<table>"``."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_athena as athena
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, secure_bucket
from sleeper.core import naming, operations
from sleeper.core.properties import instance_query as qp

SIMPLE_CLASS = "sleeper.athena.composite.SimpleCompositeHandler"
ITERATOR_APPLYING_CLASS = "sleeper.athena.composite.IteratorApplyingCompositeHandler"

CONNECTORS = {
    SIMPLE_CLASS: (operations.ATHENA_SIMPLE, "Simple", "simple-athena-connector"),
    ITERATOR_APPLYING_CLASS: (operations.ATHENA_ITERATOR_APPLYING, "IteratorApplying", "iterator-athena-connector"),
}
"""Sleeper's handler class name -> (registry handler, catalog name part, function name suffix)."""

SPILL_PREFIX = "athena-federation-spill"


def catalog_name(instance_id: str, kind: str) -> str:
    """The Athena data catalog of a connector: ``<instance id><Kind>SleeperConnector`` (as Sleeper names them)."""
    return f"{instance_id}{kind}SleeperConnector"


class AthenaStack(cdk.NestedStack):
    """``sleeper-<cid>-spill-<account>``, the connector functions and their data catalogs.

    Attributes:
        spill_bucket: Where reads spill results too large for a Lambda response.
        functions: The connector functions by Sleeper's handler class name.
        catalogs: The data catalogs by Sleeper's handler class name.
    """

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper Athena connectors")
        ctx = core.ctx
        key_arn = ctx.get(qp.ATHENA_SPILL_MASTER_KEY_ARN)
        spill_key = kms.Key.from_key_arn(self, "SpillKey", key_arn) if key_arn else None
        self.spill_bucket = secure_bucket(
            self,
            "SpillBucket",
            ctx,
            name=naming.bucket_name(ctx.instance_id, naming.ATHENA_SPILL_BUCKET, ctx.account),
            access_logs=core.access_logs_bucket,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            expiry_days=ctx.get_int(qp.SPILL_BUCKET_AGE_OFF_IN_DAYS),
            encryption_key=spill_key,
        )
        self.functions: dict[str, lambda_.IFunction] = {}
        self.catalogs: dict[str, athena.CfnDataCatalog] = {}
        wanted = [c.strip() for c in ctx.get_list(qp.ATHENA_COMPOSITE_HANDLER_CLASSES) if c.strip()]
        for class_name in wanted:
            if class_name not in CONNECTORS:
                cdk.Annotations.of(self).add_warning_v2(
                    "sleeper:unknown-athena-handler", f"{class_name} is not one of {sorted(CONNECTORS)}; ignored"
                )
                continue
            handler, kind, suffix = CONNECTORS[class_name]
            function = core.lambdas.function(
                self,
                f"{kind}Connector",
                handler=handler,
                name_suffix=suffix,
                description=f"Athena connector ({kind}) over the Sleeper tables of {ctx.instance_id}",
                memory_mb=ctx.get_int(qp.ATHENA_COMPOSITE_HANDLER_MEMORY),
                timeout_seconds=ctx.get_int(qp.ATHENA_COMPOSITE_HANDLER_TIMEOUT_IN_SECONDS),
                environment={"spill_bucket": self.spill_bucket.bucket_name, "spill_prefix": SPILL_PREFIX},
            )
            core.grant_table_state_read(function)
            grants.bucket_read(function, core.data, [grants.DATA_PREFIX])
            grants.bucket_read_write(function, self.spill_bucket, [f"{SPILL_PREFIX}/*"])
            if spill_key is not None:
                spill_key.grant_encrypt_decrypt(function)
            self.functions[class_name] = function
            self.catalogs[class_name] = athena.CfnDataCatalog(
                self,
                f"{kind}Catalog",
                name=catalog_name(ctx.instance_id, kind),
                type="LAMBDA",
                description=f"Sleeper instance {ctx.instance_id} through the {kind} connector",
                parameters={"function": function.function_arn},
            )
