"""Ports of bulk import: the tables imported into and the instance the job runs in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from typing import Protocol

from sleeper.core.queue import Queue
from sleeper.core.trackers.ingest import IngestJobTracker
from sleeper.statestore.tables import SleeperTable, TableLookup

__all__ = ["BulkImportInstance", "BulkImportTable"]

BulkImportTable = SleeperTable
"""A table bulk imported into."""


class BulkImportInstance(TableLookup, Protocol):
    """The instance a bulk import job runs in: its tables, the ingest job tracker (which tracks bulk imports) and its
    queues (the state store committer's, for asynchronous commits)."""

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """Where job runs are recorded."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (for example ``StateStoreCommitterQ.fifo``)."""
        ...
