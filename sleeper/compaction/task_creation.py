"""Compaction task creation: every minute, one compaction task per job waiting on ``CompactionJobQ``, up to
``sleeper.compaction.max.concurrent.tasks`` running at once, by the rules of :mod:`sleeper.core.jobs.task_creation`.

What is compaction's own:

* the hosts: with the EC2 launch type the tasks run on a pool of hosts, sized for the target number of tasks before
  any launch (so the tasks are counted and the hosts sized even when no job is visible);
* a scheduled run stops launching once it has run for 50 seconds (it is triggered every minute);
* run by hand to reach a number of tasks (``runCompactionTasks.sh``): :func:`run_compaction_tasks_to_target`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from sleeper.core.jobs import (
    HostScaling,
    JobQueueCounts,
    TaskCreation,
    TaskKind,
    TaskLauncher,
    create_tasks,
    run_tasks_to_target,
)
from sleeper.core.properties import MAXIMUM_CONCURRENT_COMPACTION_TASKS, InstanceProperties

__all__ = [
    "COMPACTION_TASKS",
    "SCHEDULED_RUN_TIME_LIMIT_SECONDS",
    "TaskHostScaler",
    "create_compaction_tasks",
    "run_compaction_tasks_to_target",
]

SCHEDULED_RUN_TIME_LIMIT_SECONDS = 50.0
"""How long a scheduled run launches tasks for before it stops (it is triggered every minute)."""

COMPACTION_TASKS = TaskKind(
    name="compaction", maximum_tasks=MAXIMUM_CONCURRENT_COMPACTION_TASKS, count_when_queue_empty=True
)
"""Compaction as task creation sees it."""


class TaskHostScaler(Protocol):
    """Sizes the hosts compaction tasks run on (the EC2 pool of the EC2 launch type); nothing to do on Fargate."""

    def scale_to(self, tasks: int) -> None:
        """Makes room for this many tasks in total (never asked to shrink below the tasks running)."""
        ...


def create_compaction_tasks(
    properties: InstanceProperties,
    job_queue: JobQueueCounts,
    launcher: TaskLauncher,
    *,
    host_scaler: TaskHostScaler | None = None,
    clock: Callable[[], float] = time.monotonic,
    time_limit_seconds: float = SCHEDULED_RUN_TIME_LIMIT_SECONDS,
) -> TaskCreation:
    """One scheduled run: starts a task for each job waiting, within ``sleeper.compaction.max.concurrent.tasks``.

    Args:
        properties: The instance properties (the maximum number of tasks).
        job_queue: The compaction job queue.
        launcher: Counts and starts tasks.
        host_scaler: Sizes the hosts for the target number of tasks (EC2 launch type), if any.
        clock: Seconds from an arbitrary origin (``time.monotonic``), to stop launching after the time limit.
        time_limit_seconds: How long launching may go on.
    """
    return create_tasks(
        COMPACTION_TASKS, properties, job_queue, launcher,
        scale_hosts=_scaling(host_scaler), clock=clock, time_limit_seconds=time_limit_seconds,
    )  # fmt: skip


def run_compaction_tasks_to_target(
    launcher: TaskLauncher, desired_tasks: int, *, host_scaler: TaskHostScaler | None = None
) -> TaskCreation:
    """Starts tasks until ``desired_tasks`` are running or pending, whatever is on the queue, never scaling the hosts
    down (see :func:`sleeper.core.jobs.task_creation.run_tasks_to_target`).

    Raises:
        ValueError: If ``desired_tasks`` is negative.
    """
    return run_tasks_to_target(COMPACTION_TASKS, launcher, desired_tasks, scale_hosts=_scaling(host_scaler))


def _scaling(host_scaler: TaskHostScaler | None) -> HostScaling | None:
    return None if host_scaler is None else host_scaler.scale_to
