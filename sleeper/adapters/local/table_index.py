"""The table index of a local instance, in its SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sleeper.adapters.local.sqlite import SqliteDatabase
from sleeper.core import TableAlreadyExistsError, TableNotFoundError, TableStatus
from sleeper.statestore import StateStoreStorageError

SCHEMA = """
CREATE TABLE IF NOT EXISTS table_index (
    table_id TEXT NOT NULL PRIMARY KEY,
    table_name TEXT NOT NULL UNIQUE,
    online INTEGER NOT NULL
)
"""


def _status(row: tuple[str, str, int]) -> TableStatus:
    return TableStatus(table_id=row[0], table_name=row[1], online=bool(row[2]))


class SqliteTableIndex:
    """Tables by id and by (unique) name. Implements ``sleeper.core.table.TableIndex``.

    Names are ordered by their UTF-8 bytes (SQLite's binary collation), which is code point order.

    Args:
        database: The instance's SQLite database file, or an open ``SqliteDatabase`` with this module's schema.
    """

    def __init__(self, database: str | Path | SqliteDatabase) -> None:
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database, schema=SCHEMA)

    def create(self, table: TableStatus) -> None:
        """Adds a table.

        Raises:
            TableAlreadyExistsError: If the name or id is taken.
        """
        try:
            with self._db.write() as connection:
                if connection.execute("SELECT 1 FROM table_index WHERE table_id = ?", (table.table_id,)).fetchone():
                    raise TableAlreadyExistsError(f"a table with id {table.table_id} already exists")
                connection.execute(
                    "INSERT INTO table_index (table_id, table_name, online) VALUES (?, ?, ?)",
                    (table.table_id, table.table_name, int(table.online)),
                )
        except sqlite3.IntegrityError as e:
            raise TableAlreadyExistsError(f"table {table.table_name} already exists") from e
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"creating table {table.table_name} in the index: {e}") from e

    def get_by_name(self, name: str) -> TableStatus:
        """Finds a table by name.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        return self._select_one("WHERE table_name = ?", (name,), TableNotFoundError.of(table_name=name))

    def get_by_id(self, table_id: str) -> TableStatus:
        """Finds a table by id.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        return self._select_one("WHERE table_id = ?", (table_id,), TableNotFoundError.of(table_id=table_id))

    def list_tables(self) -> list[TableStatus]:
        """All tables, ordered by name."""
        return self._select("ORDER BY table_name", ())

    def list_online_tables(self) -> list[TableStatus]:
        """The online tables, ordered by name."""
        return self._select("WHERE online = 1 ORDER BY table_name", ())

    def rename(self, table_id: str, new_name: str) -> TableStatus:
        """Renames a table.

        Raises:
            TableNotFoundError: If there is no such table.
            TableAlreadyExistsError: If the new name is taken by another table.
        """
        try:
            with self._db.write() as connection:
                current = self._require(connection, table_id)
                if current.table_name == new_name:
                    return current
                connection.execute("UPDATE table_index SET table_name = ? WHERE table_id = ?", (new_name, table_id))
                return current.renamed(new_name)
        except sqlite3.IntegrityError as e:
            raise TableAlreadyExistsError(f"cannot rename table {table_id}: {new_name} exists") from e
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"renaming table {table_id}: {e}") from e

    def set_online(self, table_id: str, online: bool) -> TableStatus:
        """Puts a table online or takes it offline.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        try:
            with self._db.write() as connection:
                current = self._require(connection, table_id)
                connection.execute("UPDATE table_index SET online = ? WHERE table_id = ?", (int(online), table_id))
                return current.taken_online(online)
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"setting table {table_id} online: {e}") from e

    def delete(self, table_id: str) -> None:
        """Removes a table from the index.

        Raises:
            TableNotFoundError: If there is no such table.
        """
        try:
            with self._db.write() as connection:
                self._require(connection, table_id)
                connection.execute("DELETE FROM table_index WHERE table_id = ?", (table_id,))
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"deleting table {table_id} from the index: {e}") from e

    def _require(self, connection: sqlite3.Connection, table_id: str) -> TableStatus:
        row = connection.execute(
            "SELECT table_id, table_name, online FROM table_index WHERE table_id = ?", (table_id,)
        ).fetchone()
        if row is None:
            raise TableNotFoundError.of(table_id=table_id)
        return _status(row)

    def _select_one(self, where: str, params: tuple[object, ...], missing: TableNotFoundError) -> TableStatus:
        """The one table selected, or raises ``missing`` if there is none."""
        rows = self._select(where, params)
        if not rows:
            raise missing
        return rows[0]

    def _select(self, where: str, params: tuple[object, ...]) -> list[TableStatus]:
        try:
            with self._db.read() as connection:
                rows = connection.execute(f"SELECT table_id, table_name, online FROM table_index {where}", params)
                return [_status(row) for row in rows.fetchall()]
        except sqlite3.Error as e:
            raise StateStoreStorageError(f"reading the table index: {e}") from e
