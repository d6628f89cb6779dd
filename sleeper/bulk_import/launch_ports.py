"""Ports of the bulk import starter: where a validated job's file is written, the platform that runs it,
and the queue a job goes back to when the platform is full.

The AWS implementations are in :mod:`sleeper.adapters.aws.launchers`: the job file in the bulk import bucket, EMR
Serverless ``StartJobRun``, an EMR cluster per job (``RunJobFlow``), or a step on the persistent EMR cluster
(``AddJobFlowSteps``), which may be full.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from sleeper.core import join_under
from sleeper.core.jobs import BulkImportJob
from sleeper.core.properties import TableProperties

__all__ = [
    "BulkImportJobStore",
    "BulkImportPlatform",
    "BulkImportRequeue",
    "BulkImportRun",
    "PlatformStart",
    "bulk_import_job_key",
]


def bulk_import_job_key(job_id: str, job_run_id: str) -> str:
    """The key of a job's file in the bulk import bucket: ``bulk_import/<jobId>-<jobRunId>.json``.

    Raises:
        UnsafePathError: If the ids could make the key leave ``bulk_import/``.
    """
    return join_under("bulk_import", f"{job_id}-{job_run_id}.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportRun:
    """A validated bulk import job, ready to start on a platform.

    Attributes:
        job: The job with its table id and name both set and its paths expanded to the Parquet files to import.
        job_run_id: The run of the job this start begins (the Spark driver records its updates under it).
        table_properties: The properties of the job's table (EMR instance types and capacities, unless the job's
            ``platformSpec`` overrides them).
        job_file_key: Where the job was written in the bulk import bucket (``bulk_import/<jobId>-<jobRunId>.json``).
    """

    job: BulkImportJob
    job_run_id: str
    table_properties: TableProperties
    job_file_key: str


class PlatformStart(Enum):
    """What a platform did with a job."""

    STARTED = "STARTED"
    """The job was submitted (a job run, a cluster or a step was created)."""
    PLATFORM_FULL = "PLATFORM_FULL"
    """The platform has no room for the job now (the persistent EMR cluster's active steps are at their limit)."""


class BulkImportJobStore(Protocol):
    """Where the starter leaves a job for the Spark driver to read (the bulk import bucket)."""

    def write_job(self, key: str, job_json: str) -> None:
        """Writes a job's JSON under a key."""
        ...


class BulkImportPlatform(Protocol):
    """Runs bulk import Spark jobs: EMR Serverless, an EMR cluster per job, or a persistent EMR cluster."""

    def start(self, run: BulkImportRun) -> PlatformStart:
        """Submits a job to the platform.

        Raises:
            Exception: Whatever the platform's client raises when the job cannot be submitted; the starter records
                the run as failed and lets the error through so the message is delivered again.
        """
        ...


class BulkImportRequeue(Protocol):
    """Puts a job back on its queue, delayed, when the platform is full."""

    def requeue(self, job: BulkImportJob) -> None:
        """Sends the job to its queue again (the implementation decides the delay)."""
        ...
