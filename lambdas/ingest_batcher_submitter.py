"""Ingest batcher submitter (spec 3.4): tracks the files of each request from ``IngestBatcherSubmitQ`` in the batcher
store, through the entry the registry names (:func:`sleeper.ingest.batcher.entry.handle_batcher_submit`). A request
that can never be stored (bad JSON, unknown table, no such file) goes to the dead-letter queue and is deleted; a
failure to reach S3 or DynamoDB returns the message to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import INGEST_BATCHER_SUBMIT_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of submit requests."""
    return route_messages(event, INGEST_BATCHER_SUBMIT_Q)
