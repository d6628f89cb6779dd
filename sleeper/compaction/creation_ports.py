"""Ports of compaction job creation: the table whose jobs are created.

The queue the jobs go to is a ``sleeper.core.queue.Queue`` (the instance's ``CompactionJobQ``) and the tracker a
``sleeper.core.trackers.CompactionJobTracker``. The local runtime's ``LocalTable`` implements ``JobCreationTable``
structurally; so will the AWS runtime.
"""

from __future__ import annotations

from typing import Protocol

from sleeper.core.properties import TableProperties
from sleeper.core.schema import Schema
from sleeper.statestore.store import StateStore

__all__ = ["JobCreationTable"]


class JobCreationTable(Protocol):
    """A table to create compaction jobs for."""

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
        """The table properties (strategy, batch size, job creation limit, filters and aggregations)."""
        ...

    @property
    def state_store(self) -> StateStore:
        """The table's state store."""
        ...

    @property
    def data_prefix(self) -> str:
        """The URI under which the table's data files live; outputs go to
        ``<data_prefix>/data/partition_<id>/<job id>.parquet``."""
        ...
