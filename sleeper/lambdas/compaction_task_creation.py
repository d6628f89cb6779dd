"""Compaction task creation: on ``<id>-CompactionTasksCreationRule``, starts an ECS compaction task per
job waiting on ``CompactionJobQ``, within ``sleeper.compaction.max.concurrent.tasks``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime.aws import create_compaction_tasks_on_ecs


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Lambda handler for the scheduled event."""
    created = create_compaction_tasks_on_ecs(aws_instance())
    visible = created.visible_jobs or 0
    LOGGER.info(
        "Compaction task creation: %d jobs visible, %d tasks running or pending, %d tasks started",
        visible,
        created.running_and_pending,
        created.launched,
    )
    return {"visibleJobs": visible, "tasksLaunched": created.launched}
