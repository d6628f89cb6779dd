"""Compaction commit batcher (spec 4.6): finished compactions from ``CompactionCommitQ``, committed per table in one
REPLACE_FILE_REFERENCES transaction.

Jobs that no longer fit the table are recorded failed and their outputs deleted, except a repeated commit of a job
committed before, which changes nothing. Unreadable messages, and the messages of a table whose commit could not be
made, are reported failed (delivered again, then dead-lettered); the others are deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, batch_response, sqs_records
from sleeper.runtime.aws_compaction import commit_compaction_batch


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of compaction commit requests."""
    outcome = commit_compaction_batch(aws_instance(), [(r.message_id, r.body) for r in sqs_records(event)])
    for table_id, result in outcome.results.items():
        LOGGER.info(
            "Table %s: %d compaction jobs committed, %d already committed, %d refused",
            table_id,
            len(result.committed),
            len(result.already_committed),
            len(result.failed),
        )
        for _, job_id, reason in result.failed:
            LOGGER.warning("Compaction job %s refused: %s", job_id, reason)
    for message_id, reason in outcome.invalid:
        LOGGER.warning("Message %s: %s", message_id, reason)
    for table_id, error in outcome.errors:
        LOGGER.warning("Table %s: commits to retry: %s", table_id, error)
    return batch_response(list(outcome.failed_ids))
