"""Ports of partition splitting: the tables split and the instance the finder and splitter run in.

The local runtime's ``LocalInstance`` and ``LocalTable`` implement them structurally; so will the AWS runtime.
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.statestore.store import StateStore

__all__ = [
    "FIND_PARTITIONS_TO_SPLIT_QUEUE",
    "PARTITION_SPLITTING_JOB_QUEUE",
    "STATE_STORE_COMMITTER_QUEUE",
    "SplittingInstance",
    "SplittingTable",
]

FIND_PARTITIONS_TO_SPLIT_QUEUE = "FindPartitionsToSplitQ.fifo"
"""The logical name of the per-table FIFO queue that starts the split finder (body: the table id)."""

PARTITION_SPLITTING_JOB_QUEUE = "PartitionSplittingJobQueue"
"""The logical name of the queue of split jobs (``sleeper-<id>-PartitionSplittingJobQueue``)."""

STATE_STORE_COMMITTER_QUEUE = "StateStoreCommitterQ.fifo"
"""The logical name of the state store committer's FIFO queue, for asynchronous split commits."""


class SplittingTable(Protocol):
    """A table whose partitions are split."""

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
        """The table properties (split threshold, commit mode; the instance properties they fall back to)."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's data files live."""
        ...


class SplittingInstance(Protocol):
    """The instance the split finder and splitter run in: its tables and queues."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def table_by_id(self, table_id: str) -> SplittingTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (``PartitionSplittingJobQueue``, ``StateStoreCommitterQ.fifo``)."""
        ...
