"""The S3 store of large transaction bodies, on a moto server."""

from __future__ import annotations

import pytest

from sleeper.adapters.aws.exceptions import AwsResourceNotFoundError
from sleeper.adapters.aws.s3_transaction_bodies import S3TransactionBodyStore
from sleeper.statestore.ports import TransactionBodyNotFoundError
from tests.contract.aws_backends import AwsStateStore

pytestmark = [pytest.mark.integration, pytest.mark.aws]

KEY = "table-a/statestore/transactions/20240501-abc.json"


def should_load_a_stored_body_from_the_data_bucket(aws_state_store: AwsStateStore) -> None:
    # Given a body with non-ASCII text stored for a table
    store = aws_state_store.backend.body_store("table-a")
    body = '{"files":[{"filename":"s3a://bucket/table-a/data/été.parquet"}]}'
    store.store(KEY, body)
    # When it is loaded
    loaded = store.load(KEY)
    # Then it is the same text, kept under the key in the data bucket
    assert loaded == body
    obj = aws_state_store.s3.get_object(Bucket=aws_state_store.data_bucket, Key=KEY)
    assert obj["Body"].read().decode("utf-8") == body


def should_report_a_missing_body(aws_state_store: AwsStateStore) -> None:
    # Given no body under a key
    store = aws_state_store.backend.body_store("table-a")
    # When it is loaded
    # Then it is reported missing
    with pytest.raises(TransactionBodyNotFoundError, match=KEY):
        store.load(KEY)


def should_delete_a_body_and_ignore_a_missing_one(aws_state_store: AwsStateStore) -> None:
    # Given a stored body
    store = aws_state_store.backend.body_store("table-a")
    store.store(KEY, "{}")
    # When it is deleted twice
    store.delete(KEY)
    store.delete(KEY)
    # Then it is gone
    with pytest.raises(TransactionBodyNotFoundError):
        store.load(KEY)


def should_delete_every_body_under_a_prefix_only(aws_state_store: AwsStateStore) -> None:
    # Given bodies of two tables
    store = S3TransactionBodyStore(aws_state_store.s3, aws_state_store.data_bucket)
    for number in range(3):
        store.store(f"table-a/statestore/transactions/{number}.json", "{}")
    store.store("table-b/statestore/transactions/0.json", '{"kept":true}')
    # When table a's bodies are deleted
    deleted = store.delete_under("table-a/statestore/")
    # Then those three are gone and table b's is kept
    assert deleted == 3
    listed = aws_state_store.s3.list_objects_v2(Bucket=aws_state_store.data_bucket)
    assert [obj["Key"] for obj in listed.get("Contents", [])] == ["table-b/statestore/transactions/0.json"]


def should_report_a_missing_bucket(aws_state_store: AwsStateStore) -> None:
    # Given a store on a bucket that does not exist
    store = S3TransactionBodyStore(aws_state_store.s3, "no-such-bucket-for-sleeper")
    # When a body is stored
    # Then the failure is reported as a missing resource
    with pytest.raises(AwsResourceNotFoundError, match="no-such-bucket-for-sleeper"):
        store.store(KEY, "{}")
