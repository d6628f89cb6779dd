"""In-memory job, task and query trackers, for tests and single-process embedded use: the SQLite trackers
(``sleeper.adapters.local.trackers``) each on a private in-memory database, so both share one implementation."""

from __future__ import annotations

from datetime import timedelta

from sleeper.adapters.local.sqlite import MEMORY
from sleeper.adapters.local.trackers import (
    SqliteCompactionJobTracker,
    SqliteIngestJobTracker,
    SqliteQueryTracker,
    SqliteTaskTracker,
)
from sleeper.core.trackers import JOB_UPDATE_TTL, QUERY_TTL


class InMemoryIngestJobTracker(SqliteIngestJobTracker):
    """Implements ``sleeper.core.trackers.ingest.IngestJobTracker`` in memory.

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        super().__init__(MEMORY, ttl=ttl)


class InMemoryCompactionJobTracker(SqliteCompactionJobTracker):
    """Implements ``sleeper.core.trackers.compaction.CompactionJobTracker`` in memory.

    Args:
        ttl: How long an update is kept (see ``delete_expired``).
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        super().__init__(MEMORY, ttl=ttl)


class InMemoryTaskTracker(SqliteTaskTracker):
    """Implements ``sleeper.core.trackers.task.TaskTracker`` in memory.

    Args:
        ttl: How long a task is kept.
    """

    def __init__(self, *, ttl: timedelta = JOB_UPDATE_TTL) -> None:
        super().__init__(MEMORY, kind="tasks", ttl=ttl)


class InMemoryQueryTracker(SqliteQueryTracker):
    """Implements ``sleeper.core.trackers.query.QueryTracker`` in memory.

    Args:
        ttl: Time to live of a row after its last update.
    """

    def __init__(self, *, ttl: timedelta = QUERY_TTL) -> None:
        super().__init__(MEMORY, ttl=ttl)
