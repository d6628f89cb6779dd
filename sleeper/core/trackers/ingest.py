"""Ingest and bulk import jobs: their updates, the status derived from them, and the tracker port."""

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
    JobUpdateBase,
    TableJobUpdate,
    in_time_order,
    split_runs,
    statuses_by_job,
)


class ValidationResult(Enum):
    """Outcome of validating an ingest or bulk import job message."""

    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"


class IngestJobStatusType(Enum):
    """State of an ingest job (or of one run of it), in increasing order of precedence between runs."""

    REJECTED = "REJECTED"
    ACCEPTED = "ACCEPTED"
    FAILED = "FAILED"
    IN_PROGRESS = "IN_PROGRESS"
    UNCOMMITTED = "UNCOMMITTED"
    FINISHED = "FINISHED"

    @property
    def is_run_in_progress(self) -> bool:
        """Whether a run in this state may still make progress."""
        return self in (IngestJobStatusType.ACCEPTED, IngestJobStatusType.IN_PROGRESS)

    @property
    def is_end_of_job(self) -> bool:
        """Whether a run in this state ends the job (it will not be retried)."""
        return self in (IngestJobStatusType.REJECTED, IngestJobStatusType.FINISHED)


_INGEST_JOB_ORDER = {status: order for order, status in enumerate(IngestJobStatusType)}


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobValidated(JobUpdateBase):
    """An ingest or bulk import job message was validated: accepted, or rejected with reasons.

    Attributes:
        job_id: The job id.
        table_id: The table, if it could be resolved (a rejected job may name no valid table).
        update_time: When it was validated.
        job_run_id: The run this validation starts, if any.
        task_id: The task that validated it, if any.
        file_count: Number of input files.
        reasons: Why the job was rejected; empty if accepted.
        json_message: The message as received (kept for rejected jobs so they can be fixed and resent).
    """

    file_count: int = 0
    reasons: tuple[str, ...] = ()
    json_message: str | None = None

    @property
    def result(self) -> ValidationResult:
        """ACCEPTED when there are no reasons, else REJECTED."""
        return ValidationResult.REJECTED if self.reasons else ValidationResult.ACCEPTED


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobStarted(TableJobUpdate):
    """A task started a run of an ingest job (``start_of_run`` is False when a validation already started it)."""

    file_count: int = 0
    start_of_run: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobAddedFiles(TableJobUpdate):
    """Files written by a run were committed to the state store (asynchronous commits report these separately)."""

    file_count: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobFinished(TableJobUpdate):
    """A run finished writing.

    Attributes:
        files_written: Files the run wrote.
        committed_by_separate_file_updates: True when the files are committed asynchronously and reported by
            ``IngestJobAddedFiles`` updates: the run is then UNCOMMITTED until they add up to ``files_written``.
    """

    rows_read: int = 0
    rows_written: int = 0
    files_written: int = 0
    committed_by_separate_file_updates: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobFailed(TableJobUpdate):
    """A run failed, with reasons."""

    reasons: tuple[str, ...] = ()


IngestJobUpdate = IngestJobValidated | IngestJobStarted | IngestJobAddedFiles | IngestJobFinished | IngestJobFailed


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobRun(JobRunBase[IngestJobUpdate, IngestJobStatusType]):
    """One run of an ingest job (``finish_time`` is the finished, failed or rejected update's), summarised from its
    updates.

    Attributes:
        files_written: Files written (from the finished update).
        files_added: Files reported committed by added-files updates.
    """

    files_written: int
    files_added: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobStatus:
    """The status of an ingest job, derived from all its updates.

    Attributes:
        job_id: The job id.
        table_id: The table, if any update named one.
        runs: The runs, latest first.
        status: The furthest status of any run.
        expiry_date: When the tracker may forget the job (its first update plus the time to live).
    """

    job_id: str
    table_id: str | None
    runs: tuple[IngestJobRun, ...]
    status: IngestJobStatusType
    expiry_date: datetime

    @property
    def latest_run(self) -> IngestJobRun:
        """The most recent run."""
        return self.runs[0]

    @property
    def is_unfinished(self) -> bool:
        """True if a run is accepted or in progress, or no run finished or was rejected (failed jobs may retry)."""
        statuses = [run.status for run in self.runs]
        return any(s.is_run_in_progress for s in statuses) or not any(s.is_end_of_job for s in statuses)


