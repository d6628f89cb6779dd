"""Query handler (spec 7.2): validates each query from ``QueryQueue``, plans it and sends one sub-query per leaf
partition to ``LeafPartitionQueryQueue``, through the entry the registry names (:func:`sleeper.query.entry.
handle_query`); the query tracker records every step. A bad query is tracked FAILED and deleted; only a failure to
reach AWS returns the message to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import QUERY_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of queries."""
    return route_messages(event, QUERY_Q)
