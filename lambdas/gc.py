"""Garbage collection (spec 6): one table id per message from ``GCJobQ.fifo``; deletes the table's files unreferenced
for longer than its delay, commits DELETE_FILES, and sweeps orphaned files (:mod:`sleeper.gc.entry`, through the
router). Files that could not be collected fail the message after the rest were committed, so it is retried and then
dead-lettered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import GC_JOB_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return route_messages(event, GC_JOB_Q)
