"""Ports of the transaction-log state store: the log, large transaction bodies, and snapshot metadata.

Each port instance serves one table. Adapters: in-memory (tests), SQLite (local instance), DynamoDB + S3 (AWS).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sleeper.core import SleeperError
from sleeper.core.statestore.transactions import LogType, TransactionType


class DuplicateTransactionNumberError(SleeperError):
    """Another writer already appended a transaction with this number (the conditional write failed)."""


class TransactionBodyNotFoundError(SleeperError):
    """A log entry points at a large transaction body that cannot be found."""


class SnapshotConflictError(SleeperError):
    """A snapshot could not be saved because the latest snapshot is already at or beyond its transaction number."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogEntry:
    """One entry of a table's transaction log.

    Exactly one of ``body`` (the transaction JSON) and ``body_key`` (where a large body is stored) is set.

    ``transaction_id`` is beyond Sleeper: a unique id (a UUID) the writer gives one transaction, the same on every
    attempt to append it. Backends that can keep it beside the entry (an extra DynamoDB attribute, a field of the
    object log's JSON) do, where Sleeper's readers ignore it; it lets a writer whose append's response was lost
    (a retry answered "number taken", or a timeout) tell its own entry from another writer's. None on entries Sleeper
    wrote and on backends that keep no id (SQLite, where no response can be lost).
    """

    transaction_number: int
    update_time: datetime
    transaction_type: TransactionType
    body: str | None = None
    body_key: str | None = None
    transaction_id: str | None = None

    def __post_init__(self) -> None:
        if (self.body is None) == (self.body_key is None):
            raise ValueError("a log entry holds exactly one of body and body_key")
        if self.transaction_number < 1:
            raise ValueError("transaction numbers start at 1")


class TransactionLogStore(Protocol):
    """The log of one table for one log type (files or partitions). Numbers start at 1 and are contiguous."""

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Appends an entry if no entry has its number yet and the table is not deleted (one atomic check).

        Keeps the entry's ``transaction_id`` with it if the backend can.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists. The entry may be this one, if
                the backend's client retried an append whose first response was lost: the caller reads the log
                to tell (``sleeper.statestore.log_head``).
            TableDeletedError: If the backend's ``delete_table`` marked the table deleted; nothing is appended.
        """
        ...

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order."""
        ...

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed."""
        ...


class TransactionBodyStore(Protocol):
    """Holds transaction bodies too large for a log entry (200 KiB or more)."""

    def store(self, key: str, body: str) -> None:
        """Stores a body under a key (overwriting the same body is harmless)."""
        ...

    def load(self, key: str) -> str:
        """Loads a body.

        Raises:
            TransactionBodyNotFoundError: If there is none under the key.
        """
        ...

    def delete(self, key: str) -> None:
        """Deletes a body; a missing body is not an error."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotMetadata:
    """Where a snapshot of one log's state is stored, and the transaction number it reflects."""

    log_type: LogType
    path: str
    transaction_number: int
    update_time: datetime


class SnapshotMetadataStore(Protocol):
    """Records the snapshots of one table, and which is the latest per log type."""

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None if there is none."""
        ...

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot and makes it the latest, only if it is ahead of the current latest.

        Raises:
            SnapshotConflictError: If the latest snapshot is already at or beyond this transaction number.
        """
        ...

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        ...

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot (never the latest one)."""
        ...


class StateStoreBackend(Protocol):
    """Builds the ports for a table: what an adapter family (memory, SQLite, AWS) provides."""

    def transaction_log(self, table_id: str, log_type: LogType) -> TransactionLogStore:
        """The log of a table."""
        ...

    def body_store(self, table_id: str) -> TransactionBodyStore:
        """The large-body store of a table."""
        ...

    def snapshot_metadata(self, table_id: str) -> SnapshotMetadataStore:
        """The snapshot records of a table."""
        ...

    def delete_table(self, table_id: str) -> None:
        """Marks a table deleted, then removes every log entry and snapshot record of it.

        The mark comes first and stays: from then on every append to the table's logs is refused
        (``TableDeletedError``), so a writer racing the deletion cannot leave entries behind. Calling it again
        finishes a deletion that failed part way.
        """
        ...

    def is_deleted(self, table_id: str) -> bool:
        """Whether ``delete_table`` marked a table deleted (the sweep of deleted tables' leftovers asks)."""
        ...
