"""The compaction job dispatcher: sends a pending batch of jobs once their input files are assigned.

When a table assigns input files through the state store committer
(``sleeper.table.compaction.job.id.assignment.commit.async``, by default for transaction log tables), job creation
(:mod:`sleeper.compaction.creation`) writes each batch of jobs to ``<tableId>/compactions/<batchId>.json`` in the data
bucket, sends ``{"tableId", "batchKey", "createTime"}`` to ``PendingCompactionJobBatchQ`` and only then sends the
batch's ASSIGN_JOB_IDS to the committer, as Sleeper's creator does. (A table that assigns them itself has its jobs sent
by job creation once assigned, with no pending batch.) The dispatcher handles each request as Sleeper's
``CompactionJobDispatcher`` does:

* every input file of every job is referenced on the job's partition and assigned to that job: the jobs are sent to
  the compaction job queue, recorded "created" in the tracker, and the batch file is deleted;
* some input is referenced but not assigned yet: the request goes back to the pending queue, delayed by
  ``sleeper.table.compaction.job.send.retry.delay.seconds``, until ``...send.timeout.seconds`` after its create
  time; then it goes to the dead-letter queue;
* some input is gone from the partition or assigned to another job, or the batch file is not a batch: the request
  goes to the dead-letter queue (a retry cannot help), and nothing is sent. This is how a batch that lost a race
  ends: another creator planned the same files and its assignment landed first, so the committer refused this
  batch's whole assignment; no reference is ever in two jobs sent;
* the batch file is gone: the batch was dispatched already (its file is deleted once its jobs are sent), so a
  repeated request changes nothing.

Nothing here knows S3 or SQS: the batch file is read and deleted through callables, the queues are ``Queue`` ports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum

from sleeper.core import OutgoingMessage, Queue
from sleeper.core.jobs import CompactionJob, CompactionJobBatch, CompactionJobDispatchRequest, MessageError
from sleeper.core.properties import COMPACTION_JOB_SEND_RETRY_DELAY_SECS, COMPACTION_JOB_SEND_TIMEOUT_SECS
from sleeper.core.statestore import FilesState
from sleeper.core.trackers import CompactionJobCreated, CompactionJobTracker
from sleeper.statestore import SleeperTable

__all__ = ["BatchFileMissing", "DispatchOutcome", "DispatchResult", "dispatch_pending_batch", "record_created"]

_LOG = logging.getLogger(__name__)

_SQS_SEND_BATCH = 10
_MAX_SQS_DELAY_SECONDS = 900


def record_created(tracker: CompactionJobTracker, jobs: Iterable[CompactionJob], now: datetime) -> None:
    """Records jobs sent to the compaction job queue as created in the job tracker (by the dispatcher, or by job
    creation when it assigns the input files itself)."""
    for job in jobs:
        tracker.record(
            CompactionJobCreated(
                job_id=job.job_id,
                table_id=job.table_id,
                update_time=now,
                partition_id=job.partition_id,
                input_files_count=len(job.input_files),
            )
        )


class BatchFileMissing(LookupError):
    """Raised by a batch reader when the batch file does not exist."""


class DispatchOutcome(Enum):
    """What the dispatcher did with one pending batch request."""

    SENT = "SENT"
    """Every input was assigned: the jobs were sent and tracked, and the batch file deleted."""
    RETURNED = "RETURNED"
    """Some input is not assigned yet: the request went back to the pending queue with a delay."""
    DEAD_LETTERED = "DEAD_LETTERED"
    """The batch can never be sent (bad request or batch, inputs gone or assigned elsewhere, timed out)."""
    ALREADY_DISPATCHED = "ALREADY_DISPATCHED"
    """The batch file is gone: its jobs were sent before. Nothing was done."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchResult:
    """The outcome of one pending batch request.

    Attributes:
        outcome: What was done.
        table_id: The table, if the request could be read.
        batch_key: The batch file, if the request could be read.
        jobs_sent: How many jobs were sent.
        reason: Why the batch was not sent (empty when sent).
    """

    outcome: DispatchOutcome
    table_id: str | None = None
    batch_key: str | None = None
    jobs_sent: int = 0
    reason: str = ""

    def describe(self) -> str:
        """A line for the log."""
        where = f"batch {self.batch_key or '(unreadable)'} of table {self.table_id or '(unknown)'}"
        if self.outcome is DispatchOutcome.SENT:
            return f"{where}: {self.jobs_sent} compaction jobs sent"
        return f"{where}: {self.outcome.value.lower()}: {self.reason}"


