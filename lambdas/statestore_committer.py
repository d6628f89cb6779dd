"""State store committer (spec 2.6): applies commit requests from ``StateStoreCommitterQ.fifo`` in order.

Committed, rejected and unreadable requests are deleted; a request to retry (the store could not be reached, every
attempt collided) fails the batch from there on, so later messages keep their order behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, batch_response, sqs_records
from sleeper.statestore.committer import apply_commit_requests


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of commit requests."""
    instance = aws_instance()
    failed: list[str] = []
    for record in sqs_records(event):
        if failed:
            failed.append(record.message_id)
            continue
        (result,) = apply_commit_requests([record.body], lambda table_id: instance.table_by_id(table_id).state_store)
        if result.status.done:
            LOGGER.info("Commit request %s: %s %s", record.message_id, result.status.value, result.reason or "")
        else:
            LOGGER.warning("Commit request %s to retry: %s", record.message_id, result.reason)
            failed.append(record.message_id)
    return batch_response(failed)
