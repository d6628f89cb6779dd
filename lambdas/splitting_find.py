"""Finding partitions to split (spec 5): one table id per message from ``FindPartitionsToSplitQ.fifo``; sends a
split job to ``PartitionSplittingJobQueue`` for each leaf partition over the table's split threshold
(``sleeper.splitting.finder.handle_find_partitions_to_split``, through the router)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import FIND_PARTITIONS_TO_SPLIT_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, FIND_PARTITIONS_TO_SPLIT_Q)