def _problems(jobs: tuple[CompactionJob, ...], files: FilesState) -> tuple[list[str], bool]:
    """Inputs gone or assigned to another job, and whether some input is still unassigned."""
    problems: list[str] = []
    awaiting = False
    for job in jobs:
        for name in job.input_files:
            reference = files.reference(name, job.partition_id)
            if reference is None:
                problems.append(
                    f"job {job.job_id}: input file {name} is not referenced on partition {job.partition_id}"
                )
            elif reference.job_id is None:
                awaiting = True
            elif reference.job_id != job.job_id:
                problems.append(f"job {job.job_id}: input file {name} is assigned to job {reference.job_id}")
    return problems, awaiting


def dispatch_pending_batch(
    body: str,
    *,
    table_by_id: Callable[[str], SleeperTable],
    read_batch: Callable[[str], str],
    delete_batch: Callable[[str], None],
    job_queue: Queue,
    pending_queue: Queue,
    dead_letter_queue: Queue,
    tracker: CompactionJobTracker,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> DispatchResult:
    """Handles one ``PendingCompactionJobBatchQ`` message (see the module docs).

    Args:
        body: The pending batch request.
        table_by_id: Looks up a table (raises ``TableNotFoundError`` when it is gone).
        read_batch: Reads a batch file by its key in the data bucket; raises :class:`BatchFileMissing` if none.
        delete_batch: Deletes a batch file by its key.
        job_queue: The compaction job queue.
        pending_queue: The pending batch queue, for requests whose inputs are not assigned yet.
        dead_letter_queue: Where requests that can never be sent go.
        tracker: Where sent jobs are recorded "created".
        clock: Now, to compare with the request's create time and the table's send timeout.

    Returns:
        What was done.

    Raises:
        TableNotFoundError: If the table is gone (the caller drops the message).
        Exception: Whatever reading the batch or a queue raised (the caller lets the message be delivered again).
    """
    try:
        request = CompactionJobDispatchRequest.from_json(body)
    except MessageError as e:
        reason = f"invalid pending batch request: {e}"
        dead_letter_queue.send(body)
        return DispatchResult(outcome=DispatchOutcome.DEAD_LETTERED, reason=reason)

    def result(outcome: DispatchOutcome, reason: str = "", jobs_sent: int = 0) -> DispatchResult:
        return DispatchResult(
            outcome=outcome,
            table_id=request.table_id,
            batch_key=request.batch_key,
            jobs_sent=jobs_sent,
            reason=reason,
        )

    table = table_by_id(request.table_id)
    try:
        text = read_batch(request.batch_key)
    except BatchFileMissing:
        return result(DispatchOutcome.ALREADY_DISPATCHED, "the batch file is gone (dispatched before)")
    try:
        batch = CompactionJobBatch.from_json(text)
        foreign = [j.job_id for j in batch.jobs if j.table_id != request.table_id]
        if foreign:
            raise MessageError(f"jobs {foreign} are not of table {request.table_id}")
    except MessageError as e:
        dead_letter_queue.send(body)
        return result(DispatchOutcome.DEAD_LETTERED, f"invalid batch file: {e}")

    table.state_store.refresh()
    problems, awaiting = _problems(batch.jobs, table.state_store.files_state())
    if problems:
        dead_letter_queue.send(body)
        return result(DispatchOutcome.DEAD_LETTERED, "; ".join(problems))
    if awaiting:
        now = clock()
        timeout = timedelta(seconds=table.properties.get_int(COMPACTION_JOB_SEND_TIMEOUT_SECS))
        if now > request.create_time + timeout:
            dead_letter_queue.send(body)
            reason = f"input files were not assigned within {timeout.total_seconds():g} s of the batch's creation"
            return result(DispatchOutcome.DEAD_LETTERED, reason)
        delay = min(table.properties.get_int(COMPACTION_JOB_SEND_RETRY_DELAY_SECS), _MAX_SQS_DELAY_SECONDS)
        pending_queue.send(body, delay_seconds=delay)
        return result(DispatchOutcome.RETURNED, f"input files not assigned yet; checking again in {delay} s")

    for start in range(0, len(batch.jobs), _SQS_SEND_BATCH):
        job_queue.send_batch([OutgoingMessage(body=j.to_json()) for j in batch.jobs[start : start + _SQS_SEND_BATCH]])
    record_created(tracker, batch.jobs, clock())
    delete_batch(request.batch_key)
    _LOG.info("sent %d compaction jobs of batch %s", len(batch.jobs), request.batch_key)
    return result(DispatchOutcome.SENT, jobs_sent=len(batch.jobs))
