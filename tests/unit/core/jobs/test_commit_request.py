from __future__ import annotations

import json

import pytest

from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnsafePathError,
)
from sleeper.core.partition import Partition
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import AddFilesTransaction, ClearFilesTransaction
from sleeper.core.statestore.transactions.log import TransactionType
from sleeper.core.statestore.transactions.partitions import InitialisePartitionsTransaction

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])
KEY = "t1/statestore/transactions/2025-01-14T15:30:00Z-test-transaction.json"


def _add_files() -> AddFilesTransaction:
    return AddFilesTransaction.of_references(
        [FileReference(filename="s3a://b/t1/data/partition_root/f.parquet", partition_id="root", number_of_rows=100)],
        job_id="job-1",
    )


def should_hold_file_transaction_inline_and_read_it_back() -> None:
    # Given
    transaction = _add_files()
    request = StateStoreCommitRequest.of_transaction("t1", transaction)
    # When
    found = StateStoreCommitRequest.from_json(request.to_json())
    # Then
    assert found == request
    assert found.transaction_type is TransactionType.ADD_FILES
    assert found.transaction() == transaction


def should_need_schema_for_partition_transactions() -> None:
    # Given
    root = Partition(id="root", parent_id=None, region=Region.whole(SCHEMA))
    transaction = InitialisePartitionsTransaction(partitions=(root,))
    request = StateStoreCommitRequest.of_transaction("t1", transaction, schema=SCHEMA)
    found = StateStoreCommitRequest.from_json(request.to_json())
    # When / Then
    assert found.transaction(SCHEMA) == transaction
    with pytest.raises(MessageError, match="schema"):
        found.transaction()
    with pytest.raises(MessageError, match="schema"):
        StateStoreCommitRequest.of_transaction("t1", transaction)


def should_point_at_uploaded_body_and_load_it_when_read() -> None:
    # Given
    transaction = ClearFilesTransaction()
    request = StateStoreCommitRequest.in_body_store("t1", TransactionType.CLEAR_FILES, KEY)
    bodies = {KEY: "{}"}
    # When
    found = StateStoreCommitRequest.from_json(request.to_json())
    # Then
    assert found.to_dict() == {"tableId": "t1", "transactionType": "CLEAR_FILES", "bodyKey": KEY}
    assert found.held_in_body_store
    assert found.transaction(load_body=bodies.__getitem__) == transaction
    with pytest.raises(MessageError, match="loader"):
        found.transaction()


def should_report_a_bad_uploaded_body_at_the_body_key() -> None:
    # Given
    request = StateStoreCommitRequest.in_body_store("t1", TransactionType.ADD_FILES, KEY)
    # When / Then
    with pytest.raises(MalformedJsonError):
        request.transaction(load_body=lambda _: "{")
    with pytest.raises(MessageError) as e:
        request.transaction(load_body=lambda _: '{"files": 3}')
    assert e.value.path == "$.bodyKey"


BASE = {"tableId": "t1", "transactionType": "CLEAR_FILES"}
OTHER_TABLE_KEY = "t2/statestore/transactions/x.json"
ESCAPING_KEY = "t1/statestore/transactions/../../t2/x"


@pytest.mark.parametrize(
    ("data", "error", "path"),
    [
        ({"transactionType": "CLEAR_FILES", "transaction": {}}, MissingFieldError, "$.tableId"),
        ({"tableId": "t1", "transaction": {}}, MissingFieldError, "$.transactionType"),
        ({**BASE, "transactionType": "NOPE", "transaction": {}}, InvalidFieldError, "$.transactionType"),
        (BASE, MissingFieldError, "$.transaction"),
        ({**BASE, "transaction": None}, MissingFieldError, "$.transaction"),
        ({**BASE, "transaction": []}, InvalidFieldError, "$.transaction"),
        ({**BASE, "transaction": {}, "bodyKey": KEY}, InvalidFieldError, "$"),
        ({**BASE, "bodyKey": OTHER_TABLE_KEY}, UnsafePathError, "$.bodyKey"),
        ({**BASE, "bodyKey": ESCAPING_KEY}, UnsafePathError, "$.bodyKey"),
        ({**BASE, "bodyKey": 7}, InvalidFieldError, "$.bodyKey"),
        ({**BASE, "transaction": {}, "type": "x"}, UnknownFieldError, "$.type"),
    ],
)
def should_reject_invalid_requests(data: dict[str, object], error: type[MessageError], path: str) -> None:
    # When
    with pytest.raises(error) as e:
        StateStoreCommitRequest.from_json(json.dumps(data))
    # Then
    assert e.value.path == path


def should_report_bad_transaction_body_at_the_transaction() -> None:
    # Given a request whose body is not a valid ADD_FILES transaction
    request = StateStoreCommitRequest.from_json(
        '{"tableId":"t1","transactionType":"ADD_FILES","transaction":{"files":[{"filename":"f","references":[7]}]}}'
    )
    # When
    with pytest.raises(MessageError) as e:
        request.transaction()
    # Then
    assert e.value.path == "$.transaction"
    assert "files[0].references[0]" in e.value.reason


def should_report_out_of_range_times_in_a_body_as_a_message_error() -> None:
    # Given an ADD_FILES body with a written time far beyond year 9999
    request = StateStoreCommitRequest.from_json(
        '{"tableId":"t1","transactionType":"ADD_FILES","transaction":{"writtenTime":99999999999999999999,"files":[]}}'
    )
    # When / Then
    with pytest.raises(MessageError):
        request.transaction()


def should_need_exactly_one_of_body_and_key_when_built_directly() -> None:
    # When / Then
    with pytest.raises(InvalidFieldError):
        StateStoreCommitRequest(table_id="t1", transaction_type=TransactionType.CLEAR_FILES)
    with pytest.raises(InvalidFieldError):
        StateStoreCommitRequest(table_id="t1", transaction_type=TransactionType.CLEAR_FILES, body={}, body_key=KEY)
