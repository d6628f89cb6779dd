"""The AWS wiring of bulk export: task creation over ECS (the planner and the task's leaf exports need no AWS
adapter of their own and go through the router)."""

from __future__ import annotations

from typing import Any

from sleeper.adapters.aws.launchers import bulk_export_task_launcher
from sleeper.bulk_export import create_bulk_export_tasks
from sleeper.core import LEAF_PARTITION_BULK_EXPORT_Q
from sleeper.core.jobs import TaskCreation
from sleeper.runtime.aws.instance import AwsInstance

__all__ = ["create_bulk_export_tasks_on_ecs"]


def create_bulk_export_tasks_on_ecs(instance: AwsInstance, **launcher_options: Any) -> TaskCreation:
    """One scheduled run of bulk export task creation: an ECS task per visible leaf export, within the maximum.

    Raises:
        PropertyError: If the bulk export cluster or task definition is not set (no bulk export stack).
    """
    launcher = bulk_export_task_launcher(instance.clients.ecs, instance.properties, **launcher_options)
    return create_bulk_export_tasks(instance.properties, instance.queue(LEAF_PARTITION_BULK_EXPORT_Q), launcher)
