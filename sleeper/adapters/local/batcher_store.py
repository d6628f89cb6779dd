"""The ingest batcher store of a local instance, in its SQLite database.

One row per tracked file, keyed as Sleeper's DynamoDB table is: job id (``not_assigned_to_job`` while pending) and
``<table id>/<file>``. Assigning a group of files to a job checks and moves the whole group in one ``BEGIN
IMMEDIATE`` transaction, so job creators in several processes never put a file in two jobs. The table is prefixed
``batcher_`` because other adapters keep their tables in the same file.

``file_modified_time`` (epoch milliseconds, NULL when unknown) is how a submitted file is told unchanged since it was
batched; a database made before it was kept gains the column (NULL in old rows) when the store first opens it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from sleeper.adapters.batcher_store import GroupAssigningStore
from sleeper.adapters.local.sqlite import SqliteDatabase
from sleeper.ingest.batcher import (
    ASSIGN_JOB_BATCH_SIZE,
    NOT_ASSIGNED_TO_JOB,
    BatcherStoreError,
    SkippedFile,
    TrackedFile,
    from_epoch_millis,
    newest_first,
    oldest_first,
)
from sleeper.statestore import StateStoreStorageError

__all__ = ["SCHEMA", "SqliteIngestBatcherStore"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS batcher_files (
    job_id TEXT NOT NULL,
    file_path TEXT NOT NULL,
    file_size INTEGER NOT NULL,
    received_time INTEGER NOT NULL,
    expiry_time INTEGER NOT NULL,
    file_modified_time INTEGER,
    PRIMARY KEY (job_id, file_path)
);
CREATE INDEX IF NOT EXISTS batcher_files_by_path ON batcher_files (file_path)
"""

_MODIFIED_COLUMN = "file_modified_time"
_COLUMNS = f"job_id, file_path, file_size, received_time, expiry_time, {_MODIFIED_COLUMN}"
_INSERT_VALUES = "VALUES (?, ?, ?, ?, ?, ?)"
_Row = tuple[str, str, int, int, int, int | None]


def _row(file: TrackedFile) -> _Row:
    return (
        file.job_id_or_unassigned,
        file.key,
        file.file_size_bytes,
        file.received_millis,
        file.expiry_seconds,
        file.modified_millis,
    )


def _file(row: _Row) -> TrackedFile:
    job_id, key, size, received, expiry, modified = row
    table_id, path = TrackedFile.split_key(key)
    return TrackedFile(
        file=path,
        file_size_bytes=size,
        table_id=table_id,
        received_time=from_epoch_millis(received),
        expiry_time=from_epoch_millis(expiry * 1000),
        job_id=None if job_id == NOT_ASSIGNED_TO_JOB else job_id,
        file_modified_time=from_epoch_millis(modified) if modified is not None else None,
    )


