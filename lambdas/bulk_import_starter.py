"""Bulk import starter (spec 3.5): validates each job from a bulk import queue and starts it on that queue's
platform (``BulkImportEMRServerlessQ``: EMR Serverless, ``BulkImportNonPersistentEMRQ``: an EMR cluster per job,
``BulkImportPersistentEMRQ``: the persistent cluster), the queue told by each record's ``eventSourceARN``. A rejected
job is recorded in the ingest job tracker and deleted; a job the platform refused returns to the queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, batch_response
from sleeper.core import operations
from sleeper.core.exceptions import TableNotFoundError
from sleeper.runtime.aws.operations import start_bulk_import

_QUEUES = (
    operations.BULK_IMPORT_EMR_SERVERLESS_Q,
    operations.BULK_IMPORT_EMR_Q,
    operations.BULK_IMPORT_PERSISTENT_EMR_Q,
)


def source_queue(record: Mapping[str, Any]) -> str:
    """The logical name of the queue a record came from (EMR Serverless when the record does not say).

    Raises:
        ValueError: If the record came from a queue that is not a bulk import queue.
    """
    arn = str(record.get("eventSourceARN") or "")
    if not arn:
        return operations.BULK_IMPORT_EMR_SERVERLESS_Q
    name = arn.rsplit(":", 1)[-1]
    for logical in _QUEUES:
        if name.endswith(f"-{logical}"):
            return logical
    raise ValueError(f"{arn} is not a bulk import queue")


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of bulk import jobs."""
    failed: list[str] = []
    for record in event.get("Records", []):
        try:
            started = start_bulk_import(aws_instance(), record["body"], source_queue(record))
            LOGGER.info("Bulk import job %s: %s %s", started.job_id, started.outcome.value, "; ".join(started.reasons))
        except TableNotFoundError as e:
            LOGGER.warning("Dropping message %s: %s", record["messageId"], e)
        except Exception:
            LOGGER.exception("Bulk import message %s failed", record["messageId"])
            failed.append(record["messageId"])
    return batch_response(failed)
