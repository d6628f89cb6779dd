"""Ingest task creation: every minute, one ingest task per job waiting on ``IngestJobQ``, up to
``sleeper.ingest.max.concurrent.tasks`` running at once, by the rules of :mod:`sleeper.core.jobs.task_creation`.

Ingest tasks run on Fargate: there are no hosts to size, so a run with no job visible stops before counting the
tasks, and there is no time limit.
"""

from __future__ import annotations

from sleeper.core.jobs import JobQueueCounts, TaskCreation, TaskKind, TaskLauncher, create_tasks
from sleeper.core.properties import MAXIMUM_CONCURRENT_INGEST_TASKS, InstanceProperties

__all__ = ["INGEST_TASKS", "create_ingest_tasks"]

INGEST_TASKS = TaskKind(name="ingest", maximum_tasks=MAXIMUM_CONCURRENT_INGEST_TASKS)
"""Ingest as task creation sees it."""


def create_ingest_tasks(
    properties: InstanceProperties, job_queue: JobQueueCounts, launcher: TaskLauncher
) -> TaskCreation:
    """One scheduled run: starts a task for each job waiting, within ``sleeper.ingest.max.concurrent.tasks``."""
    return create_tasks(INGEST_TASKS, properties, job_queue, launcher)
