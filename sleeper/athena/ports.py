"""Ports of the Athena connector: the instance's tables, each with its schema, properties and state store.

``sleeper.runtime.local.instance.LocalInstance`` and its tables (``sleeper.api.table.Table``) fit these Protocols
as they are; the AWS runtime's instance must offer the same two methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sleeper.core.partition import PartitionTree
from sleeper.core.properties import TableProperties
from sleeper.core.schema import Schema
from sleeper.core.statestore.references import FileReference

__all__ = ["AthenaInstance", "AthenaStateStore", "AthenaTable", "TableListing"]


class AthenaStateStore(Protocol):
    """What the connector reads from a table's state store."""

    def partition_tree(self) -> PartitionTree:
        """The table's partitions."""
        ...

    def file_references(self) -> list[FileReference]:
        """Every file reference of the table."""
        ...


class AthenaTable(Protocol):
    """A Sleeper table as the connector sees it."""

    @property
    def name(self) -> str:
        """The table name."""
        ...

    @property
    def table_id(self) -> str:
        """The table id: its data files are under ``<data bucket>/<table id>/data/``."""
        ...

    @property
    def schema(self) -> Schema:
        """The table schema."""
        ...

    @property
    def properties(self) -> TableProperties:
        """The table properties (filters and aggregations are read from them)."""
        ...

    @property
    def state_store(self) -> AthenaStateStore:
        """The table's state store."""
        ...


class TableListing(Protocol):
    """An entry of the table index."""

    @property
    def table_name(self) -> str:
        """The table name."""
        ...


class AthenaInstance(Protocol):
    """The Sleeper instance the connector serves: its tables by name."""

    def tables(self) -> Sequence[TableListing]:
        """Every table of the instance."""
        ...

    def table(self, name: str) -> AthenaTable:
        """The table with this name.

        Raises:
            TableNotFoundError: If there is none.
        """
        ...
