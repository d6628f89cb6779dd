"""The ingest task: what the ingest container runs, beside the compaction task and through the same task
loop (:mod:`sleeper.core.jobs.task_loop`).

It records itself in the ingest task tracker, then takes jobs from ``IngestJobQ`` one at a time until a receive
(waiting ``wait_seconds``) finds none: each message is kept invisible while its job runs (its visibility extended
every ``sleeper.ingest.keepalive.period.seconds`` to ``sleeper.ingest.queue.visibility.timeout.seconds``) and run
through the ingest job queue's entry (:func:`sleeper.ingest.entry.run_ingest_job`) in the task's workspace. A
finished or rejected job's message is deleted; a failed one's is left to be delivered again once its visibility runs
out (and reaches the dead-letter queue after the queue's receive limit).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from sleeper.core import INGEST_JOB_Q
from sleeper.core.jobs import JobWorkspace, LoopSettings, TaskLoop, run_task_loop
from sleeper.core.properties import (
    INGEST_KEEP_ALIVE_PERIOD_IN_SECONDS,
    INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS,
    InstanceProperties,
)
from sleeper.core.trackers import JobOutcome, TaskFinished, TaskStarted
from sleeper.ingest.entry import run_ingest_job
from sleeper.ingest.job_runner import IngestJobOutcome, QueueRunSummary
from sleeper.ingest.ports import IngestRuntime

__all__ = ["WAIT_SECONDS", "ingest_task_settings", "run_ingest_task"]

_LOG = logging.getLogger(__name__)

WAIT_SECONDS = 20.0
"""How long a receive waits for a job before the task decides the queue is idle."""


def ingest_task_settings(properties: InstanceProperties, *, wait_seconds: float = WAIT_SECONDS) -> LoopSettings:
    """An ingest task's loop settings: stop at the first receive finding no job (waiting ``wait_seconds``), extend a
    job's visibility as the instance's ingest properties say, never stop for failures."""
    return LoopSettings(
        wait_seconds=wait_seconds,
        max_idle_seconds=0.0,
        delay_before_retry_seconds=0.0,
        max_consecutive_failures=None,
        keep_alive_seconds=float(properties.get_int(INGEST_KEEP_ALIVE_PERIOD_IN_SECONDS)),
        visibility_timeout_seconds=float(properties.get_int(INGEST_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS)),
    )


def _failed(outcome: IngestJobOutcome) -> bool:
    if outcome.outcome is JobOutcome.FAILED:
        _LOG.warning("ingest job %s failed, to be delivered again: %s", outcome.job_id, "; ".join(outcome.reasons))
        return True
    if outcome.outcome is JobOutcome.REJECTED:
        _LOG.warning("ingest job %s rejected: %s", outcome.job_id, "; ".join(outcome.reasons))
    else:
        rows = outcome.result.rows_written if outcome.result else 0
        _LOG.info("ingest job %s finished: %s rows written", outcome.job_id, f"{rows:,}")
    return False


def run_ingest_task(
    instance: IngestRuntime,
    workspace: JobWorkspace,
    settings: LoopSettings,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> QueueRunSummary:
    """Runs ingest jobs from ``IngestJobQ`` until the queue is idle, as the task the workspace names (see the module
    docstring); returns the outcome of each.

    Raises:
        ValueError: If the workspace names no task (a task records itself under its id).
    """
    if workspace.task_id is None:
        raise ValueError("an ingest task needs a task id: its workspace names none")
    tracker = instance.ingest_task_tracker
    tracker.record(TaskStarted(task_id=workspace.task_id, update_time=clock()))
    loop = TaskLoop[IngestJobOutcome](outcomes=[])
    try:
        run_task_loop(
            instance.queue(INGEST_JOB_Q),
            lambda body: run_ingest_job(instance, body, workspace=workspace),
            _failed,
            settings,
            loop=loop,
        )
    finally:
        results = [o.result for o in loop.outcomes if o.result is not None]
        tracker.record(
            TaskFinished(
                task_id=workspace.task_id,
                update_time=clock(),
                job_runs=len(loop.outcomes),
                rows_read=sum(r.rows_read for r in results),
                rows_written=sum(r.rows_written for r in results),
                time_spent_on_jobs_seconds=loop.job_seconds,
            )
        )
    _LOG.info("Ingest task %s finished %d job runs", workspace.task_id, len(loop.outcomes))
    return QueueRunSummary(outcomes=tuple(loop.outcomes))
