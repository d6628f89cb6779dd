"""State store committer (spec 2.6): applies commit requests from ``StateStoreCommitterQ.fifo`` in order.

Committed, rejected and unreadable requests are deleted, and the job trackers record what each did
(:mod:`sleeper.statestore.follower`); a request to retry (the store could not be reached, every attempt collided)
fails the batch from there on, so later messages keep their order behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import aws_instance, for_each_message
from sleeper.statestore.committer import handle_commit_request


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of commit requests."""
    return for_each_message(event, lambda body: handle_commit_request(aws_instance(), body), stop_at_failure=True)
