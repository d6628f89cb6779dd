"""Contract of the state store ports (log, large bodies, snapshot records), over every adapter family."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.statestore.ports import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    StateStoreBackend,
    TransactionBodyNotFoundError,
    TransactionLogEntry,
)

T0 = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def _entry(number: int, body: str | None = None, *, body_key: str | None = None) -> TransactionLogEntry:
    return TransactionLogEntry(
        transaction_number=number,
        update_time=T0 + timedelta(seconds=number),
        transaction_type=TransactionType.ADD_FILES if body_key is None else TransactionType.REPLACE_FILE_REFERENCES,
        body=body if body is not None or body_key is not None else f'{{"files":[],"n":{number}}}',
        body_key=body_key,
    )


def _snapshot(log_type: LogType, number: int, minutes: int = 0) -> SnapshotMetadata:
    return SnapshotMetadata(
        log_type=log_type,
        path=f"s3a://bucket/table/statestore/snapshots/{number}-u{minutes}-{log_type.value}.arrow",
        transaction_number=number,
        update_time=T0 + timedelta(minutes=minutes),
    )


# --- transaction log -----------------------------------------------------------------------------------------------


def should_read_back_appended_entries_in_order(state_store_backend: StateStoreBackend) -> None:
    # Given a log with three entries, one pointing at a large body
    log = state_store_backend.transaction_log("table-a", LogType.FILES)
    entries = [_entry(1), _entry(2, body_key="table-a/statestore/transactions/x.json"), _entry(3, "{}")]
    for e in entries:
        log.add_transaction(e)
    # When / Then every entry reads back equal, in order, and reads start after a number
    assert list(log.read_transactions_after(0)) == entries
    assert list(log.read_transactions_after(1)) == entries[1:]
    assert list(log.read_transactions_after(3)) == []


def should_refuse_an_entry_whose_number_is_taken(state_store_backend: StateStoreBackend) -> None:
    # Given an entry at 1
    log = state_store_backend.transaction_log("table-a", LogType.FILES)
    log.add_transaction(_entry(1, '{"first":true}'))
    # When / Then another entry at 1 is refused, and the first is kept
    with pytest.raises(DuplicateTransactionNumberError):
        log.add_transaction(_entry(1, '{"second":true}'))
    assert [e.body for e in log.read_transactions_after(0)] == ['{"first":true}']


def should_keep_logs_of_tables_and_log_types_apart(state_store_backend: StateStoreBackend) -> None:
    # Given entry 1 in three logs
    logs = [
        state_store_backend.transaction_log("table-a", LogType.FILES),
        state_store_backend.transaction_log("table-a", LogType.PARTITIONS),
        state_store_backend.transaction_log("table-b", LogType.FILES),
    ]
    for i, log in enumerate(logs):
        log.add_transaction(_entry(1, f'{{"log":{i}}}'))
    # When / Then each log holds only its own, also through a new port object
    for i, log in enumerate(logs):
        assert [e.body for e in log.read_transactions_after(0)] == [f'{{"log":{i}}}']
    again = state_store_backend.transaction_log("table-a", LogType.PARTITIONS)
    assert [e.body for e in again.read_transactions_after(0)] == ['{"log":1}']


def should_delete_entries_at_or_before_a_number(state_store_backend: StateStoreBackend) -> None:
    # Given entries 1 to 5
    log = state_store_backend.transaction_log("table-a", LogType.FILES)
    entries = [_entry(n) for n in range(1, 6)]
    for e in entries:
        log.add_transaction(e)
    # When entries up to 3 are deleted
    removed = log.delete_transactions_at_or_before(3)
    # Then they are returned, and 4 and 5 remain
    assert removed == entries[:3]
    assert list(log.read_transactions_after(0)) == entries[3:]
    assert log.delete_transactions_at_or_before(3) == []


def should_read_a_log_longer_than_a_page(
    state_store_backend: StateStoreBackend, request: pytest.FixtureRequest
) -> None:
    from tests.contract.aws_backends import S3_LIST_PAGE

    # Given more entries than adapters read in one page (on moto, where writes are slow, fewer entries and S3 listed in
    # pages of S3_LIST_PAGE keys)
    count = 120 if request.node.callspec.id in ("aws", "s3") else 1_100
    assert count > S3_LIST_PAGE
    log = state_store_backend.transaction_log("table-a", LogType.FILES)
    for n in range(1, count + 1):
        log.add_transaction(_entry(n))
    # When / Then every entry is read, in order
    assert [e.transaction_number for e in log.read_transactions_after(0)] == list(range(1, count + 1))


# --- large bodies ------------------------------------------------------------------------------------------------


def should_store_load_and_delete_a_body(state_store_backend: StateStoreBackend) -> None:
    # Given a large body
    bodies = state_store_backend.body_store("table-a")
    key = "table-a/statestore/transactions/2025-01-02T03:04:05.678Z-u.json"
    body = '{"files":[' + ",".join(f'"é{i}"' for i in range(20_000)) + "]}"
    # When it is stored (twice: overwriting the same body is harmless) and loaded
    bodies.store(key, body)
    bodies.store(key, body)
    loaded = bodies.load(key)
    # Then it loads as stored; once deleted it is gone, and deleting again is not an error
    assert loaded == body
    bodies.delete(key)
    with pytest.raises(TransactionBodyNotFoundError):
        bodies.load(key)
    bodies.delete(key)


def should_report_a_missing_body(state_store_backend: StateStoreBackend) -> None:
    # When / Then
    with pytest.raises(TransactionBodyNotFoundError):
        state_store_backend.body_store("table-a").load("table-a/statestore/transactions/missing.json")


# --- snapshot records --------------------------------------------------------------------------------------------


def should_record_snapshots_and_the_latest_per_log(state_store_backend: StateStoreBackend) -> None:
    # Given no snapshots
    store = state_store_backend.snapshot_metadata("table-a")
    assert store.latest_snapshot(LogType.FILES) is None
    # When files snapshots at 3 and 7 and a partitions snapshot at 2 are saved
    files3, files7, partitions2 = (
        _snapshot(LogType.FILES, 3),
        _snapshot(LogType.FILES, 7, 1),
        _snapshot(LogType.PARTITIONS, 2),
    )
    for s in (files3, files7, partitions2):
        store.save_snapshot(s)
    # Then each log has its own latest, and lists its snapshots oldest first
    assert store.latest_snapshot(LogType.FILES) == files7
    assert store.latest_snapshot(LogType.PARTITIONS) == partitions2
    assert store.snapshots(LogType.FILES) == [files3, files7]
    assert store.snapshots(LogType.PARTITIONS) == [partitions2]
    assert state_store_backend.snapshot_metadata("table-b").snapshots(LogType.FILES) == []


@pytest.mark.parametrize("number", [5, 7], ids=["behind", "same"])
def should_never_move_the_latest_snapshot_backwards(state_store_backend: StateStoreBackend, number: int) -> None:
    # Given a latest files snapshot at 7
    store = state_store_backend.snapshot_metadata("table-a")
    latest = _snapshot(LogType.FILES, 7)
    store.save_snapshot(latest)
    # When / Then a snapshot at or behind it is refused and not recorded
    with pytest.raises(SnapshotConflictError):
        store.save_snapshot(_snapshot(LogType.FILES, number, minutes=5))
    assert store.latest_snapshot(LogType.FILES) == latest
    assert store.snapshots(LogType.FILES) == [latest]


def should_delete_a_snapshot_record_but_not_the_latest(state_store_backend: StateStoreBackend) -> None:
    # Given files snapshots at 3 and 7
    store = state_store_backend.snapshot_metadata("table-a")
    old, latest = _snapshot(LogType.FILES, 3), _snapshot(LogType.FILES, 7, 1)
    store.save_snapshot(old)
    store.save_snapshot(latest)
    # When the old one is deleted, and the latest
    store.delete_snapshot(old)
    with pytest.raises(SnapshotConflictError):
        store.delete_snapshot(latest)
    # Then only the latest remains
    assert store.snapshots(LogType.FILES) == [latest]
    assert store.latest_snapshot(LogType.FILES) == latest


def should_delete_everything_of_a_table(state_store_backend: StateStoreBackend) -> None:
    # Given two tables with entries, a large body and snapshots
    key = "table-a/statestore/transactions/big.json"
    for table in ("table-a", "table-b"):
        state_store_backend.transaction_log(table, LogType.FILES).add_transaction(_entry(1))
        state_store_backend.transaction_log(table, LogType.PARTITIONS).add_transaction(_entry(1))
        state_store_backend.snapshot_metadata(table).save_snapshot(_snapshot(LogType.FILES, 1))
    state_store_backend.body_store("table-a").store(key, "{}")
    state_store_backend.transaction_log("table-a", LogType.FILES).add_transaction(_entry(2, body_key=key))
    # When table-a is deleted
    state_store_backend.delete_table("table-a")
    # Then it has no entries, body or snapshots; table-b is untouched
    for log_type in LogType:
        assert list(state_store_backend.transaction_log("table-a", log_type).read_transactions_after(0)) == []
        assert len(list(state_store_backend.transaction_log("table-b", log_type).read_transactions_after(0))) == 1
    with pytest.raises(TransactionBodyNotFoundError):
        state_store_backend.body_store("table-a").load(key)
    assert state_store_backend.snapshot_metadata("table-a").latest_snapshot(LogType.FILES) is None
    assert state_store_backend.snapshot_metadata("table-b").latest_snapshot(LogType.FILES) is not None
