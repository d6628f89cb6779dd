"""Ingest task (spec 3.3), the ingest container's entry point: runs ingest jobs from ``IngestJobQ`` until a receive
(waiting up to 20 s, or ``SLEEPER_TASK_IDLE_WAIT_SECONDS`` if that is less) finds none, recording the task in the
ingest task tracker. Finished and rejected jobs are deleted from the queue; failed ones return to it (and reach the
dead-letter queue after its receive limit). Each message goes through the ingest job queue's entry
(:mod:`sleeper.ingest.entry`) in the task's workspace, settled with the router's one failure mapping."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from lambdas._common import LOGGER, aws_instance, idle_wait_seconds
from sleeper.core.jobs.workspace import JobWorkspace
from sleeper.core.operations import INGEST_JOB_Q
from sleeper.core.trackers.task import TaskFinished, TaskStarted
from sleeper.ingest.entry import ingest_job_line, run_ingest_job
from sleeper.ingest.job_runner import IngestJobOutcome, QueueRunSummary
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.router import settle

WAIT_SECONDS = 20.0
"""How long a receive waits for a job before the task decides the queue is idle."""


def run_task(
    instance: AwsInstance,
    *,
    task_id: str | None = None,
    wait_seconds: float = WAIT_SECONDS,
    local_dir: str | Path | None = None,
) -> QueueRunSummary:
    """Runs ingest jobs until the queue is idle; returns the outcome of each."""
    task = task_id or str(uuid.uuid4())
    tracker = instance.ingest_task_tracker
    tracker.record(TaskStarted(task_id=task, update_time=datetime.now(tz=UTC)))
    start = time.monotonic()
    summary = _drain(instance, JobWorkspace(task_id=task, directory=local_dir), wait_seconds)
    results = [o.result for o in summary.outcomes if o.result is not None]
    tracker.record(
        TaskFinished(
            task_id=task,
            update_time=datetime.now(tz=UTC),
            job_runs=len(summary.outcomes),
            rows_read=sum(r.rows_read for r in results),
            rows_written=sum(r.rows_written for r in results),
            time_spent_on_jobs_seconds=time.monotonic() - start,
        )
    )
    LOGGER.info("Ingest task %s finished %d job runs", task, len(summary.outcomes))
    return summary


def _drain(instance: AwsInstance, workspace: JobWorkspace, wait_seconds: float) -> QueueRunSummary:
    """Runs each job of the ingest job queue until a receive finds none: a finished or rejected job's message is
    deleted, a failed one's left to be delivered again."""
    queue = instance.queue(INGEST_JOB_Q)
    outcomes: list[IngestJobOutcome] = []
    while messages := queue.receive(1, wait_seconds=wait_seconds):
        outcome = run_ingest_job(instance, messages[0].body, workspace=workspace)
        outcomes.append(outcome)
        settled = settle(partial(ingest_job_line, outcome))
        LOGGER.log(logging.INFO if settled.delete else logging.WARNING, "%s", settled.line)
        if settled.delete:
            queue.delete(messages[0].receipt_handle)
    return QueueRunSummary(outcomes=tuple(outcomes))


def main() -> int:
    """Container entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cap = idle_wait_seconds()
    run_task(aws_instance(), wait_seconds=WAIT_SECONDS if cap is None else min(WAIT_SECONDS, cap))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
