"""The runtime-neutral entries of compaction's queue-fed and per-table operations, run by either runtime through the
router (:mod:`sleeper.runtime.router`)."""

from __future__ import annotations

from typing import Protocol

from sleeper.compaction.commit import handle_commit_messages
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.exceptions import CompactionError
from sleeper.compaction.ports import COMPACTION_JOB_QUEUE, CompactionInstance
from sleeper.io.filesystem import FileSystemOptions

__all__ = ["CompactionRuntime", "handle_compaction_commit", "handle_compaction_job_creation"]


class CompactionRuntime(CompactionInstance, Protocol):
    """The instance compaction's entries run in: :class:`CompactionInstance` and how to reach the data files."""

    @property
    def filesystem_options(self) -> FileSystemOptions | None:
        """How to reach the data files (None for the defaults: a local instance)."""
        ...


def handle_compaction_job_creation(instance: CompactionInstance, body: str) -> str:
    """One ``CompactionJobCreationQ.fifo`` message (body: the table id): pre-splits the table's file references,
    plans jobs with its strategy, assigns their input files and sends them to ``CompactionJobQ`` (recorded created
    in the compaction job tracker).

    Returns:
        A line for the log (empty when nothing was done).

    Raises:
        TableNotFoundError: If there is no such table.
        UnknownCompactionStrategyError: If the table's strategy is unknown.
        CompactionJobSendError: If assigned jobs could not all be sent.
        StateStoreError: If the pre-split is refused twice.
    """
    table_id = body.strip()
    result = create_compaction_jobs(
        instance.table_by_id(table_id), instance.queue(COMPACTION_JOB_QUEUE), instance.compaction_job_tracker
    )
    if not result.jobs_created and not result.references_pre_split and not result.jobs_over_limit:
        return ""
    line = (
        f"table {table_id}: {result.jobs_created} compaction jobs created, "
        f"{result.references_pre_split} file references pre-split"
    )
    return line + (f", {result.jobs_over_limit} over the limit" if result.jobs_over_limit else "")


def handle_compaction_commit(instance: CompactionRuntime, body: str) -> str:
    """One ``CompactionCommitQ`` message: a batch of one for the queue's one batch reader
    (:func:`sleeper.compaction.commit.handle_commit_messages`), which the commit batcher Lambda gives its batches.

    Returns:
        A line for the log: the job committed, or why it was refused (refused jobs are tracked failed).

    Raises:
        CompactionError: If the message is not a valid commit request (it is dead-lettered).
        Exception: The error that kept the table's commit from being made (the message is delivered again).
    """
    result = handle_commit_messages(
        [body], instance.table_by_id, instance.compaction_job_tracker, options=instance.filesystem_options
    )
    if result.invalid_messages:
        raise CompactionError(f"invalid compaction commit message: {result.invalid_messages[0][1]}")
    for _, error in result.table_errors:
        raise error
    parts = [f"compaction job {job_id} committed" for _, job_id in result.committed]
    parts += [f"compaction job {job_id} refused: {reason}" for _, job_id, reason in result.failed]
    return "; ".join(parts)
