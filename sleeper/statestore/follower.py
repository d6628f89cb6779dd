"""The transaction log follower: which commit of a files transaction yields which job tracker update (one place).

Sleeper's state store follower reads the files log and tells the job trackers what landed. Both runtimes use the
rules here, so they record the same updates for the same transactions:

* the local runtime and the state store committer entry (:func:`sleeper.statestore.committer.handle_commit_request`)
  follow each commit request's outcome as it is applied: committed, or refused (rejected, or jobs skipped because
  they no longer fit);
* the AWS runtime also follows the DynamoDB stream of the files log (:func:`follow_log_entry`), which sees only what
  committed, whoever committed it, so a job recorded by the committer is not recorded twice.

The rules:

* REPLACE_FILE_REFERENCES committed: each job is recorded committed at the commit's time, unless the tracker already
  records a commit of it. Skipped when ``sleeper.compaction.tracker.async.commit.updates.enabled`` is false.
* REPLACE_FILE_REFERENCES refused, or a job of it skipped: the job's run is recorded failed with the reason, unless
  the tracker records a commit of the job (a refused duplicate of a committed job changes nothing, so it is not a
  failure), or the table already tracks the job's output: its commit landed before and its worker stopped before the
  tracker heard (docs/reliability.md C3), so the job is recorded committed.
* ADD_FILES committed, naming a job run the ingest tracker knows: the run is recorded as having its files added, once.
  That completes a run that reported its files as committed separately (ingest committing its own files names no
  run, so it is not followed).
* ADD_FILES refused (rejected, or the commit of a run whose job another run added first), naming a job run the
  ingest tracker knows: the run is recorded failed with the reason, unless it had its files added or failed already.

The synchronous and batched compaction commits record through :func:`record_compaction_committed` and
:func:`record_compaction_failed` too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sleeper.core import TableNotFoundError
from sleeper.core.properties import COMPACTION_TRACKER_ASYNC_COMMIT_UPDATES_ENABLED
from sleeper.core.statestore.transactions import (
    AddFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
    Transaction,
)
from sleeper.core.trackers import (
    CompactionJobCommitted,
    CompactionJobFailed,
    CompactionJobTracker,
    IngestJobAddedFiles,
    IngestJobFailed,
    IngestJobTracker,
)
from sleeper.statestore.ports import TransactionLogEntry
from sleeper.statestore.tables import SleeperRuntime

__all__ = [
    "FollowedUpdates",
    "follow_commit",
    "follow_in",
    "follow_log_entry",
    "record_compaction_committed",
    "record_compaction_failed",
    "was_committed",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowedUpdates:
    """What following one commit recorded.

    Attributes:
        compaction_commits: Compaction jobs recorded committed.
        compaction_failures: Compaction jobs recorded failed.
        ingest_file_commits: Ingest or bulk import jobs whose run was recorded as having its files added.
        ingest_failures: Ingest or bulk import jobs whose run was recorded failed because its files were refused.
    """

    compaction_commits: tuple[str, ...] = ()
    compaction_failures: tuple[str, ...] = ()
    ingest_file_commits: tuple[str, ...] = ()
    ingest_failures: tuple[str, ...] = ()


def was_committed(tracker: CompactionJobTracker, job_id: str) -> bool:
    """Whether the tracker records a commit of any run of the job (so a refused duplicate is not a failure)."""
    status = tracker.job(job_id)
    return status is not None and any(run.commit_time is not None for run in status.runs)


def record_compaction_committed(
    tracker: CompactionJobTracker, table_id: str, job: ReplaceFileReferencesRequest, update_time: datetime
) -> None:
    """Records a compaction job's run committed."""
    tracker.record(CompactionJobCommitted(**_compaction_run(table_id, job, update_time)))


def record_compaction_failed(
    tracker: CompactionJobTracker,
    table_id: str,
    job: ReplaceFileReferencesRequest,
    reason: str,
    update_time: datetime,
) -> None:
    """Records a compaction job's run failed, with the reason."""
    tracker.record(CompactionJobFailed(**_compaction_run(table_id, job, update_time), reasons=(reason,)))


def _compaction_run(table_id: str, job: ReplaceFileReferencesRequest, update_time: datetime) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "table_id": table_id,
        "update_time": update_time,
        "job_run_id": job.job_run_id,
        "task_id": job.task_id,
    }


