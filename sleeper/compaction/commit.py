"""Committing compaction jobs: the job side and the committer side.

**Job side.** :func:`check_job` tells, before a run writes anything, whether a job can still be committed: a job
delivered again after its output was committed is ``ALREADY_COMMITTED`` and must not write its output again (that
would overwrite a file the table references). :func:`commit_job` then commits a finished run as the table's
``sleeper.table.compaction.job.commit.async`` says:

* synchronously: one REPLACE_FILE_REFERENCES transaction through the state store, and tracker "committed";
* asynchronously with batching (``sleeper.table.compaction.job.async.commit.batching``): a
  :class:`~sleeper.core.jobs.compaction.CompactionJobCommitRequest` on the ``CompactionCommitQ``;
* asynchronously without batching: a REPLACE_FILE_REFERENCES commit request on the state store committer's FIFO queue
  (group = table id).

A synchronous commit refused because the inputs are no longer assigned to the job deletes the output written, unless
the state store tracks that file (another run of the same job committed it): nothing is leaked and nothing committed
is deleted. Any other failure (such as retries exhausted) leaves the output, which a new delivery overwrites.

**Committer side.** :func:`apply_compaction_commits` applies a batch of commit requests: per table one
REPLACE_FILE_REFERENCES transaction of the jobs that still fit the table's state, tracker "committed" for those and
"failed" for the others, whose outputs are deleted when the table does not track them.
:func:`handle_commit_messages` does the same from queue message bodies, for the local runtime's workers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum

from pyarrow import fs as pafs

from sleeper.compaction.ports import COMPACTION_COMMIT_QUEUE, STATE_STORE_COMMITTER_QUEUE
from sleeper.core import Queue, TableNotFoundError
from sleeper.core.jobs import (
    CompactionJob,
    CompactionJobCommitRequest,
    StateStoreCommitRequest,
    commit_requests_by_table,
)
from sleeper.core.statestore import (
    FileAlreadyExistsError,
    FileNotFoundInStateError,
    FileReference,
    FileReferenceNotAssignedToJobError,
    FileReferenceNotFoundError,
    FilesState,
    StateStoreError,
)
from sleeper.core.statestore.transactions import ReplaceFileReferencesRequest, ReplaceFileReferencesTransaction
from sleeper.core.trackers import CompactionJobCommitted, CompactionJobStatusType, CompactionJobTracker
from sleeper.io import FileSystemOptions, delete_unreferenced, resolve, sketches_path
from sleeper.statestore import (
    SleeperTable,
    record_compaction_committed,
    record_compaction_failed,
    send_commit_request,
    was_committed,
)

_LOG = logging.getLogger(__name__)

__all__ = [
    "CommitBatchResult",
    "CommitMode",
    "CommitOutcome",
    "JobCheck",
    "JobReadiness",
    "apply_compaction_commits",
    "check_job",
    "commit_job",
    "commit_mode",
    "delete_output",
    "handle_commit_messages",
    "record_landed_commit",
    "was_committed",
]

Clock = Callable[[], datetime]

_NOT_ASSIGNED_ERRORS = (
    FileReferenceNotAssignedToJobError,
    FileNotFoundInStateError,
    FileReferenceNotFoundError,
    FileAlreadyExistsError,
)
"""State store refusals meaning the job cannot commit any more (it was committed, or its inputs moved on)."""

_MAX_BATCH_ATTEMPTS = 5


def _utc_now() -> datetime:
    return datetime.now(tz=UTC)


class JobReadiness(Enum):
    """Whether a job can run and commit, judged from the table's state before anything is written."""

    READY = "READY"
    """Every input is referenced on the partition and assigned to the job, and the output is not tracked yet."""

    ALREADY_COMMITTED = "ALREADY_COMMITTED"
    """The output is already tracked by the table, or the tracker shows the job committed: nothing to do."""

    AWAITING_ASSIGNMENT = "AWAITING_ASSIGNMENT"
    """Some input is referenced on the partition but not yet assigned to any job: try again later."""

    NOT_ASSIGNED = "NOT_ASSIGNED"
    """Some input is gone from the partition or assigned to another job: the job can never commit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobCheck:
    """The outcome of :func:`check_job`.

    Attributes:
        readiness: Whether the job can run.
        reason: Why not, for logs and the tracker (empty when ready).
    """

    readiness: JobReadiness
    reason: str = ""


def check_job(job: CompactionJob, table: SleeperTable, *, tracker: CompactionJobTracker | None = None) -> JobCheck:
    """Checks, from the table's latest state, whether a job can run and commit.

    Args:
        job: The job.
        table: Its table; its state store is brought up to date first.
        tracker: If given, a job whose inputs moved on is reported ``ALREADY_COMMITTED`` when the tracker shows it
            committed (its output may since have been compacted again and garbage collected).
    """
    table.state_store.refresh()
    files = table.state_store.files_state()
    return _check(job, files, tracker)


def _check(job: CompactionJob, files: FilesState, tracker: CompactionJobTracker | None) -> JobCheck:
    if job.output_file in files:
        return JobCheck(
            readiness=JobReadiness.ALREADY_COMMITTED,
            reason=f"output file {job.output_file} is already in the state store",
        )
    problems: list[str] = []
    awaiting = False
    for name in job.input_files:
        reference = files.reference(name, job.partition_id)
        if reference is None:
            problems.append(f"input file {name} is not referenced on partition {job.partition_id}")
        elif reference.job_id is None:
            awaiting = True
        elif reference.job_id != job.job_id:
            problems.append(f"input file {name} is assigned to job {reference.job_id}")
    if not problems and not awaiting:
        return JobCheck(readiness=JobReadiness.READY)
    if tracker is not None:
        status = tracker.job(job.job_id)
        if status is not None and status.status is CompactionJobStatusType.FINISHED:
            return JobCheck(readiness=JobReadiness.ALREADY_COMMITTED, reason="the tracker shows the job committed")
    if problems:
        return JobCheck(readiness=JobReadiness.NOT_ASSIGNED, reason="; ".join(problems))
    return JobCheck(
        readiness=JobReadiness.AWAITING_ASSIGNMENT,
        reason=f"input files of job {job.job_id} are not assigned to it yet",
    )


class CommitMode(Enum):
    """How a table's compaction jobs are committed."""

    SYNC = "SYNC"
    ASYNC_BATCHED = "ASYNC_BATCHED"
    ASYNC = "ASYNC"


