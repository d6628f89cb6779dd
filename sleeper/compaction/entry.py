"""The runtime-neutral entries of compaction's queue-fed and per-table operations, run by either runtime through the
router (:mod:`sleeper.runtime.router`): job creation, the pending batch dispatcher, the compaction job (run by the
local runner for each message, and by the compaction container's task loop in its own workspace) and the commit.

Job creation and the dispatcher share the instance's pending batches: batch files under the data root (the data
bucket on AWS), the pending batch queue and, for the assignment, the state store committer's queue
(:func:`pending_batches`)."""

from __future__ import annotations

import logging

from sleeper.compaction.commit import handle_commit_messages
from sleeper.compaction.creation import CompactionJobCreationResult, PendingBatches, create_compaction_jobs
from sleeper.compaction.dispatch import BatchFileMissing, DispatchOutcome, dispatch_pending_batch
from sleeper.compaction.exceptions import CompactionError
from sleeper.compaction.ports import COMPACTION_JOB_QUEUE, STATE_STORE_COMMITTER_QUEUE
from sleeper.compaction.task import CompactionJobRunner, JobRunOutcome
from sleeper.core import PENDING_COMPACTION_JOB_BATCH_Q, join_under
from sleeper.core.jobs import JobWorkspace
from sleeper.core.trackers import JobOutcome
from sleeper.io import MissingFileError, delete, read_bytes, resolve, write_bytes
from sleeper.statestore import SleeperRuntime, SleeperTable

__all__ = [
    "compaction_job_line",
    "create_jobs_for_table",
    "handle_compaction_commit",
    "handle_compaction_job",
    "handle_compaction_job_creation",
    "handle_compaction_job_dispatch",
    "pending_batches",
    "run_compaction_job",
]

_LOG = logging.getLogger(__name__)


class _BatchFiles:
    """The pending batch files of an instance, by their keys under its data root."""

    def __init__(self, instance: SleeperRuntime) -> None:
        self._root = instance.data_root
        self._options = instance.filesystem_options

    def _located(self, key: str) -> str:
        return join_under(self._root, *key.split("/"))

    def read(self, key: str) -> str:
        filesystem, path = resolve(self._located(key), self._options)
        try:
            return read_bytes(filesystem, path).decode("utf-8")
        except MissingFileError as e:
            raise BatchFileMissing(str(e)) from e

    def write(self, key: str, text: str) -> None:
        write_bytes(*resolve(self._located(key), self._options), text.encode("utf-8"))

    def delete(self, key: str) -> None:
        delete(*resolve(self._located(key), self._options))


def pending_batches(instance: SleeperRuntime) -> PendingBatches:
    """Where job creation puts batches whose assignment goes through the committer: batch files under the instance's
    data root, the pending batch queue the dispatcher reads, and the state store committer's queue."""
    return PendingBatches(
        write_batch=_BatchFiles(instance).write,
        pending_queue=instance.queue(PENDING_COMPACTION_JOB_BATCH_Q),
        committer_queue=instance.queue(STATE_STORE_COMMITTER_QUEUE),
    )


def create_jobs_for_table(
    instance: SleeperRuntime, table: SleeperTable, *, compact_all: bool = False
) -> CompactionJobCreationResult:
    """Creates a table's compaction jobs in an instance (:func:`sleeper.compaction.creation.create_compaction_jobs`):
    sent to ``CompactionJobQ`` once assigned here, or put in pending batches for the dispatcher when the table
    assigns through the committer (``sleeper.table.compaction.job.id.assignment.commit.async``).

    Raises:
        As ``create_compaction_jobs``.
    """
    return create_compaction_jobs(
        table,
        instance.queue(COMPACTION_JOB_QUEUE),
        instance.compaction_job_tracker,
        compact_all=compact_all,
        pending=pending_batches(instance),
    )


