"""The state store ports of a local instance: logs and snapshot records in SQLite, large bodies as files.

Tables (in the instance's one SQLite database)::

    transaction_log(table_id, log_type, number, update_time, type, body, body_key)
        PRIMARY KEY (table_id, log_type, number): an INSERT of a taken number fails, which is the conditional append
    snapshot_all(table_id, log_type, number, path, update_time)      every snapshot
    snapshot_latest(table_id, log_type, number, path, update_time)   the latest per log, moved only forwards
    deleted_table(table_id, deleted_time)                            tables deleted: their logs take no appends

Times are epoch milliseconds. Large bodies are files ``<body directory>/<key>``, keys being
``<table id>/statestore/transactions/<instant>-<uuid>.json`` as in the data bucket on AWS.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sleeper.adapters.local.sqlite import SqliteDatabase
from sleeper.core.statestore import TableDeletedError
from sleeper.core.statestore.transactions import LogType, TransactionType
from sleeper.statestore import (
    DuplicateTransactionNumberError,
    SnapshotConflictError,
    SnapshotMetadata,
    StateStoreStorageError,
    TransactionBodyNotFoundError,
    TransactionLogEntry,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS transaction_log (
    table_id TEXT NOT NULL,
    log_type TEXT NOT NULL,
    number INTEGER NOT NULL,
    update_time INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT,
    body_key TEXT,
    PRIMARY KEY (table_id, log_type, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_all (
    table_id TEXT NOT NULL,
    log_type TEXT NOT NULL,
    number INTEGER NOT NULL,
    path TEXT NOT NULL,
    update_time INTEGER NOT NULL,
    PRIMARY KEY (table_id, log_type, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_latest (
    table_id TEXT NOT NULL,
    log_type TEXT NOT NULL,
    number INTEGER NOT NULL,
    path TEXT NOT NULL,
    update_time INTEGER NOT NULL,
    PRIMARY KEY (table_id, log_type)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deleted_table (
    table_id TEXT NOT NULL PRIMARY KEY,
    deleted_time INTEGER NOT NULL
) WITHOUT ROWID
"""

_PAGE_SIZE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _to_ms(time: datetime) -> int:
    aware = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MS


def _from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def state_store_database(path: str | Path) -> SqliteDatabase:
    """The instance database with the state store's tables."""
    return SqliteDatabase(path, schema=SCHEMA)


class SqliteTransactionLogStore:
    """One log of one table in SQLite. Implements ``sleeper.statestore.ports.TransactionLogStore``."""

    def __init__(self, database: SqliteDatabase, table_id: str, log_type: LogType) -> None:
        self._db = database
        self._table_id = table_id
        self._log_type = log_type.value

    def add_transaction(self, entry: TransactionLogEntry) -> None:
        """Appends an entry if no entry has its number yet and the table is not marked deleted (one statement).

        Raises:
            DuplicateTransactionNumberError: If an entry with that number exists.
            TableDeletedError: If the table was deleted.
            StateStoreStorageError: If SQLite fails otherwise.
        """
        try:
            with self._db.write() as connection:
                inserted = connection.execute(
                    "INSERT INTO transaction_log (table_id, log_type, number, update_time, type, body, body_key) "
                    "SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM deleted_table WHERE table_id = ?)",
                    (
                        self._table_id,
                        self._log_type,
                        entry.transaction_number,
                        _to_ms(entry.update_time),
                        entry.transaction_type.value,
                        entry.body,
                        entry.body_key,
                        self._table_id,
                    ),
                ).rowcount
        except sqlite3.IntegrityError as e:
            raise DuplicateTransactionNumberError(
                f"transaction {entry.transaction_number} already exists in the {self._log_type} log of table "
                f"{self._table_id}"
            ) from e
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"adding transaction {entry.transaction_number}: {e}") from e
        if inserted == 0:
            raise TableDeletedError(
                f"table {self._table_id} was deleted: transaction {entry.transaction_number} is refused"
            )

    def read_transactions_after(self, transaction_number: int) -> Iterator[TransactionLogEntry]:
        """Entries with numbers greater than the given one, in order, read a page at a time.

        Raises:
            StateStoreStorageError: If SQLite fails (raised while iterating).
        """
        after = transaction_number
        while True:
            rows = self._query(
                "SELECT number, update_time, type, body, body_key FROM transaction_log "
                "WHERE table_id = ? AND log_type = ? AND number > ? ORDER BY number LIMIT ?",
                (self._table_id, self._log_type, after, _PAGE_SIZE),
            )
            for row in rows:
                yield _entry(row)
            if len(rows) < _PAGE_SIZE:
                return
            after = rows[-1][0]

    def delete_transactions_at_or_before(self, transaction_number: int) -> list[TransactionLogEntry]:
        """Removes entries with numbers up to and including the given one; returns what was removed.

        Raises:
            StateStoreStorageError: If SQLite fails.
        """
        try:
            with self._db.write() as connection:
                rows = connection.execute(
                    "SELECT number, update_time, type, body, body_key FROM transaction_log "
                    "WHERE table_id = ? AND log_type = ? AND number <= ? ORDER BY number",
                    (self._table_id, self._log_type, transaction_number),
                ).fetchall()
                connection.execute(
                    "DELETE FROM transaction_log WHERE table_id = ? AND log_type = ? AND number <= ?",
                    (self._table_id, self._log_type, transaction_number),
                )
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"deleting transactions: {e}") from e
        return [_entry(row) for row in rows]

    def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[int, int, str, str | None, str | None]]:
        try:
            with self._db.read() as connection:
                rows: list[tuple[int, int, str, str | None, str | None]] = connection.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"reading the {self._log_type} log of table {self._table_id}: {e}") from e
        return rows


