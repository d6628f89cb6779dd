"""Bulk export planner (Sleeper's ``SqsBulkExportProcessorLambda``): each bulk export query from ``BulkExport-Q`` is
tracked and split into one leaf partition export per leaf partition, sent to ``BulkExportLeafPartition-Q``, through
the entry the registry names (:func:`sleeper.bulk_export.entry.handle_bulk_export`). A bad query is tracked FAILED
and deleted; only a failure to reach AWS returns the message to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import BULK_EXPORT_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of bulk export queries."""
    return route_messages(event, BULK_EXPORT_Q)
