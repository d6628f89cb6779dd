"""Compaction job dispatcher (spec 4.1 step 5): pending batches from ``PendingCompactionJobBatchQ``.

A batch whose input files are all assigned to its jobs is sent to ``CompactionJobQ``; one still waiting for its
assignment goes back to the pending queue with a delay; one that can never be sent goes to the pending queue's
dead-letter queue; a batch already dispatched is dropped. Only a failure to reach S3 or SQS returns the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.compaction.dispatch import DispatchOutcome
from sleeper.runtime.aws.compaction import dispatch_pending_batch_on_aws


def _dispatch(body: str) -> None:
    result = dispatch_pending_batch_on_aws(aws_instance(), body)
    if result.outcome is DispatchOutcome.DEAD_LETTERED:
        LOGGER.warning("Compaction %s", result.describe())
    else:
        LOGGER.info("Compaction %s", result.describe())


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of pending batch requests."""
    return for_each_message(event, _dispatch)