def commit_mode(table: SleeperTable) -> CommitMode:
    """The table's commit mode, from ``sleeper.table.compaction.job.commit.async`` and
    ``sleeper.table.compaction.job.async.commit.batching``."""
    from sleeper.core.properties import table as tp

    properties = table.properties
    if not properties.get_bool(tp.COMPACTION_JOB_COMMIT_ASYNC):
        return CommitMode.SYNC
    if properties.get_bool(tp.COMPACTION_JOB_ASYNC_BATCHING):
        return CommitMode.ASYNC_BATCHED
    return CommitMode.ASYNC


class CommitOutcome(Enum):
    """How a commit of a finished run ended."""

    COMMITTED = "COMMITTED"
    """The state store now references the output (synchronous commit)."""

    SENT = "SENT"
    """The commit request was sent to a commit queue (asynchronous commit)."""

    ALREADY_COMMITTED = "ALREADY_COMMITTED"
    """Another run of the job committed first; the table is unchanged and the output, which it references, kept."""

    REJECTED = "REJECTED"
    """The inputs are no longer assigned to the job; the output written was deleted."""


def commit_job(
    job: CompactionJob,
    table: SleeperTable,
    *,
    rows_written: int,
    task_id: str | None,
    job_run_id: str | None,
    tracker: CompactionJobTracker,
    queue: Callable[[str], Queue] | None = None,
    mode: CommitMode | None = None,
    clock: Clock = _utc_now,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    applied_deletes: tuple[int, ...] = (),
) -> tuple[CommitOutcome, str]:
    """Commits a run of a job whose output file is written.

    A run that applied pending row deletes says so in its request (``appliedDeletes``, beyond Sleeper); such a
    request is sent asynchronously as a whole transaction through the state store committer, never as Sleeper's
    batched compaction commit message (which stays exactly Sleeper's).

    Args:
        job: The job.
        table: Its table.
        rows_written: The rows in the output file.
        task_id: The task that ran it.
        job_run_id: The run.
        tracker: Where "committed" (synchronous commits) and "failed" (refused commits) are recorded.
        queue: Looks up a queue by logical name; needed for asynchronous commits.
        mode: Overrides the table's commit mode.
        clock: The time of tracker updates.
        filesystem: The filesystem of the output file instead of the one its URI names (tests).
        options: How to reach S3.
        applied_deletes: The transaction numbers of the pending row deletes the run applied.

    Returns:
        The outcome and a reason (empty when committed or sent).

    Raises:
        StateStoreError: If the state store refused the commit for another reason than the inputs moving on.
        AddTransactionRetriesExhaustedError: If the commit collided with other writers on every attempt.
        CompactionConfigError: If the commit is asynchronous and no queue lookup was given.
    """
    chosen = mode or commit_mode(table)
    request = ReplaceFileReferencesRequest(
        job_id=job.job_id,
        task_id=task_id,
        job_run_id=job_run_id,
        input_files=job.input_files,
        new_reference=FileReference(
            filename=job.output_file,
            partition_id=job.partition_id,
            number_of_rows=rows_written,
            count_approximate=False,
            only_contains_data_for_this_partition=True,
        ),
        applied_deletes=applied_deletes,
    )
    if applied_deletes and chosen is CommitMode.ASYNC_BATCHED:
        chosen = CommitMode.ASYNC
    if chosen is not CommitMode.SYNC:
        if queue is None:
            from sleeper.compaction.exceptions import CompactionConfigError

            raise CompactionConfigError("an asynchronous compaction commit needs the instance's queues")
        _send(table.table_id, request, chosen, queue)
        return CommitOutcome.SENT, ""
    transaction = ReplaceFileReferencesTransaction(jobs=(request,))
    try:
        table.state_store.commit(transaction)
    except _NOT_ASSIGNED_ERRORS as e:
        return _refused(job, table, request, str(e), tracker, clock, filesystem, options)
    record_compaction_committed(tracker, table.table_id, request, clock())
    return CommitOutcome.COMMITTED, ""


