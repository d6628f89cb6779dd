"""Ports of garbage collection: the tables collected and the instance the collector runs in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# The per-table FIFO queue that starts garbage collection (body: the table id)
from sleeper.core.operations import GC_JOB_Q as GC_QUEUE
from sleeper.core.table import TableStatus
from sleeper.io.filesystem import FileSystemOptions
from sleeper.statestore.tables import STATE_STORE_COMMITTER_QUEUE, SleeperInstance, SleeperTable

__all__ = ["GC_QUEUE", "STATE_STORE_COMMITTER_QUEUE", "DeletedTables", "GcInstance", "GcRuntime", "GcTable"]


GcTable = SleeperTable
"""A table whose unreferenced files are collected."""

GcInstance = SleeperInstance
"""The instance the collector runs in: tables by id, the committer queue."""


class DeletedTables(Protocol):
    """Whether the state store marks a table id deleted."""

    def is_deleted(self, table_id: str) -> bool:
        """Whether the table with this id was deleted."""
        ...


class GcRuntime(GcInstance, Protocol):
    """What the garbage collection entry needs of an instance beyond :class:`GcInstance`: how to reach its files,
    where every table's prefix is, and which tables exist or were deleted (for the deleted tables' sweep)."""

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How to reach the data files (None for the defaults: a local instance)."""
        ...

    @property
    def data_root(self) -> str:
        """The URI every table's data prefix is under."""
        ...

    def is_table_deleted(self, table_id: str) -> bool:
        """Whether a state store of the instance marks this table id deleted (any of its kinds of store)."""
        ...

    def tables(self) -> Sequence[TableStatus]:
        """Every table."""
        ...
