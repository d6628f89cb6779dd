"""Regular upkeep of a table's transaction logs: snapshots, and deleting old snapshots and transactions.

- ``create_snapshot``: every minute for online tables, snapshot each log that advanced past its latest snapshot.
- ``delete_old_snapshots``: hourly, delete snapshots older than
  ``sleeper.table.statestore.transactionlog.snapshot.expiry.days`` (2), never the latest of each log; the file goes
  first, then the record.
- ``delete_old_transactions``: hourly, from the latest snapshot at least
  ``sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes`` (2) old, delete the entries
  at or before its number minus ``sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot``
  (200), with their large bodies.

Beyond Sleeper, time travel: with ``sleeper.table.time.travel.retention.minutes`` set, the snapshot transactions
are deleted behind must also be at least that old, and snapshot deletion keeps the newest snapshot that old, so every
state within the retention can still be rebuilt (``sleeper.statestore.history``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sleeper.core.statestore.transactions import LogType
from sleeper.statestore.log_head import to_millis
from sleeper.statestore.ports import SnapshotConflictError, SnapshotMetadata
from sleeper.statestore.snapshots import SnapshotStore
from sleeper.statestore.store import StateStore
from sleeper.statestore.tables import SleeperInstance

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotCreation:
    """What ``create_snapshot`` did.

    Attributes:
        created: The snapshots saved.
        up_to_date: Logs whose latest snapshot already covered the log (or whose log is empty).
        lost_race: Logs where another creator saved a snapshot at or beyond ours first (ours was deleted).
    """

    created: list[SnapshotMetadata] = field(default_factory=list)
    up_to_date: list[LogType] = field(default_factory=list)
    lost_race: list[LogType] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionDeletion:
    """What ``delete_old_transactions`` did.

    Attributes:
        deleted_up_to: Per log, the number at or before which entries were deleted (absent if none were due).
        entries_deleted: Per log, how many entries were deleted.
        bodies_deleted: How many large bodies were deleted.
    """

    deleted_up_to: dict[LogType, int] = field(default_factory=dict)
    entries_deleted: dict[LogType, int] = field(default_factory=dict)
    bodies_deleted: int = 0


def _snapshots_of(store: StateStore) -> SnapshotStore:
    if store.snapshot_store is None:
        raise ValueError(f"the state store of table {store.table_id} has no snapshot location")
    return store.snapshot_store


def create_snapshot(store: StateStore, *, now: datetime | None = None) -> SnapshotCreation:
    """Snapshots each log of a table that has advanced past its latest snapshot.

    Args:
        store: The table's state store (it must have a snapshot location).
        now: The time to record (the store's clock if None).

    Returns:
        The snapshots created, and the logs that needed none.
    """
    snapshots = _snapshots_of(store)
    time = to_millis(now if now is not None else store.clock())
    store.refresh()
    result = SnapshotCreation()
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        head = store.files_head if log_type is LogType.FILES else store.partitions_head
        number = head.last_transaction_number
        latest = snapshots.latest(log_type)
        if number < 1 or (latest is not None and latest.transaction_number >= number):
            result.up_to_date.append(log_type)
            continue
        try:
            if log_type is LogType.FILES:
                saved = snapshots.save_files(store.files_head.state, number, time)
            else:
                saved = snapshots.save_partitions(store.partitions_head.state, number, time)
        except SnapshotConflictError as e:
            LOGGER.info("Snapshot of %s log of table %s not saved: %s", log_type.value, store.table_id, e)
            result.lost_race.append(log_type)
            continue
        LOGGER.info("Saved %s snapshot of table %s at transaction %d", log_type.value, store.table_id, number)
        result.created.append(saved)
    return result


def delete_old_snapshots(store: StateStore, *, now: datetime | None = None) -> list[SnapshotMetadata]:
    """Deletes snapshots (file, then record) older than the expiry, except the latest of each log.

    Args:
        store: The table's state store (it must have a snapshot location).
        now: The time now (the store's clock if None).

    Returns:
        The snapshots deleted.
    """
    snapshots = _snapshots_of(store)
    current = now if now is not None else store.clock()
    expiry = current - timedelta(days=store.settings.snapshot_expiry_days)
    deleted: list[SnapshotMetadata] = []
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        latest = snapshots.latest(log_type)
        recorded = snapshots.snapshots(log_type)
        base = _retention_base(store, recorded, current)
        for snapshot in recorded:
            if snapshot.update_time >= expiry:
                continue
            if latest is not None and snapshot.transaction_number >= latest.transaction_number:
                continue
            if base is not None and snapshot.transaction_number == base.transaction_number:
                continue  # time travel rebuilds the states within the retention from it
            try:
                snapshots.delete(snapshot)
            except SnapshotConflictError:
                continue
            deleted.append(snapshot)
    return deleted


def _retention_base(store: StateStore, recorded: list[SnapshotMetadata], now: datetime) -> SnapshotMetadata | None:
    """The snapshot time travel rebuilds the states within the table's retention from: the newest taken before the
    retention began (None if the retention is 0 or no snapshot is that old)."""
    minutes = store.settings.time_travel_retention_minutes
    if minutes <= 0:
        return None
    start = now - timedelta(minutes=minutes)
    old = [s for s in recorded if s.update_time <= start]
    return max(old, key=lambda s: s.transaction_number) if old else None


def delete_old_transactions(store: StateStore, *, now: datetime | None = None) -> TransactionDeletion:
    """Deletes log entries far enough behind a snapshot that no reader still needs them, with their large bodies.

    Per log: take the latest snapshot at least the minimum age old; delete the entries at or before its number minus
    the number to keep. Entries go before their bodies, so no reader ever finds an entry without its body.

    Args:
        store: The table's state store (it must have a snapshot location).
        now: The time now (the store's clock if None).

    Returns:
        What was deleted.
    """
    snapshots = _snapshots_of(store)
    current = now if now is not None else store.clock()
    newest_allowed = current - timedelta(minutes=store.settings.delete_transactions_snapshot_min_age_minutes)
    keep = store.settings.delete_transactions_number_behind_snapshot
    bodies = store.body_store
    result = TransactionDeletion()
    bodies_deleted = 0
    retention = timedelta(minutes=store.settings.time_travel_retention_minutes)
    if retention > timedelta(0):
        # Time travel: keep the log back to a snapshot taken before the retention began, so every state within the
        # retention can be rebuilt from it (sleeper.statestore.history).
        newest_allowed = min(newest_allowed, current - retention)
    for log_type in (LogType.FILES, LogType.PARTITIONS):
        old_enough = [s for s in snapshots.snapshots(log_type) if s.update_time <= newest_allowed]
        if not old_enough:
            continue
        snapshot = max(old_enough, key=lambda s: s.transaction_number)
        up_to = snapshot.transaction_number - keep
        if up_to < 1:
            continue
        log = store.backend.transaction_log(store.table_id, log_type)
        removed = log.delete_transactions_at_or_before(up_to)
        for entry in removed:
            if entry.body_key is not None:
                bodies.delete(entry.body_key)
                bodies_deleted += 1
        result.deleted_up_to[log_type] = up_to
        result.entries_deleted[log_type] = len(removed)
    return TransactionDeletion(
        deleted_up_to=result.deleted_up_to, entries_deleted=result.entries_deleted, bodies_deleted=bodies_deleted
    )


# --- runtime-neutral entries (one table id per message of each operation's FIFO queue) ------------------------------


def handle_snapshot_creation(instance: SleeperInstance, body: str) -> str:
    """One ``TransactionLogSnapshotQ.fifo`` message (body: the table id): a snapshot of each log that moved on.

    Returns:
        A line for the log (empty when no snapshot was created).

    Raises:
        TableNotFoundError: If there is no such table.
    """
    table_id = body.strip()
    created = create_snapshot(instance.table_by_id(table_id).state_store).created
    return f"table {table_id}: {len(created)} snapshots created" if created else ""


def handle_snapshot_deletion(instance: SleeperInstance, body: str) -> str:
    """One ``TransactionLogSnapshotDeletionQ.fifo`` message (body: the table id): old snapshots deleted.

    Raises:
        TableNotFoundError: If there is no such table.
    """
    table_id = body.strip()
    deleted = delete_old_snapshots(instance.table_by_id(table_id).state_store)
    return f"table {table_id}: {len(deleted)} old snapshots deleted" if deleted else ""


def handle_transaction_deletion(instance: SleeperInstance, body: str) -> str:
    """One ``TransactionLogTransactionDeletionQ.fifo`` message (body: the table id): transactions older than the
    latest snapshot, and than the table's minimum age, deleted.

    Raises:
        TableNotFoundError: If there is no such table.
    """
    table_id = body.strip()
    result = delete_old_transactions(instance.table_by_id(table_id).state_store)
    count = sum(result.entries_deleted.values())
    return f"table {table_id}: {count} old transactions deleted" if count else ""
