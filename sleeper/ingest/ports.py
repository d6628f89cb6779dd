"""Ports of ingest: the tables written to and the instance an ingest job runs in (see
:mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from typing import Protocol

from sleeper.core.queue import Queue
from sleeper.core.trackers.ingest import IngestJobTracker
from sleeper.ingest.sources import IngestSources
from sleeper.statestore.tables import SleeperTable, TableLookup

__all__ = ["IngestInstance", "IngestTable"]

IngestTable = SleeperTable
"""A table that ingest writes to."""


class IngestInstance(TableLookup, Protocol):
    """The instance an ingest job runs in: its tables, ingest job tracker and queues, and where its jobs may read."""

    @property
    def ingest_sources(self) -> IngestSources:
        """Where the instance's ingest jobs may read input files from (:mod:`sleeper.ingest.sources`)."""
        ...

    @property
    def ingest_job_tracker(self) -> IngestJobTracker:
        """Where job runs are recorded."""
        ...

    def queue(self, logical_name: str) -> Queue:
        """The queue with this logical name (for example ``IngestJobQ``)."""
        ...
