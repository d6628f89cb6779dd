"""Ingest batcher submitter (spec 3.4): tracks the files of each request from ``IngestBatcherSubmitQ`` in the batcher
store. A request that can never be stored (bad JSON, unknown table, no such file) goes to the dead-letter queue and
is deleted; a failure to reach S3 or DynamoDB returns the message to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.runtime.aws.operations import submit_to_batcher


def _submit(body: str) -> None:
    outcome = submit_to_batcher(aws_instance(), body)
    if outcome.accepted:
        LOGGER.info("%s", outcome.describe())
    else:
        LOGGER.warning("%s", outcome.describe())


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of submit requests."""
    return for_each_message(event, _submit)
