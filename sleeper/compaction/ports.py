"""Ports of compaction execution, commits and tasks: the tables compacted and the instance the tasks run in.

The local runtime's ``LocalInstance`` and ``LocalTable`` implement them structurally; so will the AWS runtime.
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.core.trackers import CompactionJobTracker, TaskTracker
from sleeper.statestore.store import StateStore

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

STATE_STORE_COMMITTER_QUEUE = "StateStoreCommitterQ.fifo"
"""The logical name of the state store committer's FIFO queue (``sleeper-<id>-StateStoreCommitterQ.fifo``)."""


class CompactionTable(Protocol):
    """A table whose files are compacted."""

    @property
    def table_id(self) -> str:
        """The table id."""
        ...

    @property
    def schema(self) -> Schema:
        """The table schema."""
        ...

    @property
    def properties(self) -> TableProperties:
        """The table properties (Parquet settings, filters, aggregations, data engine, commit settings)."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...


class CompactionInstance(Protocol):
    """The instance compaction tasks run in: its properties, tables, trackers and queues."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties (task settings)."""
        ...

    @property
    def compaction_job_tracker(self) -> CompactionJobTracker:
        """Where job runs are recorded."""
        ...

    @property
    def compaction_task_tracker(self) -> TaskTracker:
        """Where compaction task starts and finishes are recorded."""
        ...

    def table_by_id(self, table_id: str) -> CompactionTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (``CompactionJobQ``, ``CompactionCommitQ``, ...)."""
        ...
