"""The DynamoDB tables, queues and data bucket of an instance, keyed as Sleeper keys them.

The deployment creates these in production; the functions here create them on an emulator for tests and for the
emulated instance, so both use exactly the key schemas the adapters expect. Their names are those of
:mod:`sleeper.core.naming`.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import error_code, translate, translated
from sleeper.core import (
    InvalidQueueRequestError,
    JobTrackerTableNames,
    QueueConfig,
    QueueNotFoundError,
    StateStoreTableNames,
    TableIndexTableNames,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.literals import KeyTypeType, ScalarAttributeTypeType
    from mypy_boto3_dynamodb.type_defs import AttributeDefinitionTypeDef, CreateTableInputTypeDef

    _KeySpec = tuple[str, ScalarAttributeTypeType, KeyTypeType]
    _Index = tuple[str, str] | None
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

# Attribute names of the transaction log tables
TABLE_ID = "TABLE_ID"
TRANSACTION_NUMBER = "TRANSACTION_NUMBER"
UPDATE_TIME = "UPDATE_TIME"
TYPE = "TYPE"
BODY = "BODY"
BODY_S3_KEY = "BODY_S3_KEY"

# Attribute names of the snapshot tables
FILES_SNAPSHOT_PATH = "FILES_SNAPSHOT_PATH"
FILES_TRANSACTION_NUMBER = "FILES_TRANSACTION_NUMBER"
PARTITIONS_SNAPSHOT_PATH = "PARTITIONS_SNAPSHOT_PATH"
PARTITIONS_TRANSACTION_NUMBER = "PARTITIONS_TRANSACTION_NUMBER"
TABLE_ID_AND_SNAPSHOT_TYPE = "TABLE_ID_AND_SNAPSHOT_TYPE"
PATH = "PATH"
SNAPSHOT_TYPE = "SNAPSHOT_TYPE"

# Attribute names of the table index tables
TABLE_NAME = "TableName"
TABLE_ID_FIELD = "TableId"
ONLINE = "Online"


def create_state_store_tables(client: DynamoDBClient, names: StateStoreTableNames, *, wait: bool = True) -> None:
    """Creates the state store tables (on-demand billing; a NEW_IMAGE stream on the files log).

    Args:
        client: The DynamoDB client.
        names: The tables to create.
        wait: Whether to wait until every table is active.

    Raises:
        AwsError: If a table cannot be created (including if it exists).
    """
    log_keys: list[_KeySpec] = [(TABLE_ID, "S", "HASH"), (TRANSACTION_NUMBER, "N", "RANGE")]
    _create_table(client, names.files_log, log_keys, stream=True)
    _create_table(client, names.partitions_log, log_keys)
    _create_table(client, names.latest_snapshots, [(TABLE_ID, "S", "HASH")])
    _create_table(
        client, names.all_snapshots, [(TABLE_ID_AND_SNAPSHOT_TYPE, "S", "HASH"), (TRANSACTION_NUMBER, "N", "RANGE")]
    )
    if wait:
        _wait(client, [names.files_log, names.partitions_log, names.latest_snapshots, names.all_snapshots])


def create_table_index_tables(client: DynamoDBClient, names: TableIndexTableNames, *, wait: bool = True) -> None:
    """Creates the table index tables (on-demand billing).

    Args:
        client: The DynamoDB client.
        names: The tables to create.
        wait: Whether to wait until every table is active.

    Raises:
        AwsError: If a table cannot be created (including if it exists).
    """
    _create_table(client, names.by_name, [(TABLE_NAME, "S", "HASH")])
    _create_table(client, names.by_id, [(TABLE_ID_FIELD, "S", "HASH")])
    _create_table(client, names.by_online, [(ONLINE, "S", "HASH"), (TABLE_NAME, "S", "RANGE")])
    if wait:
        _wait(client, [names.by_name, names.by_id, names.by_online])


def create_bucket(client: S3Client, bucket: str, region: str) -> None:
    """Creates a bucket in a region; an existing bucket of ours is left as it is.

    Args:
        client: The S3 client.
        bucket: The bucket name.
        region: The region of the bucket.

    Raises:
        AwsError: If the bucket cannot be created.
    """
    try:
        if region == "us-east-1":
            client.create_bucket(Bucket=bucket)
        else:
            location = cast("BucketLocationConstraintType", region)
            client.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": location})
    except ClientError as e:
        if error_code(e) != "BucketAlreadyOwnedByYou":
            raise translate(e, f"CreateBucket {bucket}") from e
    except BotoCoreError as e:
        raise translate(e, f"CreateBucket {bucket}") from e


def _create_table(
    client: DynamoDBClient,
    name: str,
    keys: list[_KeySpec],
    *,
    stream: bool = False,
    index: tuple[str, str] | None = None,
) -> None:
    """Creates a table with on-demand billing; ``stream`` adds a NEW_IMAGE stream, ``index`` a keys-only global
    secondary index (its name and string hash key)."""
    attributes: list[AttributeDefinitionTypeDef] = [
        {"AttributeName": attribute, "AttributeType": kind} for attribute, kind, _ in keys
    ]
    request: CreateTableInputTypeDef = {
        "TableName": name,
        "AttributeDefinitions": attributes,
        "KeySchema": [{"AttributeName": attribute, "KeyType": role} for attribute, _, role in keys],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if stream:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    if index is not None:
        index_name, index_key = index
        attributes.append({"AttributeName": index_key, "AttributeType": "S"})
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index_name,
                "KeySchema": [{"AttributeName": index_key, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ]
    with translated(f"CreateTable {name}"):
        client.create_table(**request)


def _wait(client: DynamoDBClient, names: list[str]) -> None:
    waiter = client.get_waiter("table_exists")
    for name in names:
        with translated(f"waiting for table {name}"):
            waiter.wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})


# ---------------------------------------------------------------------------------------------------------------------
# Job, task and query trackers

# Attribute names of the job tracker tables (updates and lookup), as Sleeper's DynamoDB job trackers name them
TRACKER_TABLE_ID = "TableId"
TRACKER_JOB_ID = "JobId"
JOB_ID_AND_UPDATE = "JobIdAndUpdate"
TRACKER_UPDATE_TIME = "UpdateTime"
TRACKER_UPDATE_TYPE = "UpdateType"
TRACKER_EXPIRY_DATE = "ExpiryDate"
TRACKER_TASK_ID = "TaskId"
LAST_VALIDATION_RESULT = "LastValidationResult"
VALIDATION_INDEX = "by-validation"

# Attribute names of the query tracker table
QUERY_ID = "queryId"
SUB_QUERY_ID = "subQueryId"
LAST_KNOWN_STATE = "lastKnownState"
QUERY_EXPIRY_DATE = "expiryDate"


def create_job_tracker_tables(
    client: DynamoDBClient, names: JobTrackerTableNames, *, validation_index: bool = True, wait: bool = True
) -> None:
    """Creates the tables of a job tracker (on-demand billing, time to live on ``ExpiryDate``).

    Args:
        client: The DynamoDB client.
        names: The tables to create.
        validation_index: Whether the lookup table gets the ``by-validation`` index (ingest trackers need it).
        wait: Whether to wait until every table is active.

    Raises:
        AwsError: If a table cannot be created (including if it exists).
    """
    _create_expiring_tables(
        client,
        [
            (names.updates, [(TRACKER_TABLE_ID, "S", "HASH"), (JOB_ID_AND_UPDATE, "S", "RANGE")]),
            (names.lookup, [(TRACKER_JOB_ID, "S", "HASH")]),
        ],
        TRACKER_EXPIRY_DATE,
        wait=wait,
        index=(VALIDATION_INDEX, LAST_VALIDATION_RESULT) if validation_index else None,
    )


def create_task_tracker_table(client: DynamoDBClient, name: str, *, wait: bool = True) -> None:
    """Creates a task tracker table (hash ``TaskId``, range ``UpdateTime``; time to live on ``ExpiryDate``).

    Raises:
        AwsError: If the table cannot be created (including if it exists).
    """
    keys: list[_KeySpec] = [(TRACKER_TASK_ID, "S", "HASH"), (TRACKER_UPDATE_TIME, "N", "RANGE")]
    _create_expiring_tables(client, [(name, keys)], TRACKER_EXPIRY_DATE, wait=wait)


def create_query_tracker_table(client: DynamoDBClient, name: str, *, wait: bool = True) -> None:
    """Creates the query tracker table (hash ``queryId``, range ``subQueryId``; time to live on ``expiryDate``).

    Raises:
        AwsError: If the table cannot be created (including if it exists).
    """
    keys: list[_KeySpec] = [(QUERY_ID, "S", "HASH"), (SUB_QUERY_ID, "S", "RANGE")]
    _create_expiring_tables(client, [(name, keys)], QUERY_EXPIRY_DATE, wait=wait)


def _create_expiring_tables(
    client: DynamoDBClient, tables: list[tuple[str, list[_KeySpec]]], expiry: str, *, wait: bool, index: _Index = None
) -> None:
    """Creates tables with time to live on an attribute; ``index`` goes on the last one."""
    for position, (name, keys) in enumerate(tables):
        _create_table(client, name, keys, index=index if position == len(tables) - 1 else None)
    if wait:
        _wait(client, [name for name, _ in tables])
    for name, _ in tables:
        _time_to_live(client, name, expiry)


def _time_to_live(client: DynamoDBClient, name: str, attribute: str) -> None:
    with translated(f"UpdateTimeToLive {name}"):
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
        )


# ---------------------------------------------------------------------------------------------------------------------
# SQS queues

_SQS_NOT_FOUND_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


def queue_attributes(config: QueueConfig, *, dead_letter_arn: str | None = None) -> dict[str, str]:
    """The SQS attributes of a queue with this configuration.

    Args:
        config: The queue's configuration.
        dead_letter_arn: The ARN of its dead-letter queue, if it has one.

    Raises:
        InvalidQueueRequestError: If the configuration names a dead-letter queue but no ARN is given.
    """
    attributes = {
        "VisibilityTimeout": str(math.ceil(config.visibility_timeout_seconds)),
        "DelaySeconds": str(math.ceil(config.delay_seconds)),
        "MaximumMessageSize": str(min(config.max_message_bytes, _SQS_MAX_MESSAGE_BYTES)),
    }
    if config.fifo:
        attributes["ContentBasedDeduplication"] = "true" if config.content_based_deduplication else "false"
    if config.dead_letter_queue is not None:
        if dead_letter_arn is None:
            raise InvalidQueueRequestError(f"queue {config.name} needs the ARN of {config.dead_letter_queue}")
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": config.max_receive_count}
        )
    return attributes


_SQS_MAX_MESSAGE_BYTES = 262_144


def create_queue(client: SQSClient, name: str, config: QueueConfig | None = None) -> str:
    """Creates an SQS queue, and its dead-letter queue first if the configuration names one that does not exist.

    A dead-letter queue created here has the queue's type and default options. Creating a queue that exists with
    the same attributes returns its URL (SQS semantics).

    Args:
        client: The SQS client.
        name: The queue name (FIFO queue names end with ``.fifo``).
        config: The queue's configuration (its name must be ``name``); None for a standard queue with defaults.

    Returns:
        The queue URL.

    Raises:
        InvalidQueueRequestError: If the configuration does not suit SQS or names another queue.
        AwsError: If SQS refuses (for example, the queue exists with other attributes).
    """
    config = config if config is not None else QueueConfig(name=name)
    if config.name != name:
        raise InvalidQueueRequestError(f"configuration of queue {config.name} given to create queue {name}")
    if config.fifo != name.endswith(".fifo"):
        raise InvalidQueueRequestError(f"SQS queue {name}: FIFO queue names end with .fifo, others do not")
    if config.max_message_bytes > _SQS_MAX_MESSAGE_BYTES:
        raise InvalidQueueRequestError(f"SQS queue {name}: messages of at most {_SQS_MAX_MESSAGE_BYTES} bytes")
    dead_letter_arn = None
    if config.dead_letter_queue is not None:
        dlq_url = queue_url_or_none(client, config.dead_letter_queue)
        if dlq_url is None:
            dlq_url = create_queue(
                client, config.dead_letter_queue, QueueConfig(name=config.dead_letter_queue, fifo=config.fifo)
            )
        dead_letter_arn = queue_arn(client, dlq_url)
    attributes = queue_attributes(config, dead_letter_arn=dead_letter_arn)
    if config.fifo:
        attributes["FifoQueue"] = "true"
    with translated(f"CreateQueue {name}"):
        return client.create_queue(QueueName=name, Attributes=cast("dict[QueueAttributeNameType, str]", attributes))[
            "QueueUrl"
        ]


def queue_arn(client: SQSClient, url: str) -> str:
    """The ARN of the queue at a URL.

    Raises:
        QueueNotFoundError: If there is no such queue.
        AwsError: If SQS fails otherwise.
    """
    try:
        attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    except ClientError as e:
        if error_code(e) in _SQS_NOT_FOUND_CODES:
            raise QueueNotFoundError(f"no queue at {url}") from e
        raise translate(e, f"GetQueueAttributes {url}") from e
    except BotoCoreError as e:
        raise translate(e, f"GetQueueAttributes {url}") from e
    return attributes["QueueArn"]


def queue_url_or_none(client: SQSClient, name: str) -> str | None:
    """The URL of the queue with this name in the client's account, or None if there is no such queue.

    Raises:
        AwsError: If SQS fails.
    """
    try:
        with translated(f"GetQueueUrl {name}", unless=_SQS_NOT_FOUND_CODES):
            return client.get_queue_url(QueueName=name)["QueueUrl"]
    except ClientError:
        return None
