"""A table's transaction logs and snapshot records as objects in a store of named objects (beyond Sleeper).

The layout is :mod:`sleeper.statestore.object_log`'s: one object per log entry or snapshot record, named by its
number. The stores here hold the logic, the same for every object store; an adapter gives the objects
(:class:`Objects`): S3 (``sleeper.adapters.aws.s3_log``) or a local directory (``sleeper.adapters.local.file_log``).

An append creates the next number's object only if no object has that name, so two writers can never both take a
number. A deleted table has a tombstone object outside its prefix. An object store has no transaction over two
objects, so an append is checked after it lands: if the table has a tombstone then, the appended entry is deleted
again and the append is refused (``TableDeletedError``). An append that lands after the tombstone is therefore
always refused; one that landed before it is deleted with the rest of the table.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Protocol

from sleeper.core.statestore import TableDeletedError
from sleeper.core.statestore.transactions import LogType
from sleeper.statestore import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    TransactionBodyStore,
    TransactionLogEntry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
    log_prefix,
    number_of,
    numbered_name,
    snapshot_records_prefix,
    tombstone_key,
)

__all__ = ["ObjectSnapshotMetadataStore", "ObjectStateStoreBackend", "ObjectTransactionLogStore", "Objects"]

_EVERY_TRANSACTION = 2**63 - 1


class Objects(Protocol):
    """Named objects (keys with ``/``-separated prefixes), as the object logs use them. Each call raises the store's
    own error when the store fails."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Creates an object only if none has its key; False if one has (nothing was written by this call)."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Writes an object, replacing any with its key."""
        ...

    def get(self, key: str) -> bytes | None:
        """An object's bytes, or None if there is none."""
        ...

    def exists(self, key: str) -> bool:
        """Whether an object has this key."""
        ...

    def numbered_keys(self, prefix: str, *, after: int = -1) -> Iterator[str]:
        """Keys of the numbered objects under a prefix with numbers above ``after``, in number order."""
        ...

    def delete(self, keys: list[str]) -> None:
        """Deletes objects; a key with no object is not an error."""
        ...

    def where(self, key: str) -> str:
        """Where an object is, for messages (an S3 URI, a path)."""
        ...


