"""The tables of an instance, kept the same way on both runtimes: a table index (SQLite locally, DynamoDB on AWS) and a
properties store (files locally, the config bucket on AWS), with each table's state store made by the runtime.

:class:`InstanceTables` is the base both composition roots (``LocalInstance``, ``AwsInstance``) share: listing,
finding, creating, renaming, taking online or offline, deleting, and editing a table's properties are written once
here; a runtime gives its table index, properties store and filesystem, and makes a :class:`~sleeper.api.table.Table`
from an index entry (:meth:`InstanceTables._table`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from sleeper.api import Table, check_table_name, create_table, edited_properties
from sleeper.core import KeyValue, PropertiesStore, Schema, TableAlreadyExistsError, TableIndex, TableStatus
from sleeper.io import delete_in_table, filesystem_path

if TYPE_CHECKING:
    from pyarrow import fs as pafs

    from sleeper.core.properties import InstanceProperties
    from sleeper.statestore import SleeperRuntime

__all__ = ["InstanceTables"]


class InstanceTables(ABC):
    """Table management shared by both runtimes' instances (see the module docstring)."""

    @property
    @abstractmethod
    def properties(self) -> InstanceProperties:
        """The instance properties."""

    @property
    @abstractmethod
    def filesystem(self) -> pafs.FileSystem:
        """The filesystem of the instance's data files."""

    @property
    @abstractmethod
    def table_index(self) -> TableIndex:
        """The index of the instance's tables, by name, id and online state."""

    @property
    @abstractmethod
    def properties_store(self) -> PropertiesStore:
        """Where the instance's and its tables' properties are kept."""

    @abstractmethod
    def _table(self, status: TableStatus) -> Table[Any]:
        """The table an index entry names, with its properties and state store."""

    def tables(self) -> list[TableStatus]:
        """Every table, by name."""
        return self.table_index.list_tables()

    def online_tables(self) -> list[TableStatus]:
        """The online tables, by name."""
        return self.table_index.list_online_tables()

    def table(self, name: str) -> Table[Any]:
        """A table by name.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        return self._table(self.table_index.get_by_name(name))

    def table_by_id(self, table_id: str) -> Table[Any]:
        """A table by id.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        return self._table(self.table_index.get_by_id(table_id))

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table[Any]:
        """Creates a table as Sleeper does: validates it, saves its properties, indexes it and initialises its
        partitions (one root partition, or those the split points give).

        Raises:
            TableAlreadyExistsError: If the name is taken.
            PropertyError: If a property is invalid.
            PartitionTreeError: If the split points are invalid.
        """
        return create_table(
            name=name,
            schema=schema,
            split_points=split_points,
            properties=properties,
            instance_properties=self.properties,
            table_index=self.table_index,
            properties_store=self.properties_store,
            make_table=self._table,
        )

    def rename_table(self, old_name: str, new_name: str) -> Table[Any]:
        """Renames a table in the index and its properties (the new name follows the one table name rule).

        Raises:
            TableAlreadyExistsError: If a table has the new name (the old one included).
        """
        check_table_name(new_name)
        table = self.table(old_name)
        if new_name == old_name:
            raise TableAlreadyExistsError(f"table {new_name!r} already exists")
        status = self.table_index.rename(table.table_id, new_name)
        self._save_table_values(table, {"sleeper.table.name": status.table_name})
        return self._table(status)

    def set_table_online(self, name: str, online: bool) -> Table[Any]:
        """Puts a table online or takes it offline, in the index and its properties."""
        table = self.table(name)
        status = self.table_index.set_online(table.table_id, online)
        self._save_table_values(table, {"sleeper.table.online": "true" if online else "false"})
        return self._table(status)

    def delete_table(self, name: str) -> None:
        """Deletes a table: its index entry, its logs (with a tombstone a racing append sees) and snapshots, its
        properties and every file under its data prefix."""
        table = self.table(name)
        self.table_index.delete(table.table_id)
        table.state_store.backend.delete_table(table.table_id)
        self.properties_store.delete_table(table.table_id)
        delete_in_table(self.filesystem, filesystem_path(table.data_prefix), table.data_prefix, whole_table=True)

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> Table[Any]:
        """Validates and saves new values of a table's properties (None unsets one); returns the table with them.

        An edit leaving the table with an iterator, aggregations or filters withdraws its Iceberg view before the
        properties are saved (:func:`sleeper.iceberg.withdrawal.save_table_properties`).

        Raises:
            PropertyError: If a value is invalid or a property may not change; nothing is saved.
            WithdrawalError: If the edit sets an iterator, aggregations or filters and the table's Iceberg view
                could not be withdrawn first; nothing is saved (:mod:`sleeper.iceberg.withdrawal`).
        """
        from sleeper.iceberg import save_table_properties

        table = self.table(name)
        updated = edited_properties(table.properties, values)
        save_table_properties(
            cast("SleeperRuntime", self),
            table,
            updated,
            lambda: self.properties_store.save_table(table.table_id, dict(updated.items())),
        )
        return self._table(table.status)

    def _save_table_values(self, table: Table[Any], values: Mapping[str, str]) -> None:
        saved = dict(table.properties.items())
        saved.update(values)
        self.properties_store.save_table(table.table_id, saved)
