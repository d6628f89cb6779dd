"""Job, task and query trackers: the updates workers report, the statuses derived from them, and the ports.

A job tracker stores every update it is given; a job's status is derived when it is read. Updates that share a job
run id belong to one run of the job (a job may run more than once: a message delivered twice, a retry after a
failure). Each run gets a status from its furthest update, where a failure outranks everything else in that run. The
job's status is the furthest status of any of its runs, so a run that is in progress or succeeded outranks runs
that failed (as in Sleeper: a duplicate delivery that fails after another run committed does not make a finished
job look failed).

The query tracker keeps one row per query (sub-query id ``"-"``) and one per sub-query. When a sub-query finishes,
the parent's state is recomputed from all of its sub-queries (``parent_state_if_finished``).

All times are timezone-aware ``datetime`` values. Updates carry their own time; the tracker adds an expiry date
(time to live: one week for job and task updates, one day for queries).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Protocol, TypeVar

from sleeper.core.exceptions import SerDeError, SleeperError

JOB_UPDATE_TTL = timedelta(days=7)
QUERY_TTL = timedelta(days=1)
PARENT_SUB_QUERY_ID = "-"


class TrackerError(SleeperError):
    """A tracker update is invalid or could not be stored."""


def _check_time(time: datetime) -> None:
    if time.tzinfo is None or time.utcoffset() is None:
        raise TrackerError("tracker times must be timezone-aware")


def _check_id(name: str, value: str) -> None:
    if not value:
        raise TrackerError(f"{name} must not be empty")


# ---------------------------------------------------------------------------------------------------------------------
# Ingest jobs


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
class IngestJobValidated:
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

    job_id: str
    table_id: str | None
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    file_count: int = 0
    reasons: tuple[str, ...] = ()
    json_message: str | None = None

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)

    @property
    def result(self) -> ValidationResult:
        """ACCEPTED when there are no reasons, else REJECTED."""
        return ValidationResult.REJECTED if self.reasons else ValidationResult.ACCEPTED


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobStarted:
    """A task started a run of an ingest job (``start_of_run`` is False when a validation already started it)."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    file_count: int = 0
    start_of_run: bool = True

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobAddedFiles:
    """Files written by a run were committed to the state store (asynchronous commits report these separately)."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    file_count: int = 0

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobFinished:
    """A run finished writing.

    Attributes:
        files_written: Files the run wrote.
        committed_by_separate_file_updates: True when the files are committed asynchronously and reported by
            ``IngestJobAddedFiles`` updates: the run is then UNCOMMITTED until they add up to ``files_written``.
    """

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    rows_read: int = 0
    rows_written: int = 0
    files_written: int = 0
    committed_by_separate_file_updates: bool = False

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobFailed:
    """A run failed, with reasons."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


IngestJobUpdate = IngestJobValidated | IngestJobStarted | IngestJobAddedFiles | IngestJobFinished | IngestJobFailed


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobRun:
    """One run of an ingest job, summarised from its updates.

    Attributes:
        job_run_id: The run id (None for updates that carried none).
        task_id: The task that ran it, if known.
        updates: The run's updates in time order.
        status: The run's status.
        start_time: Time of the run's first update.
        finish_time: Time of the finished, failed or rejected update, if any.
        rows_read: Rows read (from the finished update).
        rows_written: Rows written (from the finished update).
        files_written: Files written (from the finished update).
        files_added: Files reported committed by added-files updates.
        failure_reasons: Reasons of failed or rejected updates.
    """

    job_run_id: str | None
    task_id: str | None
    updates: tuple[IngestJobUpdate, ...]
    status: IngestJobStatusType
    start_time: datetime
    finish_time: datetime | None
    rows_read: int
    rows_written: int
    files_written: int
    files_added: int
    failure_reasons: tuple[str, ...]


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
    ordered = _in_time_order(updates)
    runs = tuple(_ingest_run(run) for run in reversed(_split_runs(ordered)))
    status = max((run.status for run in runs), key=_INGEST_JOB_ORDER.__getitem__)
    return IngestJobStatus(
        job_id=ordered[0].job_id,
        table_id=next((u.table_id for u in ordered if u.table_id is not None), None),
        runs=runs,
        status=status,
        expiry_date=ordered[0].update_time + ttl,
    )


