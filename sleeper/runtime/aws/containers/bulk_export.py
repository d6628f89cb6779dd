"""The bulk export container's entry point (Sleeper's ``ECSBulkExportTaskRunner``): an ECS task that takes a leaf
partition export from ``BulkExportLeafPartition-Q`` and runs it through the queue's entry
(:func:`sleeper.bulk_export.entry.handle_leaf_partition_export`, resolved by the router, with its one failure
mapping) in the task loop every task runs (:mod:`sleeper.core.jobs.task_loop`). A finished export's message is
deleted; a failed one's returns after ``sleeper.bulk.export.job.failed.visibility.timeout.seconds``. As Sleeper's
task, it runs one export and stops (:data:`~sleeper.bulk_export.task.JOBS_PER_TASK`); loop settings:
:func:`sleeper.bulk_export.task.bulk_export_loop_settings`."""

from __future__ import annotations

import logging

from sleeper.bulk_export import JOBS_PER_TASK, bulk_export_loop_settings
from sleeper.core import LEAF_PARTITION_BULK_EXPORT_Q
from sleeper.core.jobs import TaskLoop, run_task_loop
from sleeper.runtime.aws.containers import LOGGER, configure_logging, idle_wait_seconds, install_user_code_of
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from sleeper.runtime.router import Settled, dispatch

__all__ = ["main", "run_task"]


def run_task(
    instance: AwsInstance, *, wait_cap_seconds: float | None = None, max_jobs: int | None = JOBS_PER_TASK
) -> TaskLoop[Settled]:
    """Runs leaf partition exports from the queue: one, as Sleeper's task, unless ``max_jobs`` says otherwise
    (None: until a receive finds none)."""
    settings = bulk_export_loop_settings(instance.properties, wait_cap_seconds=wait_cap_seconds)

    def run(body: str) -> Settled:
        settled = dispatch(instance, LEAF_PARTITION_BULK_EXPORT_Q, body)
        LOGGER.log(logging.INFO if settled.delete else logging.WARNING, "%s", settled.line)
        return settled

    return run_task_loop(
        instance.queue(LEAF_PARTITION_BULK_EXPORT_Q),
        run,
        lambda settled: not settled.delete,
        settings,
        max_jobs=max_jobs,
    )


def main() -> int:
    """Container entry point: the instance its environment names (``CONFIG_BUCKET``)."""
    configure_logging()
    instance = AwsInstance(AwsRuntimeConfig.from_environment())
    configure_logging(instance)
    install_user_code_of(instance)
    run_task(instance, wait_cap_seconds=idle_wait_seconds())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
