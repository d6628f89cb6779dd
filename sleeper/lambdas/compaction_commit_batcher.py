"""Compaction commit batcher: finished compactions from ``CompactionCommitQ``, committed per table in one
REPLACE_FILE_REFERENCES transaction by the queue's one batch reader (:func:`sleeper.compaction.commit.
handle_commit_messages`, which the local runner's entry gives batches of one).

Jobs that no longer fit the table are recorded failed and their outputs deleted, except a repeated commit of a job
committed before, which changes nothing. Unreadable messages, and the messages of a table whose commit could not be
made, are reported failed (delivered again, then dead-lettered); the others are deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.compaction import handle_commit_messages
from sleeper.lambdas._common import LOGGER, aws_instance, batch_response, lambda_handler, sqs_records


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of compaction commit requests."""
    records, instance = sqs_records(event), aws_instance()
    bodies, tracker, options = [r.body for r in records], instance.compaction_job_tracker, instance.filesystem_options
    result = handle_commit_messages(bodies, instance.table_by_id, tracker, options=options)
    LOGGER.info(
        "%d compaction jobs committed, %d already committed, %d refused",
        len(result.committed),
        len(result.already_committed),
        len(result.failed),
    )
    for table_id, job_id, reason in result.failed:
        LOGGER.warning("Table %s: compaction job %s refused: %s", table_id, job_id, reason)
    for body, reason in result.invalid_messages:
        LOGGER.warning("Invalid compaction commit message %r: %s", body[:200], reason)
    for table_id, error in result.table_errors:
        LOGGER.warning("Table %s: commits to retry: %s: %s", table_id, type(error).__name__, error)
    return batch_response([records[i].message_id for i in result.retry])
