"""Ingest batcher job creation: on ``<id>-IngestBatcherJobCreationRule``, groups the pending files of
each table into jobs on the ingest or bulk import queue its ``sleeper.table.ingest.batcher.ingest.queue`` names.

It runs the function the registry's entry (:func:`sleeper.ingest.batcher.entry.handle_batcher_job_creation`, which a
local instance's runner routes its scheduler's messages to) wraps, :func:`~sleeper.ingest.batcher.entry.
create_batcher_jobs`: a scheduled invocation has no message to deliver again, so jobs that could not be sent are
logged and counted in the response instead of failing it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.ingest.batcher import create_batcher_jobs
from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Lambda handler for the scheduled event."""
    created = create_batcher_jobs(aws_instance())
    unsent = [c for c in created if not c.sent]
    for job in unsent:
        LOGGER.error("Ingest batcher job %s was not sent to %s: %s", job.job.id, job.queue, job.error)
    LOGGER.info("Ingest batcher: %d jobs created, %d not sent", len(created), len(unsent))
    return {"jobsCreated": len(created), "jobsNotSent": len(unsent)}
