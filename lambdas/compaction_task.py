"""Compaction task (spec 4.4), the compaction container's entry point: runs compaction jobs from ``CompactionJobQ``
until idle, recording the task in the compaction task tracker and each run in the compaction job tracker.

How long it waits for jobs comes from the instance's compaction task properties (a receive waits
``sleeper.compaction.task.wait.time.seconds``; the task stops after ``...max.idle.time.seconds`` without a job).
``SLEEPER_TASK_IDLE_WAIT_SECONDS``, if set, caps both (and the pause between empty receives): the emulated instance's
tests set it so a task ends soon after its queue is drained.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from lambdas._common import IDLE_WAIT_ENV, LOGGER, aws_instance, idle_wait_seconds
from sleeper.compaction.task import TaskSettings, TaskSummary
from sleeper.runtime.aws.compaction import run_compaction_task_on_aws
from sleeper.runtime.aws.instance import AwsInstance

__all__ = ["IDLE_WAIT_ENV", "idle_wait_seconds", "main", "run_task", "task_settings"]


def task_settings(instance: AwsInstance, environ: Mapping[str, str] | None = None) -> TaskSettings:
    """The task's settings: the instance's compaction task properties, with idle waits capped by the environment."""
    settings = TaskSettings.from_instance_properties(instance.properties)
    cap = idle_wait_seconds(environ)
    if cap is None:
        return settings
    return dataclasses.replace(
        settings,
        wait_seconds=min(settings.wait_seconds, cap),
        max_idle_seconds=min(settings.max_idle_seconds, cap),
        delay_before_retry_seconds=min(settings.delay_before_retry_seconds, cap),
    )


def run_task(instance: AwsInstance, *, task_id: str | None = None, settings: TaskSettings | None = None) -> TaskSummary:
    """Runs compaction jobs until the task stops; returns what it did."""
    summary = run_compaction_task_on_aws(instance, task_id=task_id, settings=settings or task_settings(instance))
    LOGGER.info(
        "Compaction task %s stopped (%s) after %d job messages: %d rows read, %d rows written",
        summary.task_id,
        summary.exit.value,
        len(summary.outcomes),
        summary.rows_read,
        summary.rows_written,
    )
    return summary


def main() -> int:
    """Container entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run_task(aws_instance())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
