"""Ingest task creation: on ``<id>-IngestTasksCreationRule``, starts an ECS ingest task per job
waiting on ``IngestJobQ``, within ``sleeper.ingest.max.concurrent.tasks``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime.aws import create_ingest_tasks_on_ecs


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Lambda handler for the scheduled event."""
    created = create_ingest_tasks_on_ecs(aws_instance())
    LOGGER.info("Ingest task creation: %d jobs visible, %d tasks started", created.visible_jobs, created.launched)
    return {"visibleJobs": created.visible_jobs, "tasksLaunched": created.launched}
