"""The ingest batcher store in memory, for tests and embedded use: the SQLite store
(``sleeper.adapters.local.batcher_store``) on a private in-memory database, so both share one implementation."""

from __future__ import annotations

from sleeper.adapters.local.batcher_store import SCHEMA, SqliteIngestBatcherStore
from sleeper.adapters.local.sqlite import MEMORY, SqliteDatabase
from sleeper.ingest.batcher import ASSIGN_JOB_BATCH_SIZE

__all__ = ["InMemoryIngestBatcherStore"]


class InMemoryIngestBatcherStore(SqliteIngestBatcherStore):
    """Implements ``sleeper.ingest.batcher.ports.IngestBatcherStore`` in memory; thread-safe.

    Args:
        assign_batch_size: Files assigned atomically together (Sleeper's 50 by default).
    """

    def __init__(self, *, assign_batch_size: int = ASSIGN_JOB_BATCH_SIZE) -> None:
        super().__init__(SqliteDatabase(MEMORY, schema=SCHEMA), assign_batch_size=assign_batch_size)
