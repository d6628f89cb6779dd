"""Table metrics: one table id per message from ``MetricsJobQ.fifo``; computes the table's file, reference, row and
partition counts and writes them to the log in CloudWatch embedded metric format, where CloudWatch publishes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import aws_instance, for_each_message
from sleeper.runtime.aws.operations import publish_table_metrics


def _publish(table_id: str) -> None:
    publish_table_metrics(aws_instance(), table_id)


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _publish)
