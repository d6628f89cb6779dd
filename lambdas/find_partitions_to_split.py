"""Finding partitions to split (spec 5): one table id per message from ``FindPartitionsToSplitQ.fifo``; sends a
split job to ``PartitionSplittingJobQueue`` for each leaf partition over the table's split threshold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.runtime.aws_operations import find_partitions_to_split


def _find(table_id: str) -> None:
    jobs = find_partitions_to_split(aws_instance(), table_id)
    LOGGER.info("Table %s: %d partitions to split", table_id, len(jobs))


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _find, stop_at_failure=True)
