"""How a bulk export task takes leaf partition exports from ``BulkExportLeafPartition-Q`` (Sleeper's
``ECSBulkExportTaskRunner`` and ``SqsBulkExportQueueHandler``): the loop settings from the instance's bulk export
properties. The loop itself is the one every task runs (:func:`sleeper.core.jobs.task_loop.run_task_loop`).

As Sleeper's task, one receive waits ``sleeper.bulk.export.task.wait.time.seconds``, the message stays invisible for
``sleeper.bulk.export.queue.visibility.timeout.seconds`` and is extended every
``sleeper.bulk.export.keepalive.period.seconds`` while the export runs, a failed export's message comes back after
``sleeper.bulk.export.job.failed.visibility.timeout.seconds``, and the task runs one export and stops.
"""

from __future__ import annotations

from sleeper.core.jobs import LoopSettings
from sleeper.core.properties import (
    BULK_EXPORT_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS,
    BULK_EXPORT_KEEP_ALIVE_PERIOD_IN_SECONDS,
    BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS,
    BULK_EXPORT_TASK_WAIT_TIME_IN_SECONDS,
    InstanceProperties,
)

__all__ = ["JOBS_PER_TASK", "bulk_export_loop_settings"]

JOBS_PER_TASK = 1
"""Leaf exports one task runs before it stops (Sleeper's task receives one message)."""


def bulk_export_loop_settings(properties: InstanceProperties, *, wait_cap_seconds: float | None = None) -> LoopSettings:
    """The task loop's settings from the instance's bulk export properties.

    Args:
        properties: The instance properties.
        wait_cap_seconds: A cap on how long a receive waits (the emulator's idle wait), if any.
    """
    wait = float(properties.get_int(BULK_EXPORT_TASK_WAIT_TIME_IN_SECONDS))
    if wait_cap_seconds is not None:
        wait = min(wait, wait_cap_seconds)
    return LoopSettings(
        wait_seconds=wait,
        max_idle_seconds=0.0,
        delay_before_retry_seconds=0.0,
        max_consecutive_failures=1,
        keep_alive_seconds=float(properties.get_int(BULK_EXPORT_KEEP_ALIVE_PERIOD_IN_SECONDS)),
        visibility_timeout_seconds=float(properties.get_int(BULK_EXPORT_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS)),
        failed_visibility_seconds=float(properties.get_int(BULK_EXPORT_JOB_FAILED_VISIBILITY_TIMEOUT_IN_SECONDS)),
    )
