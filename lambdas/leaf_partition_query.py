"""Leaf partition query handler (spec 7.2): runs each sub-query from ``LeafPartitionQueryQueue`` and publishes its
rows, by default as one Parquet file under ``query-<query id>/`` in the query results bucket, or to the results
queue when the query asks for SQS, through the entry the registry names (:func:`sleeper.query.entry.
handle_leaf_query`). The sub-query is tracked IN_PROGRESS, then COMPLETED with its row count or FAILED, and its
query rolled up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import LEAF_PARTITION_QUERY_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of sub-queries."""
    return route_messages(event, LEAF_PARTITION_QUERY_Q)
