"""Partition splitting (spec 5): each split job from ``PartitionSplittingJobQueue`` splits its partition at the
median of its files' sketches (``sleeper.splitting.splitter.handle_split_partition``, through the router). A partition
already split (a job delivered twice) or gone is left alone; a job naming files the table does not track, or without
sketches, fails and is retried, then dead-lettered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import PARTITION_SPLITTING_JOB_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of split jobs."""
    return route_messages(event, PARTITION_SPLITTING_JOB_Q)
