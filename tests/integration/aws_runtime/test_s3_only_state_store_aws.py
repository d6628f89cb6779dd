"""An AWS instance (the moto server) deployed as the stacks leave one whose tables all use S3TransactionLogStateStore:
no DynamoDB transaction log or snapshot tables and none named in its properties. Its tables keep their state in the
data bucket, snapshot creation and transaction deletion work through that store, and a table asking for a DynamoDB
store is refused at create on every path (instance, REST API, table definer). Deleting a table on the S3 store marks
its tombstone in its own store."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.operations import SNAPSHOT_CREATION_Q, TRANSACTION_DELETION_Q
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import TableDeletedError
from sleeper.core.statestore.transactions.files import ClearFilesTransaction
from sleeper.core.statestore.transactions.log import LogType
from sleeper.emulator.provision import provision_instance
from sleeper.lambdas import sqs
from sleeper.lambdas._common import use_instance
from sleeper.rest_api.handler import handle_rest_request
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.table_definer import define_tables
from sleeper.statestore.object_log import tombstone_key
from tests.contract.aws_backends import aws_settings, new_instance_id
from tests.integration.aws_runtime.conftest import sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
S3_STORE = "S3TransactionLogStateStore"
DYNAMODB_LOG_PROPERTIES = (
    cdkp.TRANSACTION_LOG_FILES_TABLENAME,
    cdkp.TRANSACTION_LOG_PARTITIONS_TABLENAME,
    cdkp.TRANSACTION_LOG_LATEST_SNAPSHOTS_TABLENAME,
    cdkp.TRANSACTION_LOG_ALL_SNAPSHOTS_TABLENAME,
)
REFUSED = (
    "sleeper.table.statestore.classname=DynamoDBTransactionLogStateStore needs the DynamoDB transaction log, "
    "which this instance does not have"
)


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]})


@pytest.fixture(scope="module")
def s3_only(instance: AwsInstance) -> Iterator[AwsInstance]:
    """An instance whose default state store is the S3 one, with its DynamoDB log and snapshot tables deleted and
    unnamed (as a deployment that skipped them leaves it); the handlers use it while the test runs."""
    settings = aws_settings()
    config = provision_instance(
        settings,
        new_instance_id(),
        queues=(SNAPSHOT_CREATION_Q, TRANSACTION_DELETION_Q),
        properties={
            "sleeper.default.table.statestore.classname": S3_STORE,
            **{p.name: "" for p in DYNAMODB_LOG_PROPERTIES},
        },
    )
    made = AwsInstance(config)
    pages = made.clients.dynamodb.get_paginator("list_tables").paginate()  # a page holds 100 of the server's tables
    names = {t for page in pages for t in page["TableNames"] if t.startswith(f"sleeper-{made.instance_id}")}
    logs = {t for t in names if "transaction-log" in t or "snapshots" in t}
    assert len(logs) == 4, names
    for name in logs:
        made.clients.dynamodb.delete_table(TableName=name)
    use_instance(made)
    yield made
    use_instance(instance)


def should_keep_a_new_tables_state_in_the_data_bucket_and_run_its_upkeep_without_dynamodb(
    s3_only: AwsInstance,
) -> None:
    # Given a table created with no state store named, on the S3-only instance
    table = s3_only.create_table(f"s3only-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[50])
    assert table.properties.get("sleeper.table.statestore.classname") == S3_STORE
    # When rows are ingested, and the snapshot creation and transaction deletion handlers run for it
    table.ingest(_rows(0, 100), direct=True)
    table.ingest(_rows(100, 120), direct=True)
    created = sqs.snapshot_creation(sqs_event([("m1", table.table_id, table.table_id)]))
    deleted = sqs.transaction_deletion(sqs_event([("m2", table.table_id, table.table_id)]))
    # Then the handlers succeed, the rows read back, and the logs and snapshot records are objects in the data bucket
    assert created == {"batchItemFailures": []}
    assert deleted == {"batchItemFailures": []}
    assert s3_only.table(table.name).query().num_rows == 120
    listed = s3_only.clients.s3.list_objects_v2(Bucket=s3_only.data_bucket, Prefix=f"{table.table_id}/statestore/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert any("/statestore/log/files/" in k for k in keys)
    assert any("/statestore/snapshot-records/files/" in k for k in keys)
    assert s3_only.table(table.name).state_store.last_transaction_numbers()[LogType.FILES] == 2


def should_refuse_a_table_asking_for_a_dynamodb_store_on_every_create_path(s3_only: AwsInstance) -> None:
    asks = {"sleeper.table.statestore.classname": "DynamoDBTransactionLogStateStore"}
    before = {t.table_name for t in s3_only.tables()}
    # When a table asking for the DynamoDB store is created through the admin (the CLI's path)
    with pytest.raises(PropertyError, match=REFUSED):
        AwsApi(s3_only).create_table(f"dyn-{uuid.uuid4().hex[:8]}", SCHEMA, properties=asks)
    # And through the REST API
    body = {
        "properties": {"sleeper.table.name": f"dyn-{uuid.uuid4().hex[:8]}", **asks},
        "schema": json.loads(SCHEMA.to_json()),
    }
    event = {
        "version": "2.0",
        "routeKey": "POST /sleeper/tables",
        "rawPath": "/sleeper/tables",
        "requestContext": {"http": {"method": "POST", "path": "/sleeper/tables"}},
        "isBase64Encoded": False,
        "body": json.dumps(body),
    }
    response = handle_rest_request(s3_only, event)
    # And through the table definer of a deployment
    with pytest.raises(PropertyError, match=REFUSED):
        define_tables(
            AwsApi(s3_only),
            [{"name": f"dyn-{uuid.uuid4().hex[:8]}", "schema": SCHEMA.to_json(), "properties": asks}],
        )
    # Then each is refused in one line naming the property and what to do, and no table was created
    assert response["statusCode"] == 400
    message = json.loads(response["body"])["message"]
    assert REFUSED in message and "leave sleeper.table.statestore.classname unset" in message
    assert "\n" not in message
    assert {t.table_name for t in s3_only.tables()} == before


def should_mark_a_deleted_s3_store_table_in_its_own_store(instance: AwsInstance) -> None:
    # Given a table on the S3 store of an instance that also has the DynamoDB store, holding rows
    table = instance.create_table(
        f"tomb-{uuid.uuid4().hex[:8]}", SCHEMA, properties={"sleeper.table.statestore.classname": S3_STORE}
    )
    table.ingest(_rows(0, 10), direct=True)
    store = table.state_store
    # When it is deleted
    AwsApi(instance).delete_table(table.name)
    # Then its tombstone is in the data bucket, the S3 store marks it deleted, and a late append is refused
    assert instance.object_log_backend.is_deleted(table.table_id)
    head = instance.clients.s3.head_object(Bucket=instance.data_bucket, Key=tombstone_key(table.table_id))
    assert head["ContentLength"] > 0
    with pytest.raises(TableDeletedError):
        store.add_transaction(ClearFilesTransaction())


def should_delete_a_table_on_an_instance_without_the_dynamodb_log(s3_only: AwsInstance) -> None:
    # Given a table on an instance with no DynamoDB transaction log
    table = s3_only.create_table(f"del-{uuid.uuid4().hex[:8]}", SCHEMA)
    # When it is deleted (its tombstone goes to its own store, never to the absent DynamoDB log)
    AwsApi(s3_only).delete_table(table.name)
    # Then its store and the sweep of deleted tables know it deleted, and it is gone from the index
    assert s3_only.object_log_backend.is_deleted(table.table_id)
    assert s3_only.is_table_deleted(table.table_id)
    assert table.name not in {t.table_name for t in s3_only.tables()}
