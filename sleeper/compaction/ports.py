"""Ports of compaction execution, commits and tasks: the tables compacted and the instance the tasks run in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from typing import Protocol

from sleeper.core.trackers import CompactionJobTracker, TaskTracker
from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = [
    "COMPACTION_COMMIT_QUEUE",
    "COMPACTION_JOB_QUEUE",
    "STATE_STORE_COMMITTER_QUEUE",
    "CompactionInstance",
    "CompactionTable",
]

COMPACTION_JOB_QUEUE = "CompactionJobQ"
"""The logical name of the queue of compaction jobs that tasks take (``sleeper-<id>-CompactionJobQ``)."""

COMPACTION_COMMIT_QUEUE = "CompactionCommitQ"
"""The logical name of the queue of finished jobs awaiting a batched commit (``sleeper-<id>-CompactionCommitQ``)."""

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