def _send(
    table_id: str, request: ReplaceFileReferencesRequest, mode: CommitMode, queue: Callable[[str], Queue]
) -> None:
    if mode is CommitMode.ASYNC_BATCHED:
        queue(COMPACTION_COMMIT_QUEUE).send(CompactionJobCommitRequest(table_id=table_id, request=request).to_json())
        return
    commit = StateStoreCommitRequest.of_transaction(table_id, ReplaceFileReferencesTransaction(jobs=(request,)))
    send_commit_request(queue(STATE_STORE_COMMITTER_QUEUE), commit)


def _refused(
    job: CompactionJob,
    table: SleeperTable,
    request: ReplaceFileReferencesRequest,
    reason: str,
    tracker: CompactionJobTracker,
    clock: Clock,
    filesystem: pafs.FileSystem | None,
    options: FileSystemOptions | None,
) -> tuple[CommitOutcome, str]:
    table.state_store.refresh()
    files = table.state_store.files_state()
    if job.output_file in files:
        outcome, why = CommitOutcome.ALREADY_COMMITTED, f"another run of job {job.job_id} committed first: {reason}"
    else:
        delete_output(job.output_file, data_prefix=table.data_prefix, filesystem=filesystem, options=options)
        outcome, why = CommitOutcome.REJECTED, f"commit refused, output deleted: {reason}"
    record_compaction_failed(tracker, table.table_id, request, why, clock())
    return outcome, why


