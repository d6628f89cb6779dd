"""The DynamoDB snapshot records, on a moto server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.ports import SnapshotConflictError, SnapshotMetadata
from tests.contract.aws_backends import AwsStateStore

pytestmark = [pytest.mark.integration, pytest.mark.aws]

START = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)


def _snapshot(log_type: LogType, number: int, *, minutes: int = 0) -> SnapshotMetadata:
    kind = "files" if log_type is LogType.FILES else "partitions"
    return SnapshotMetadata(
        log_type=log_type,
        path=f"s3a://sleeper-data/table-a/statestore/snapshots/{number}-{kind}.arrow",
        transaction_number=number,
        update_time=START + timedelta(minutes=minutes),
    )


def should_have_no_snapshot_at_first(aws_state_store: AwsStateStore) -> None:
    # Given a table with no snapshots
    store = aws_state_store.backend.snapshot_metadata("table-a")
    # When the latest of each log is read
    # Then there is none
    assert store.latest_snapshot(LogType.FILES) is None
    assert store.latest_snapshot(LogType.PARTITIONS) is None
    assert store.snapshots(LogType.FILES) == []


def should_make_a_saved_snapshot_the_latest_of_its_log_only(aws_state_store: AwsStateStore) -> None:
    # Given a files snapshot and a later partitions snapshot
    store = aws_state_store.backend.snapshot_metadata("table-a")
    files = _snapshot(LogType.FILES, 5)
    partitions = _snapshot(LogType.PARTITIONS, 3, minutes=1)
    # When both are saved
    store.save_snapshot(files)
    store.save_snapshot(partitions)
    # Then each is the latest of its own log, with its own update time
    assert store.latest_snapshot(LogType.FILES) == files
    assert store.latest_snapshot(LogType.PARTITIONS) == partitions


def should_move_the_latest_forwards_and_list_every_snapshot_oldest_first(aws_state_store: AwsStateStore) -> None:
    # Given snapshots at 5 and 12
    store = aws_state_store.backend.snapshot_metadata("table-a")
    older = _snapshot(LogType.FILES, 5)
    newer = _snapshot(LogType.FILES, 12, minutes=1)
    store.save_snapshot(older)
    # When the later one is saved
    store.save_snapshot(newer)
    # Then it is the latest, and both are listed
    assert store.latest_snapshot(LogType.FILES) == newer
    assert store.snapshots(LogType.FILES) == [older, newer]


@pytest.mark.parametrize("number", [12, 7])
def should_refuse_a_snapshot_not_ahead_of_the_latest(aws_state_store: AwsStateStore, number: int) -> None:
    # Given a latest snapshot at 12
    store = aws_state_store.backend.snapshot_metadata("table-a")
    latest = _snapshot(LogType.FILES, 12)
    store.save_snapshot(latest)
    # When a snapshot at the same or an earlier number is saved
    late = SnapshotMetadata(log_type=LogType.FILES, path="s3a://other", transaction_number=number, update_time=START)
    with pytest.raises(SnapshotConflictError):
        store.save_snapshot(late)
    # Then nothing changed
    assert store.latest_snapshot(LogType.FILES) == latest
    assert store.snapshots(LogType.FILES) == [latest]


def should_delete_an_old_snapshot_but_not_the_latest(aws_state_store: AwsStateStore) -> None:
    # Given snapshots at 5 and 12
    store = aws_state_store.backend.snapshot_metadata("table-a")
    older = _snapshot(LogType.FILES, 5)
    latest = _snapshot(LogType.FILES, 12)
    store.save_snapshot(older)
    store.save_snapshot(latest)
    # When both are deleted
    store.delete_snapshot(older)
    with pytest.raises(SnapshotConflictError):
        store.delete_snapshot(latest)
    # Then only the latest is left
    assert store.snapshots(LogType.FILES) == [latest]
    assert store.latest_snapshot(LogType.FILES) == latest


def should_keep_snapshots_of_tables_apart(aws_state_store: AwsStateStore) -> None:
    # Given a snapshot of table a
    backend = aws_state_store.backend
    backend.snapshot_metadata("table-a").save_snapshot(_snapshot(LogType.FILES, 12))
    # When table b saves an earlier-numbered snapshot
    b_snapshot = _snapshot(LogType.FILES, 2)
    backend.snapshot_metadata("table-b").save_snapshot(b_snapshot)
    # Then it is table b's latest, and table a's list is unaffected
    assert backend.snapshot_metadata("table-b").latest_snapshot(LogType.FILES) == b_snapshot
    assert [s.transaction_number for s in backend.snapshot_metadata("table-a").snapshots(LogType.FILES)] == [12]


def should_store_snapshot_items_in_sleepers_attribute_format(aws_state_store: AwsStateStore) -> None:
    # Given a saved partitions snapshot
    store = aws_state_store.backend.snapshot_metadata("table-a")
    snapshot = _snapshot(LogType.PARTITIONS, 4)
    store.save_snapshot(snapshot)
    # When the raw items are read
    names = aws_state_store.table_names
    dynamodb = aws_state_store.dynamodb
    latest = dynamodb.get_item(TableName=names.latest_snapshots, Key={"TABLE_ID": {"S": "table-a"}})["Item"]
    [row] = dynamodb.scan(TableName=names.all_snapshots)["Items"]
    # Then they hold Sleeper's attributes
    millis = str(int(START.timestamp()) * 1000 + 250)
    assert latest["PARTITIONS_SNAPSHOT_PATH"] == {"S": snapshot.path}
    assert latest["PARTITIONS_TRANSACTION_NUMBER"] == {"N": "4"}
    assert latest["UPDATE_TIME"] == {"N": millis}
    assert "FILES_TRANSACTION_NUMBER" not in latest
    assert row == {
        "TABLE_ID_AND_SNAPSHOT_TYPE": {"S": "table-a|PARTITIONS"},
        "TRANSACTION_NUMBER": {"N": "4"},
        "TABLE_ID": {"S": "table-a"},
        "PATH": {"S": snapshot.path},
        "UPDATE_TIME": {"N": millis},
        "SNAPSHOT_TYPE": {"S": "PARTITIONS"},
    }


def should_read_a_latest_snapshot_written_without_per_log_update_times(aws_state_store: AwsStateStore) -> None:
    # Given a latest-snapshots item as Java Sleeper writes it (one shared UPDATE_TIME)
    aws_state_store.dynamodb.put_item(
        TableName=aws_state_store.table_names.latest_snapshots,
        Item={
            "TABLE_ID": {"S": "table-a"},
            "FILES_SNAPSHOT_PATH": {"S": "s3a://bucket/table-a/statestore/snapshots/9-files.arrow"},
            "FILES_TRANSACTION_NUMBER": {"N": "9"},
            "UPDATE_TIME": {"N": "1714564800250"},
        },
    )
    # When the latest files snapshot is read
    latest = aws_state_store.backend.snapshot_metadata("table-a").latest_snapshot(LogType.FILES)
    # Then it takes the shared update time
    assert latest == SnapshotMetadata(
        log_type=LogType.FILES,
        path="s3a://bucket/table-a/statestore/snapshots/9-files.arrow",
        transaction_number=9,
        update_time=datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
    )
