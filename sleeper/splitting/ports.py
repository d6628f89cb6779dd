"""The queues of partition splitting: the per-table FIFO queue that starts the finder (body: the table id), the queue
of split jobs, and the state store committer's. What splitting needs of a table and an instance is the shared ports'
(:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from sleeper.core import FIND_PARTITIONS_TO_SPLIT_Q as FIND_PARTITIONS_TO_SPLIT_QUEUE
from sleeper.core import PARTITION_SPLITTING_JOB_Q as PARTITION_SPLITTING_JOB_QUEUE
from sleeper.statestore import STATE_STORE_COMMITTER_QUEUE

__all__ = ["FIND_PARTITIONS_TO_SPLIT_QUEUE", "PARTITION_SPLITTING_JOB_QUEUE", "STATE_STORE_COMMITTER_QUEUE"]
