"""Durable job, task and query trackers in a SQLite database shared by several worker processes.

Job and task trackers append every update as a JSON row and derive statuses on read, as Sleeper's DynamoDB trackers
do. The query tracker keeps one row per query and sub-query; recording a sub-query update and rolling it up into the
parent happen in one ``BEGIN IMMEDIATE`` transaction, so the roll-up always sees every sub-query's latest state.
Tables are prefixed ``tracker_`` because other adapters keep their tables in the same file.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from sleeper.adapters.local.sqlite import SqliteDatabase
from sleeper.core.trackers import (
    COMPACTION_JOBS,
    INGEST_JOBS,
    JOB_UPDATE_TTL,
    PARENT_SUB_QUERY_ID,
    QUERY_TTL,
    CompactionJobStatus,
    CompactionJobUpdate,
    IngestJobStatus,
    IngestJobUpdate,
    JobKind,
    JobStatus,
    JobTracker,
    JobUpdate,
    QueryState,
    QueryUpdate,
    TaskStatus,
    TaskUpdate,
    TrackedQuery,
    apply_query_update,
    task_statuses,
    task_update_from_json,
    update_to_json,
    update_type_name,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tracker_job_updates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    job_id TEXT NOT NULL,
    table_id TEXT,
    update_type TEXT NOT NULL,
    update_time REAL NOT NULL,
    expires_at REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tracker_job_updates_by_job ON tracker_job_updates (kind, job_id, seq);
CREATE INDEX IF NOT EXISTS tracker_job_updates_by_table ON tracker_job_updates (kind, table_id);
CREATE TABLE IF NOT EXISTS tracker_task_updates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    task_id TEXT NOT NULL,
    update_type TEXT NOT NULL,
    update_time REAL NOT NULL,
    expires_at REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tracker_task_updates_by_task ON tracker_task_updates (kind, task_id, seq);
CREATE TABLE IF NOT EXISTS tracker_queries (
    query_id TEXT NOT NULL,
    sub_query_id TEXT NOT NULL,
    state TEXT NOT NULL,
    last_update_time TEXT NOT NULL,
    expiry_date TEXT NOT NULL,
    expires_at REAL NOT NULL,
    row_count INTEGER NOT NULL,
    error_message TEXT,
    PRIMARY KEY (query_id, sub_query_id)
);
"""

_U = TypeVar("_U", bound=JobUpdate)
_S = TypeVar("_S", bound=JobStatus)


def _database(db_path: str | Path) -> SqliteDatabase:
    """The instance database with the trackers' tables."""
    return SqliteDatabase(db_path, schema=_SCHEMA)


class _UpdateRows:
    """The updates of one kind in one tracker table: appended as JSON rows, read back in the order they were written.

    Args:
        db: The SQLite database (shared with other adapters).
        table: The table (``tracker_job_updates`` or ``tracker_task_updates``).
        kind: The kind of job or task, kept apart from the others in the same table.
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, db: SqliteDatabase, table: str, kind: str, ttl: timedelta) -> None:
        self._db = db
        self._table = table
        self._kind = kind
        self._ttl = ttl

    def append(self, update: JobUpdate | TaskUpdate, **ids: str | None) -> None:
        """Stores an update with the id columns given (``job_id`` and ``table_id``, or ``task_id``)."""
        columns = ["kind", *ids, "update_type", "update_time", "expires_at", "body"]
        with self._db.write() as connection:
            connection.execute(
                f"INSERT INTO {self._table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                (
                    self._kind,
                    *ids.values(),
                    update_type_name(update),
                    update.update_time.timestamp(),
                    (update.update_time + self._ttl).timestamp(),
                    update_to_json(update),
                ),
            )

    def bodies(self, where: str = "1 = 1", parameters: tuple[str, ...] = ()) -> list[str]:
        """The JSON of the kind's updates matching a condition, in the order they were written."""
        with self._db.read() as connection:
            rows = connection.execute(
                f"SELECT body FROM {self._table} WHERE kind = ? AND {where} ORDER BY seq", (self._kind, *parameters)
            ).fetchall()
        return [row[0] for row in rows]

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        with self._db.write() as connection:
            cursor = connection.execute(
                f"DELETE FROM {self._table} WHERE kind = ? AND expires_at <= ?", (self._kind, now.timestamp())
            )
            return cursor.rowcount

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        self._db.close()


