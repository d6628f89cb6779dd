"""In-memory job, task and query trackers, for tests and single-process embedded use."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

from sleeper.core.trackers.base import JOB_UPDATE_TTL
from sleeper.core.trackers.compaction import CompactionJobStatus, CompactionJobUpdate
from sleeper.core.trackers.ingest import IngestJobStatus, IngestJobUpdate
from sleeper.core.trackers.jobs import COMPACTION_JOBS, INGEST_JOBS, JobKind, JobStatus, JobTracker
from sleeper.core.trackers.query import (
    PARENT_SUB_QUERY_ID,
    QUERY_TTL,
    QueryState,
    QueryUpdate,
    TrackedQuery,
    apply_query_update,
)
from sleeper.core.trackers.serde import JobUpdate
from sleeper.core.trackers.task import TaskStatus, TaskUpdate, task_status, task_statuses

_U = TypeVar("_U", bound=JobUpdate)
_S = TypeVar("_S", bound=JobStatus)


class InMemoryJobUpdateStore(Generic[_U]):
    """Implements ``sleeper.core.trackers.jobs.JobUpdateStore`` in a list; a table's jobs are those with any update
    naming the table (all their updates are read).

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._updates: list[_U] = []

    def append(self, update: _U) -> None:
        """Stores an update."""
        with self._lock:
            self._updates.append(update)

    def updates_of_job(self, job_id: str) -> list[_U]:
        """Every update of a job."""
        with self._lock:
            return [u for u in self._updates if u.job_id == job_id]

    def updates_of_table(self, table_id: str) -> list[_U]:
        """Every update of each job with an update naming the table."""
        with self._lock:
            job_ids = {u.job_id for u in self._updates if u.table_id == table_id}
            return [u for u in self._updates if u.job_id in job_ids]

    def updates_of_rejected_jobs(self) -> list[_U]:
        """Every update (the tracker keeps the rejected jobs)."""
        with self._lock:
            return list(self._updates)

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        with self._lock:
            kept = [u for u in self._updates if u.update_time + self._ttl > now]
            removed = len(self._updates) - len(kept)
            self._updates = kept
            return removed


class InMemoryJobTracker(JobTracker[_U, _S]):
    """A job tracker (``sleeper.core.trackers.jobs.JobTracker``) in memory; a subclass names the kind.

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    kind: ClassVar[JobKind[Any, Any]]

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._store: InMemoryJobUpdateStore[_U] = InMemoryJobUpdateStore(ttl=ttl)
        super().__init__(self._store, self.kind, ttl=ttl)

    def delete_expired(self, now: datetime) -> int:
        """Forgets updates older than the time to live; returns how many."""
        return self._store.delete_expired(now)


class InMemoryIngestJobTracker(InMemoryJobTracker[IngestJobUpdate, IngestJobStatus]):
    """Implements ``sleeper.core.trackers.ingest.IngestJobTracker`` in memory."""

    kind = INGEST_JOBS


class InMemoryCompactionJobTracker(InMemoryJobTracker[CompactionJobUpdate, CompactionJobStatus]):
    """Implements ``sleeper.core.trackers.compaction.CompactionJobTracker`` in memory."""

    kind = COMPACTION_JOBS


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
