"""Compaction job creation (spec 4.1): one table id per message from ``CompactionJobCreationQ.fifo``
(``sleeper.compaction.entry.handle_compaction_job_creation``, through the router).

Each run pre-splits the table's file references, plans jobs with its strategy, assigns their input files
synchronously and sends them to ``CompactionJobQ`` (recorded "created" in the compaction job tracker). A failure
returns the message, and every later one of the batch, to the queue in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import COMPACTION_JOB_CREATION_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, COMPACTION_JOB_CREATION_Q)
