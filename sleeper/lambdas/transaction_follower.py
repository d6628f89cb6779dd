"""Transaction log follower: the DynamoDB stream of the files transaction log, recording job commits in the trackers.

A compaction job whose REPLACE_FILE_REFERENCES transaction lands is recorded committed (once, whoever committed it);
an ingest or bulk import run named by an ADD_FILES transaction is recorded as having its files added. A record that
cannot be followed is reported as the batch's item failure, so Lambda retries the stream from it, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime.aws import follow_stream_event


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for a batch of DynamoDB stream records."""
    outcome = follow_stream_event(aws_instance(), event)
    LOGGER.info(
        "Transaction follower: %d compaction commits and %d ingest file commits recorded, %d records skipped",
        len(outcome.compaction_commits),
        len(outcome.ingest_file_commits),
        len(outcome.skipped),
    )
    if outcome.failed_sequence_number is None:
        return {"batchItemFailures": []}
    return {"batchItemFailures": [{"itemIdentifier": outcome.failed_sequence_number}]}
