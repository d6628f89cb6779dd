"""Ports of ingest task creation (spec 3.3, 12): the ingest job queue's message counts and a launcher of tasks.

The AWS implementation is in :mod:`sleeper.adapters.aws.launchers.ecs` (ECS ``RunTask``/``DescribeClusters``); the
local runtime starts worker processes instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sleeper.core.queue import QueueCounts

__all__ = ["AbortCheck", "JobQueueCounts", "TaskLauncher"]

AbortCheck = Callable[[], bool]
"""Called by a launcher between launches; True means stop launching."""


class JobQueueCounts(Protocol):
    """The ingest job queue, as far as task creation needs it (any ``sleeper.core.queue.Queue`` is one)."""

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        ...


class TaskLauncher(Protocol):
    """Counts and starts ingest tasks (ECS tasks on AWS, worker processes locally)."""

    def running_and_pending_tasks(self) -> int:
        """How many tasks are running or about to run."""
        ...

    def launch_tasks(self, count: int, *, should_abort: AbortCheck) -> int:
        """Starts up to ``count`` tasks, stopping early when ``should_abort`` returns True.

        Returns:
            How many tasks were started.
        """
        ...
