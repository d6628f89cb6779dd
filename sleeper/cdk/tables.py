"""DynamoDB tables with Sleeper's names and key schemas (on-demand billing)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from sleeper.cdk import nag
from sleeper.cdk.context import DeployContext

S = dynamodb.AttributeType.STRING
N = dynamodb.AttributeType.NUMBER


def table(
    scope: Construct,
    construct_id: str,
    ctx: DeployContext,
    *,
    suffix: str,
    hash_key: tuple[str, dynamodb.AttributeType],
    range_key: tuple[str, dynamodb.AttributeType] | None = None,
    point_in_time_recovery: bool = False,
    time_to_live: str | None = None,
    stream: dynamodb.StreamViewType | None = None,
    removal_policy: cdk.RemovalPolicy | None = None,
) -> dynamodb.Table:
    """A table named ``sleeper-<id>-<suffix>``."""
    created = dynamodb.Table(
        scope,
        construct_id,
        table_name=ctx.table_name(suffix),
        partition_key=dynamodb.Attribute(name=hash_key[0], type=hash_key[1]),
        sort_key=dynamodb.Attribute(name=range_key[0], type=range_key[1]) if range_key else None,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=point_in_time_recovery
        ),
        time_to_live_attribute=time_to_live,
        stream=stream,
        removal_policy=removal_policy or ctx.removal_policy,
    )
    if not point_in_time_recovery:
        nag.acknowledge(created, "DDB3", nag.DDB3_BY_PROPERTY)
    return created
