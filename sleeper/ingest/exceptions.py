"""Errors of standard ingest and ingest jobs."""

from __future__ import annotations

from sleeper.core import SleeperError


class IngestError(SleeperError):
    """Standard ingest could not write or commit its data."""


class UpsertRequiredError(IngestError):
    """An ingest path that commits with no upsert (an ingest job, the batcher) was given a table that keeps the last
    committed row of each row key (``sleeper.table.upsert`` with no sort key): ``Table.upsert`` writes to it."""


class IngestConfigError(IngestError):
    """A setting that ingest uses (such as the file writing strategy or the buffer size) is invalid."""
