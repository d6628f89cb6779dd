"""Ports of garbage collection: the tables collected and the instance the collector runs in.

The local runtime's ``LocalInstance`` and ``LocalTable`` implement them structurally; so will the AWS runtime.
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.statestore.store import StateStore

__all__ = ["GC_QUEUE", "STATE_STORE_COMMITTER_QUEUE", "GcInstance", "GcTable"]

GC_QUEUE = "GCJobQ.fifo"
"""The logical name of the per-table FIFO queue that starts garbage collection (body: the table id)."""

STATE_STORE_COMMITTER_QUEUE = "StateStoreCommitterQ.fifo"
"""The logical name of the state store committer's FIFO queue, for asynchronous DELETE_FILES commits."""


class GcTable(Protocol):
    """A table whose unreferenced files are garbage collected."""

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
        """The table properties (GC delay, commit mode; the instance properties they fall back to)."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's files live; nothing outside it is ever deleted."""
        ...


class GcInstance(Protocol):
    """The instance the garbage collector runs in: its tables and queues."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def table_by_id(self, table_id: str) -> GcTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (``StateStoreCommitterQ.fifo``)."""
        ...
