"""The DynamoDB tables (and the data bucket) of an instance, named and keyed as Sleeper names them (spec 2.3, 9).

The deployment creates these in production; the functions here create them on an emulator for tests and for the
emulated instance, so both use exactly the names and key schemas the adapters expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import error_code, translate

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.literals import KeyTypeType, ScalarAttributeTypeType
    from mypy_boto3_dynamodb.type_defs import (
        AttributeDefinitionTypeDef,
        KeySchemaElementTypeDef,
        StreamSpecificationTypeDef,
    )

    _KeySpec = tuple[str, ScalarAttributeTypeType, KeyTypeType]
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType

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


def _table_name(instance_id: str, suffix: str) -> str:
    return f"sleeper-{instance_id}-{suffix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateStoreTableNames:
    """The DynamoDB tables of the transaction-log state store of an instance, shared by all its Sleeper tables.

    Attributes:
        files_log: The files transaction log (hash ``TABLE_ID``, range ``TRANSACTION_NUMBER``).
        partitions_log: The partitions transaction log (same keys).
        latest_snapshots: The latest snapshot of each log per table (hash ``TABLE_ID``).
        all_snapshots: Every snapshot (hash ``TABLE_ID_AND_SNAPSHOT_TYPE``, range ``TRANSACTION_NUMBER``).
    """

    files_log: str
    partitions_log: str
    latest_snapshots: str
    all_snapshots: str

    @classmethod
    def for_instance(cls, instance_id: str) -> StateStoreTableNames:
        """The names Sleeper gives these tables in an instance."""
        return cls(
            files_log=_table_name(instance_id, "file-transaction-log"),
            partitions_log=_table_name(instance_id, "partition-transaction-log"),
            latest_snapshots=_table_name(instance_id, "transaction-log-latest-snapshots"),
            all_snapshots=_table_name(instance_id, "transaction-log-all-snapshots"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TableIndexTableNames:
    """The DynamoDB tables of the table index of an instance.

    Attributes:
        by_name: Hash ``TableName``.
        by_id: Hash ``TableId``.
        by_online: Hash ``Online`` (``"true"``/``"false"``), range ``TableName``.
    """

    by_name: str
    by_id: str
    by_online: str

    @classmethod
    def for_instance(cls, instance_id: str) -> TableIndexTableNames:
        """The names Sleeper gives these tables in an instance."""
        return cls(
            by_name=_table_name(instance_id, "table-index-by-name"),
            by_id=_table_name(instance_id, "table-index-by-id"),
            by_online=_table_name(instance_id, "table-index-by-online"),
        )


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


def _create_table(client: DynamoDBClient, name: str, keys: list[_KeySpec], *, stream: bool = False) -> None:
    attributes: list[AttributeDefinitionTypeDef] = [
        {"AttributeName": attribute, "AttributeType": kind} for attribute, kind, _ in keys
    ]
    key_schema: list[KeySchemaElementTypeDef] = [
        {"AttributeName": attribute, "KeyType": role} for attribute, _, role in keys
    ]
    stream_spec: StreamSpecificationTypeDef = (
        {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"} if stream else {"StreamEnabled": False}
    )
    try:
        client.create_table(
            TableName=name,
            AttributeDefinitions=attributes,
            KeySchema=key_schema,
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification=stream_spec,
        )
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CreateTable {name}") from e


def _wait(client: DynamoDBClient, names: list[str]) -> None:
    waiter = client.get_waiter("table_exists")
    for name in names:
        try:
            waiter.wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"waiting for table {name}") from e
