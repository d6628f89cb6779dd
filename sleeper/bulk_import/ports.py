"""Ports of bulk import: the tables it writes to and the instance it runs in.

The local runtime's ``LocalInstance`` and ``LocalTable`` implement them; so will the AWS runtime.
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.properties import TableProperties
from sleeper.core.schema import Schema
from sleeper.core.trackers import IngestJobTracker
from sleeper.statestore.store import StateStore

__all__ = ["BulkImportInstance", "BulkImportTable"]


class BulkImportTable(Protocol):
    """A table that bulk import writes to."""

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
        """The URI under which the table's data files are written."""
        ...


class BulkImportInstance(Protocol):
    """The instance a bulk import job runs in: its tables and the ingest job tracker (which tracks bulk imports)."""

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """Where job runs are recorded."""
        ...

    def table(self, name: str) -> BulkImportTable:
        """The table with this name.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...

    def table_by_id(self, table_id: str) -> BulkImportTable:
        """The table with this id.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...