def _entry(row: tuple[int, int, str, str | None, str | None]) -> TransactionLogEntry:
    number, update_time, ttype, body, body_key = row
    return TransactionLogEntry(
        transaction_number=number,
        update_time=_from_ms(update_time),
        transaction_type=TransactionType(ttype),
        body=body,
        body_key=body_key,
    )


class SqliteSnapshotMetadataStore:
    """Snapshot records of one table in SQLite. Implements ``sleeper.statestore.ports.SnapshotMetadataStore``."""

    def __init__(self, database: SqliteDatabase, table_id: str) -> None:
        self._db = database
        self._table_id = table_id

    def latest_snapshot(self, log_type: LogType) -> SnapshotMetadata | None:
        """The latest snapshot of a log, or None."""
        try:
            with self._db.read() as connection:
                row = connection.execute(
                    "SELECT number, path, update_time FROM snapshot_latest WHERE table_id = ? AND log_type = ?",
                    (self._table_id, log_type.value),
                ).fetchone()
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"reading the latest snapshot: {e}") from e
        return None if row is None else _snapshot(log_type, row)

    def save_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Records a snapshot and makes it the latest, in one SQL transaction, only if it is ahead of the latest.

        Raises:
            SnapshotConflictError: If the latest is at or beyond its number, or the snapshot is already recorded.
            StateStoreStorageError: If SQLite fails otherwise.
        """
        log_type = snapshot.log_type.value
        number = snapshot.transaction_number
        values = (self._table_id, log_type, number, snapshot.path, _to_ms(snapshot.update_time))
        try:
            with self._db.write() as connection:
                latest = connection.execute(
                    "SELECT number FROM snapshot_latest WHERE table_id = ? AND log_type = ?",
                    (self._table_id, log_type),
                ).fetchone()
                if latest is not None and latest[0] >= number:
                    raise SnapshotConflictError(
                        f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction "
                        f"{latest[0]}, at or beyond {number}"
                    )
                connection.execute(
                    "INSERT INTO snapshot_all (table_id, log_type, number, path, update_time) VALUES (?, ?, ?, ?, ?)",
                    values,
                )
                connection.execute(
                    "INSERT OR REPLACE INTO snapshot_latest (table_id, log_type, number, path, update_time) "
                    "VALUES (?, ?, ?, ?, ?)",
                    values,
                )
        except sqlite3.IntegrityError as e:
            raise SnapshotConflictError(
                f"table {self._table_id} already has a {snapshot.log_type.name} snapshot at transaction {number}"
            ) from e
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"saving a snapshot: {e}") from e

    def snapshots(self, log_type: LogType) -> list[SnapshotMetadata]:
        """Every recorded snapshot of a log, oldest first."""
        try:
            with self._db.read() as connection:
                rows = connection.execute(
                    "SELECT number, path, update_time FROM snapshot_all WHERE table_id = ? AND log_type = ? "
                    "ORDER BY number",
                    (self._table_id, log_type.value),
                ).fetchall()
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"reading snapshots: {e}") from e
        return [_snapshot(log_type, row) for row in rows]

    def delete_snapshot(self, snapshot: SnapshotMetadata) -> None:
        """Forgets a snapshot. One that is not recorded is not an error.

        Raises:
            SnapshotConflictError: If it is the latest of its log.
        """
        log_type = snapshot.log_type.value
        try:
            with self._db.write() as connection:
                latest = connection.execute(
                    "SELECT number FROM snapshot_latest WHERE table_id = ? AND log_type = ?",
                    (self._table_id, log_type),
                ).fetchone()
                if latest is not None and latest[0] == snapshot.transaction_number:
                    raise SnapshotConflictError(
                        f"snapshot {snapshot.transaction_number} is the latest {snapshot.log_type.name} snapshot of "
                        f"table {self._table_id}; it cannot be deleted"
                    )
                connection.execute(
                    "DELETE FROM snapshot_all WHERE table_id = ? AND log_type = ? AND number = ?",
                    (self._table_id, log_type, snapshot.transaction_number),
                )
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"deleting a snapshot: {e}") from e

    def delete_all(self) -> None:
        """Forgets every snapshot of the table, the latest ones included."""
        try:
            with self._db.write() as connection:
                connection.execute("DELETE FROM snapshot_all WHERE table_id = ?", (self._table_id,))
                connection.execute("DELETE FROM snapshot_latest WHERE table_id = ?", (self._table_id,))
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"deleting snapshots: {e}") from e


def _snapshot(log_type: LogType, row: tuple[int, str, int]) -> SnapshotMetadata:
    number, path, update_time = row
    return SnapshotMetadata(log_type=log_type, path=path, transaction_number=number, update_time=_from_ms(update_time))


class LocalTransactionBodyStore:
    """Large transaction bodies as UTF-8 files under a directory. Implements
    ``sleeper.statestore.ports.TransactionBodyStore``.

    Writes go to a temporary file that is renamed into place, so a reader never sees a partial body.
    """

    def __init__(self, directory: str | Path) -> None:
        self._directory = Path(directory)

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or key.startswith("/") or "\\" in key or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"unsafe transaction body key {key!r}")
        return self._directory.joinpath(*parts)

    def store(self, key: str, body: str) -> None:
        """Stores a body under a key."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            temporary.write_text(body, encoding="utf-8")
            os.replace(temporary, path)
        except OSError as e:
            temporary.unlink(missing_ok=True)
            raise StateStoreStorageError(f"storing transaction body {key}: {e}") from e

    def load(self, key: str) -> str:
        """Loads a body.

        Raises:
            TransactionBodyNotFoundError: If there is none under the key.
        """
        try:
            return self._path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TransactionBodyNotFoundError(f"no transaction body under key {key}") from None
        except OSError as e:
            raise StateStoreStorageError(f"loading transaction body {key}: {e}") from e

    def delete(self, key: str) -> None:
        """Deletes a body; a missing body is not an error."""
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as e:
            raise StateStoreStorageError(f"deleting transaction body {key}: {e}") from e


