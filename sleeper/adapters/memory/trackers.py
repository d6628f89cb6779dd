"""In-memory job, task and query trackers, for tests and single-process embedded use."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from sleeper.core.trackers.base import JOB_UPDATE_TTL
from sleeper.core.trackers.compaction import (
    CompactionJobStatus,
    CompactionJobUpdate,
    compaction_job_status,
    compaction_job_statuses,
)
from sleeper.core.trackers.ingest import (
    IngestJobStatus,
    IngestJobStatusType,
    IngestJobUpdate,
    ingest_job_status,
    ingest_job_statuses,
)
from sleeper.core.trackers.query import (
    PARENT_SUB_QUERY_ID,
    QUERY_TTL,
    QueryState,
    QueryUpdate,
    TrackedQuery,
    apply_query_update,
)
from sleeper.core.trackers.task import TaskStatus, TaskUpdate, task_status, task_statuses


class InMemoryIngestJobTracker:
    """Implements ``sleeper.core.trackers.ingest.IngestJobTracker`` in memory.

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._updates: list[IngestJobUpdate] = []

    def record(self, update: IngestJobUpdate) -> None:
        """Stores an update."""
        with self._lock:
            self._updates.append(update)

    def job(self, job_id: str) -> IngestJobStatus | None:
        """The status of a job, or None."""
        with self._lock:
            updates = [u for u in self._updates if u.job_id == job_id]
        return ingest_job_status(updates, ttl=self._ttl) if updates else None

    def jobs(self, table_id: str) -> list[IngestJobStatus]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        with self._lock:
            job_ids = {u.job_id for u in self._updates if u.table_id == table_id}
            updates = [u for u in self._updates if u.job_id in job_ids]
        return ingest_job_statuses(updates, ttl=self._ttl)

    def unfinished_jobs(self, table_id: str) -> list[IngestJobStatus]:
        """Statuses of the table's unfinished jobs."""
        return [status for status in self.jobs(table_id) if status.is_unfinished]

    def invalid_jobs(self) -> list[IngestJobStatus]:
        """Statuses of rejected jobs of every table."""
        with self._lock:
            updates = list(self._updates)
        statuses = ingest_job_statuses(updates, ttl=self._ttl)
        return [status for status in statuses if status.status == IngestJobStatusType.REJECTED]

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        with self._lock:
            kept = [u for u in self._updates if u.update_time + self._ttl > now]
            removed = len(self._updates) - len(kept)
            self._updates = kept
            return removed


class InMemoryCompactionJobTracker:
    """Implements ``sleeper.core.trackers.compaction.CompactionJobTracker`` in memory.

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._updates: list[CompactionJobUpdate] = []

    def record(self, update: CompactionJobUpdate) -> None:
        """Stores an update."""
        with self._lock:
            self._updates.append(update)

    def job(self, job_id: str) -> CompactionJobStatus | None:
        """The status of a job, or None."""
        with self._lock:
            updates = [u for u in self._updates if u.job_id == job_id]
        return compaction_job_status(updates, ttl=self._ttl) if updates else None

    def jobs(self, table_id: str) -> list[CompactionJobStatus]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        with self._lock:
            updates = [u for u in self._updates if u.table_id == table_id]
        return compaction_job_statuses(updates, ttl=self._ttl)

    def unfinished_jobs(self, table_id: str) -> list[CompactionJobStatus]:
        """Statuses of the table's unfinished jobs."""
        return [status for status in self.jobs(table_id) if status.is_unfinished]

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        with self._lock:
            kept = [u for u in self._updates if u.update_time + self._ttl > now]
            removed = len(self._updates) - len(kept)
            self._updates = kept
            return removed


class InMemoryTaskTracker:
    """Implements ``sleeper.core.trackers.task.TaskTracker`` in memory.

    Args:
        ttl: How long a task is kept.
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._updates: list[TaskUpdate] = []

    def record(self, update: TaskUpdate) -> None:
        """Stores an update."""
        with self._lock:
            self._updates.append(update)

    def task(self, task_id: str) -> TaskStatus | None:
        """The status of a task, or None."""
        with self._lock:
            updates = [u for u in self._updates if u.task_id == task_id]
        return task_status(updates, ttl=self._ttl) if updates else None

    def all_tasks(self) -> list[TaskStatus]:
        """Every task, ordered by start time."""
        with self._lock:
            updates = list(self._updates)
        return task_statuses(updates, ttl=self._ttl)

    def tasks_in_progress(self) -> list[TaskStatus]:
        """Unfinished tasks, ordered by start time."""
        return [status for status in self.all_tasks() if not status.is_finished]


class InMemoryQueryTracker:
    """Implements ``sleeper.core.trackers.query.QueryTracker`` in memory.

    Args:
        ttl: Time to live of a row after its last update.
    """

    def __init__(self, *, ttl: timedelta = QUERY_TTL) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, TrackedQuery]] = {}

    def record(self, update: QueryUpdate) -> None:
        """Applies an update and rolls sub-queries up into their query."""
        self.record_all([update])

    def record_all(self, updates: Sequence[QueryUpdate]) -> None:
        """Applies several updates in order, atomically."""
        with self._lock:
            for update in updates:
                rows = self._rows.setdefault(update.query_id, {})
                for row in apply_query_update(rows, update, ttl=self._ttl):
                    rows[row.sub_query_id] = row

    def status(self, query_id: str, sub_query_id: str = PARENT_SUB_QUERY_ID) -> TrackedQuery | None:
        """The row of a query or sub-query, or None."""
        with self._lock:
            return self._rows.get(query_id, {}).get(sub_query_id)

    def sub_queries(self, query_id: str) -> list[TrackedQuery]:
        """The sub-query rows of a query, ordered by sub-query id."""
        with self._lock:
            rows = self._rows.get(query_id, {})
            return [rows[key] for key in sorted(rows) if key != PARENT_SUB_QUERY_ID]

    def all_queries(self) -> list[TrackedQuery]:
        """Every row, ordered by query id then sub-query id (parent first)."""
        with self._lock:
            rows = [row for by_sub in self._rows.values() for row in by_sub.values()]
        return sorted(rows, key=lambda r: (r.query_id, not r.is_parent, r.sub_query_id))

    def queries_with_state(self, state: QueryState) -> list[TrackedQuery]:
        """Rows in a state."""
        return [row for row in self.all_queries() if row.last_known_state == state]

    def failed_queries(self) -> list[TrackedQuery]:
        """Rows that FAILED or PARTIALLY_FAILED."""
        failed = (QueryState.FAILED, QueryState.PARTIALLY_FAILED)
        return [row for row in self.all_queries() if row.last_known_state in failed]

    def delete_expired(self, now: datetime) -> int:
        """Removes rows whose expiry date has passed; returns how many."""
        with self._lock:
            removed = 0
            for query_id in list(self._rows):
                rows = self._rows[query_id]
                for key in [key for key, row in rows.items() if row.expiry_date <= now]:
                    del rows[key]
                    removed += 1
                if not rows:
                    del self._rows[query_id]
            return removed
