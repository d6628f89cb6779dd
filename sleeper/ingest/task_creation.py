"""Ingest task creation (spec 3.3, 12): every minute, start one task per ingest job waiting on the job queue, up to
``sleeper.ingest.max.concurrent.tasks`` running at once.

Sleeper's rules, as its ingest task creator applies them:

* if no job is visible on the queue, stop (the tasks are not even counted);
* if the tasks running and pending already equal the maximum, stop;
* otherwise create min(visible jobs, maximum − running and pending) tasks (none if that is not positive).

Unlike compaction there are no hosts to scale (ingest tasks run on Fargate) and no time limit.
Everything here is pure logic over the ports of :mod:`sleeper.ingest.launch_ports`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_ingest import MAXIMUM_CONCURRENT_INGEST_TASKS
from sleeper.ingest.launch_ports import JobQueueCounts, TaskLauncher

__all__ = ["IngestTaskCreation", "create_ingest_tasks", "ingest_tasks_to_create"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestTaskCreation:
    """What one run of ingest task creation saw and did.

    Attributes:
        visible_jobs: Jobs waiting on the queue.
        running_and_pending: Tasks running or about to run, or None if they were not counted (empty queue).
        to_create: Tasks asked of the launcher.
        launched: Tasks actually started.
    """

    visible_jobs: int
    running_and_pending: int | None
    to_create: int
    launched: int


def ingest_tasks_to_create(*, visible_jobs: int, running_and_pending: int, maximum_running: int) -> int:
    """Sleeper's rule: one task per visible job, within the maximum (never negative).

    Args:
        visible_jobs: Approximate number of visible messages on the ingest job queue.
        running_and_pending: Tasks running or pending.
        maximum_running: ``sleeper.ingest.max.concurrent.tasks``.
    """
    if visible_jobs <= 0 or running_and_pending == maximum_running:
        return 0
    return max(0, min(visible_jobs, maximum_running - running_and_pending))


def create_ingest_tasks(
    properties: InstanceProperties, job_queue: JobQueueCounts, launcher: TaskLauncher
) -> IngestTaskCreation:
    """One scheduled run: starts a task for each job waiting, within ``sleeper.ingest.max.concurrent.tasks``.

    Args:
        properties: The instance properties (the maximum number of tasks).
        job_queue: The ingest job queue.
        launcher: Counts and starts tasks.

    Returns:
        What was seen and done.
    """
    visible = job_queue.approximate_counts().visible
    if visible <= 0:
        _LOG.info("ingest task creation: no jobs visible on the queue")
        return IngestTaskCreation(visible_jobs=visible, running_and_pending=None, to_create=0, launched=0)
    running = launcher.running_and_pending_tasks()
    maximum = properties.get_int(MAXIMUM_CONCURRENT_INGEST_TASKS)
    to_create = ingest_tasks_to_create(visible_jobs=visible, running_and_pending=running, maximum_running=maximum)
    _LOG.info(
        "ingest task creation: %d jobs visible, %d tasks running or pending, maximum %d, creating %d",
        visible,
        running,
        maximum,
        to_create,
    )
    launched = launcher.launch_tasks(to_create, should_abort=lambda: False) if to_create > 0 else 0
    return IngestTaskCreation(visible_jobs=visible, running_and_pending=running, to_create=to_create, launched=launched)