class SqliteStateStoreBackend:
    """The state store ports of a local instance. Implements ``sleeper.statestore.ports.StateStoreBackend``.

    Args:
        database: The instance's SQLite database file (or an open ``SqliteDatabase`` with this module's schema).
        body_directory: The directory under which large bodies are kept, by key (the instance's data directory,
            so a body lands in ``<data>/<table id>/statestore/transactions/``).
    """

    def __init__(self, database: str | Path | SqliteDatabase, body_directory: str | Path) -> None:
        self.database = database if isinstance(database, SqliteDatabase) else state_store_database(database)
        self.body_directory = Path(body_directory)

    def transaction_log(self, table_id: str, log_type: LogType) -> SqliteTransactionLogStore:
        """The log of a table."""
        return SqliteTransactionLogStore(self.database, table_id, log_type)

    def body_store(self, table_id: str) -> LocalTransactionBodyStore:
        """The large-body store (keys start with the table id)."""
        return LocalTransactionBodyStore(self.body_directory)

    def snapshot_metadata(self, table_id: str) -> SqliteSnapshotMetadataStore:
        """The snapshot records of a table."""
        return SqliteSnapshotMetadataStore(self.database, table_id)

    def delete_table(self, table_id: str) -> None:
        """Marks a table deleted (its logs refuse every later append), then removes every log entry of it with the
        large bodies they point at, and every snapshot record.

        Snapshot files and other files under the table's directory are left to the table deletion that owns them.
        """
        try:
            with self.database.write() as connection:
                connection.execute(
                    "INSERT OR IGNORE INTO deleted_table (table_id, deleted_time) VALUES (?, ?)",
                    (table_id, _to_ms(datetime.now(tz=UTC))),
                )
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"marking table {table_id} deleted: {e}") from e
        bodies = self.body_store(table_id)
        for log_type in LogType:
            for entry in self.transaction_log(table_id, log_type).delete_transactions_at_or_before(2**63 - 1):
                if entry.body_key is not None:
                    bodies.delete(entry.body_key)
        self.snapshot_metadata(table_id).delete_all()

    def is_deleted(self, table_id: str) -> bool:
        """Whether a table was deleted.

        Raises:
            StateStoreStorageError: If SQLite fails.
        """
        try:
            with self.database.read() as connection:
                row = connection.execute("SELECT 1 FROM deleted_table WHERE table_id = ?", (table_id,)).fetchone()
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"reading whether table {table_id} was deleted: {e}") from e
        return row is not None
