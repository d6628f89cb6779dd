"""Bulk export task creation (Sleeper's ``SqsTriggeredBulkExportTaskRunnerLambda`` with
``RunDataProcessingTasks.createForBulkExport``): on ``<id>-BulkExportJobCreationRule``, one task per leaf partition
export waiting on ``BulkExportLeafPartition-Q``, up to ``sleeper.bulk.export.max.concurrent.tasks`` running at once,
by the rules of :mod:`sleeper.core.jobs.task_creation`.

Bulk export tasks run on Fargate: there are no hosts to size, so a run with no export visible stops before counting
the tasks. The AWS launcher is :func:`sleeper.adapters.aws.launchers.ecs.bulk_export_task_launcher`.
"""

from __future__ import annotations

from sleeper.core.jobs import JobQueueCounts, TaskCreation, TaskKind, TaskLauncher, create_tasks
from sleeper.core.properties import MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS, InstanceProperties

__all__ = ["BULK_EXPORT_TASKS", "create_bulk_export_tasks"]

BULK_EXPORT_TASKS = TaskKind(name="bulk export", maximum_tasks=MAXIMUM_CONCURRENT_BULK_EXPORT_TASKS)
"""Bulk export as task creation sees it."""


def create_bulk_export_tasks(
    properties: InstanceProperties, job_queue: JobQueueCounts, launcher: TaskLauncher
) -> TaskCreation:
    """One scheduled run: a task for each leaf export waiting, within ``sleeper.bulk.export.max.concurrent.tasks``."""
    return create_tasks(BULK_EXPORT_TASKS, properties, job_queue, launcher)
