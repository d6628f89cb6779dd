"""Every adapter of a local instance meets its database locked by another process the same way: it waits the busy
timeout, then raises ``DatabaseLockedError`` (a ``SleeperError`` naming the file and what to do), never a raw
``sqlite3`` error; and reading goes on while another process holds the write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sleeper.adapters.local import sqlite as local_sqlite
from sleeper.adapters.local.batcher_store import SqliteIngestBatcherStore
from sleeper.adapters.local.queue import SqliteQueues
from sleeper.adapters.local.sqlite import DatabaseLockedError
from sleeper.adapters.local.statestore import SqliteStateStoreBackend
from sleeper.adapters.local.table_index import SqliteTableIndex
from sleeper.adapters.local.trackers import (
    SqliteCompactionJobTracker,
    SqliteIngestJobTracker,
    SqliteQueryTracker,
    SqliteTaskTracker,
)
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.table import TableStatus
from sleeper.core.trackers.compaction import CompactionJobCreated
from sleeper.core.trackers.ingest import IngestJobStarted
from sleeper.core.trackers.query import QueryState, QueryUpdate
from sleeper.core.trackers.task import TaskStarted
from sleeper.ingest.batcher.exceptions import BatcherStoreError
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.statestore.ports import TransactionLogEntry

pytestmark = pytest.mark.integration

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

# (adapter, a write through it, a read through it), each on the database file given
Write = Callable[[Path], object]
ADAPTERS: dict[str, tuple[Write, Write]] = {
    "queues": (
        lambda db: SqliteQueues(db).queue("jobs").send("hello"),
        lambda db: SqliteQueues(db).names(),
    ),
    "ingest job tracker": (
        lambda db: SqliteIngestJobTracker(db).record(
            IngestJobStarted(job_id="job-1", table_id="t1", update_time=NOW, file_count=1)
        ),
        lambda db: SqliteIngestJobTracker(db).job("job-1"),
    ),
    "compaction job tracker": (
        lambda db: SqliteCompactionJobTracker(db).record(
            CompactionJobCreated(
                job_id="job-1", table_id="t1", update_time=NOW, partition_id="root", input_files_count=2
            )
        ),
        lambda db: SqliteCompactionJobTracker(db).job("job-1"),
    ),
    "task tracker": (
        lambda db: SqliteTaskTracker(db, kind="compaction").record(TaskStarted(task_id="task-1", update_time=NOW)),
        lambda db: SqliteTaskTracker(db, kind="compaction").all_tasks(),
    ),
    "query tracker": (
        lambda db: SqliteQueryTracker(db).record(QueryUpdate(query_id="q1", state=QueryState.QUEUED, update_time=NOW)),
        lambda db: SqliteQueryTracker(db).all_queries(),
    ),
    "table index": (
        lambda db: SqliteTableIndex(db).create(TableStatus(table_id="t1", table_name="things", online=True)),
        lambda db: SqliteTableIndex(db).list_tables(),
    ),
    "state store": (
        lambda db: (
            SqliteStateStoreBackend(db, db.parent / "data")
            .transaction_log("t1", LogType.FILES)
            .add_transaction(
                TransactionLogEntry(
                    transaction_number=1, update_time=NOW, transaction_type=TransactionType.CLEAR_FILES, body="{}"
                )
            )
        ),
        lambda db: list(
            SqliteStateStoreBackend(db, db.parent / "data")
            .transaction_log("t1", LogType.FILES)
            .read_transactions_after(0)
        ),
    ),
}


@pytest.fixture(autouse=True)
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_sqlite, "BUSY_TIMEOUT_MS", 200)


@contextmanager
def write_locked(database: Path) -> Iterator[None]:
    """Holds the database's write lock from another connection, as a busy ``sleeper run`` process would."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("CREATE TABLE IF NOT EXISTS other_process (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO other_process VALUES (1)")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def should_raise_a_typed_error_when_creating_the_schema_outlasts_the_busy_timeout(tmp_path: Path, adapter: str) -> None:
    # Given a new database whose write lock another process holds
    database = tmp_path / "sleeper.db"
    write, _ = ADAPTERS[adapter]
    with write_locked(database):
        # When an adapter that has to create its tables writes through it
        with pytest.raises(DatabaseLockedError) as raised:
            write(database)
    # Then the error names the database, says another process holds it and what to do
    message = str(raised.value)
    assert str(database) in message
    assert "locked by another sleeper process" in message
    assert "try again" in message
    # And once the lock is released the same write works
    write(database)


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def should_raise_a_typed_error_when_a_write_waits_past_the_busy_timeout(tmp_path: Path, adapter: str) -> None:
    # Given a database with the adapter's tables, whose write lock another process holds
    database = tmp_path / "sleeper.db"
    write, read = ADAPTERS[adapter]
    read(database)
    with write_locked(database):
        # When the adapter writes
        # Then it waits the busy timeout and raises the typed error, not sqlite3's
        with pytest.raises(DatabaseLockedError, match="locked by another sleeper process"):
            write(database)


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def should_read_while_another_process_holds_the_write_lock(tmp_path: Path, adapter: str) -> None:
    # Given a database with the adapter's tables and one write through it
    database = tmp_path / "sleeper.db"
    write, read = ADAPTERS[adapter]
    write(database)
    expected = read(database)
    # When another process holds the write lock, a new adapter (as a new command would open) reads
    with write_locked(database):
        found = read(database)
    # Then it reads what was written, without waiting for the lock
    assert found == expected


def should_report_the_lock_through_the_ingest_batcher_store_error(tmp_path: Path) -> None:
    # Given a new database whose write lock another process holds
    database = tmp_path / "sleeper.db"
    file = TrackedFile(file="/in/a.parquet", file_size_bytes=10, table_id="t1", received_time=NOW)
    with write_locked(database):
        # When the batcher store adds a file
        with pytest.raises(BatcherStoreError) as raised:
            SqliteIngestBatcherStore(database).add_file(file)
    # Then its port's error carries the lock's message and cause
    assert "locked by another sleeper process" in str(raised.value)
    assert isinstance(raised.value.__cause__, DatabaseLockedError)
