"""The ingest container's entry point: an ECS task running ingest jobs from ``IngestJobQ`` until a
receive (waiting ``sleeper.ingest.job.queue.wait.time``, 20 s by default, or ``SLEEPER_TASK_IDLE_WAIT_SECONDS`` if
that is less) finds none
(:func:`sleeper.ingest.task.run_ingest_task`, the same task loop as compaction's), each message through the ingest
job queue's entry in the task's workspace, recording the task in the ingest task tracker."""

from __future__ import annotations

from pathlib import Path

from sleeper.core import log_context
from sleeper.core.properties import INGEST_JOB_WAIT_TIME_IN_SECONDS
from sleeper.ingest import WAIT_SECONDS, QueueRunSummary, ingest_task_settings, run_ingest_task
from sleeper.runtime.aws.containers import configure_logging, idle_wait_seconds, install_user_code_of, task_workspace
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig

__all__ = ["WAIT_SECONDS", "main", "run_task"]


def run_task(
    instance: AwsInstance,
    *,
    task_id: str | None = None,
    wait_seconds: float = WAIT_SECONDS,
    local_dir: str | Path | None = None,
) -> QueueRunSummary:
    """Runs ingest jobs until the queue is idle, as a task with its own id and scratch directory (``local_dir`` if
    given); returns the outcome of each."""
    settings = ingest_task_settings(instance.properties, wait_seconds=wait_seconds)
    with (
        task_workspace(task_id, None if local_dir is None else str(local_dir)) as workspace,
        log_context(task_id=workspace.task_id),
    ):
        return run_ingest_task(instance, workspace, settings)


def main() -> int:
    """Container entry point: the instance its environment names (``CONFIG_BUCKET``)."""
    configure_logging()
    instance = AwsInstance(AwsRuntimeConfig.from_environment())
    configure_logging(instance)
    install_user_code_of(instance)
    wait = float(instance.properties.get_int(INGEST_JOB_WAIT_TIME_IN_SECONDS))  # the task needs the properties
    cap = idle_wait_seconds()
    run_task(instance, wait_seconds=wait if cap is None else min(wait, cap))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
