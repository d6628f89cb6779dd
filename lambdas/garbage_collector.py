"""Garbage collection (spec 6): one table id per message from ``GCJobQ.fifo``; deletes the table's files unreferenced
for longer than its delay, commits DELETE_FILES, and sweeps orphaned files. Files that could not be collected fail
the message after the rest were committed, so it is retried and then dead-lettered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.runtime.aws_operations import collect_garbage


def _collect(table_id: str) -> None:
    run = collect_garbage(aws_instance(), table_id)
    LOGGER.info(
        "Table %s: %d files garbage collected, %d orphaned files deleted, %d files of deleted tables deleted",
        table_id,
        len(run.collected.deleted),
        len(run.swept.deleted),
        len(run.leftovers.deleted),
    )


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _collect, stop_at_failure=True)
