"""One job tracker for every kind of job, generic over its update type, on one update-store port per backend.

A kind of job (``INGEST_JOBS``, ``COMPACTION_JOBS``) says how its updates are read back from JSON, how statuses are
derived from them and which statuses count as rejected. A backend implements ``JobUpdateStore`` once (SQLite,
DynamoDB, memory) for any kind, and ``JobTracker(store, kind)`` is then the tracker: it appends updates and derives
statuses from the updates it reads back. ``JobTracker`` implements the ``IngestJobTracker`` and
``CompactionJobTracker`` ports for the matching kind.

Usage::

    tracker = JobTracker(store, INGEST_JOBS)
    tracker.record(IngestJobStarted(job_id="job-1", table_id="t", update_time=now))
    tracker.job("job-1").status  # IngestJobStatusType.IN_PROGRESS
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, Protocol, TypeVar

from sleeper.core.naming import JobTrackerTableNames
from sleeper.core.trackers.base import JOB_UPDATE_TTL, StatusOf, statuses_by_job
from sleeper.core.trackers.compaction import CompactionJobStatus, CompactionJobUpdate, compaction_job_status
from sleeper.core.trackers.ingest import IngestJobStatus, IngestJobStatusType, IngestJobUpdate, ingest_job_status
from sleeper.core.trackers.serde import JobUpdate, compaction_update_from_json, ingest_update_from_json


class JobStatus(Protocol):
    """What the generic tracker reads of a job status."""

    @property
    def is_unfinished(self) -> bool:
        """Whether the job may still make progress or be retried."""
        ...


U = TypeVar("U", bound=JobUpdate)
S = TypeVar("S", bound=JobStatus)


@dataclass(frozen=True)
class JobKind(Generic[U, S]):
    """A kind of tracked job: what a generic tracker and a generic update store need to know of it.

    Attributes:
        name: The kind's name (``"ingest"``, ``"compaction"``), under which durable stores keep its updates apart.
        from_json: Reads an update of this kind written by ``sleeper.core.trackers.serde.update_to_json``.
        status_of: Derives the status of one job of this kind from its updates.
        table_names: The DynamoDB tables Sleeper names for this kind's tracker in an instance.
        is_rejected: Whether a status is of a job its validation rejected; None for kinds that are not validated.
    """

    name: str
    from_json: Callable[[str], U]
    status_of: StatusOf[U, S]
    table_names: Callable[[str], JobTrackerTableNames]
    is_rejected: Callable[[S], bool] | None = None


def _is_rejected_ingest_job(status: IngestJobStatus) -> bool:
    return status.status == IngestJobStatusType.REJECTED


INGEST_JOBS: JobKind[IngestJobUpdate, IngestJobStatus] = JobKind(
    "ingest", ingest_update_from_json, ingest_job_status, JobTrackerTableNames.ingest, _is_rejected_ingest_job
)
"""Ingest and bulk import jobs (validated: rejected jobs are listed by ``JobTracker.invalid_jobs``)."""

COMPACTION_JOBS: JobKind[CompactionJobUpdate, CompactionJobStatus] = JobKind(
    "compaction", compaction_update_from_json, compaction_job_status, JobTrackerTableNames.compaction
)
"""Compaction jobs."""


class JobUpdateStore(Protocol[U]):
    """The port each backend implements once: keeps the updates of one kind of job and reads them back.

    Reads return updates in the order they were recorded; the tracker derives statuses from them.
    """

    def append(self, update: U) -> None:
        """Stores an update."""
        ...

    def updates_of_job(self, job_id: str) -> list[U]:
        """Every update of a job (empty if the store has none)."""
        ...

    def updates_of_table(self, table_id: str) -> list[U]:
        """The updates of the table's jobs."""
        ...

    def updates_of_rejected_jobs(self) -> list[U]:
        """The updates of every job a validation may have rejected (more are fine: the tracker keeps rejected jobs)."""
        ...


class JobTracker(Generic[U, S]):
    """Records job updates of one kind in a store and reports job statuses derived from them.

    Implements ``IngestJobTracker`` for ``INGEST_JOBS`` and ``CompactionJobTracker`` for ``COMPACTION_JOBS``. Errors
    are the store's (for example ``AwsError`` from DynamoDB).

    Args:
        store: Where the updates are kept.
        kind: The kind of job.
        ttl: The time to live of an update, which sets the expiry date of a derived status.
    """

    def __init__(self, store: JobUpdateStore[U], kind: JobKind[U, S], *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        self._updates = store
        self._kind = kind
        self._ttl = ttl

    def record(self, update: U) -> None:
        """Stores an update."""
        self._updates.append(update)

    def job(self, job_id: str) -> S | None:
        """The status of a job, or None if the tracker has no update for it."""
        statuses = self._statuses(self._updates.updates_of_job(job_id))
        return statuses[0] if statuses else None

    def jobs(self, table_id: str) -> list[S]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        return self._statuses(self._updates.updates_of_table(table_id))

    def unfinished_jobs(self, table_id: str) -> list[S]:
        """Statuses of the table's unfinished jobs (see each status's ``is_unfinished``)."""
        return [status for status in self.jobs(table_id) if status.is_unfinished]

    def invalid_jobs(self) -> list[S]:
        """Statuses of rejected jobs of every table, ordered by each job's first update (none for unvalidated kinds)."""
        is_rejected = self._kind.is_rejected
        if is_rejected is None:
            return []
        return [status for status in self._statuses(self._updates.updates_of_rejected_jobs()) if is_rejected(status)]

    def _statuses(self, updates: list[U]) -> list[S]:
        return statuses_by_job(updates, self._kind.status_of, ttl=self._ttl)
