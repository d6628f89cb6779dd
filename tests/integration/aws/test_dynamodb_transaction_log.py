"""The DynamoDB transaction log store, on a moto server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.adapters.aws.dynamodb_transaction_log import DynamoDBTransactionLogStore
from sleeper.adapters.aws.exceptions import AwsResourceNotFoundError
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.statestore.ports import DuplicateTransactionNumberError, TransactionLogEntry
from tests.contract.aws_backends import AwsStateStore

pytestmark = [pytest.mark.integration, pytest.mark.aws]

START = datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC)


def _entry(number: int, *, body_key: str | None = None) -> TransactionLogEntry:
    if body_key is not None:
        return TransactionLogEntry(
            transaction_number=number,
            update_time=START + timedelta(seconds=number),
            transaction_type=TransactionType.ADD_FILES,
            body_key=body_key,
        )
    return TransactionLogEntry(
        transaction_number=number,
        update_time=START + timedelta(seconds=number),
        transaction_type=TransactionType.CLEAR_FILES,
        body=f'{{"number":{number}}}',
    )


def should_read_back_entries_in_order_with_inline_and_stored_bodies(aws_state_store: AwsStateStore) -> None:
    # Given a log with an inline body and a body stored elsewhere, added out of order
    log = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    second = _entry(2, body_key="table-a/statestore/transactions/2-abc.json")
    first = _entry(1)
    log.add_transaction(second)
    log.add_transaction(first)
    # When the log is read from the start
    entries = list(log.read_transactions_after(0))
    # Then both come back exactly, in number order
    assert entries == [first, second]


def should_refuse_a_second_entry_with_the_same_number(aws_state_store: AwsStateStore) -> None:
    # Given a log with entry 1
    log = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    original = _entry(1)
    log.add_transaction(original)
    # When another writer adds a different entry 1
    with pytest.raises(DuplicateTransactionNumberError):
        log.add_transaction(_entry(1, body_key="table-a/statestore/transactions/other.json"))
    # Then the original is kept
    assert list(log.read_transactions_after(0)) == [original]


def should_read_only_entries_after_a_number(aws_state_store: AwsStateStore) -> None:
    # Given a log of five entries
    log = aws_state_store.backend.transaction_log("table-a", LogType.PARTITIONS)
    for number in range(1, 6):
        log.add_transaction(_entry(number))
    # When reading after entry 3
    numbers = [entry.transaction_number for entry in log.read_transactions_after(3)]
    # Then only 4 and 5 are read
    assert numbers == [4, 5]


def should_read_every_page_of_a_log(aws_state_store: AwsStateStore) -> None:
    # Given a log of seven entries, read through a store that fetches two entries per page
    names = aws_state_store.table_names
    writer = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    for number in range(1, 8):
        writer.add_transaction(_entry(number))
    reader = DynamoDBTransactionLogStore(aws_state_store.dynamodb, names.files_log, "table-a", page_size=2)
    # When reading after entry 1
    numbers = [entry.transaction_number for entry in reader.read_transactions_after(1)]
    # Then every later entry is read across the pages
    assert numbers == [2, 3, 4, 5, 6, 7]


def should_keep_logs_of_different_tables_and_log_types_apart(aws_state_store: AwsStateStore) -> None:
    # Given entry 1 in the files log of table a
    backend = aws_state_store.backend
    backend.transaction_log("table-a", LogType.FILES).add_transaction(_entry(1))
    # When entry 1 is added to table b's files log and table a's partitions log
    backend.transaction_log("table-b", LogType.FILES).add_transaction(_entry(1))
    backend.transaction_log("table-a", LogType.PARTITIONS).add_transaction(_entry(1))
    # Then each log holds its own single entry
    for table_id, log_type in [("table-a", LogType.FILES), ("table-b", LogType.FILES), ("table-a", LogType.PARTITIONS)]:
        assert [
            e.transaction_number for e in backend.transaction_log(table_id, log_type).read_transactions_after(0)
        ] == [1]


def should_delete_entries_at_or_before_a_number_and_return_them(aws_state_store: AwsStateStore) -> None:
    # Given a log of thirty entries (more than one batch of deletes)
    log = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    entries = [_entry(number) for number in range(1, 31)]
    for entry in entries:
        log.add_transaction(entry)
    # When deleting up to entry 27
    removed = log.delete_transactions_at_or_before(27)
    # Then entries 1 to 27 are returned and gone, and the rest are kept
    assert removed == entries[:27]
    assert list(log.read_transactions_after(0)) == entries[27:]


def should_keep_millisecond_update_times_exactly(aws_state_store: AwsStateStore) -> None:
    # Given an entry whose time has a millisecond part that floats cannot represent exactly
    log = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    time = datetime(2025, 1, 31, 23, 59, 59, 999000, tzinfo=UTC)
    entry = TransactionLogEntry(
        transaction_number=1, update_time=time, transaction_type=TransactionType.CLEAR_FILES, body="{}"
    )
    # When it is stored and read back
    log.add_transaction(entry)
    [read] = list(log.read_transactions_after(0))
    # Then the time is the same
    assert read.update_time == time


def should_store_items_in_sleepers_attribute_format(aws_state_store: AwsStateStore) -> None:
    # Given an entry with an inline body and one with a stored body
    log = aws_state_store.backend.transaction_log("table-a", LogType.FILES)
    log.add_transaction(_entry(1))
    log.add_transaction(_entry(2, body_key="table-a/statestore/transactions/2.json"))
    # When the raw items are read
    items = aws_state_store.dynamodb.scan(TableName=aws_state_store.table_names.files_log, ConsistentRead=True)["Items"]
    # Then they hold Sleeper's attributes
    by_number = {item["TRANSACTION_NUMBER"]["N"]: item for item in items}
    assert by_number["1"] == {
        "TABLE_ID": {"S": "table-a"},
        "TRANSACTION_NUMBER": {"N": "1"},
        "UPDATE_TIME": {"N": str(int((START + timedelta(seconds=1)).timestamp()) * 1000 + 123)},
        "TYPE": {"S": "CLEAR_FILES"},
        "BODY": {"S": '{"number":1}'},
    }
    assert by_number["2"]["BODY_S3_KEY"] == {"S": "table-a/statestore/transactions/2.json"}
    assert "BODY" not in by_number["2"]


def should_report_a_missing_dynamodb_table(aws_state_store: AwsStateStore) -> None:
    # Given a store pointing at a DynamoDB table that does not exist
    log = DynamoDBTransactionLogStore(aws_state_store.dynamodb, "no-such-table", "table-a")
    # When an entry is added
    # Then the failure is reported as a missing resource
    with pytest.raises(AwsResourceNotFoundError, match="no-such-table"):
        log.add_transaction(_entry(1))
