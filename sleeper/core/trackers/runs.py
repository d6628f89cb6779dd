"""How one run of a job ended, shared by every job runner (ingest, bulk import, compaction)."""

from __future__ import annotations

from enum import Enum


class JobOutcome(Enum):
    """How one run (one delivery) of a job ended."""

    FINISHED = "FINISHED"
    """Run and committed (or its commit request sent); the message is deleted."""

    ALREADY_COMMITTED = "ALREADY_COMMITTED"
    """The job was committed by an earlier run: nothing was written and the message is deleted (compaction)."""

    REJECTED = "REJECTED"
    """The job can never succeed (invalid, table gone, inputs gone or assigned elsewhere): nothing was written and
    the message is deleted."""

    FAILED = "FAILED"
    """An error; the message is returned to the queue to be tried again (or dead-lettered)."""
