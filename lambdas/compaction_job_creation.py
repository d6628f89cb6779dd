"""Compaction job creation (spec 4.1): one table id per message from ``CompactionJobCreationQ.fifo``.

Each run pre-splits the table's file references, plans jobs with its strategy, assigns their input files
synchronously and sends them to ``CompactionJobQ`` (recorded "created" in the compaction job tracker). A failure
returns the message, and every later one of the batch, to the queue in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, for_each_message
from sleeper.runtime.aws_compaction import create_compaction_jobs_for_table


def _create(table_id: str) -> None:
    result = create_compaction_jobs_for_table(aws_instance(), table_id)
    LOGGER.info(
        "Table %s: %d compaction jobs created, %d file references pre-split, %d over the limit",
        result.table_id,
        result.jobs_created,
        result.references_pre_split,
        result.jobs_over_limit,
    )


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Lambda handler for an SQS batch of table ids."""
    return for_each_message(event, _create, stop_at_failure=True)
