"""Compaction job dispatcher (spec 4.1 step 5): pending batches from ``PendingCompactionJobBatchQ``, through the
entry the registry names (:func:`sleeper.compaction.entry.handle_compaction_job_dispatch`).

A batch whose input files are all assigned to its jobs is sent to ``CompactionJobQ``; one still waiting for its
assignment goes back to the pending queue with a delay; one that can never be sent goes to the pending queue's
dead-letter queue; a batch already dispatched is dropped. Only a failure to reach S3 or SQS returns the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import PENDING_COMPACTION_JOB_BATCH_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of pending batch requests."""
    return route_messages(event, PENDING_COMPACTION_JOB_BATCH_Q)
