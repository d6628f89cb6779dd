"""Transaction log snapshot creation (spec 2.5): one table id per message from ``TransactionLogSnapshotQ.fifo``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.statestore.upkeep import create_snapshot


def _create(table_id: str) -> None:
    created = create_snapshot(aws_instance().table_by_id(table_id).state_store).created
    LOGGER.info("Table %s: %d snapshots created", table_id, len(created))


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _create, stop_at_failure=True)
