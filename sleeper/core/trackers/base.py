"""What every tracker update shares: the error, the checks of ids and times, the base of job updates with the
grouping of a job's updates into runs, and the job tracker port (shared by the ingest and compaction job trackers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Generic, Protocol, TypeVar

from sleeper.core.exceptions import SleeperError

JOB_UPDATE_TTL = timedelta(days=7)


class TrackerError(SleeperError):
    """A tracker update is invalid or could not be stored."""


def check_time(time: datetime) -> None:
    """Raises TrackerError unless the time is timezone-aware."""
    if time.tzinfo is None or time.utcoffset() is None:
        raise TrackerError("tracker times must be timezone-aware")


def check_id(name: str, value: str) -> None:
    """Raises TrackerError naming the field if the id is empty."""
    if not value:
        raise TrackerError(f"{name} must not be empty")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobUpdateBase:
    """The fields every ingest and compaction job update has, and their checks (run after each update's init).

    Attributes:
        job_id: The job id (must not be empty).
        table_id: The table (None only where the update allows it: a rejected ingest job may name no valid table).
        update_time: When it happened (timezone-aware).
        job_run_id: The run the update belongs to, if known.
        task_id: The task that reported it, if any.
    """

    job_id: str
    table_id: str | None
    update_time: datetime
    job_run_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        check_id("job_id", self.job_id)
        check_time(self.update_time)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableJobUpdate(JobUpdateBase):
    """A job update that always names its table (every update but an ingest validation, which may name none)."""

    table_id: str


_U = TypeVar("_U", bound=JobUpdateBase)
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRunBase(Generic[_U, _R]):
    """What a run of any kind of job reports, summarised from the run's updates.

    Attributes:
        job_run_id: The run id (None for updates that carried none).
        task_id: The task that ran it, if known.
        updates: The run's updates in time order.
        status: The run's status.
        start_time: Time of the run's first update.
        finish_time: Time of the update that ended the run, if any.
        rows_read: Rows read (from the finished update).
        rows_written: Rows written (from the finished update).
        failure_reasons: Reasons of the updates that failed (or rejected) the run.
    """

    job_run_id: str | None
    task_id: str | None
    updates: tuple[_U, ...]
    status: _R
    start_time: datetime
    finish_time: datetime | None
    rows_read: int
    rows_written: int
    failure_reasons: tuple[str, ...]


_S = TypeVar("_S")
_U_contra = TypeVar("_U_contra", contravariant=True)
_S_co = TypeVar("_S_co", covariant=True)


class _Timed(Protocol):
    @property
    def update_time(self) -> datetime: ...


_T = TypeVar("_T", bound=_Timed)


def in_time_order(
    updates: Iterable[_T], id_of: Callable[[_T], str] = attrgetter("job_id"), what: str = "job"
) -> list[_T]:
    """The updates of one job (or of what ``what`` names, identified by ``id_of``) in time order (stable: ties keep
    the recorded order).

    Raises:
        TrackerError: If there are no updates or they belong to different jobs.
    """
    ordered = sorted(updates, key=lambda u: u.update_time)
    if not ordered:
        raise TrackerError(f"a {what} status needs at least one update")
    if len({id_of(u) for u in ordered}) > 1:
        raise TrackerError(f"updates of one {what} status must share a {what} id")
    return ordered


def split_runs(ordered: Sequence[_U]) -> list[list[_U]]:
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


def group_by_job(updates: Iterable[_U]) -> list[list[_U]]:
    """Updates grouped by job, ordered by the time of each job's first update."""
    groups: dict[str, list[_U]] = {}
    for update in updates:
        groups.setdefault(update.job_id, []).append(update)
    return sorted(groups.values(), key=lambda group: (min(u.update_time for u in group), group[0].job_id))


class StatusOf(Protocol[_U_contra, _S_co]):
    """Derives the status of one job from its updates (``ingest_job_status``, ``compaction_job_status``)."""

    def __call__(self, updates: Iterable[_U_contra], *, ttl: timedelta = ...) -> _S_co: ...


def statuses_by_job(updates: Iterable[_U], status_of: StatusOf[_U, _S], *, ttl: timedelta = JOB_UPDATE_TTL) -> list[_S]:
    """The status of every job among the updates, ordered by the time of each job's first update."""
    return [status_of(group, ttl=ttl) for group in group_by_job(updates)]


class JobTrackerPort(Protocol[_U_contra, _S]):
    """Records job updates of one kind and reports job statuses (specialised as ``IngestJobTracker`` and
    ``CompactionJobTracker``; ``sleeper.core.trackers.jobs.JobTracker`` implements both)."""

    def record(self, update: _U_contra) -> None:
        """Stores an update."""
        ...

    def job(self, job_id: str) -> _S | None:
        """The status of a job, or None if the tracker has no update for it."""
        ...

    def jobs(self, table_id: str) -> list[_S]:
        """Statuses of the table's jobs, ordered by each job's first update."""
        ...

    def unfinished_jobs(self, table_id: str) -> list[_S]:
        """Statuses of the table's jobs that are unfinished (see each status's ``is_unfinished``)."""
        ...
