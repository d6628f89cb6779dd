"""What every feature sees of a table and of the instance it runs in: the ports shared by ingest, bulk import,
compaction, splitting and garbage collection.

The instances of both runtimes and their tables (one facade, ``sleeper.api.table.Table``) implement them
structurally. Each feature's own ``ports.py`` adds only what that feature needs beyond these (trackers, queue names).
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.operations import STATE_STORE_COMMITTER_Q as STATE_STORE_COMMITTER_QUEUE
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue
from sleeper.core.schema import Schema
from sleeper.statestore.store import StateStore

__all__ = ["STATE_STORE_COMMITTER_QUEUE", "SleeperInstance", "SleeperTable", "TableLookup"]


class SleeperTable(Protocol):
    """A table: its identity, schema, properties, state store and where its data files live."""

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
        """The table properties."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's data files are written (``<data bucket>/<table id>``)."""
        ...


class TableLookup(Protocol):
    """Finds tables by name or id."""

    def table(self, name: str) -> SleeperTable:
        """The table with this name.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def table_by_id(self, table_id: str) -> SleeperTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...


class SleeperInstance(TableLookup, Protocol):
    """An instance: its properties, tables and queues by Sleeper's logical names."""

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (for example ``IngestJobQ``)."""
        ...
