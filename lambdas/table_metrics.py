"""Table metrics: one table id per message from ``MetricsJobQ.fifo``, through the entry the registry names
(:func:`sleeper.statestore.metrics.handle_table_metrics`); computes the table's file, reference, row and partition
counts and writes them to the log in CloudWatch embedded metric format, where CloudWatch publishes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import METRICS_JOB_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, METRICS_JOB_Q)
