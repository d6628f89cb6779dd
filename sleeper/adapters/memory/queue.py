"""In-memory queues with SQS semantics, for tests and single-process embedded use.

They are the SQLite queues (``sleeper.adapters.local.queue``) on a private in-memory database, so both adapters share
one implementation of the queue rules. Time comes from an injected clock, so visibility timeouts, delays and the
deduplication window can be tested without waiting. Only a long-poll receive waits in real time (for a send from
another thread), looking for new messages every few milliseconds.
"""

from __future__ import annotations

import time

from sleeper.adapters.local.queue import SqliteQueue, SqliteQueues
from sleeper.adapters.local.sqlite import MEMORY
from sleeper.core import Clock

IN_MEMORY_POLL_SECONDS = 0.005
"""How often a long-poll receive on an in-memory queue looks for new messages."""

InMemoryQueue = SqliteQueue
"""One queue of an ``InMemoryQueues`` family (implements ``sleeper.core.queue.Queue``)."""


class InMemoryQueues(SqliteQueues):
    """A family of in-memory queues sharing one clock (implements ``sleeper.core.queue.Queues``).

    Args:
        clock: Current time in seconds; defaults to ``time.time``.
    """

    def __init__(self, clock: Clock = time.time) -> None:
        super().__init__(MEMORY, clock, poll_seconds=IN_MEMORY_POLL_SECONDS)
