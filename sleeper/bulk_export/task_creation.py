"""Bulk export task creation (Sleeper's ``SqsTriggeredBulkExportTaskRunnerLambda`` with
``RunDataProcessingTasks.createForBulkExport``): on ``<id>-BulkExportJobCreationRule``, one task per leaf partition
export waiting on ``BulkExportLeafPartition-Q``, up to ``sleeper.bulk.export.max.concurrent.tasks`` running at once.

Sleeper's rule, as for ingest tasks: no job visible, nothing is done (the tasks are not even counted); tasks running
and pending already at the maximum, nothing; otherwise min(visible jobs, maximum - running and pending) tasks. Bulk
export tasks run on Fargate, so there are no hosts to scale. Pure logic over the ports below; the AWS launcher is
:func:`sleeper.adapters.aws.launchers.ecs.bulk_export_task_launcher`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_bulk import MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS
from sleeper.core.queue import QueueCounts

__all__ = ["BulkExportTaskCreation", "JobQueueCounts", "TaskLauncher", "bulk_export_tasks_to_create"]

_LOG = logging.getLogger(__name__)


class JobQueueCounts(Protocol):
    """The leaf partition export queue, as far as task creation needs it (any ``Queue`` is one)."""

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        ...


class TaskLauncher(Protocol):
    """Counts and starts bulk export tasks."""

    def running_and_pending_tasks(self) -> int:
        """How many tasks are running or about to run."""
        ...

    def launch_tasks(self, count: int, *, should_abort: Callable[[], bool]) -> int:
        """Starts up to ``count`` tasks; returns how many started."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkExportTaskCreation:
    """What one run of task creation saw and did.

    Attributes:
        visible_jobs: Leaf exports waiting on the queue.
        running_and_pending: Tasks running or pending, or None if not counted (empty queue).
        to_create: Tasks asked of the launcher.
        launched: Tasks started.
    """

    visible_jobs: int
    running_and_pending: int | None
    to_create: int
    launched: int


def bulk_export_tasks_to_create(*, visible_jobs: int, running_and_pending: int, maximum_running: int) -> int:
    """One task per visible job, within the maximum (never negative)."""
    if visible_jobs <= 0 or running_and_pending >= maximum_running:
        return 0
    return min(visible_jobs, maximum_running - running_and_pending)


def create_bulk_export_tasks(
    properties: InstanceProperties, job_queue: JobQueueCounts, launcher: TaskLauncher
) -> BulkExportTaskCreation:
    """One scheduled run: a task for each leaf export waiting, within ``sleeper.bulk.export.max.concurrent.tasks``."""
    visible = job_queue.approximate_counts().visible
    if visible <= 0:
        return BulkExportTaskCreation(visible_jobs=visible, running_and_pending=None, to_create=0, launched=0)
    running = launcher.running_and_pending_tasks()
    maximum = properties.get_int(MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS)
    to_create = bulk_export_tasks_to_create(visible_jobs=visible, running_and_pending=running, maximum_running=maximum)
    _LOG.info(
        "bulk export task creation: %d jobs visible, %d tasks running or pending, maximum %d, creating %d",
        visible, running, maximum, to_create,
    )  # fmt: skip
    launched = launcher.launch_tasks(to_create, should_abort=lambda: False) if to_create > 0 else 0
    return BulkExportTaskCreation(
        visible_jobs=visible, running_and_pending=running, to_create=to_create, launched=launched
    )
