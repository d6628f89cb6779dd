"""The port of bulk import: what starting a job needs of an instance on AWS beyond the shared runtime port
(:mod:`sleeper.statestore.tables`), where each bulk import queue's jobs are started. A job run at once (a local
instance's ``BulkImportJobQ``) needs only the shared port."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sleeper.bulk_import.launch_ports import BulkImportJobStore, BulkImportPlatform, BulkImportRequeue
from sleeper.statestore import SleeperRuntime

__all__ = ["BulkImportLaunch", "BulkImportStartRuntime"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportLaunch:
    """Where the jobs of one bulk import queue are started.

    Attributes:
        platform: Starts a job (EMR Serverless, an EMR cluster per job, the persistent EMR cluster).
        job_store: Where the job file is written for the Spark driver.
        requeue: Puts a job back on its queue when the platform is full (None: the platform is never full).
    """

    platform: BulkImportPlatform
    job_store: BulkImportJobStore
    requeue: BulkImportRequeue | None = None


class BulkImportStartRuntime(SleeperRuntime, Protocol):
    """The instance the starter runs in: the shared runtime port, and where each bulk import queue's jobs are
    started."""

    def bulk_import_launch(self, queue_name: str) -> BulkImportLaunch:
        """Where the jobs of a bulk import queue are started.

        Raises:
            ValueError: If the queue is not a bulk import queue of the instance.
            PropertyError: If the platform's resources are not set (its stack is not deployed).
        """
        ...
