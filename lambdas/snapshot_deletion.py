"""Old snapshot deletion (spec 2.7): one table id per message from ``TransactionLogSnapshotDeletionQ.fifo``
(``sleeper.statestore.upkeep.handle_snapshot_deletion``, through the router)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import SNAPSHOT_DELETION_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, SNAPSHOT_DELETION_Q)
