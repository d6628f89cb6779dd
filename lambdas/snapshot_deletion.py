"""Old snapshot deletion (spec 2.7): one table id per message from ``TransactionLogSnapshotDeletionQ.fifo``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.statestore.upkeep import delete_old_snapshots


def _delete(table_id: str) -> None:
    deleted = delete_old_snapshots(aws_instance().table_by_id(table_id).state_store)
    LOGGER.info("Table %s: %d old snapshots deleted", table_id, len(deleted))


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _delete, stop_at_failure=True)
