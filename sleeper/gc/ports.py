"""The queues of garbage collection: the per-table FIFO queue that starts it (body: the table id) and the state store
committer's. What the collector needs of a table and an instance is the shared ports'
(:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from sleeper.core import GC_JOB_Q as GC_QUEUE
from sleeper.statestore import STATE_STORE_COMMITTER_QUEUE

__all__ = ["GC_QUEUE", "STATE_STORE_COMMITTER_QUEUE"]
