"""The table index in memory, for tests and embedded use."""

from __future__ import annotations

import threading

from sleeper.core.exceptions import TableAlreadyExistsError, TableNotFoundError
from sleeper.core.table import TableStatus


class InMemoryTableIndex:
    """Tables by id and name, in memory. Implements ``sleeper.core.table.TableIndex``; thread-safe."""

    def __init__(self) -> None:
        self._by_id: dict[str, TableStatus] = {}
        self._lock = threading.Lock()

    def create(self, table: TableStatus) -> None:
        """Adds a table.

        Raises:
            TableAlreadyExistsError: If the name or id is taken.
        """
        with self._lock:
            if table.table_id in self._by_id:
                raise TableAlreadyExistsError(f"a table with id {table.table_id} already exists")
            if self._find_name(table.table_name) is not None:
                raise TableAlreadyExistsError(f"table {table.table_name} already exists")
            self._by_id[table.table_id] = table

    def get_by_name(self, name: str) -> TableStatus:
        """Finds a table by name.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        with self._lock:
            table = self._find_name(name)
        if table is None:
            raise TableNotFoundError.of(table_name=name)
        return table

    def get_by_id(self, table_id: str) -> TableStatus:
        """Finds a table by id.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        with self._lock:
            table = self._by_id.get(table_id)
        if table is None:
            raise TableNotFoundError.of(table_id=table_id)
        return table

    def list_tables(self) -> list[TableStatus]:
        """All tables, ordered by name."""
        with self._lock:
            return sorted(self._by_id.values(), key=lambda t: t.table_name)

    def list_online_tables(self) -> list[TableStatus]:
        """The online tables, ordered by name."""
        return [t for t in self.list_tables() if t.online]

    def rename(self, table_id: str, new_name: str) -> TableStatus:
        """Renames a table.

        Raises:
            TableNotFoundError: If there is no such table.
            TableAlreadyExistsError: If the new name is taken by another table.
        """
        with self._lock:
            current = self._require(table_id)
            if current.table_name == new_name:
                return current
            if self._find_name(new_name) is not None:
                raise TableAlreadyExistsError(f"cannot rename table {current.table_name}: {new_name} exists")
            renamed = current.renamed(new_name)
            self._by_id[table_id] = renamed
            return renamed

    def set_online(self, table_id: str, online: bool) -> TableStatus:
        """Puts a table online or takes it offline.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        with self._lock:
            updated = self._require(table_id).taken_online(online)
            self._by_id[table_id] = updated
            return updated

    def delete(self, table_id: str) -> None:
        """Removes a table from the index.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        with self._lock:
            self._require(table_id)
            del self._by_id[table_id]

    def _find_name(self, name: str) -> TableStatus | None:
        return next((t for t in self._by_id.values() if t.table_name == name), None)

    def _require(self, table_id: str) -> TableStatus:
        table = self._by_id.get(table_id)
        if table is None:
            raise TableNotFoundError.of(table_id=table_id)
        return table
