"""Tables: their identity and the table index port."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol


def new_table_id() -> str:
    """A new table id: 4 random bytes as 8 lowercase hex digits, as Sleeper makes them."""
    return secrets.token_hex(4)


TableIdSupplier = Callable[[], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableStatus:
    """A table's id, name and whether it is online (offline tables get no scheduled work)."""

    table_id: str
    table_name: str
    online: bool = True

    def renamed(self, name: str) -> TableStatus:
        """The same table under a new name."""
        return replace(self, table_name=name)

    def taken_online(self, online: bool) -> TableStatus:
        """The same table put online or taken offline."""
        return replace(self, online=online)


class TableIndex(Protocol):
    """Finds tables by name or id. Adapters: SQLite (local instance) and DynamoDB (AWS)."""

    def create(self, table: TableStatus) -> None:
        """Adds a table.

        Raises:
            TableAlreadyExistsError: If the name (or id) is taken.
        """
        ...

    def get_by_name(self, name: str) -> TableStatus:
        """Finds a table by name.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        ...

    def get_by_id(self, table_id: str) -> TableStatus:
        """Finds a table by id.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        ...

    def list_tables(self) -> list[TableStatus]:
        """All tables, ordered by name."""
        ...

    def list_online_tables(self) -> list[TableStatus]:
        """The online tables, ordered by name."""
        ...

    def rename(self, table_id: str, new_name: str) -> TableStatus:
        """Renames a table.

        Raises:
            TableNotFoundError: If there is no such table.
            TableAlreadyExistsError: If the new name is taken.
        """
        ...

    def set_online(self, table_id: str, online: bool) -> TableStatus:
        """Puts a table online or takes it offline.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        ...

    def delete(self, table_id: str) -> None:
        """Removes a table from the index.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        ...


class PropertiesStore(Protocol):
    """Where instance and table properties are kept: files of a local instance, or the config bucket on AWS.

    Values are the raw strings of Java ``.properties`` files; typing and validation live in
    ``sleeper.core.properties``.
    """

    def load_instance(self) -> dict[str, str]:
        """The instance properties."""
        ...

    def save_instance(self, values: dict[str, str]) -> None:
        """Replaces the instance properties."""
        ...

    def load_table(self, table_id: str) -> dict[str, str]:
        """A table's properties.

        Raises:
            TableNotFoundError: If the table has no properties saved.
        """
        ...

    def save_table(self, table_id: str, values: dict[str, str]) -> None:
        """Replaces a table's properties."""
        ...

    def delete_table(self, table_id: str) -> None:
        """Removes a table's properties; a missing table is not an error."""
        ...