def ingest_job_statuses(
    updates: Iterable[IngestJobUpdate], *, ttl: timedelta = JOB_UPDATE_TTL
) -> list[IngestJobStatus]:
    """Statuses of every job among the updates, ordered by the time of each job's first update."""
    return [ingest_job_status(group, ttl=ttl) for group in _group_by_job(updates)]


# ---------------------------------------------------------------------------------------------------------------------
# Compaction jobs


class CompactionJobStatusType(Enum):
    """State of a compaction job (or of one run of it), in increasing order of precedence between runs."""

    CREATED = "CREATED"
    FAILED = "FAILED"
    IN_PROGRESS = "IN_PROGRESS"
    UNCOMMITTED = "UNCOMMITTED"
    FINISHED = "FINISHED"


_COMPACTION_JOB_ORDER = {status: order for order, status in enumerate(CompactionJobStatusType)}


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCreated:
    """A compaction job was created and sent to the job queue (not part of any run)."""

    job_id: str
    table_id: str
    update_time: datetime
    partition_id: str
    input_files_count: int
    job_run_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobStarted:
    """A task started a run of a compaction job."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobFinished:
    """A run wrote its output file; the commit to the state store may still be pending."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    rows_read: int = 0
    rows_written: int = 0

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobCommitted:
    """A run's output was committed to the state store."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobFailed:
    """A run failed (running or committing), with reasons."""

    job_id: str
    table_id: str
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_id("job_id", self.job_id)
        _check_time(self.update_time)


CompactionJobUpdate = (
    CompactionJobCreated | CompactionJobStarted | CompactionJobFinished | CompactionJobCommitted | CompactionJobFailed
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionJobRun:
    """One run of a compaction job, summarised from its updates.

    Attributes:
        job_run_id: The run id (None for updates that carried none).
        task_id: The task that ran it, if known.
        updates: The run's updates in time order.
        status: The run's status (IN_PROGRESS, UNCOMMITTED, FINISHED or FAILED).
        start_time: Time of the run's first update.
        finish_time: Time of the finished update, if any.
        commit_time: Time of the committed update, if any.
        rows_read: Rows read (from the finished update).
        rows_written: Rows written (from the finished update).
        failure_reasons: Reasons of failed updates.
    """

    job_run_id: str | None
    task_id: str | None
    updates: tuple[CompactionJobUpdate, ...]
    status: CompactionJobStatusType
    start_time: datetime
    finish_time: datetime | None
    commit_time: datetime | None
    rows_read: int
    rows_written: int
    failure_reasons: tuple[str, ...]


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
    ordered = _in_time_order(updates)
    created = next((u for u in ordered if isinstance(u, CompactionJobCreated)), None)
    in_runs = [u for u in ordered if not isinstance(u, CompactionJobCreated)]
    runs = tuple(_compaction_run(run) for run in reversed(_split_runs(in_runs)))
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


def compaction_job_statuses(
    updates: Iterable[CompactionJobUpdate], *, ttl: timedelta = JOB_UPDATE_TTL
) -> list[CompactionJobStatus]:
    """Statuses of every job among the updates, ordered by the time of each job's first update."""
    return [compaction_job_status(group, ttl=ttl) for group in _group_by_job(updates)]


# ---------------------------------------------------------------------------------------------------------------------
# Grouping shared by the job trackers

JobUpdate = IngestJobUpdate | CompactionJobUpdate
_U = TypeVar("_U", IngestJobUpdate, CompactionJobUpdate)


