"""The port of ingest and its batcher: what they need of an instance beyond the shared ports
(:mod:`sleeper.statestore.tables`), where its ingest jobs may read and where the batcher keeps the files submitted
to it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from sleeper.ingest.batcher.ports import IngestBatcherStore
from sleeper.ingest.sources import IngestSources
from sleeper.statestore import SleeperRuntime

__all__ = ["IngestRuntime"]


class IngestRuntime(SleeperRuntime, Protocol):
    """The instance ingest jobs, ingest tasks and the batcher run in: the shared runtime port, and what differs
    between the runtimes for ingest (a local instance reads any file and keeps the batcher's files in SQLite; an
    instance on AWS reads only its allowed buckets and keeps them in DynamoDB)."""

    @property
    def ingest_sources(self) -> IngestSources:
        """Where the instance's ingest jobs may read input files from (:mod:`sleeper.ingest.sources`)."""
        ...

    @property
    def batcher_store(self) -> IngestBatcherStore:
        """The batcher's store of tracked files."""
        ...

    @property
    def accepts_local_files(self) -> bool:
        """Whether requests and jobs may name local files (only a local instance can read them)."""
        ...

    @property
    def batcher_queue_names(self) -> Mapping[str, str]:
        """The logical queue each ``sleeper.table.ingest.batcher.ingest.queue`` value sends jobs to."""
        ...

    def delete_expired_batcher_records(self, now: datetime) -> None:
        """Removes the batcher store's records past their time to live (nothing where the store expires them
        itself)."""
        ...
