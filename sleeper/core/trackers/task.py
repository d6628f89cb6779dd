"""Tasks (ECS tasks, local workers): their updates, the status derived from them, and the tracker port."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Protocol

from sleeper.core.trackers.base import JOB_UPDATE_TTL, check_id, check_time, in_time_order


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted:
    """A task (ECS task, local worker) started."""

    task_id: str
    update_time: datetime

    def __post_init__(self) -> None:
        check_id("task_id", self.task_id)
        check_time(self.update_time)


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
        check_id("task_id", self.task_id)
        check_time(self.update_time)


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
    ordered = in_time_order(updates, attrgetter("task_id"), "task")
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
