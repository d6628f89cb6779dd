"""Ports of compaction execution, commits and tasks: the tables compacted and the instance the tasks run in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from typing import Protocol

# The queue of compaction jobs that tasks take, and of finished jobs awaiting a batched commit
from sleeper.core.operations import COMPACTION_COMMIT_Q as COMPACTION_COMMIT_QUEUE
from sleeper.core.operations import COMPACTION_JOB_Q as COMPACTION_JOB_QUEUE
from sleeper.core.trackers.compaction import CompactionJobTracker
from sleeper.core.trackers.task import TaskTracker
from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = [
    "COMPACTION_COMMIT_QUEUE",
    "COMPACTION_JOB_QUEUE",
    "STATE_STORE_COMMITTER_QUEUE",
    "CompactionInstance",
    "CompactionTable",
]


CompactionTable = SleeperTable
"""A table whose files are compacted."""


class CompactionInstance(SleeperInstance, Protocol):
    """The instance compaction tasks run in: tables, queues and the compaction trackers."""

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """Where compaction job runs are recorded."""
        ...

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """Where compaction tasks are recorded."""
        ...
