"""Ingest task (spec 3.3), the ingest container's entry point: runs ingest jobs from ``IngestJobQ`` until a receive
(waiting up to 20 s, or ``SLEEPER_TASK_IDLE_WAIT_SECONDS`` if that is less) finds none, recording the task in the
ingest task tracker. Finished and rejected jobs are deleted from the queue; failed ones return to it (and reach the
dead-letter queue after its receive limit)."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from lambdas._common import LOGGER, aws_instance, idle_wait_seconds
from sleeper.core.trackers.task import TaskFinished, TaskStarted
from sleeper.ingest.job_runner import IngestJobRunner, QueueRunSummary, run_ingest_queue
from sleeper.runtime.aws import AwsInstance

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
    runner = IngestJobRunner(instance, task_id=task, options=instance.filesystem_options, local_dir=local_dir)
    summary = run_ingest_queue(instance, runner=runner, until_idle=True, wait_seconds=wait_seconds)
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


def main() -> int:
    """Container entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cap = idle_wait_seconds()
    run_task(aws_instance(), wait_seconds=WAIT_SECONDS if cap is None else min(WAIT_SECONDS, cap))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
