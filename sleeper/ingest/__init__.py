"""Standard ingest: sorting rows into data files per leaf partition, and running ingest jobs."""

from __future__ import annotations

from sleeper.ingest.exceptions import IngestConfigError, IngestError
from sleeper.ingest.inputs import as_batches, ingest_rows
from sleeper.ingest.job_runner import IngestJobOutcome, IngestJobRunner, QueueRunSummary, run_ingest_queue
from sleeper.ingest.standard import (
    ONE_FILE_PER_LEAF,
    ONE_REFERENCE_PER_LEAF,
    IngestLimits,
    IngestResult,
    ingest_batches,
)

__all__ = [
    "ONE_FILE_PER_LEAF",
    "ONE_REFERENCE_PER_LEAF",
    "IngestConfigError",
    "IngestError",
    "IngestJobOutcome",
    "IngestJobRunner",
    "IngestLimits",
    "IngestResult",
    "QueueRunSummary",
    "as_batches",
    "ingest_batches",
    "ingest_rows",
    "run_ingest_queue",
]
