"""The SQLite database of a local instance: one file, in WAL mode, shared safely by several processes.

Each process (and each ``SqliteDatabase`` object) has its own connection; calls from several threads through one
object are serialised by a lock. Writers take the write lock at the start of their transaction (``BEGIN
IMMEDIATE``), so read-then-write transactions never deadlock, and wait up to ``busy_timeout`` for other writers.
``synchronous = NORMAL`` in WAL mode keeps the database consistent after a crash; only a power loss can drop the last
commits.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sleeper.statestore.exceptions import StateStoreStorageError

BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for another process's write lock before failing."""

_WAL_ATTEMPTS = 50


class SqliteDatabase:
    """A SQLite database file in WAL mode.

    Args:
        path: The database file (created if missing, with its directory).
        schema: SQL statements run once per connection to create tables and indexes (``IF NOT EXISTS``).
    """

    def __init__(self, path: str | Path, *, schema: str = "") -> None:
        self._path = Path(path)
        self._schema = schema
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            self._path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(connection)
        connection.execute("PRAGMA synchronous = NORMAL")
        if self._schema:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for statement in self._schema.split(";"):
                    if statement.strip():
                        connection.execute(statement)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        self._connection = connection
        self._pid = os.getpid()
        return connection

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed on success, rolled back on error.

        Raises:
            StateStoreStorageError: If SQLite fails (e.g. the database stayed locked past the busy timeout).
        """
        with self._lock:
            try:
                connection = self._connect()
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise StateStoreStorageError(f"SQLite database {self._path}: {e}") from e
            try:
                yield connection
            except BaseException:
                _rollback(connection)
                raise
            try:
                connection.execute("COMMIT")
            except sqlite3.Error as e:
                _rollback(connection)
                raise StateStoreStorageError(f"SQLite database {self._path}: commit failed: {e}") from e

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot of the database.

        Raises:
            StateStoreStorageError: If SQLite fails.
        """
        with self._lock:
            try:
                connection = self._connect()
                connection.execute("BEGIN")
            except sqlite3.Error as e:
                raise StateStoreStorageError(f"SQLite database {self._path}: {e}") from e
            try:
                yield connection
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None


def _rollback(connection: sqlite3.Connection) -> None:
    """Ends a failed write transaction, if SQLite has not already rolled it back."""
    if connection.in_transaction:
        try:
            connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _enable_wal(connection: sqlite3.Connection) -> None:
    """Switches the database to WAL mode. The switch needs a moment with no other connection busy, which the busy
    handler does not wait for, so a failed switch is retried briefly."""
    for attempt in range(_WAL_ATTEMPTS):
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError:
            mode = None
        if isinstance(mode, str) and mode.lower() == "wal":
            return
        time.sleep(0.01 * (attempt + 1))
    raise StateStoreStorageError(f"could not switch SQLite database {connection} to WAL mode")
