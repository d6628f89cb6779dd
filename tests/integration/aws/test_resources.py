"""The DynamoDB tables of an instance are created with Sleeper's names and key schemas."""

from __future__ import annotations

import pytest

from sleeper.adapters.aws.clients import dynamodb_client
from sleeper.adapters.aws.exceptions import AwsError
from sleeper.adapters.aws.resources import (
    create_state_store_tables,
    create_table_index_tables,
)
from sleeper.core.naming import StateStoreTableNames, TableIndexTableNames
from tests.contract.aws_backends import aws_settings, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]


def _schema(name: str) -> tuple[list[tuple[str, str, str]], bool]:
    table = dynamodb_client(aws_settings()).describe_table(TableName=name)["Table"]
    types = {d["AttributeName"]: d["AttributeType"] for d in table["AttributeDefinitions"]}
    keys: list[tuple[str, str, str]] = [
        (k["AttributeName"], types[k["AttributeName"]], k["KeyType"]) for k in table["KeySchema"]
    ]
    stream = table.get("StreamSpecification", {})
    return keys, bool(stream.get("StreamEnabled")) and stream.get("StreamViewType") == "NEW_IMAGE"


def should_create_the_state_store_tables_as_sleeper_names_and_keys_them() -> None:
    # Given a new instance id
    instance_id = new_instance_id()
    names = StateStoreTableNames.for_instance(instance_id)
    # When its state store tables are created
    create_state_store_tables(dynamodb_client(aws_settings()), names)
    # Then they have Sleeper's names, keys, and a stream on the files log only
    log_keys = [("TABLE_ID", "S", "HASH"), ("TRANSACTION_NUMBER", "N", "RANGE")]
    assert _schema(f"sleeper-{instance_id}-file-transaction-log") == (log_keys, True)
    assert _schema(f"sleeper-{instance_id}-partition-transaction-log") == (log_keys, False)
    assert _schema(f"sleeper-{instance_id}-transaction-log-latest-snapshots") == ([("TABLE_ID", "S", "HASH")], False)
    assert _schema(f"sleeper-{instance_id}-transaction-log-all-snapshots") == (
        [("TABLE_ID_AND_SNAPSHOT_TYPE", "S", "HASH"), ("TRANSACTION_NUMBER", "N", "RANGE")],
        False,
    )


def should_create_the_table_index_tables_as_sleeper_names_and_keys_them() -> None:
    # Given a new instance id
    instance_id = new_instance_id()
    # When its table index tables are created
    create_table_index_tables(dynamodb_client(aws_settings()), TableIndexTableNames.for_instance(instance_id))
    # Then they have Sleeper's names and keys
    assert _schema(f"sleeper-{instance_id}-table-index-by-name") == ([("TableName", "S", "HASH")], False)
    assert _schema(f"sleeper-{instance_id}-table-index-by-id") == ([("TableId", "S", "HASH")], False)
    assert _schema(f"sleeper-{instance_id}-table-index-by-online") == (
        [("Online", "S", "HASH"), ("TableName", "S", "RANGE")],
        False,
    )


def should_report_tables_that_already_exist() -> None:
    # Given an instance whose table index tables exist
    dynamodb = dynamodb_client(aws_settings())
    names = TableIndexTableNames.for_instance(new_instance_id())
    create_table_index_tables(dynamodb, names)
    # When they are created again
    # Then the failure names the table
    with pytest.raises(AwsError, match=names.by_name):
        create_table_index_tables(dynamodb, names)
