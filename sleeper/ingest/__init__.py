"""Standard ingest: sorting rows into data files per leaf partition, and running ingest jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face
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

if TYPE_CHECKING:
    from sleeper.ingest.exceptions import UpsertRequiredError as UpsertRequiredError
    from sleeper.ingest.inputs import IngestInput as IngestInput
    from sleeper.ingest.inputs import parquet_batches as parquet_batches
    from sleeper.ingest.job_runner import INGEST_JOB_QUEUE as INGEST_JOB_QUEUE
    from sleeper.ingest.ports import IngestRuntime as IngestRuntime
    from sleeper.ingest.sources import IngestSourceNotAllowedError as IngestSourceNotAllowedError
    from sleeper.ingest.sources import IngestSources as IngestSources
    from sleeper.ingest.task import WAIT_SECONDS as WAIT_SECONDS
    from sleeper.ingest.task import ingest_task_settings as ingest_task_settings
    from sleeper.ingest.task import run_ingest_task as run_ingest_task
    from sleeper.ingest.task_creation import create_ingest_tasks as create_ingest_tasks

__getattr__, __dir__ = lazy_face(__name__, __file__)