class SqliteIngestBatcherStore(GroupAssigningStore):
    """Implements ``sleeper.ingest.batcher.ports.IngestBatcherStore`` in a SQLite database shared by several processes.

    Args:
        database: The instance's SQLite database file, or an open ``SqliteDatabase`` with this module's schema.
        assign_batch_size: Files assigned atomically together (Sleeper's 50 by default).
    """

    def __init__(
        self, database: str | Path | SqliteDatabase, *, assign_batch_size: int = ASSIGN_JOB_BATCH_SIZE
    ) -> None:
        super().__init__(assign_batch_size=assign_batch_size)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database, schema=SCHEMA)
        self._migrated = False

    def _migrate(self) -> None:
        """Adds ``file_modified_time`` to a table made before it was kept (once per store object)."""
        if self._migrated:
            return
        with self._db.read() as connection:
            columns = {row[1] for row in connection.execute("PRAGMA table_info(batcher_files)")}
        if _MODIFIED_COLUMN not in columns:
            with self._db.write() as connection:  # checked again under the write lock: another process may add it
                columns = {row[1] for row in connection.execute("PRAGMA table_info(batcher_files)")}
                if _MODIFIED_COLUMN not in columns:
                    connection.execute(f"ALTER TABLE batcher_files ADD COLUMN {_MODIFIED_COLUMN} INTEGER")
        self._migrated = True

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        try:
            self._migrate()
            with self._db.write() as connection:
                yield connection
        except (sqlite3.Error, StateStoreStorageError) as e:
            raise BatcherStoreError(f"ingest batcher store: {what}: {e}") from e

    def _select(self, where: str, parameters: tuple[str | int, ...] = ()) -> list[TrackedFile]:
        try:
            self._migrate()
            with self._db.read() as connection:
                rows = connection.execute(f"SELECT {_COLUMNS} FROM batcher_files WHERE {where}", parameters).fetchall()
        except (sqlite3.Error, StateStoreStorageError) as e:
            raise BatcherStoreError(f"ingest batcher store: reading files: {e}") from e
        return [_file(row) for row in rows]

    def add_file(self, file: TrackedFile) -> None:
        """Stores a file, replacing any record with the same key.

        Raises:
            BatcherStoreError: If the database fails.
        """
        with self._write(f"adding {file.key}") as connection:
            connection.execute(f"INSERT OR REPLACE INTO batcher_files ({_COLUMNS}) {_INSERT_VALUES}", _row(file))

    def add_files_unless_batched(self, files: Sequence[TrackedFile]) -> list[SkippedFile]:
        """Stores files as pending, except those batched into a job and unchanged since; returns those skipped.

        The checks and writes are one write transaction, so no job creator assigns a file between its check and
        its write.

        Raises:
            BatcherStoreError: If the database fails.
        """
        skipped: list[SkippedFile] = []
        with self._write(f"adding {len(files)} files") as connection:
            for file in files:
                rows = connection.execute(
                    f"SELECT {_COLUMNS} FROM batcher_files WHERE file_path = ? AND job_id != ?",
                    (file.key, NOT_ASSIGNED_TO_JOB),
                ).fetchall()
                batched = next((b for b in (_file(r) for r in rows) if file.is_unchanged_since(b)), None)
                if batched is not None:
                    skipped.append(SkippedFile(file=file, batched=batched))
                else:
                    connection.execute(
                        f"INSERT OR REPLACE INTO batcher_files ({_COLUMNS}) {_INSERT_VALUES}", _row(file)
                    )
        return skipped

    def _assign_group(self, job_id: str, group: Sequence[TrackedFile]) -> bool:
        """One ``BEGIN IMMEDIATE`` transaction."""
        moved = [f.assigned_to(job_id) for f in group]
        with self._write(f"assigning files to job {job_id}") as connection:
            for file in group:
                if not connection.execute(
                    "SELECT 1 FROM batcher_files WHERE job_id = ? AND file_path = ?", (NOT_ASSIGNED_TO_JOB, file.key)
                ).fetchone():
                    return False
                if connection.execute(
                    "SELECT 1 FROM batcher_files WHERE job_id = ? AND file_path = ?", (job_id, file.key)
                ).fetchone():
                    return False
            connection.executemany(
                "DELETE FROM batcher_files WHERE job_id = ? AND file_path = ?",
                [(NOT_ASSIGNED_TO_JOB, f.key) for f in group],
            )
            connection.executemany(f"INSERT INTO batcher_files ({_COLUMNS}) {_INSERT_VALUES}", [_row(f) for f in moved])
        return True

    def all_files_newest_first(self) -> list[TrackedFile]:
        """Every tracked file, newest first.

        Raises:
            BatcherStoreError: If the database fails.
        """
        return newest_first(self._select("1 = 1"))

    def pending_files_oldest_first(self) -> list[TrackedFile]:
        """The pending files, oldest first.

        Raises:
            BatcherStoreError: If the database fails.
        """
        return oldest_first(self._select("job_id = ?", (NOT_ASSIGNED_TO_JOB,)))

    def delete_all_pending(self) -> None:
        """Forgets every pending file.

        Raises:
            BatcherStoreError: If the database fails.
        """
        with self._write("deleting pending files") as connection:
            connection.execute("DELETE FROM batcher_files WHERE job_id = ?", (NOT_ASSIGNED_TO_JOB,))

    def delete_files(self, files: Sequence[TrackedFile]) -> None:
        """Forgets the given records.

        Raises:
            BatcherStoreError: If the database fails.
        """
        with self._write("deleting files") as connection:
            connection.executemany(
                "DELETE FROM batcher_files WHERE job_id = ? AND file_path = ?",
                [(f.job_id_or_unassigned, f.key) for f in files],
            )

    def delete_expired(self, now: datetime) -> int:
        """Forgets records whose expiry time has passed, as DynamoDB's time to live does; returns how many.

        Raises:
            BatcherStoreError: If the database fails.
        """
        with self._write("deleting expired files") as connection:
            cursor = connection.execute("DELETE FROM batcher_files WHERE expiry_time <= ?", (int(now.timestamp()),))
            return cursor.rowcount

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        self._db.close()
