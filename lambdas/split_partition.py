"""Partition splitting (spec 5): each split job from ``PartitionSplittingJobQueue`` splits its partition at the
median of its files' sketches. A partition already split (a job delivered twice) or gone is left alone; a job naming
files the table does not track, or without sketches, fails and is retried, then dead-lettered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.runtime.aws_operations import split_partition


def _split(body: str) -> None:
    result = split_partition(aws_instance(), body)
    where = f"Table {result.table_id} partition {result.partition_id}"
    LOGGER.info("%s: %s at %r", where, result.outcome.value, result.split_point)


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of split jobs."""
    return for_each_message(event, _split)
