"""Ports of compaction task creation (spec 4.4, 12): the job queue's message counts, the tasks running, a launcher
of new tasks, and an optional scaler of the hosts they run on.

The AWS implementations are in :mod:`sleeper.adapters.aws.launchers.ecs` (ECS ``RunTask``/``DescribeClusters``); the
local runtime starts worker processes instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sleeper.core.queue import QueueCounts

__all__ = ["AbortCheck", "JobQueueCounts", "TaskHostScaler", "TaskLauncher"]

AbortCheck = Callable[[], bool]
"""Called by a launcher between launches; True means stop launching (the scheduled run is nearly over)."""


class JobQueueCounts(Protocol):
    """The compaction job queue, as far as task creation needs it (any ``sleeper.core.queue.Queue`` is one)."""

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        ...


class TaskLauncher(Protocol):
    """Counts and starts compaction tasks (ECS tasks on AWS, worker processes locally)."""

    def running_and_pending_tasks(self) -> int:
        """How many tasks are running or about to run."""
        ...

    def launch_tasks(self, count: int, *, should_abort: AbortCheck) -> int:
        """Starts up to ``count`` tasks, stopping early when ``should_abort`` returns True.

        Returns:
            How many tasks were started.
        """
        ...


class TaskHostScaler(Protocol):
    """Sizes the hosts tasks run on (the EC2 pool of the EC2 launch type); nothing to do on Fargate."""

    def scale_to(self, tasks: int) -> None:
        """Makes room for this many tasks in total (never asked to shrink below the tasks running)."""
        ...
