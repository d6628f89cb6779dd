"""Deleting a table's state from DynamoDB and S3, on a moto server."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from sleeper.core.statestore.exceptions import TableDeletedError
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.statestore.ports import SnapshotMetadata, TransactionBodyNotFoundError, TransactionLogEntry
from tests.contract.aws_backends import AwsStateStore

pytestmark = [pytest.mark.integration, pytest.mark.aws]

TIME = datetime(2024, 5, 1, tzinfo=UTC)


def _fill(aws_state_store: AwsStateStore, table_id: str) -> str:
    backend = aws_state_store.backend
    body_key = f"{table_id}/statestore/transactions/2.json"
    backend.body_store(table_id).store(body_key, '{"files":[]}')
    files = backend.transaction_log(table_id, LogType.FILES)
    files.add_transaction(
        TransactionLogEntry(
            transaction_number=1, update_time=TIME, transaction_type=TransactionType.CLEAR_FILES, body="{}"
        )
    )
    files.add_transaction(
        TransactionLogEntry(
            transaction_number=2, update_time=TIME, transaction_type=TransactionType.ADD_FILES, body_key=body_key
        )
    )
    backend.transaction_log(table_id, LogType.PARTITIONS).add_transaction(
        TransactionLogEntry(
            transaction_number=1,
            update_time=TIME,
            transaction_type=TransactionType.INITIALISE_PARTITIONS,
            body='{"partitions":[]}',
        )
    )
    snapshots = backend.snapshot_metadata(table_id)
    for log_type, number in [(LogType.FILES, 1), (LogType.FILES, 2), (LogType.PARTITIONS, 1)]:
        snapshots.save_snapshot(
            SnapshotMetadata(log_type=log_type, path=f"s3a://x/{number}", transaction_number=number, update_time=TIME)
        )
    return body_key


def should_delete_every_entry_body_and_snapshot_record_of_one_table(aws_state_store: AwsStateStore) -> None:
    # Given two tables with log entries, a stored body and snapshots, and a body of table a not in its log
    backend = aws_state_store.backend
    a_body = _fill(aws_state_store, "table-a")
    b_body = _fill(aws_state_store, "table-b")
    unlogged = "table-a/statestore/transactions/uploaded-for-the-committer.json"
    backend.body_store("table-a").store(unlogged, "{}")
    # When table a is deleted
    backend.delete_table("table-a")
    # Then nothing of table a is left
    for log_type in LogType:
        assert list(backend.transaction_log("table-a", log_type).read_transactions_after(0)) == []
        assert backend.snapshot_metadata("table-a").latest_snapshot(log_type) is None
        assert backend.snapshot_metadata("table-a").snapshots(log_type) == []
    for key in (a_body, unlogged):
        with pytest.raises(TransactionBodyNotFoundError):
            backend.body_store("table-a").load(key)
    # And table b is untouched
    assert [
        e.transaction_number for e in backend.transaction_log("table-b", LogType.FILES).read_transactions_after(0)
    ] == [
        1,
        2,
    ]
    assert len(backend.snapshot_metadata("table-b").snapshots(LogType.FILES)) == 2
    assert backend.body_store("table-b").load(b_body) == '{"files":[]}'


def should_refuse_appends_to_a_deleted_table_for_good_and_keep_other_tables_writable(
    aws_state_store: AwsStateStore,
) -> None:
    # Given a deleted table (deleted twice: the second deletion finds nothing more to do) and another table
    backend = aws_state_store.backend
    _fill(aws_state_store, "table-a")
    _fill(aws_state_store, "table-b")
    backend.delete_table("table-a")
    backend.delete_table("table-a")
    entry = TransactionLogEntry(
        transaction_number=3, update_time=TIME, transaction_type=TransactionType.CLEAR_FILES, body="{}"
    )
    # When transaction 1 is appended to each log of the deleted table, and transaction 3 to the other table
    # Then the deleted table's logs refuse it (its tombstone is no log entry), and the other table takes it
    for log_type in LogType:
        with pytest.raises(TableDeletedError, match="table-a was deleted"):
            backend.transaction_log("table-a", log_type).add_transaction(replace(entry, transaction_number=1))
        assert list(backend.transaction_log("table-a", log_type).read_transactions_after(0)) == []
    backend.transaction_log("table-b", LogType.FILES).add_transaction(entry)
    assert (backend.is_deleted("table-a"), backend.is_deleted("table-b")) == (True, False)
