"""The operations of an AWS instance's scheduled Lambdas that need the AWS adapters: ingest task creation
over ECS and warm-up queries, each taking an :class:`~sleeper.runtime.aws.instance.AwsInstance` and doing what one
invocation does. Every queue-fed operation runs through the router (:mod:`sleeper.runtime.router`) to its feature
entry, on the ports the instance implements (the ingest batcher's store, bulk import platforms, table metrics); the
containers' entry points are in :mod:`sleeper.runtime.aws.containers`. The ``lambdas`` modules only parse events and
map failures.
"""

from __future__ import annotations

import logging
from typing import Any

from sleeper.adapters.aws import DynamoDBIngestBatcherStore
from sleeper.adapters.aws.launchers import EcsTaskLauncher, ingest_task_launcher
from sleeper.bulk_import import BulkImportPlatform, BulkImportRequeue
from sleeper.core import QueueNotFoundError, operations
from sleeper.core.jobs import TaskCreation
from sleeper.ingest import create_ingest_tasks
from sleeper.query import QUERY_QUEUE, send_warm_queries
from sleeper.runtime.aws.instance import AwsInstance

__all__ = [
    "bulk_import_platform",
    "create_ingest_tasks_on_ecs",
    "ingest_batcher_store",
    "send_warm_up_queries",
]

_LOG = logging.getLogger(__name__)


# --- ingest ----------------------------------------------------------------------------------------------------------


def create_ingest_tasks_on_ecs(instance: AwsInstance, **launcher_options: Any) -> TaskCreation:
    """One scheduled run of ingest task creation: an ECS task per visible ingest job, within the maximum.

    Raises:
        PropertyError: If the ingest cluster or task definition is not set (no ingest stack).
    """
    launcher: EcsTaskLauncher = ingest_task_launcher(instance.clients.ecs, instance.properties, **launcher_options)
    return create_ingest_tasks(instance.properties, instance.queue(operations.INGEST_JOB_Q), launcher)


def ingest_batcher_store(instance: AwsInstance) -> DynamoDBIngestBatcherStore:
    """The batcher's DynamoDB store (``sleeper-<id>-ingest-batcher-store``): the instance's."""
    return instance.batcher_store


def bulk_import_platform(
    instance: AwsInstance, queue_logical_name: str
) -> tuple[BulkImportPlatform, BulkImportRequeue | None]:
    """The platform that runs the jobs of a bulk import queue, and where jobs go back when it is full (see
    :meth:`AwsInstance.bulk_import_platform`).

    Raises:
        ValueError: If the queue is not a bulk import queue.
        PropertyError: If the platform's resources are not set (its stack is not deployed).
    """
    return instance.bulk_import_platform(queue_logical_name)


# --- warm queries ---------------------------------------------------------------------------------------------------


def send_warm_up_queries(instance: AwsInstance) -> int:
    """Sends a warm-up query per online table to the query queue; nothing if the instance has no query queue.

    Returns:
        How many queries were sent.
    """
    try:
        queue = instance.queue(QUERY_QUEUE)
    except QueueNotFoundError:
        _LOG.info("no query queue: no warm-up queries sent")
        return 0
    tables = []
    for status in instance.online_tables():
        table = instance.table_by_id(status.table_id)
        tables.append((table.name, table.schema))
    return len(send_warm_queries(tables, queue))