def handle_compaction_job_creation(instance: SleeperRuntime, body: str) -> str:
    """One ``CompactionJobCreationQ.fifo`` message (body: the table id): pre-splits the table's file references,
    plans jobs with its strategy, and assigns their input files and sends them to ``CompactionJobQ`` (recorded created
    in the compaction job tracker), or, when the table assigns through the committer, puts them in pending batches
    for the dispatcher (:func:`create_jobs_for_table`).

    Returns:
        A line for the log (empty when nothing was done).

    Raises:
        TableNotFoundError: If there is no such table.
        UnknownCompactionStrategyError: If the table's strategy is unknown.
        CompactionJobSendError: If assigned jobs could not all be sent.
        PendingBatchError: If a batch could not be made pending.
        StateStoreError: If the pre-split is refused twice.
    """
    table_id = body.strip()
    result = create_jobs_for_table(instance, instance.table_by_id(table_id))
    if not result.jobs_created and not result.references_pre_split and not result.jobs_over_limit:
        return ""
    line = (
        f"table {table_id}: {result.jobs_created} compaction jobs created, "
        f"{result.references_pre_split} file references pre-split"
    )
    if result.pending_batches:
        line += f", in {len(result.pending_batches)} pending batches awaiting their assignment"
    return line + (f", {result.jobs_over_limit} over the limit" if result.jobs_over_limit else "")


def handle_compaction_commit(instance: SleeperRuntime, body: str) -> str:
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


def handle_compaction_job_dispatch(instance: SleeperRuntime, body: str) -> str:
    """One ``PendingCompactionJobBatchQ`` message (Sleeper's pending batch request, see
    :mod:`sleeper.compaction.dispatch`): the batch file is read from (and, once its jobs are sent, deleted from) the
    instance's data root; a request that can never be sent goes to the queue's dead-letter queue.

    Returns:
        A line for the log: what was done with the batch (a batch sent to the dead-letter queue is logged as a
        warning instead).

    Raises:
        TableNotFoundError: If the request's table is gone (the message is dropped).
        UnsafePathError: If the batch key could leave the data root (delivered again, then dead-lettered).
        Exception: If the batch file or a queue could not be reached (the message is delivered again).
    """
    files = _BatchFiles(instance)
    result = dispatch_pending_batch(
        body,
        table_by_id=instance.table_by_id,
        read_batch=files.read,
        delete_batch=files.delete,
        job_queue=instance.queue(COMPACTION_JOB_QUEUE),
        pending_queue=instance.queue(PENDING_COMPACTION_JOB_BATCH_Q),
        dead_letter_queue=instance.dead_letter_queue(PENDING_COMPACTION_JOB_BATCH_Q),
        tracker=instance.compaction_job_tracker,
    )
    if result.outcome is DispatchOutcome.DEAD_LETTERED:
        _LOG.warning("Compaction %s", result.describe())
        return ""
    return f"Compaction {result.describe()}"


def run_compaction_job(instance: SleeperRuntime, body: str, *, workspace: JobWorkspace | None = None) -> JobRunOutcome:
    """Runs one ``CompactionJobQ`` message in a workspace (by default the instance's ``job_workspace()``; a
    compaction task gives its own): checks, runs and commits the job, every step tracked under the workspace's task.
    An unreadable message is a failed run."""
    if workspace is None:
        with instance.job_workspace() as given:
            return run_compaction_job(instance, body, workspace=given)
    runner = CompactionJobRunner(instance, task_id=workspace.task_id, options=instance.filesystem_options)
    return runner.run_message(body)


def compaction_job_line(outcome: JobRunOutcome) -> str:
    """The log line of a compaction job whose message is done (finished, already committed or rejected).

    Raises:
        CompactionError: If the job failed (its message is to be delivered again).
    """
    if outcome.outcome is JobOutcome.FAILED:
        raise CompactionError(f"compaction job {outcome.job_id} failed: {'; '.join(outcome.reasons)}")
    if outcome.outcome is not JobOutcome.FINISHED:
        return f"compaction job {outcome.job_id} {outcome.outcome.value.lower()}: {'; '.join(outcome.reasons)}"
    rows = outcome.result.rows_written if outcome.result is not None else 0
    return f"compaction job {outcome.job_id} finished: {rows:,} rows written"


def handle_compaction_job(instance: SleeperRuntime, body: str) -> str:
    """One ``CompactionJobQ`` message, run where the instance says a job runs (:func:`run_compaction_job`).

    Returns:
        A line for the log.

    Raises:
        CompactionError: If the job failed (to be delivered again).
    """
    return compaction_job_line(run_compaction_job(instance, body))
