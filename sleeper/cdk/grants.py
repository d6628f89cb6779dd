"""Least-privilege grants with explicit actions (never ``service:*`` or ``Get*``-style wildcards).

CDK's ``bucket.grant_read`` and friends use wildcard actions (``s3:GetObject*``, ``s3:List*``); these helpers name
each action and scope object access to the key prefixes a component uses. Object keys under a table id are
``<table id>/data/...``, ``<table id>/statestore/...``, ``<table id>/compactions/...``, so prefixes are
written as ``*/data/*`` and so on: the table id is only known at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from sleeper.cdk import nag

S3_READ = ("s3:GetObject",)
S3_WRITE = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
S3_DELETE = ("s3:DeleteObject",)
S3_LIST = ("s3:ListBucket", "s3:GetBucketLocation")

DYNAMO_READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:DescribeTable")
DYNAMO_WRITE = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
)

SQS_SEND = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
SQS_CONSUME = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
)
SQS_ATTRIBUTES = ("sqs:GetQueueAttributes", "sqs:GetQueueUrl")

CONFIG_PREFIXES = ("instance.properties", "tables/*")
DATA_PREFIX = "*/data/*"
STATESTORE_PREFIX = "*/statestore/*"
COMPACTIONS_PREFIX = "*/compactions/*"
ICEBERG_PREFIX = "*/iceberg/*"
"""A table's Iceberg view (beyond Sleeper): its metadata, trimmed copies and the holds the garbage collector reads."""
HOLDS_PREFIX = "*/iceberg/holds/*"
TABLE_DELETE_PREFIXES = (DATA_PREFIX, STATESTORE_PREFIX, COMPACTIONS_PREFIX, ICEBERG_PREFIX, "*/")
"""What deleting or reinitialising a table removes from the data bucket: data files, state store objects (snapshots,
large transaction bodies), compaction job batches, its Iceberg view's files, and the directory marker ``<table id>/``
a prefix delete removes; nothing else there (``for_ingest/`` and other objects in the bucket's root)."""
FOR_INGEST_PREFIX = "for_ingest/*"


_PSEUDO = (
    (cdk.Aws.PARTITION, "<AWS::Partition>"),
    (cdk.Aws.REGION, "<AWS::Region>"),
    (cdk.Aws.ACCOUNT_ID, "<AWS::AccountId>"),
    (cdk.Aws.URL_SUFFIX, "<AWS::URLSuffix>"),
)
_BUCKET_NAMES: dict[str, str] = {}
_INDEXED: dict[str, str] = {}


def shown(value: str) -> str:
    """A resource as cdk-nag shows it in finding ids (pseudo parameters as ``<AWS::...>``)."""
    for token, text in _PSEUDO:
        value = value.replace(token, text)
    return value


def allow(
    grantee: iam.IGrantable,
    actions: Sequence[str],
    resources: Sequence[str],
    *,
    conditions: Mapping[str, Mapping[str, Any]] | None = None,
    reason: str = nag.IAM5_RESOURCES,
) -> None:
    """Allows explicit actions on resources.

    Resource wildcards (object keys under a prefix, index ARNs, "*" for calls without resource-level permissions)
    are acknowledged for cdk-nag on the grantee, one finding at a time, with the reason given.
    """
    iam.Grant.add_to_principal(
        grantee=grantee, actions=list(actions), resource_arns=list(resources), conditions=conditions
    )
    scope = _scope(grantee)
    for resource in resources:
        text = shown(resource)
        if "*" in text and not cdk.Token.is_unresolved(text) and scope is not None:
            nag.acknowledge(scope, f"IAM5[Resource::{text}]", reason)


def _scope(grantee: iam.IGrantable) -> IConstruct | None:
    if isinstance(grantee, iam.ManagedPolicy):
        return grantee
    principal = grantee.grant_principal
    return principal if isinstance(principal, iam.Role) else None


def register_bucket(bucket: s3.IBucket, name: str) -> None:
    """Records a bucket's name so grants name its ARN directly (no cross-stack reference, a stable finding id)."""
    _BUCKET_NAMES[bucket.node.path] = name


def bucket_arn(bucket: s3.IBucket) -> str:
    """The ARN of a bucket, from its name when registered."""
    name = _BUCKET_NAMES.get(bucket.node.path)
    return f"arn:{cdk.Aws.PARTITION}:s3:::{name}" if name else bucket.bucket_arn


def objects(bucket: s3.IBucket, prefixes: Sequence[str]) -> list[str]:
    """The ARNs of the objects under key prefixes (patterns) of a bucket."""
    return [f"{bucket_arn(bucket)}/{prefix}" for prefix in prefixes]


def bucket_read(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str] = ("*",)) -> None:
    """List the bucket and read objects under the prefixes."""
    allow(grantee, S3_LIST, [bucket_arn(bucket)])
    allow(grantee, S3_READ, objects(bucket, prefixes))


def bucket_write(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str] = ("*",)) -> None:
    """Write (including multipart uploads) objects under the prefixes."""
    allow(grantee, S3_WRITE, objects(bucket, prefixes))


def bucket_delete(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str]) -> None:
    """Delete objects under the prefixes."""
    allow(grantee, S3_DELETE, objects(bucket, prefixes))


def bucket_read_write(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str] = ("*",)) -> None:
    """List the bucket, read and write objects under the prefixes."""
    bucket_read(grantee, bucket, prefixes)
    bucket_write(grantee, bucket, prefixes)


def config_read(grantee: iam.IGrantable, config_bucket: s3.IBucket) -> None:
    """Read the instance and table properties."""
    bucket_read(grantee, config_bucket, CONFIG_PREFIXES)


def table_read(grantee: iam.IGrantable, *tables: dynamodb.ITable) -> None:
    """Read items of DynamoDB tables (and their indexes)."""
    allow(grantee, DYNAMO_READ, _table_arns(tables))


def table_read_write(grantee: iam.IGrantable, *tables: dynamodb.ITable) -> None:
    """Read and write items of DynamoDB tables (conditional and transactional writes included)."""
    allow(grantee, DYNAMO_READ + DYNAMO_WRITE, _table_arns(tables))


def mark_indexed(table: dynamodb.ITable, name: str) -> None:
    """Records that a table (of this name) has secondary indexes, so grants on it cover them."""
    _INDEXED[table.node.path] = name


def _table_arns(tables: Sequence[dynamodb.ITable]) -> list[str]:
    arns: list[str] = []
    for table in tables:
        arns.append(table.table_arn)
        name = _INDEXED.get(table.node.path)
        if name:
            arns.append(f"arn:{cdk.Aws.PARTITION}:dynamodb:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:table/{name}/index/*")
    return arns


def queue_send(grantee: iam.IGrantable, *queues: sqs.IQueue) -> None:
    """Send messages to queues."""
    allow(grantee, SQS_SEND, [q.queue_arn for q in queues])


def queue_consume(grantee: iam.IGrantable, *queues: sqs.IQueue) -> None:
    """Receive, delete and extend visibility of messages on queues."""
    allow(grantee, SQS_CONSUME, [q.queue_arn for q in queues])


def queue_attributes(grantee: iam.IGrantable, *queues: sqs.IQueue) -> None:
    """Read queue attributes (such as the number of visible messages)."""
    allow(grantee, SQS_ATTRIBUTES, [q.queue_arn for q in queues])


def statement(actions: Sequence[str], resources: Sequence[str]) -> iam.PolicyStatement:
    """An allow statement."""
    return iam.PolicyStatement(actions=list(actions), resources=list(resources))
