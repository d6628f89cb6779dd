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
import os
from collections.abc import Mapping

from lambdas._common import LOGGER, aws_instance
from sleeper.compaction.task import TaskSettings, TaskSummary
from sleeper.runtime.aws import AwsInstance
from sleeper.runtime.aws_compaction import run_compaction_task_on_aws

IDLE_WAIT_ENV = "SLEEPER_TASK_IDLE_WAIT_SECONDS"
"""Caps how long a task waits for a job before it stops (seconds, a number of at least 0)."""


def idle_wait_seconds(environ: Mapping[str, str] | None = None) -> float | None:
    """The cap on idle waiting from ``SLEEPER_TASK_IDLE_WAIT_SECONDS``, or None when unset.

    Raises:
        ValueError: If it is set but is not a number of at least 0.
    """
    value = (os.environ if environ is None else environ).get(IDLE_WAIT_ENV, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{IDLE_WAIT_ENV} must be a number of seconds, not {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"{IDLE_WAIT_ENV} must be at least 0, not {value!r}")
    return seconds


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
