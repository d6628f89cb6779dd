"""Least-privilege grants with explicit actions (never ``service:*`` or ``Get*``-style wildcards).

CDK's ``bucket.grant_read`` and friends use wildcard actions (``s3:GetObject*``, ``s3:List*``); these helpers name
each action and scope object access to the key prefixes a component uses. Object keys under a table id are
``<table id>/data/...``, ``<table id>/statestore/...``, ``<table id>/compactions/...`` (spec 1.5), so prefixes are
written as ``*/data/*`` and so on: the table id is only known at run time.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs

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
FOR_INGEST_PREFIX = "for_ingest/*"


def allow(grantee: iam.IGrantable, actions: Sequence[str], resources: Sequence[str]) -> None:
    """Allows explicit actions on resources."""
    iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=list(resources))


def objects(bucket: s3.IBucket, prefixes: Sequence[str]) -> list[str]:
    """The ARNs of the objects under key prefixes (patterns) of a bucket."""
    return [bucket.arn_for_objects(prefix) for prefix in prefixes]


def bucket_read(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str] = ("*",)) -> None:
    """List the bucket and read objects under the prefixes."""
    allow(grantee, S3_LIST, [bucket.bucket_arn])
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


def _table_arns(tables: Sequence[dynamodb.ITable]) -> list[str]:
    arns: list[str] = []
    for table in tables:
        arns += [table.table_arn, f"{table.table_arn}/index/*"]
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