class _Upkeep:
    """What a SQLite tracker over one kind's update rows offers besides its port."""

    _rows: _UpdateRows

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        return self._rows.delete_expired(now)

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        self._rows.close()


class SqliteJobUpdateStore(Generic[_U]):
    """Implements ``sleeper.core.trackers.jobs.JobUpdateStore`` in the ``tracker_job_updates`` table of a database.

    Each update is a JSON row tagged with its kind of job; reads return rows in the order they were written, and a
    table's jobs are those with any update naming the table (all their updates are read).

    Args:
        db: The SQLite database (shared with other adapters).
        kind: The kind of job whose updates this store keeps.
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, db: SqliteDatabase, kind: JobKind[_U, Any], ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self.rows = _UpdateRows(db, "tracker_job_updates", kind.name, ttl)
        self._kind = kind

    def append(self, update: _U) -> None:
        """Stores an update."""
        self.rows.append(update, job_id=update.job_id, table_id=update.table_id)

    def updates_of_job(self, job_id: str) -> list[_U]:
        """Every update of a job."""
        return self._select("job_id = ?", (job_id,))

    def updates_of_table(self, table_id: str) -> list[_U]:
        """Every update of each job with an update naming the table."""
        return self._select(
            "job_id IN (SELECT job_id FROM tracker_job_updates WHERE kind = ? AND table_id = ?)",
            (self._kind.name, table_id),
        )

    def updates_of_rejected_jobs(self) -> list[_U]:
        """Every update of this kind (the tracker keeps the rejected jobs)."""
        return self._select()

    def _select(self, where: str = "1 = 1", parameters: tuple[str, ...] = ()) -> list[_U]:
        return [self._kind.from_json(body) for body in self.rows.bodies(where, parameters)]


class SqliteJobTracker(_Upkeep, JobTracker[_U, _S]):
    """A job tracker (``sleeper.core.trackers.jobs.JobTracker``) in a SQLite database; a subclass names the kind.

    Args:
        db_path: The SQLite database file (shared with other adapters).
        ttl: How long an update is kept (see ``delete_expired``).
    """

    kind: ClassVar[JobKind[Any, Any]]

    def __init__(self, db_path: str | Path, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        store: SqliteJobUpdateStore[_U] = SqliteJobUpdateStore(_database(db_path), self.kind, ttl)
        self._rows = store.rows
        super().__init__(store, self.kind, ttl=ttl)


class SqliteIngestJobTracker(SqliteJobTracker[IngestJobUpdate, IngestJobStatus]):
    """Implements ``sleeper.core.trackers.ingest.IngestJobTracker`` in a SQLite database."""

    kind = INGEST_JOBS


class SqliteCompactionJobTracker(SqliteJobTracker[CompactionJobUpdate, CompactionJobStatus]):
    """Implements ``sleeper.core.trackers.compaction.CompactionJobTracker`` in a SQLite database."""

    kind = COMPACTION_JOBS


class SqliteTaskTracker(_Upkeep):
    """Implements ``sleeper.core.trackers.task.TaskTracker`` in a SQLite database.

    Args:
        db_path: The SQLite database file (shared with other adapters).
        kind: Which tasks this tracker holds (for example ``"compaction"`` or ``"ingest"``).
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, db_path: str | Path, *, kind: str, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._rows = _UpdateRows(_database(db_path), "tracker_task_updates", kind, ttl)
        self._ttl = ttl

    def record(self, update: TaskUpdate) -> None:
        """Stores an update."""
        self._rows.append(update, task_id=update.task_id)

    def task(self, task_id: str) -> TaskStatus | None:
        """The status of a task, or None."""
        statuses = self._select("task_id = ?", (task_id,))
        return statuses[0] if statuses else None

    def all_tasks(self) -> list[TaskStatus]:
        """Every task, ordered by start time."""
        return self._select()

    def tasks_in_progress(self) -> list[TaskStatus]:
        """Unfinished tasks, ordered by start time."""
        return [status for status in self.all_tasks() if not status.is_finished]

    def _select(self, where: str = "1 = 1", parameters: tuple[str, ...] = ()) -> list[TaskStatus]:
        updates = [task_update_from_json(body) for body in self._rows.bodies(where, parameters)]
        return task_statuses(updates, ttl=self._ttl)


