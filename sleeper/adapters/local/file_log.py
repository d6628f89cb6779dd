"""A table's transaction logs and snapshot records as files on a local filesystem (beyond Sleeper).

The layout is :mod:`sleeper.statestore.object_log`'s, under a root directory (a local instance's ``data/``): the
same keys as on S3, so a table's directory looks as its prefix in the data bucket would. An append writes the entry
to a temporary file and hard-links it to the next number's name: ``link`` creates the name only if it does not exist
(atomically, on one filesystem), so two writers, in any processes, can never both take a number, and a reader never
sees a half-written entry (an exclusive ``open(..., "x")`` would show the name before its content is written).

A deleted table has a tombstone file outside its directory; as on S3, an append is checked after it lands and
deleted again if the table has a tombstone (``TableDeletedError``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from sleeper.adapters.local.statestore import LocalTransactionBodyStore
from sleeper.core.statestore.exceptions import TableDeletedError
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.exceptions import StateStoreStorageError
from sleeper.statestore.object_log import (
    ObjectLogFormatError,
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
from sleeper.statestore.ports import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    TransactionLogEntry,
)

__all__ = ["FileSnapshotMetadataStore", "FileStateStoreBackend", "FileTransactionLogStore"]

_EVERY_TRANSACTION = 2**63 - 1


def _create_exclusively(path: Path, data: bytes) -> bool:
    """Creates a file with this content only if no file has its name; False if one has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        return True
    except OSError as e:
        raise StateStoreStorageError(f"writing {path}: {e}") from e
    finally:
        temporary.unlink(missing_ok=True)


def _numbered(directory: Path) -> list[tuple[int, Path]]:
    """The numbered files of a directory, in number order (temporary files are left out)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise StateStoreStorageError(f"listing {directory}: {e}") from e
    out: list[tuple[int, Path]] = []
    for name in names:
        if name.startswith("."):
            continue
        try:
            out.append((number_of(name), directory / name))
        except ObjectLogFormatError:
            continue
    out.sort()
    return out


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateStoreStorageError(f"reading {path}: {e}") from e


class FileTransactionLogStore:
    """One log of one table as files. Implements ``sleeper.statestore.ports.TransactionLogStore``.

    Args:
        root: The directory tables' directories are under.
        table_id: The table.
        log_type: Which of its logs.
    """

    def __init__(self, root: Path, table_id: str, log_type: LogType) -> None:
        self._root = root
        self._table_id = table_id
        self._log_type = log_type
        self._directory = root / log_prefix(table_id, log_type)

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Creates the entry's file if no entry has its number, then refuses it if the table was deleted.

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists (nothing was written).
            TableDeletedError: If the table has a tombstone; the entry written is deleted again.
            StateStoreStorageError: If the filesystem fails.
        """
        path = self._directory / numbered_name(entry.transaction_number)
        if not _create_exclusively(path, encode_entry(entry)):
            raise DuplicateTransactionNumberError(
                f"table {self._table_id} already has transaction {entry.transaction_number} in its "
                f"{self._log_type.value} log ({path})"
            )
        if (self._root / tombstone_key(self._table_id)).exists():
            path.unlink(missing_ok=True)
            raise TableDeletedError(
                f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
            )

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order (one deleted meanwhile is skipped)."""
        for number, path in _numbered(self._directory):
            if number <= transaction_number:
                continue
            data = _read(path)
            if data is not None:
                yield decode_entry(data, where=str(path))

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed."""
        removed: list[TransactionLogEntry] = []
        for number, path in _numbered(self._directory):
            if number > transaction_number:
                break
            data = _read(path)
            if data is None:
                continue
            removed.append(decode_entry(data, where=str(path)))
            path.unlink(missing_ok=True)
        return removed


class FileSnapshotMetadataStore:
    """Snapshot records of one table as files, one per snapshot: the latest is the highest number.

    Implements ``sleeper.statestore.ports.SnapshotMetadataStore`` as :class:`sleeper.adapters.aws.s3_log`'s records
    do (two creators racing with different numbers may both record theirs; the higher is the latest).
    """

    def __init__(self, root: Path, table_id: str) -> None:
        self._root = root
        self._table_id = table_id

    def _directory(self, log_type: LogType) -> Path:
        return self._root / snapshot_records_prefix(self._table_id, log_type)

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        for _, path in reversed(_numbered(self._directory(log_type))):
            data = _read(path)
            if data is not None:
                return decode_snapshot(data, where=str(path))
        return None

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot if the latest is behind it.

        Raises:
            SnapshotConflictError: If the latest is at or beyond its number.
        """
        directory = self._directory(snapshot.log_type)
        recorded = _numbered(directory)
        number = snapshot.transaction_number
        if recorded and recorded[-1][0] >= number:
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction "
                f"{recorded[-1][0]}, at or beyond {number}"
            )
        if not _create_exclusively(directory / numbered_name(number), encode_snapshot(snapshot)):
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction {number}"
            )

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        out = []
        for _, path in _numbered(self._directory(log_type)):
            data = _read(path)
            if data is not None:
                out.append(decode_snapshot(data, where=str(path)))
        return out

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot; one not recorded is not an error.

        Raises:
            SnapshotConflictError: If it is the latest of its log.
        """
        recorded = _numbered(self._directory(snapshot.log_type))
        if recorded and recorded[-1][0] == snapshot.transaction_number:
            raise SnapshotConflictError(
                f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot of table "
                f"{self._table_id}; it cannot be deleted"
            )
        (self._directory(snapshot.log_type) / numbered_name(snapshot.transaction_number)).unlink(missing_ok=True)

    def delete_all(self) -> None:
        """Forgets every snapshot of the table, the latest ones included."""
        for log_type in LogType:
            for _, path in _numbered(self._directory(log_type)):
                path.unlink(missing_ok=True)


class FileStateStoreBackend:
    """The state store of local tables whose logs are files. Implements
    ``sleeper.statestore.ports.StateStoreBackend``.

    Args:
        root: The directory the tables' directories are under (a local instance's ``data/``); large bodies are kept
            there too, as for the SQLite logs.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def transaction_log(self, table_id: str, log_type: LogType) -> FileTransactionLogStore:
        """The log of a table."""
        return FileTransactionLogStore(self.root, table_id, log_type)

    def body_store(self, table_id: str) -> LocalTransactionBodyStore:
        """The large-body store (keys start with the table id)."""
        return LocalTransactionBodyStore(self.root)

    def snapshot_metadata(self, table_id: str) -> FileSnapshotMetadataStore:
        """The snapshot records of a table."""
        return FileSnapshotMetadataStore(self.root, table_id)

    def delete_table(self, table_id: str) -> None:
        """Writes the table's tombstone (from then on its appends are refused), then deletes its log entries with
        their large bodies and its snapshot records."""
        tombstone = self.root / tombstone_key(table_id)
        try:
            tombstone.parent.mkdir(parents=True, exist_ok=True)
            tombstone.write_text(datetime.now(tz=UTC).isoformat(), encoding="utf-8")
        except OSError as e:
            raise StateStoreStorageError(f"marking table {table_id} deleted: {e}") from e
        bodies = self.body_store(table_id)
        for log_type in LogType:
            for entry in self.transaction_log(table_id, log_type).delete_transactions_at_or_before(_EVERY_TRANSACTION):
                if entry.body_key is not None:
                    bodies.delete(entry.body_key)
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether the table has a tombstone."""
        return (self.root / tombstone_key(table_id)).exists()
