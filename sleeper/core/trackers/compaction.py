"""Compaction jobs: their updates, the status derived from them, and the tracker port."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from functools import partial
from typing import Protocol

from sleeper.core.trackers.base import (
    JOB_UPDATE_TTL,
    JobRunBase,
    JobTrackerPort,
    TableJobUpdate,
    in_time_order,
    split_runs,
    statuses_by_job,
)


class CompactionJobStatusType(Enum):
    """State of a compaction job (or of one run of it), in increasing order of precedence between runs."""

    CREATED = "CREATED"
    FAILED = "FAILED"
    IN_PROGRESS = "IN_PROGRESS"
    UNCOMMITTED = "UNCOMMITTED"
    FINISHED = "FINISHED"


_COMPACTION_JOB_ORDER = {status: order for order, status in enumerate(CompactionJobStatusType)}


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCreated(TableJobUpdate):
    """A compaction job was created and sent to the job queue (not part of any run)."""

    partition_id: str
    input_files_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobStarted(TableJobUpdate):
    """A task started a run of a compaction job."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobFinished(TableJobUpdate):
    """A run wrote its output file; the commit to the state store may still be pending."""

    rows_read: int = 0
    rows_written: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCommitted(TableJobUpdate):
    """A run's output was committed to the state store."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobFailed(TableJobUpdate):
    """A run failed (running or committing), with reasons."""

    reasons: tuple[str, ...] = ()


CompactionJobUpdate = (
    CompactionJobCreated | CompactionJobStarted | CompactionJobFinished | CompactionJobCommitted | CompactionJobFailed
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobRun(JobRunBase[CompactionJobUpdate, CompactionJobStatusType]):
    """One run of a compaction job (status IN_PROGRESS, UNCOMMITTED, FINISHED or FAILED; ``finish_time`` is the
    finished update's), summarised from its updates.

    Attributes:
        commit_time: Time of the committed update, if any.
    """

    commit_time: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobStatus:
    """The status of a compaction job, derived from all its updates.

    Attributes:
        job_id: The job id.
        table_id: The table.
        partition_id: The partition compacted (from the created update, if recorded).
        input_files_count: Number of input files (from the created update, if recorded).
        create_time: When the job was created, if recorded.
        runs: The runs, latest first (may be empty).
        status: The furthest status of any run, CREATED if there is none.
        expiry_date: When the tracker may forget the job.
    """

    job_id: str
    table_id: str
    partition_id: str | None
    input_files_count: int
    create_time: datetime | None
    runs: tuple[CompactionJobRun, ...]
    status: CompactionJobStatusType
    expiry_date: datetime

    @property
    def latest_run(self) -> CompactionJobRun | None:
        """The most recent run, if any."""
        return self.runs[0] if self.runs else None

    @property
    def is_unfinished(self) -> bool:
        """True unless a run committed and no run is still in progress."""
        return self.status != CompactionJobStatusType.FINISHED or any(
            run.status == CompactionJobStatusType.IN_PROGRESS for run in self.runs
        )


def _compaction_run(updates: Sequence[CompactionJobUpdate]) -> CompactionJobRun:
    rank = 0
    reasons: list[str] = []
    finish_time = None
    commit_time = None
    rows_read = 0
    rows_written = 0
    for update in updates:
        if isinstance(update, CompactionJobFinished):
            rank = max(rank, 2)
            finish_time = update.update_time
            rows_read, rows_written = update.rows_read, update.rows_written
        elif isinstance(update, CompactionJobCommitted):
            rank = max(rank, 3)
            commit_time = update.update_time
        elif isinstance(update, CompactionJobFailed):
            rank = max(rank, 4)
            reasons.extend(update.reasons)
        else:
            rank = max(rank, 1)
    status = {
        1: CompactionJobStatusType.IN_PROGRESS,
        2: CompactionJobStatusType.UNCOMMITTED,
        3: CompactionJobStatusType.FINISHED,
        4: CompactionJobStatusType.FAILED,
    }[rank]
    return CompactionJobRun(
        job_run_id=updates[0].job_run_id,
        task_id=next((u.task_id for u in reversed(updates) if u.task_id is not None), None),
        updates=tuple(updates),
        status=status,
        start_time=updates[0].update_time,
        finish_time=finish_time,
        commit_time=commit_time,
        rows_read=rows_read,
        rows_written=rows_written,
        failure_reasons=tuple(reasons),
    )


def compaction_job_status(
    updates: Iterable[CompactionJobUpdate], *, ttl: timedelta = JOB_UPDATE_TTL
) -> CompactionJobStatus:
    """Derives the status of one compaction job from its updates (in the order they were recorded).

    Raises:
        TrackerError: If there are no updates or they belong to different jobs.
    """
    ordered = in_time_order(updates)
    created = next((u for u in ordered if isinstance(u, CompactionJobCreated)), None)
    in_runs = [u for u in ordered if not isinstance(u, CompactionJobCreated)]
    runs = tuple(_compaction_run(run) for run in reversed(split_runs(in_runs)))
    status = max(
        (run.status for run in runs), key=_COMPACTION_JOB_ORDER.__getitem__, default=CompactionJobStatusType.CREATED
    )
    return CompactionJobStatus(
        job_id=ordered[0].job_id,
        table_id=ordered[0].table_id,
        partition_id=created.partition_id if created else None,
        input_files_count=created.input_files_count if created else 0,
        create_time=created.update_time if created else None,
        runs=runs,
        status=status,
        expiry_date=ordered[0].update_time + ttl,
    )


compaction_job_statuses = partial(statuses_by_job, status_of=compaction_job_status)
"""Statuses of every compaction job among the updates (``ttl`` optional), ordered by each job's first update."""


class CompactionJobTracker(JobTrackerPort[CompactionJobUpdate, CompactionJobStatus], Protocol):
    """Records compaction job updates and reports job statuses."""