def _in_time_order(updates: Iterable[_U]) -> list[_U]:
    ordered = sorted(updates, key=lambda u: u.update_time)  # stable: ties keep the recorded order
    if not ordered:
        raise TrackerError("a job status needs at least one update")
    if len({u.job_id for u in ordered}) > 1:
        raise TrackerError("updates of one job status must share a job id")
    return ordered


def _split_runs(ordered: Sequence[_U]) -> list[list[_U]]:
    """Groups a job's updates into runs, oldest run first: by run id, else by task, else each update alone."""
    runs: dict[tuple[str, str], list[_U]] = {}
    for index, update in enumerate(ordered):
        if update.job_run_id is not None:
            key = ("run", update.job_run_id)
        elif update.task_id is not None:
            key = ("task", update.task_id)
        else:
            key = ("update", str(index))
        runs.setdefault(key, []).append(update)
    return list(runs.values())


def _group_by_job(updates: Iterable[_U]) -> list[list[_U]]:
    groups: dict[str, list[_U]] = {}
    for update in updates:
        groups.setdefault(update.job_id, []).append(update)
    return sorted(groups.values(), key=lambda group: (min(u.update_time for u in group), group[0].job_id))


# ---------------------------------------------------------------------------------------------------------------------
# Tasks


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted:
    """A task (ECS task, local worker) started."""

    task_id: str
    update_time: datetime

    def __post_init__(self) -> None:
        _check_id("task_id", self.task_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFinished:
    """A task finished, with totals over the job runs it did."""

    task_id: str
    update_time: datetime
    job_runs: int = 0
    rows_read: int = 0
    rows_written: int = 0
    time_spent_on_jobs_seconds: float = 0.0

    def __post_init__(self) -> None:
        _check_id("task_id", self.task_id)
        _check_time(self.update_time)


TaskUpdate = TaskStarted | TaskFinished


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus:
    """The status of a task.

    Attributes:
        task_id: The task id.
        start_time: When it started (its first update if no start was recorded).
        finish_time: When it finished, if it has.
        job_runs: Job runs it did (when finished).
        rows_read: Rows read over its job runs.
        rows_written: Rows written over its job runs.
        time_spent_on_jobs_seconds: Time spent running jobs.
        expiry_date: When the tracker may forget the task.
    """

    task_id: str
    start_time: datetime
    finish_time: datetime | None
    job_runs: int
    rows_read: int
    rows_written: int
    time_spent_on_jobs_seconds: float
    expiry_date: datetime

    @property
    def is_finished(self) -> bool:
        """Whether the task finished."""
        return self.finish_time is not None

    def is_in_period(self, start: datetime, end: datetime) -> bool:
        """Whether the task ran at any time in [start, end] (an unfinished task runs until now)."""
        return self.start_time <= end and (self.finish_time is None or self.finish_time >= start)


def task_status(updates: Iterable[TaskUpdate], *, ttl: timedelta = JOB_UPDATE_TTL) -> TaskStatus:
    """Derives a task's status from its updates.

    Raises:
        TrackerError: If there are no updates or they belong to different tasks.
    """
    ordered = sorted(updates, key=lambda u: u.update_time)
    if not ordered:
        raise TrackerError("a task status needs at least one update")
    if len({u.task_id for u in ordered}) > 1:
        raise TrackerError("updates of one task status must share a task id")
    started = next((u for u in ordered if isinstance(u, TaskStarted)), ordered[0])
    finished = next((u for u in reversed(ordered) if isinstance(u, TaskFinished)), None)
    return TaskStatus(
        task_id=ordered[0].task_id,
        start_time=started.update_time,
        finish_time=finished.update_time if finished else None,
        job_runs=finished.job_runs if finished else 0,
        rows_read=finished.rows_read if finished else 0,
        rows_written=finished.rows_written if finished else 0,
        time_spent_on_jobs_seconds=finished.time_spent_on_jobs_seconds if finished else 0.0,
        expiry_date=started.update_time + ttl,
    )


def task_statuses(updates: Iterable[TaskUpdate], *, ttl: timedelta = JOB_UPDATE_TTL) -> list[TaskStatus]:
    """Statuses of every task among the updates, ordered by start time."""
    groups: dict[str, list[TaskUpdate]] = {}
    for update in updates:
        groups.setdefault(update.task_id, []).append(update)
    statuses = [task_status(group, ttl=ttl) for group in groups.values()]
    return sorted(statuses, key=lambda s: (s.start_time, s.task_id))


# ---------------------------------------------------------------------------------------------------------------------
# Queries


class QueryState(Enum):
    """Last known state of a query or sub-query (the ``lastKnownState`` attribute)."""

    QUEUED = "QUEUED"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    PARTIALLY_FAILED = "PARTIALLY_FAILED"

    @property
    def is_finished(self) -> bool:
        """Whether the query will not change state again (COMPLETED, FAILED or PARTIALLY_FAILED)."""
        return self in (QueryState.COMPLETED, QueryState.FAILED, QueryState.PARTIALLY_FAILED)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryUpdate:
    """A change of state of a query (``sub_query_id="-"``) or of one of its sub-queries.

    Attributes:
        query_id: The query id.
        sub_query_id: The sub-query id, or ``"-"`` for the query itself.
        state: The new state.
        update_time: When it changed.
        row_count: Rows returned (when finished).
        error_message: Why it failed, if it did.
    """

    query_id: str
    state: QueryState
    update_time: datetime
    sub_query_id: str = PARENT_SUB_QUERY_ID
    row_count: int = 0
    error_message: str | None = None

    def __post_init__(self) -> None:
        _check_id("query_id", self.query_id)
        _check_id("sub_query_id", self.sub_query_id)
        _check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedQuery:
    """A query tracker row (hash key ``queryId``, range key ``subQueryId``).

    Attributes:
        query_id: The query id.
        sub_query_id: The sub-query id, ``"-"`` for the query itself.
        last_known_state: Its state.
        last_update_time: When the state last changed.
        expiry_date: When the row may be removed (last update plus the time to live).
        row_count: Rows returned; for the query itself, the sum over its sub-queries.
        error_message: Why it failed, if it did (the ``errors`` attribute).
    """

    query_id: str
    sub_query_id: str
    last_known_state: QueryState
    last_update_time: datetime
    expiry_date: datetime
    row_count: int = 0
    error_message: str | None = None

    @property
    def is_parent(self) -> bool:
        """Whether this row is the query itself rather than a sub-query."""
        return self.sub_query_id == PARENT_SUB_QUERY_ID


def parent_state_if_finished(child_states: Iterable[QueryState]) -> QueryState | None:
    """The state of a query once all its sub-queries finished (spec 7.3), or None while any is unfinished.

    All COMPLETED gives COMPLETED; none COMPLETED (all FAILED or PARTIALLY_FAILED) gives FAILED; a mix gives
    PARTIALLY_FAILED.
    """
    states = list(child_states)
    if any(not state.is_finished for state in states):
        return None
    completed = sum(1 for state in states if state == QueryState.COMPLETED)
    if completed == len(states):
        return QueryState.COMPLETED
    if completed == 0:
        return QueryState.FAILED
    return QueryState.PARTIALLY_FAILED


def roll_up_parent(
    query_id: str, children: Sequence[TrackedQuery], update_time: datetime, *, ttl: timedelta = QUERY_TTL
) -> TrackedQuery | None:
    """The parent row after its sub-queries finished, with the summed row count, or None if any is unfinished."""
    state = parent_state_if_finished(child.last_known_state for child in children)
    if state is None or not children:
        return None
    errors = list(dict.fromkeys(child.error_message for child in children if child.error_message))
    return TrackedQuery(
        query_id=query_id,
        sub_query_id=PARENT_SUB_QUERY_ID,
        last_known_state=state,
        last_update_time=update_time,
        expiry_date=update_time + ttl,
        row_count=sum(child.row_count for child in children),
        error_message="; ".join(errors) if errors else None,
    )


def apply_query_update(
    rows: Mapping[str, TrackedQuery], update: QueryUpdate, *, ttl: timedelta = QUERY_TTL
) -> list[TrackedQuery]:
    """The rows to write when recording an update, given the query's current rows keyed by sub-query id.

    A sub-query that already finished ignores further updates (a duplicate delivery cannot revert it or count twice).
    When a sub-query finishes, the parent is recomputed from all sub-queries and written once they have all finished.
    """
    existing = rows.get(update.sub_query_id)
    if update.sub_query_id != PARENT_SUB_QUERY_ID and existing is not None and existing.last_known_state.is_finished:
        return []
    row = TrackedQuery(
        query_id=update.query_id,
        sub_query_id=update.sub_query_id,
        last_known_state=update.state,
        last_update_time=update.update_time,
        expiry_date=update.update_time + ttl,
        row_count=update.row_count,
        error_message=update.error_message,
    )
    if row.is_parent or not update.state.is_finished:
        return [row]
    children = [r for key, r in rows.items() if key not in (PARENT_SUB_QUERY_ID, update.sub_query_id)] + [row]
    parent = roll_up_parent(update.query_id, children, update.update_time, ttl=ttl)
    return [row] if parent is None else [row, parent]


# ---------------------------------------------------------------------------------------------------------------------
# Ports


class IngestJobTracker(Protocol):
    """Records ingest and bulk import job updates and reports job statuses."""

    def record(self, update: IngestJobUpdate) -> None:
        """Stores an update."""
        ...

    def job(self, job_id: str) -> IngestJobStatus | None:
        """The status of a job, or None if the tracker has no update for it."""
        ...

    def jobs(self, table_id: str) -> list[IngestJobStatus]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        ...

    def unfinished_jobs(self, table_id: str) -> list[IngestJobStatus]:
        """Statuses of the table's jobs that are unfinished (see ``IngestJobStatus.is_unfinished``)."""
        ...

    def invalid_jobs(self) -> list[IngestJobStatus]:
        """Statuses of rejected jobs of every table (including ones that named no valid table)."""
        ...


class CompactionJobTracker(Protocol):
    """Records compaction job updates and reports job statuses."""

    def record(self, update: CompactionJobUpdate) -> None:
        """Stores an update."""
        ...

    def job(self, job_id: str) -> CompactionJobStatus | None:
        """The status of a job, or None if the tracker has no update for it."""
        ...

    def jobs(self, table_id: str) -> list[CompactionJobStatus]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        ...

    def unfinished_jobs(self, table_id: str) -> list[CompactionJobStatus]:
        """Statuses of the table's jobs that are unfinished (see ``CompactionJobStatus.is_unfinished``)."""
        ...


class TaskTracker(Protocol):
    """Records task starts and finishes (one tracker per kind of task: compaction, ingest)."""

    def record(self, update: TaskUpdate) -> None:
        """Stores an update."""
        ...

    def task(self, task_id: str) -> TaskStatus | None:
        """The status of a task, or None if unknown."""
        ...

    def all_tasks(self) -> list[TaskStatus]:
        """Every task, ordered by start time."""
        ...

    def tasks_in_progress(self) -> list[TaskStatus]:
        """Tasks that started and have not finished, ordered by start time."""
        ...


class QueryTracker(Protocol):
    """Tracks the state of queries and sub-queries, rolling sub-queries up into their query."""

    def record(self, update: QueryUpdate) -> None:
        """Applies an update (see ``apply_query_update``), atomically with the parent roll-up."""
        ...

    def record_all(self, updates: Sequence[QueryUpdate]) -> None:
        """Applies several updates in order, atomically (e.g. every sub-query QUEUED before any is sent)."""
        ...

    def status(self, query_id: str, sub_query_id: str = PARENT_SUB_QUERY_ID) -> TrackedQuery | None:
        """The row of a query or sub-query, or None."""
        ...

    def sub_queries(self, query_id: str) -> list[TrackedQuery]:
        """The sub-query rows of a query, ordered by sub-query id."""
        ...

    def all_queries(self) -> list[TrackedQuery]:
        """Every row, ordered by query id then sub-query id (parent first)."""
        ...

    def queries_with_state(self, state: QueryState) -> list[TrackedQuery]:
        """Rows in a state, in the order of ``all_queries``."""
        ...

    def failed_queries(self) -> list[TrackedQuery]:
        """Rows that FAILED or PARTIALLY_FAILED, in the order of ``all_queries``."""
        ...


# ---------------------------------------------------------------------------------------------------------------------
# Serialisation of updates (for durable adapters)

INGEST_UPDATE_TYPES: dict[str, type[IngestJobUpdate]] = {
    "validated": IngestJobValidated,
    "started": IngestJobStarted,
    "addedFiles": IngestJobAddedFiles,
    "finished": IngestJobFinished,
    "failed": IngestJobFailed,
}
COMPACTION_UPDATE_TYPES: dict[str, type[CompactionJobUpdate]] = {
    "created": CompactionJobCreated,
    "started": CompactionJobStarted,
    "finished": CompactionJobFinished,
    "committed": CompactionJobCommitted,
    "failed": CompactionJobFailed,
}
TASK_UPDATE_TYPES: dict[str, type[TaskUpdate]] = {"started": TaskStarted, "finished": TaskFinished}

_TYPE_NAMES: dict[type, str] = {
    cls: name
    for mapping in (INGEST_UPDATE_TYPES, COMPACTION_UPDATE_TYPES, TASK_UPDATE_TYPES)
    for name, cls in mapping.items()
}


def update_type_name(update: JobUpdate | TaskUpdate) -> str:
    """Sleeper's ``UpdateType`` name of an update (``validated``, ``addedFiles``, ``committed``, ...)."""
    return _TYPE_NAMES[type(update)]


def update_to_json(update: JobUpdate | TaskUpdate) -> str:
    """JSON of an update: its type name under ``"type"``, its fields by name, times in ISO 8601."""
    document: dict[str, Any] = {"type": update_type_name(update)}
    for item in fields(update):
        value = getattr(update, item.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = list(value)
        document[item.name] = value
    return json.dumps(document, separators=(",", ":"))


def ingest_update_from_json(text: str) -> IngestJobUpdate:
    """Reads an ingest job update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not an ingest job update.
    """
    update: IngestJobUpdate = _from_json(text, INGEST_UPDATE_TYPES)
    return update


def compaction_update_from_json(text: str) -> CompactionJobUpdate:
    """Reads a compaction job update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not a compaction job update.
    """
    update: CompactionJobUpdate = _from_json(text, COMPACTION_UPDATE_TYPES)
    return update


def task_update_from_json(text: str) -> TaskUpdate:
    """Reads a task update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not a task update.
    """
    update: TaskUpdate = _from_json(text, TASK_UPDATE_TYPES)
    return update


_T = TypeVar("_T")


def _from_json(text: str, types: Mapping[str, type[_T]]) -> _T:
    try:
        document = json.loads(text)
        cls = types[document.pop("type")]
        names = {item.name for item in fields(cls)}  # type: ignore[arg-type]
        unknown = set(document) - names
        if unknown:
            raise SerDeError(f"unknown fields {sorted(unknown)} in {cls.__name__}")
        if "update_time" in document:
            document["update_time"] = datetime.fromisoformat(document["update_time"])
        if "reasons" in document:
            document["reasons"] = tuple(document["reasons"])
        return cls(**document)
    except SerDeError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, TrackerError) as error:
        raise SerDeError(f"invalid tracker update JSON: {error}") from error
