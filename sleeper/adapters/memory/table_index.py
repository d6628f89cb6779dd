"""The table index in memory, for tests and embedded use: the SQLite index (``sleeper.adapters.local.table_index``)
on a private in-memory database, so both share one implementation."""

from __future__ import annotations

from sleeper.adapters.local.sqlite import MEMORY, SqliteDatabase
from sleeper.adapters.local.table_index import SCHEMA, SqliteTableIndex


class InMemoryTableIndex(SqliteTableIndex):
    """Tables by id and name, in memory. Implements ``sleeper.core.table.TableIndex``; thread-safe."""

    def __init__(self) -> None:
        super().__init__(SqliteDatabase(MEMORY, schema=SCHEMA))
