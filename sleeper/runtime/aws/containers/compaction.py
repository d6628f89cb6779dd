"""The compaction container's entry point: an ECS task running compaction jobs from ``CompactionJobQ``
until it stops (:func:`sleeper.compaction.task.run_compaction_task`), each message through the compaction job queue's
entry (:func:`sleeper.compaction.entry.run_compaction_job`) in the task's workspace, recording the task in the
compaction task tracker and each run in the compaction job tracker.

How long it waits for jobs comes from the instance's compaction task properties (a receive waits
``sleeper.compaction.task.wait.time.seconds``; the task stops after ``...max.idle.time.seconds`` without a job).
``SLEEPER_TASK_IDLE_WAIT_SECONDS``, if set, caps both (and the pause between empty receives): the emulated instance's
tests set it so a task ends soon after its queue is drained.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sleeper.compaction import TaskSettings, TaskSummary, run_compaction_job, run_compaction_task
from sleeper.core import log_context
from sleeper.runtime.aws.containers import (
    LOGGER,
    configure_logging,
    idle_wait_seconds,
    install_user_code_of,
    task_workspace,
)
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig

__all__ = ["main", "run_task", "task_settings"]


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
    """Runs compaction jobs until the task stops, as a task with its own id and scratch directory; returns what it
    did."""
    with task_workspace(task_id) as workspace, log_context(task_id=workspace.task_id):
        summary = run_compaction_task(
            instance,
            task_id=workspace.task_id,
            settings=settings or task_settings(instance),
            run_job=lambda body: run_compaction_job(instance, body, workspace=workspace),
        )
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
    """Container entry point: the instance its environment names (``CONFIG_BUCKET``)."""
    configure_logging()
    instance = AwsInstance(AwsRuntimeConfig.from_environment())
    configure_logging(instance)
    install_user_code_of(instance)
    run_task(instance)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
