"""Old transaction deletion (spec 2.7): one table id per message from ``TransactionLogTransactionDeletionQ.fifo``
(``sleeper.statestore.upkeep.handle_transaction_deletion``, through the router)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import TRANSACTION_DELETION_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, TRANSACTION_DELETION_Q)
