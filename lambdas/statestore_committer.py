"""State store committer (spec 2.6): applies commit requests from ``StateStoreCommitterQ.fifo`` in order.

Each message goes through the router to ``sleeper.statestore.committer.handle_commit_request``. Committed, rejected
and unreadable requests are deleted, and the job trackers record what each did (:mod:`sleeper.statestore.follower`);
a request to retry (the store could not be reached, every attempt collided) fails the batch from there on, so later
messages keep their order behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import route_messages
from sleeper.core.operations import STATE_STORE_COMMITTER_Q


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of commit requests."""
    return route_messages(event, STATE_STORE_COMMITTER_Q)