def delete_output(
    location: str,
    *,
    data_prefix: str,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> None:
    """Deletes an output file of the table with this data prefix, and its sketches file, if they exist; a delete that
    is refused (by the store, or because the output is not under the prefix) is logged and the file left for the
    orphan sweeper (see :func:`sleeper.io.filesystem.delete_unreferenced`)."""
    fs, path = resolve(location, options, filesystem=filesystem)
    delete_unreferenced(fs, path, data_prefix)
    delete_unreferenced(fs, sketches_path(path), data_prefix)


# ---------------------------------------------------------------------------------------------------------------------
# Committer side


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitBatchResult:
    """What a batch of commit requests did.

    Attributes:
        committed: The jobs committed, as (table id, job id).
        already_committed: The jobs whose output the table already tracked (a duplicate request, or another run
            committed first): the table and the tracker are left as they are.
        failed: The jobs refused, as (table id, job id, reason).
        invalid_messages: Message bodies that could not be read, with the reason (handled by
            :func:`handle_commit_messages` only).
        table_errors: Tables whose commit could not be made, with the error (:func:`handle_commit_messages` only).
        retry: The indexes of the messages to deliver again: invalid ones and those of the tables in
            ``table_errors`` (:func:`handle_commit_messages` only).
        transactions: The REPLACE_FILE_REFERENCES transactions added.
    """

    committed: tuple[tuple[str, str], ...] = ()
    already_committed: tuple[tuple[str, str], ...] = ()
    failed: tuple[tuple[str, str, str], ...] = ()
    invalid_messages: tuple[tuple[str, str], ...] = field(default=())
    table_errors: tuple[tuple[str, Exception], ...] = field(default=())
    retry: tuple[int, ...] = field(default=())
    transactions: int = 0


def apply_compaction_commits(
    requests: Sequence[CompactionJobCommitRequest],
    table_by_id: Callable[[str], SleeperTable],
    tracker: CompactionJobTracker,
    *,
    clock: Clock = _utc_now,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> CommitBatchResult:
    """Applies finished compactions as the commit batcher and the state store committer do together.

    Requests are grouped by table. Per table, the jobs that still fit the table's latest state are committed in one
    REPLACE_FILE_REFERENCES transaction (a job named twice is committed once), and tracked as committed. The others
    are tracked as failed with the state store's reason and their output files deleted, except jobs whose output the
    table already tracks or the tracker records as committed (a duplicate request of a job committed before, whose
    output may since have been compacted again and garbage collected): those change nothing. Requests for tables that
    no longer exist fail.

    Args:
        requests: The commit requests, in the order received.
        table_by_id: Looks up a table; raises ``TableNotFoundError`` if it is gone.
        tracker: The compaction job tracker.
        clock: The time of tracker updates.
        filesystem: The filesystem of output files instead of the one their URIs name (tests).
        options: How to reach S3.

    Returns:
        The jobs committed and refused.

    Raises:
        AddTransactionRetriesExhaustedError: If a table's transaction collided with other writers on every attempt
            (the requests of tables done before stay committed).
    """
    committed: list[tuple[str, str]] = []
    already: list[tuple[str, str]] = []
    failed: list[tuple[str, str, str]] = []
    transactions = 0
    for table_id, jobs in commit_requests_by_table(requests).items():
        try:
            table = table_by_id(table_id)
        except TableNotFoundError:
            for job in jobs:
                reason = f"table {table_id} does not exist"
                failed.append((table_id, job.job_id, reason))
                _record_failed(tracker, table_id, job, reason, clock)
            continue
        done, refused, before = _commit_table(
            table, jobs, lambda job: was_committed(tracker, job.job_id), filesystem, options
        )
        already.extend((table_id, job.job_id) for job in before)
        if done:
            transactions += 1
        now = clock()
        for job in done:
            committed.append((table_id, job.job_id))
            record_compaction_committed(tracker, table_id, job, now)
        for job in before:  # after this batch's commits, so a duplicate of one of them is not recorded committed twice
            if not was_committed(tracker, job.job_id):
                # its commit landed, its worker stopped before telling the tracker (docs/reliability.md C3): tell it now
                record_compaction_committed(tracker, table_id, job, now)
        for job, reason in refused:
            failed.append((table_id, job.job_id, reason))
            _record_failed(tracker, table_id, job, reason, clock)
    return CommitBatchResult(
        committed=tuple(committed), already_committed=tuple(already), failed=tuple(failed), transactions=transactions
    )


def _commit_table(
    table: SleeperTable,
    jobs: Sequence[ReplaceFileReferencesRequest],
    committed_before: Callable[[ReplaceFileReferencesRequest], bool],
    filesystem: pafs.FileSystem | None,
    options: FileSystemOptions | None,
) -> tuple[
    list[ReplaceFileReferencesRequest],
    list[tuple[ReplaceFileReferencesRequest, str]],
    list[ReplaceFileReferencesRequest],
]:
    """Commits the jobs that fit the table's state; returns them, the refused ones with reasons, and the refused ones
    committed before (their output is tracked, or ``committed_before`` says so)."""
    store = table.state_store
    for attempt in range(_MAX_BATCH_ATTEMPTS):
        store.refresh()
        trial = store.files_state()
        now = datetime.now(tz=UTC)
        fitting: list[ReplaceFileReferencesRequest] = []
        refused: list[tuple[ReplaceFileReferencesRequest, str]] = []
        for job in jobs:  # in order, each on the state the jobs before it leave, as the log applies them
            try:
                job.validate(trial)
            except StateStoreError as e:
                refused.append((job, str(e)))
                continue
            ReplaceFileReferencesTransaction(jobs=(job,)).apply(trial, now)
            fitting.append(job)
        if fitting:
            try:
                store.commit(ReplaceFileReferencesTransaction(jobs=tuple(fitting)))
            except StateStoreError:
                if attempt + 1 < _MAX_BATCH_ATTEMPTS:
                    continue  # the state moved on between the check and the commit: check again
                raise
        already: list[ReplaceFileReferencesRequest] = []
        if refused:
            store.refresh()
            tracked = store.files_state()
            still_refused: list[tuple[ReplaceFileReferencesRequest, str]] = []
            for job, reason in refused:
                name = job.new_reference.filename
                if name in tracked or committed_before(job):
                    already.append(job)
                else:
                    delete_output(name, data_prefix=table.data_prefix, filesystem=filesystem, options=options)
                    still_refused.append((job, reason))
            refused = still_refused
        return fitting, refused, already
    raise AssertionError("unreachable")


def record_landed_commit(tracker: CompactionJobTracker, table_id: str, job_id: str, now: datetime) -> bool:
    """Records the commit of a job whose output the table already tracks but whose tracker shows no commit: its
    worker stopped after the commit landed and before it told the tracker (docs/reliability.md C3), and the job's
    message came back. The commit is recorded on the job's last run that finished uncommitted; returns whether it
    was."""
    if was_committed(tracker, job_id):
        return False
    status = tracker.job(job_id)
    runs = [] if status is None else [r for r in status.runs if r.status is CompactionJobStatusType.UNCOMMITTED]
    if not runs:
        return False
    run = runs[-1]
    tracker.record(
        CompactionJobCommitted(
            job_id=job_id, table_id=table_id, update_time=now, job_run_id=run.job_run_id, task_id=run.task_id
        )
    )
    return True


def _record_failed(
    tracker: CompactionJobTracker, table_id: str, job: ReplaceFileReferencesRequest, reason: str, clock: Clock
) -> None:
    record_compaction_failed(tracker, table_id, job, reason, clock())


def handle_commit_messages(
    bodies: Sequence[str],
    table_by_id: Callable[[str], SleeperTable],
    tracker: CompactionJobTracker,
    *,
    clock: Clock = _utc_now,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> CommitBatchResult:
    """Reads a batch of ``CompactionCommitQ`` message bodies and applies them per table (see
    :func:`apply_compaction_commits`): the one reader of the queue's batches, in both runtimes.

    Each message fails on its own: a body that is not a valid commit request is left out and listed in
    ``invalid_messages``, and a table whose commit could not be made (the state store or tracker could not be
    reached, or every attempt collided) is listed in ``table_errors`` without stopping the other tables. The indexes
    of both kinds of message are in ``retry``: the caller delivers them again (an invalid one reaches the dead-letter
    queue after the queue's receive limit).

    The commits are applied here rather than forwarded to the state store committer: the committer refuses a whole
    transaction when one job no longer fits, so one duplicate would sink the batch.
    """
    from sleeper.core.jobs import MessageError

    by_table: dict[str, list[tuple[int, CompactionJobCommitRequest]]] = {}
    invalid: list[tuple[str, str]] = []
    retry: list[int] = []
    for index, body in enumerate(bodies):
        try:
            request = CompactionJobCommitRequest.from_json(body)
        except MessageError as e:
            invalid.append((body, str(e)))
            retry.append(index)
            continue
        by_table.setdefault(request.table_id, []).append((index, request))
    results: list[CommitBatchResult] = []
    errors: list[tuple[str, Exception]] = []
    for table_id, requests in by_table.items():
        try:
            results.append(
                apply_compaction_commits(
                    [r for _, r in requests], table_by_id, tracker, clock=clock, filesystem=filesystem, options=options
                )
            )
        except Exception as e:  # the state store or tracker could not be reached: deliver the table's commits again
            _LOG.exception("committing %d compaction jobs of table %s failed", len(requests), table_id)
            errors.append((table_id, e))
            retry.extend(index for index, _ in requests)
    return CommitBatchResult(
        committed=tuple(c for r in results for c in r.committed),
        already_committed=tuple(c for r in results for c in r.already_committed),
        failed=tuple(f for r in results for f in r.failed),
        invalid_messages=tuple(invalid),
        table_errors=tuple(errors),
        retry=tuple(sorted(retry)),
        transactions=sum(r.transactions for r in results),
    )