_QUERY_COLUMNS = "query_id, sub_query_id, state, last_update_time, expiry_date, row_count, error_message"
_QUERY_ORDER = "ORDER BY query_id, sub_query_id <> '-', sub_query_id"


class SqliteQueryTracker:
    """Implements ``sleeper.core.trackers.query.QueryTracker`` in a SQLite database.

    Args:
        db_path: The SQLite database file (shared with other adapters).
        ttl: Time to live of a row after its last update.
    """

    def __init__(self, db_path: str | Path, *, ttl: timedelta = QUERY_TTL) -> None:
        self._db = _database(db_path)
        self._ttl = ttl

    def record(self, update: QueryUpdate) -> None:
        """Applies an update and rolls sub-queries up into their query, in one transaction."""
        self.record_all([update])

    def record_all(self, updates: Sequence[QueryUpdate]) -> None:
        """Applies several updates in order, in one transaction."""
        with self._db.write() as connection:
            for update in updates:
                rows = connection.execute(
                    f"SELECT {_QUERY_COLUMNS} FROM tracker_queries WHERE query_id = ?", (update.query_id,)
                ).fetchall()
                current = {row.sub_query_id: row for row in map(_tracked_query, rows)}
                for row in apply_query_update(current, update, ttl=self._ttl):
                    connection.execute(
                        f"INSERT OR REPLACE INTO tracker_queries ({_QUERY_COLUMNS}, expires_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            row.query_id,
                            row.sub_query_id,
                            row.last_known_state.value,
                            row.last_update_time.isoformat(),
                            row.expiry_date.isoformat(),
                            row.row_count,
                            row.error_message,
                            row.expiry_date.timestamp(),
                        ),
                    )

    def status(self, query_id: str, sub_query_id: str = PARENT_SUB_QUERY_ID) -> TrackedQuery | None:
        """The row of a query or sub-query, or None."""
        rows = self._select("query_id = ? AND sub_query_id = ?", (query_id, sub_query_id))
        return rows[0] if rows else None

    def sub_queries(self, query_id: str) -> list[TrackedQuery]:
        """The sub-query rows of a query, ordered by sub-query id."""
        return self._select("query_id = ? AND sub_query_id <> ?", (query_id, PARENT_SUB_QUERY_ID))

    def all_queries(self) -> list[TrackedQuery]:
        """Every row, ordered by query id then sub-query id (parent first)."""
        return self._select("1 = 1", ())

    def queries_with_state(self, state: QueryState) -> list[TrackedQuery]:
        """Rows in a state."""
        return self._select("state = ?", (state.value,))

    def failed_queries(self) -> list[TrackedQuery]:
        """Rows that FAILED or PARTIALLY_FAILED."""
        return self._select("state IN (?, ?)", (QueryState.FAILED.value, QueryState.PARTIALLY_FAILED.value))

    def delete_expired(self, now: datetime) -> int:
        """Removes rows whose expiry date has passed; returns how many."""
        with self._db.write() as connection:
            return connection.execute("DELETE FROM tracker_queries WHERE expires_at <= ?", (now.timestamp(),)).rowcount

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        self._db.close()

    def _select(self, where: str, parameters: tuple[str, ...]) -> list[TrackedQuery]:
        with self._db.read() as connection:
            rows = connection.execute(
                f"SELECT {_QUERY_COLUMNS} FROM tracker_queries WHERE {where} {_QUERY_ORDER}", parameters
            ).fetchall()
        return [_tracked_query(row) for row in rows]


def _tracked_query(row: tuple[str, str, str, str, str, int, str | None]) -> TrackedQuery:
    query_id, sub_query_id, state, last_update_time, expiry_date, row_count, error_message = row
    return TrackedQuery(
        query_id=query_id,
        sub_query_id=sub_query_id,
        last_known_state=QueryState(state),
        last_update_time=datetime.fromisoformat(last_update_time),
        expiry_date=datetime.fromisoformat(expiry_date),
        row_count=row_count,
        error_message=error_message,
    )