def follow_commit(
    *,
    table_id: str,
    transaction: Transaction,
    update_time: datetime,
    compaction_tracker: CompactionJobTracker,
    ingest_tracker: IngestJobTracker,
    committed: bool = True,
    reason: str | None = None,
    skipped_jobs: Mapping[str, str] | None = None,
    track_compaction_commits: bool = True,
    landed_outputs: Collection[str] = (),
) -> FollowedUpdates:
    """Records in the job trackers what one commit of a transaction did (see the module docs for the rules).

    Args:
        table_id: The table.
        transaction: The transaction.
        update_time: When it was committed (or refused).
        compaction_tracker: The compaction job tracker.
        ingest_tracker: The ingest job tracker.
        committed: Whether it was committed (False: refused by the state store).
        reason: Why it was refused.
        skipped_jobs: For a committed REPLACE_FILE_REFERENCES: the jobs left out because they no longer fit, with
            the reason.
        track_compaction_commits: Whether committed compaction jobs are recorded
            (``sleeper.compaction.tracker.async.commit.updates.enabled``).
        landed_outputs: For a refused REPLACE_FILE_REFERENCES: the output files of its jobs the table tracks. A job
            whose output is there was committed before (a request delivered again after its commit landed and its
            worker stopped before the tracker heard, docs/reliability.md C3): it is recorded committed, not failed.
    """
    if isinstance(transaction, ReplaceFileReferencesTransaction):
        return _follow_compactions(
            table_id,
            transaction,
            update_time,
            compaction_tracker,
            committed=committed,
            reason=reason,
            skipped=skipped_jobs or {},
            track_commits=track_compaction_commits,
            landed=frozenset(landed_outputs),
        )
    if isinstance(transaction, AddFilesTransaction):
        run = (ingest_tracker, transaction, table_id, update_time)
        if committed:
            added = _record_ingest_run(*run, IngestJobAddedFiles, file_count=len(transaction.files))
            return FollowedUpdates(ingest_file_commits=added)
        why = f"its files were not committed: {reason or 'refused by the state store'}"
        return FollowedUpdates(ingest_failures=_record_ingest_run(*run, IngestJobFailed, reasons=(why,)))
    return FollowedUpdates()


def _follow_compactions(
    table_id: str,
    transaction: ReplaceFileReferencesTransaction,
    update_time: datetime,
    tracker: CompactionJobTracker,
    *,
    committed: bool,
    reason: str | None,
    skipped: Mapping[str, str],
    track_commits: bool,
    landed: frozenset[str] = frozenset(),
) -> FollowedUpdates:
    commits: list[str] = []
    failures: list[str] = []
    for job in transaction.jobs:
        if was_committed(tracker, job.job_id):
            continue
        if (committed and job.job_id not in skipped) or job.new_reference.filename in landed:
            if track_commits:
                record_compaction_committed(tracker, table_id, job, update_time)
                commits.append(job.job_id)
            continue
        record_compaction_failed(tracker, table_id, job, skipped.get(job.job_id) or reason or "rejected", update_time)
        failures.append(job.job_id)
    return FollowedUpdates(compaction_commits=tuple(commits), compaction_failures=tuple(failures))


def _record_ingest_run(
    tracker: IngestJobTracker,
    transaction: AddFilesTransaction,
    table_id: str,
    update_time: datetime,
    update: type[IngestJobAddedFiles | IngestJobFailed],
    **details: Any,
) -> tuple[str, ...]:
    """Records ``update`` on the transaction's job run, unless the run is unknown or already has it (a run whose
    files were added is not failed afterwards); returns the job id if it was recorded."""
    if transaction.job_id is None or transaction.job_run_id is None:
        return ()
    status = tracker.job(transaction.job_id)
    if status is None:
        return ()
    run = next((r for r in status.runs if r.job_run_id == transaction.job_run_id), None)
    if run is None or any(isinstance(u, (IngestJobAddedFiles, update)) for u in run.updates):
        return ()
    tracker.record(
        update(
            job_id=transaction.job_id,
            table_id=table_id,
            update_time=update_time,
            job_run_id=transaction.job_run_id,
            task_id=transaction.task_id,
            **details,
        )
    )
    return (transaction.job_id,)


def follow_in(
    instance: SleeperRuntime,
    table_id: str,
    transaction: Transaction,
    update_time: datetime,
    *,
    committed: bool = True,
    reason: str | None = None,
    skipped_jobs: Mapping[str, str] | None = None,
) -> FollowedUpdates:
    """:func:`follow_commit` with an instance's trackers and its setting for tracking compaction commits; for a refused
    REPLACE_FILE_REFERENCES, the outputs of its jobs the table already tracks are read from the table."""
    landed: frozenset[str] = frozenset()
    if not committed and isinstance(transaction, ReplaceFileReferencesTransaction):
        landed = _landed_outputs(instance, table_id, transaction)
    return follow_commit(
        table_id=table_id,
        transaction=transaction,
        update_time=update_time,
        compaction_tracker=instance.compaction_job_tracker,
        ingest_tracker=instance.ingest_job_tracker,
        committed=committed,
        reason=reason,
        skipped_jobs=skipped_jobs,
        track_compaction_commits=instance.properties.get_bool(COMPACTION_TRACKER_ASYNC_COMMIT_UPDATES_ENABLED),
        landed_outputs=landed,
    )


def _landed_outputs(
    instance: SleeperRuntime, table_id: str, transaction: ReplaceFileReferencesTransaction
) -> frozenset[str]:
    try:
        files = instance.table_by_id(table_id).state_store.files_state()
    except TableNotFoundError:
        return frozenset()
    return frozenset(job.new_reference.filename for job in transaction.jobs if job.new_reference.filename in files)


def follow_log_entry(instance: SleeperRuntime, table_id: str, entry: TransactionLogEntry) -> FollowedUpdates | None:
    """Follows one committed entry of a table's files log (its body read from the table's body store when large),
    at the entry's time.

    Returns:
        What was recorded, or None if the table does not exist (any more).

    Raises:
        Exception: If the body cannot be read or a tracker cannot be reached (the entry should be followed again).
    """
    try:
        store = instance.table_by_id(table_id).state_store
    except TableNotFoundError:
        return None
    body = entry.body if entry.body is not None else store.body_store.load(entry.body_key or "")
    transaction = store.serde.from_json(entry.transaction_type, body)
    return follow_in(instance, table_id, transaction, entry.update_time)
