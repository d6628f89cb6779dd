"""What every tracker update shares: the error, the checks of ids and times, and the base of job updates with the
grouping of a job's updates into runs (shared by the ingest and compaction job trackers)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

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


class JobUpdateBase:
    """The fields every ingest and compaction job update has, and their checks (run after each dataclass's init).

    Attributes:
        job_id: The job id (must not be empty).
        table_id: The table (None only where the update allows it: a rejected ingest job may name no valid table).
        update_time: When it happened (timezone-aware).
        job_run_id: The run the update belongs to, if known.
        task_id: The task that reported it, if any.
    """

    __slots__ = ()

    job_id: str
    table_id: str | None
    update_time: datetime
    job_run_id: str | None
    task_id: str | None

    def __post_init__(self) -> None:
        check_id("job_id", self.job_id)
        check_time(self.update_time)


_U = TypeVar("_U", bound=JobUpdateBase)


def in_time_order(updates: Iterable[_U]) -> list[_U]:
    """A job's updates in time order (stable: ties keep the recorded order).

    Raises:
        TrackerError: If there are no updates or they belong to different jobs.
    """
    ordered = sorted(updates, key=lambda u: u.update_time)
    if not ordered:
        raise TrackerError("a job status needs at least one update")
    if len({u.job_id for u in ordered}) > 1:
        raise TrackerError("updates of one job status must share a job id")
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
