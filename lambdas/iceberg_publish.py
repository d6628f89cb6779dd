"""Iceberg views (beyond Sleeper): one table id per message from ``IcebergPublishQ.fifo``, through the entry the
registry names (:func:`sleeper.iceberg.entry.handle_publish_iceberg`); a table naming an Iceberg view in
``sleeper.table.iceberg.name`` is published as a new snapshot of it in the Glue Data Catalog, and a table with an
iterator, aggregations or filters has any view it still has withdrawn (:mod:`sleeper.iceberg.withdrawal`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import ICEBERG_PUBLISH_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, ICEBERG_PUBLISH_Q)
