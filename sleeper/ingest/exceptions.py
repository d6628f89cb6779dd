"""Errors of standard ingest and ingest jobs."""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError


class IngestError(SleeperError):
    """Standard ingest could not write or commit its data."""


class IngestConfigError(IngestError):
    """A setting that ingest uses (such as the file writing strategy or the buffer size) is invalid."""
