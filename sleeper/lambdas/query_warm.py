"""Keeping the query functions warm (Sleeper's ``WarmQueryExecutorLambda``): on ``<id>-QueryWarmLambdaRule``, sends
one small query per online table to ``QueryQueue``; does nothing if the instance has no query queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime.aws import send_warm_up_queries


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Lambda handler for the scheduled event."""
    sent = send_warm_up_queries(aws_instance())
    LOGGER.info("Sent %d warm-up queries", sent)
    return {"queriesSent": sent}
