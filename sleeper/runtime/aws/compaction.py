"""The compaction side of an AWS instance's Lambdas, wired to the AWS adapters. Compaction's queues run
through the router (:mod:`sleeper.runtime.router`) to the entries in :mod:`sleeper.compaction.entry`, and the
compaction container's entry point is :mod:`sleeper.runtime.aws.containers.compaction`; what is left here needs the
AWS adapters themselves:

* :func:`create_compaction_tasks_on_ecs`: one scheduled run of compaction task creation over ECS;
* :func:`follow_transactions`: the transaction log follower, recording in the job trackers the commits that land in
  the files log through the state store committer (a compaction job committed asynchronously without batching, an
  ingest or bulk import run whose files are committed separately).

The ``lambdas`` modules only parse events and map outcomes to Lambda's responses.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sleeper.adapters.aws import TransactionStreamRecord, transaction_stream_records
from sleeper.adapters.aws.launchers import compaction_task_launcher
from sleeper.compaction import create_compaction_tasks
from sleeper.core import operations
from sleeper.core.jobs import TaskCreation
from sleeper.core.statestore.transactions import LogType, TransactionType, log_type_of
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore import follow_log_entry

__all__ = [
    "FollowerOutcome",
    "create_compaction_tasks_on_ecs",
    "follow_stream_event",
    "follow_transactions",
]

_LOG = logging.getLogger(__name__)

# --- tasks -----------------------------------------------------------------------------------------------------------


def create_compaction_tasks_on_ecs(instance: AwsInstance, **launcher_options: Any) -> TaskCreation:
    """One scheduled run of compaction task creation: an ECS task per visible compaction job, within
    ``sleeper.compaction.max.concurrent.tasks``.

    Raises:
        PropertyError: If the compaction cluster or task definition is not set (no compaction stack).
    """
    launcher = compaction_task_launcher(instance.clients.ecs, instance.properties, **launcher_options)
    return create_compaction_tasks(instance.properties, instance.queue(operations.COMPACTION_JOB_Q), launcher)


# --- the transaction log follower ------------------------------------------------------------------------------------

_FOLLOWED = frozenset({TransactionType.REPLACE_FILE_REFERENCES, TransactionType.ADD_FILES})


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowerOutcome:
    """What the follower did with a batch of stream records.

    Attributes:
        failed_sequence_number: The record to retry the stream from, if one could not be followed.
        compaction_commits: Compaction jobs recorded committed.
        ingest_file_commits: Ingest runs recorded as having their files added.
        skipped: Records ignored, with the reason (not an insert, another log, not a job commit, unreadable).
    """

    failed_sequence_number: str | None = None
    compaction_commits: tuple[str, ...] = ()
    ingest_file_commits: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()


def follow_transactions(instance: AwsInstance, records: Sequence[TransactionStreamRecord]) -> FollowerOutcome:
    """Updates the job trackers from the transactions that landed in a files log, in stream order, by the rules of
    :mod:`sleeper.statestore.follower` (the same the local runtime follows).

    A record that cannot be followed (the table's transaction body cannot be read, a tracker cannot be reached)
    stops the batch there: the stream is retried from it. Records of deleted tables, of the partitions log, that are
    not inserts or that are not log entries are skipped.
    """
    compactions: list[str] = []
    ingests: list[str] = []
    skipped: list[tuple[str, str]] = []
    for record in records:
        entry = record.entry
        if entry is None or record.table_id is None:
            skipped.append((record.sequence_number, record.error or f"{record.event_name or 'unknown'} event"))
            if record.error:
                _LOG.warning("stream record %s is not a log entry: %s", record.sequence_number, record.error)
            continue
        if log_type_of(entry.transaction_type) is not LogType.FILES or entry.transaction_type not in _FOLLOWED:
            skipped.append((record.sequence_number, f"{entry.transaction_type.value} is not a job commit"))
            continue
        try:
            followed = follow_log_entry(instance, record.table_id, entry)
        except Exception:
            _LOG.exception("following transaction %d of table %s failed", entry.transaction_number, record.table_id)
            return FollowerOutcome(
                failed_sequence_number=record.sequence_number,
                compaction_commits=tuple(compactions),
                ingest_file_commits=tuple(ingests),
                skipped=tuple(skipped),
            )
        if followed is None:
            skipped.append((record.sequence_number, f"table {record.table_id} does not exist"))
            continue
        compactions.extend(followed.compaction_commits)
        ingests.extend(followed.ingest_file_commits)
    return FollowerOutcome(
        compaction_commits=tuple(compactions), ingest_file_commits=tuple(ingests), skipped=tuple(skipped)
    )


def follow_stream_event(instance: AwsInstance, event: Mapping[str, Any]) -> FollowerOutcome:
    """Follows the records of a DynamoDB stream event of the files log, as Lambda delivers it (see
    :func:`follow_transactions`)."""
    return follow_transactions(instance, transaction_stream_records(event))
