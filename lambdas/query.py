"""Query handler (spec 7.2): validates each query from ``QueryQueue``, plans it and sends one sub-query per leaf
partition to ``LeafPartitionQueryQueue``; the query tracker records every step. A bad query is tracked FAILED and
deleted; only a failure to reach AWS returns the message to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, handle_query_message


def _handle(body: str) -> None:
    instance = aws_instance()
    outcome = handle_query_message(
        body, tables=instance, leaf_queue=instance.queue(LEAF_PARTITION_QUERY_QUEUE), tracker=instance.query_tracker
    )
    if outcome.error is not None:
        LOGGER.warning("Query %s failed: %s", outcome.query_id or "(no id)", outcome.error)
    else:
        LOGGER.info("Query %s: %d sub-queries sent", outcome.query_id, len(outcome.sub_queries))


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of queries."""
    return for_each_message(event, _handle)
