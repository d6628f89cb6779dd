"""The queues of compaction: the compaction jobs tasks take, the finished jobs awaiting a batched commit, and the
state store committer's. What compaction needs of a table and an instance is the shared ports'
(:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from sleeper.core import COMPACTION_COMMIT_Q as COMPACTION_COMMIT_QUEUE
from sleeper.core import COMPACTION_JOB_Q as COMPACTION_JOB_QUEUE
from sleeper.statestore import STATE_STORE_COMMITTER_QUEUE

__all__ = ["COMPACTION_COMMIT_QUEUE", "COMPACTION_JOB_QUEUE", "STATE_STORE_COMMITTER_QUEUE"]