def _ingest_run_status(updates: Sequence[IngestJobUpdate]) -> IngestJobStatusType:
    # Furthest update in the run; a rejection or failure outranks anything else (Sleeper's IngestJobUpdateType).
    rank = 0
    for update in updates:
        if isinstance(update, IngestJobValidated):
            rank = max(rank, 6 if update.reasons else 1)
        elif isinstance(update, IngestJobStarted):
            rank = max(rank, 2)
        elif isinstance(update, IngestJobAddedFiles):
            rank = max(rank, 3)
        elif isinstance(update, IngestJobFinished):
            rank = max(rank, 4 if update.committed_by_separate_file_updates else 5)
        else:
            rank = max(rank, 7)
    if rank == 4:
        written, added = _files_written_and_added(updates)
        return IngestJobStatusType.FINISHED if written == added else IngestJobStatusType.UNCOMMITTED
    return {
        1: IngestJobStatusType.ACCEPTED,
        2: IngestJobStatusType.IN_PROGRESS,
        3: IngestJobStatusType.IN_PROGRESS,
        5: IngestJobStatusType.FINISHED,
        6: IngestJobStatusType.REJECTED,
        7: IngestJobStatusType.FAILED,
    }[rank]


def _files_written_and_added(updates: Sequence[IngestJobUpdate]) -> tuple[int, int]:
    written = 0
    added = 0
    separate = True
    for update in updates:
        if isinstance(update, IngestJobAddedFiles):
            added += update.file_count
        elif isinstance(update, IngestJobFinished):
            written = update.files_written
            separate = update.committed_by_separate_file_updates
    return (written, added) if separate else (written, written)


def _ingest_run(updates: Sequence[IngestJobUpdate]) -> IngestJobRun:
    finished = [u for u in updates if isinstance(u, IngestJobFinished)]
    ends = [
        u
        for u in updates
        if isinstance(u, IngestJobFinished | IngestJobFailed) or (isinstance(u, IngestJobValidated) and u.reasons)
    ]
    reasons: list[str] = []
    for update in updates:
        if isinstance(update, IngestJobFailed | IngestJobValidated):
            reasons.extend(update.reasons)
    last_finished = finished[-1] if finished else None
    _, added = _files_written_and_added(updates)
    return IngestJobRun(
        job_run_id=updates[0].job_run_id,
        task_id=next((u.task_id for u in reversed(updates) if u.task_id is not None), None),
        updates=tuple(updates),
        status=_ingest_run_status(updates),
        start_time=updates[0].update_time,
        finish_time=ends[-1].update_time if ends else None,
        rows_read=last_finished.rows_read if last_finished else 0,
        rows_written=last_finished.rows_written if last_finished else 0,
        files_written=last_finished.files_written if last_finished else 0,
        files_added=added,
        failure_reasons=tuple(reasons),
    )


def ingest_job_status(updates: Iterable[IngestJobUpdate], *, ttl: timedelta = JOB_UPDATE_TTL) -> IngestJobStatus:
    """Derives the status of one ingest job from its updates (in the order they were recorded).

    Raises:
        TrackerError: If there are no updates or they belong to different jobs.
    """
    ordered = in_time_order(updates)
    runs = tuple(_ingest_run(run) for run in reversed(split_runs(ordered)))
    status = max((run.status for run in runs), key=_INGEST_JOB_ORDER.__getitem__)
    return IngestJobStatus(
        job_id=ordered[0].job_id,
        table_id=next((u.table_id for u in ordered if u.table_id is not None), None),
        runs=runs,
        status=status,
        expiry_date=ordered[0].update_time + ttl,
    )


ingest_job_statuses = partial(statuses_by_job, status_of=ingest_job_status)
"""Statuses of every ingest job among the updates (``ttl`` optional), ordered by each job's first update."""


class IngestJobTracker(JobTrackerPort[IngestJobUpdate, IngestJobStatus], Protocol):
    """Records ingest and bulk import job updates and reports job statuses."""

    def invalid_jobs(self) -> list[IngestJobStatus]:
        """Statuses of rejected jobs of every table (including ones that named no valid table)."""
        ...