class ObjectTransactionLogStore:
    """One log of one table as objects. Implements ``sleeper.statestore.ports.TransactionLogStore``.

    Args:
        objects: The object store.
        table_id: The table.
        log_type: Which of its logs.
    """

    def __init__(self, objects: Objects, table_id: str, log_type: LogType) -> None:
        self._objects = objects
        self._table_id = table_id
        self._prefix = log_prefix(table_id, log_type)
        self._log_type = log_type

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Writes the entry's object if no entry has its number, then refuses it if the table was deleted.

        The object holds the entry's transaction id: when a client retries a write whose response was lost, the
        retry finds its own object, and the log head tells it from another writer's by the id.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists (nothing was written by this
                request; an earlier request of the same call, retried by the client, may have written it).
            TableDeletedError: If the table has a tombstone; an entry written is deleted again.
        """
        key = self._prefix + numbered_name(entry.transaction_number)
        if not self._objects.put_if_absent(key, encode_entry(entry)):
            if self._objects.exists(tombstone_key(self._table_id)):
                # The key may hold this very entry (a retried write whose response was lost): refuse it as any
                # append to a deleted table is; deleting the table again removes what is left.
                raise self._deleted(entry)
            raise DuplicateTransactionNumberError(
                f"table {self._table_id} already has transaction {entry.transaction_number} in its "
                f"{self._log_type.value} log ({self._objects.where(key)})"
            )
        if self._objects.exists(tombstone_key(self._table_id)):
            self._objects.delete([key])
            raise self._deleted(entry)

    def _deleted(self, entry: TransactionLogEntry) -> TableDeletedError:
        return TableDeletedError(
            f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
        )

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order, listed and read as they are consumed.

        An entry deleted between the listing and its read (by transaction deletion) is skipped.
        """
        for key in self._objects.numbered_keys(self._prefix, after=transaction_number):
            data = self._objects.get(key)
            if data is not None:
                yield decode_entry(data, where=self._objects.where(key))

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed.

        Large bodies are left for the caller to delete.
        """
        removed: list[TransactionLogEntry] = []
        keys: list[str] = []
        for key in self._objects.numbered_keys(self._prefix):
            if number_of(key) > transaction_number:
                break
            data = self._objects.get(key)
            if data is None:
                continue
            removed.append(decode_entry(data, where=self._objects.where(key)))
            keys.append(key)
        self._objects.delete(keys)
        return removed


class ObjectSnapshotMetadataStore:
    """Snapshot records of one table as objects, one per snapshot: the latest is the highest number.

    Implements ``sleeper.statestore.ports.SnapshotMetadataStore``. A record is written only if none has its number
    and none is at or beyond it when listed first, so the latest only moves forwards. Two creators racing with
    different numbers may both record theirs (each is a valid snapshot of its number); the higher is the latest.
    """

    def __init__(self, objects: Objects, table_id: str) -> None:
        self._objects = objects
        self._table_id = table_id

    def _keys(self, log_type: LogType) -> list[str]:
        return list(self._objects.numbered_keys(snapshot_records_prefix(self._table_id, log_type)))

    def _read(self, key: str) -> SnapshotMetadata | None:
        data = self._objects.get(key)
        return None if data is None else decode_snapshot(data, where=self._objects.where(key))

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        for key in reversed(self._keys(log_type)):
            found = self._read(key)
            if found is not None:
                return found
        return None

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot if the latest is behind it.

        Raises:
            SnapshotConflictError: If the latest is at or beyond its number.
        """
        keys = self._keys(snapshot.log_type)
        number = snapshot.transaction_number
        if keys and number_of(keys[-1]) >= number:
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction "
                f"{number_of(keys[-1])}, at or beyond {number}"
            )
        key = snapshot_records_prefix(self._table_id, snapshot.log_type) + numbered_name(number)
        if not self._objects.put_if_absent(key, encode_snapshot(snapshot)):
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction {number}"
            )

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        return [s for key in self._keys(log_type) if (s := self._read(key)) is not None]

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot; one not recorded is not an error.

        Raises:
            SnapshotConflictError: If it is the latest of its log.
        """
        keys = self._keys(snapshot.log_type)
        if keys and number_of(keys[-1]) == snapshot.transaction_number:
            raise SnapshotConflictError(
                f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot of table "
                f"{self._table_id}; it cannot be deleted"
            )
        self._objects.delete(
            [snapshot_records_prefix(self._table_id, snapshot.log_type) + numbered_name(snapshot.transaction_number)]
        )

    def delete_all(self) -> None:
        """Forgets every snapshot of the table, the latest ones included."""
        for log_type in LogType:
            self._objects.delete(self._keys(log_type))


class ObjectStateStoreBackend(ABC):
    """The state store of tables whose logs are objects. Implements ``sleeper.statestore.ports.StateStoreBackend``
    with the large-body store of a subclass (``body_store``).

    Args:
        objects: The object store the logs, snapshot records and tombstones are in.
    """

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

    def transaction_log(self, table_id: str, log_type: LogType) -> ObjectTransactionLogStore:
        """The log of a table."""
        return ObjectTransactionLogStore(self._objects, table_id, log_type)

    @abstractmethod
    def body_store(self, table_id: str) -> TransactionBodyStore:
        """The large-body store of a table."""

    def snapshot_metadata(self, table_id: str) -> ObjectSnapshotMetadataStore:
        """The snapshot records of a table."""
        return ObjectSnapshotMetadataStore(self._objects, table_id)

    def delete_table(self, table_id: str) -> None:
        """Writes the table's tombstone (from then on its appends are refused), then deletes its log entries with
        their large bodies, and its snapshot records. Calling it again after a failure finishes."""
        self._objects.put(tombstone_key(table_id), datetime.now(tz=UTC).isoformat().encode())
        bodies = self.body_store(table_id)
        for log_type in LogType:
            for entry in self.transaction_log(table_id, log_type).delete_transactions_at_or_before(_EVERY_TRANSACTION):
                if entry.body_key is not None:
                    bodies.delete(entry.body_key)
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether the table has a tombstone."""
        return self._objects.exists(tombstone_key(table_id))
