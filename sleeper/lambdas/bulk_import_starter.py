"""Bulk import starter: validates each job from a bulk import queue and starts it on that queue's
platform (``BulkImportEMRServerlessQ``: EMR Serverless, ``BulkImportNonPersistentEMRQ``: an EMR cluster per job,
``BulkImportPersistentEMRQ``: the persistent cluster, ``BulkImportEKSQ``: a Step Functions execution on the EKS
cluster), the queue told by each record's ``eventSourceARN``, through the
entry each queue names in the registry (:mod:`sleeper.bulk_import.entry`). A rejected job is recorded in the ingest
job tracker and deleted; a job the platform refused returns to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.core import operations
from sleeper.lambdas._common import LOGGER, SqsRecord, aws_instance, lambda_handler, route_records
from sleeper.runtime import handler_entry

_QUEUES = (
    operations.BULK_IMPORT_EMR_SERVERLESS_Q,
    operations.BULK_IMPORT_EMR_Q,
    operations.BULK_IMPORT_PERSISTENT_EMR_Q,
    operations.BULK_IMPORT_EKS_Q,
)


def source_queue(record: SqsRecord) -> str:
    """The logical name of the queue a record came from (EMR Serverless when the record does not say).

    Raises:
        ValueError: If the record came from a queue that is not a bulk import queue.
    """
    arn = record.source_arn or ""
    if not arn:
        return operations.BULK_IMPORT_EMR_SERVERLESS_Q
    name = arn.rsplit(":", 1)[-1]
    for logical in _QUEUES:
        if name.endswith(f"-{logical}"):
            return logical
    raise ValueError(f"{arn} is not a bulk import queue")


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of bulk import jobs: each through the entry its queue names."""
    return route_records(event, source_queue)


@lambda_handler
def platform_failure(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Lambda handler the EKS state machine invokes when a job's Kubernetes job did not succeed: records the run
    failed unless its driver already recorded its end (:func:`sleeper.bulk_import.outcome.record_platform_failure`)."""
    result: dict[str, Any] = handler_entry(operations.BULK_IMPORT_EKS_FAILURE)(aws_instance(), event)
    LOGGER.info("bulk import job %s run %s on EKS did not succeed; failure recorded: %s", result["jobId"],
                result["jobRunId"], result["recorded"])  # fmt: skip
    return result
