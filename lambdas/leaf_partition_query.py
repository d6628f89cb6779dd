"""Leaf partition query handler (spec 7.2): runs each sub-query from ``LeafPartitionQueryQueue`` and publishes its
rows, by default as one Parquet file under ``query-<query id>/`` in the query results bucket, or to the results
queue when the query asks for SQS. The sub-query is tracked IN_PROGRESS, then COMPLETED with its row count or
FAILED, and its query rolled up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.query.queued import QUERY_RESULTS_QUEUE, handle_leaf_query_message, parquet_publisher
from sleeper.runtime.aws import QUEUE_URL_PROPERTIES


def _handle(body: str) -> None:
    instance = aws_instance()
    options = instance.filesystem_options
    has_results_queue = bool(instance.properties.get(QUEUE_URL_PROPERTIES[QUERY_RESULTS_QUEUE]))
    publish = parquet_publisher(
        instance.query_results_uri,
        options=options,
        results_queue=instance.queue(QUERY_RESULTS_QUEUE) if has_results_queue else None,
    )
    rows = handle_leaf_query_message(
        body, tables=instance, tracker=instance.query_tracker, publish=publish, options=options
    )
    LOGGER.info("Sub-query finished: %d rows", rows)


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of sub-queries."""
    return for_each_message(event, _handle)
