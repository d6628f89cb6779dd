"""The SQLite database of a local instance: one file, in WAL mode, shared safely by several processes.

Every local adapter (state store, table index, queues, trackers, ingest batcher store) reaches the database through
``SqliteDatabase``, the only place that calls ``sqlite3.connect``. Each process (and each ``SqliteDatabase`` object)
has its own connection; calls from several threads through one object are serialised by a lock.

Waiting for other processes: writers take the write lock at the start of their transaction (``BEGIN IMMEDIATE``), so
read-then-write transactions never deadlock, and SQLite's busy handler retries the lock for up to the busy timeout.
Switching a new database to WAL mode needs a moment when no other connection is busy, which the busy handler does
not wait for, so that switch is retried for the same time. A connection creates its tables only when some are
missing, so a process that only reads never waits for another's write lock (in WAL mode readers never do). A lock
that outlasts the wait raises ``DatabaseLockedError``, naming the file; any other SQLite failure at the start or
commit of a transaction raises ``StateStoreStorageError``. ``synchronous = NORMAL`` in WAL mode keeps the database
consistent after a crash; only a power loss can drop the last commits.

``SqliteDatabase(MEMORY)`` is a private database in this process's memory instead (no file, no WAL), for the
in-memory adapters: it lives as long as the object, and a forked child keeps working on its own copy.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sleeper.statestore import StateStoreStorageError

__all__ = ["BUSY_TIMEOUT_MS", "MEMORY", "DatabaseLockedError", "SqliteDatabase"]

MEMORY = ":memory:"
"""The path of a private in-memory database."""

BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for another process's lock before failing (read when a ``SqliteDatabase`` is made)."""

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_SCHEMA_OBJECT = re.compile(r"^\s*CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)


class DatabaseLockedError(StateStoreStorageError):
    """The instance's SQLite database stayed locked by another connection (normally another sleeper process, such as
    a running ``sleeper run``) for longer than the busy timeout.

    The operation that raised it changed nothing; it can be tried again once the other process is done.

    Attributes:
        path: The database file.
    """

    def __init__(self, path: Path, waited_seconds: float, doing: str) -> None:
        super().__init__(
            f"SQLite database {path} is locked by another sleeper process (waited {waited_seconds:g} s while "
            f"{doing}); try again when that process has finished, or stop it (for example a running 'sleeper run')"
        )
        self.path = path


class SqliteDatabase:
    """A SQLite database file in WAL mode.

    Args:
        path: The database file (created if missing, with its directory), or ``MEMORY``.
        schema: SQL statements that create tables and indexes (``CREATE ... IF NOT EXISTS``), run by a connection
            that finds any of them missing.
        busy_timeout_ms: How long to wait for another process's lock; ``BUSY_TIMEOUT_MS`` if omitted.
    """

    def __init__(self, path: str | Path, *, schema: str = "", busy_timeout_ms: int | None = None) -> None:
        self._path = Path(path)
        self._in_memory = str(path) == MEMORY
        self._statements = [s for s in schema.split(";") if s.strip()]
        names = [_SCHEMA_OBJECT.match(s) for s in self._statements]
        # None when a statement is not a plain CREATE ... IF NOT EXISTS: then the schema always runs
        self._schema_objects = {m.group(1) for m in names if m is not None} if all(names) else None
        self._busy_timeout_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and (self._in_memory or self._pid == os.getpid()):
            return self._connection
        try:
            if not self._in_memory:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self._path, timeout=self._busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as e:
            raise StateStoreStorageError(f"cannot open SQLite database {self._path}: {e}") from e
        try:
            connection.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            if not self._in_memory:
                self._enable_wal(connection)
                connection.execute("PRAGMA synchronous = NORMAL")
            self._create_schema(connection)
        except sqlite3.Error as e:
            connection.close()
            raise self._error(e, "opening the database") from e
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._pid = os.getpid()
        return connection

    def _enable_wal(self, connection: sqlite3.Connection) -> None:
        """Switches the database to WAL mode, retrying while other connections are busy, up to the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        attempt = 0
        while True:
            try:
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.OperationalError as e:
                if not _is_busy(e):
                    raise
                mode = None
            if isinstance(mode, str) and mode.lower() == "wal":
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DatabaseLockedError(self._path, self._busy_timeout_ms / 1000, "switching it to WAL mode")
            attempt += 1
            time.sleep(min(0.01 * attempt, 0.2, remaining))

    def _create_schema(self, connection: sqlite3.Connection) -> None:
        """Creates this object's tables in one write transaction, unless every one of them exists already."""
        if not self._statements:
            return
        if self._schema_objects is not None:
            present = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            if self._schema_objects <= present:
                return
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in self._statements:
                connection.execute(statement)
        except BaseException:
            _rollback(connection)
            raise
        connection.execute("COMMIT")

    def _error(self, e: sqlite3.Error, doing: str) -> StateStoreStorageError:
        if _is_busy(e):
            return DatabaseLockedError(self._path, self._busy_timeout_ms / 1000, doing)
        return StateStoreStorageError(f"SQLite database {self._path}: {doing}: {e}")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed on success, rolled back on error.

        Errors raised inside the block pass through (so callers can tell an ``sqlite3.IntegrityError``), except a
        lock that outlasted the busy timeout, which becomes ``DatabaseLockedError``.

        Raises:
            DatabaseLockedError: If another process held the database locked past the busy timeout.
            StateStoreStorageError: If SQLite fails to open the database, begin or commit.
        """
        with self._lock:
            connection = self._connect()
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise self._error(e, "starting a write") from e
            try:
                yield connection
            except sqlite3.OperationalError as e:
                _rollback(connection)
                if _is_busy(e):
                    raise self._error(e, "writing") from e
                raise
            except BaseException:
                _rollback(connection)
                raise
            try:
                connection.execute("COMMIT")
            except sqlite3.Error as e:
                _rollback(connection)
                raise self._error(e, "committing") from e

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot of the database.

        Raises:
            DatabaseLockedError: If another process held the database locked past the busy timeout.
            StateStoreStorageError: If SQLite fails to open the database or begin.
        """
        with self._lock:
            connection = self._connect()
            try:
                connection.execute("BEGIN")
            except sqlite3.Error as e:
                raise self._error(e, "starting a read") from e
            try:
                yield connection
            except sqlite3.OperationalError as e:
                if _is_busy(e):
                    raise self._error(e, "reading") from e
                raise
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use; an in-memory database starts empty again)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None


def _is_busy(e: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for another connection's lock."""
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(e) or "busy" in str(e)


def _rollback(connection: sqlite3.Connection) -> None:
    """Ends a failed write transaction, if SQLite has not already rolled it back."""
    if connection.in_transaction:
        try:
            connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass
