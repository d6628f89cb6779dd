"""Running a bulk import job: validate, track, write with Spark, commit once per job id.

:func:`run_bulk_import` checks the job (:func:`sleeper.bulk_import.validation.validate_job`). A rejected job is
recorded in the ingest job tracker with its reasons and changes nothing. An accepted job is recorded as validated
and started; the Spark job writes one file per leaf partition (:func:`sleeper.bulk_import.spark_job.write_with_spark`),
and the files are committed in one ADD_FILES transaction carrying the job id and the hash of its input files, so a
job run twice adds its rows once (and a job id already used for other input files is rejected before Spark starts):

* if the state store has already applied an ADD_FILES of the job, nothing is read or written;
* if another run of the job commits between this run's check and its commit, the state store skips this run's
  transaction, and this run deletes the files it wrote.

When the table's ``sleeper.table.bulk.import.job.files.commit.async`` is true (by default it is, for transaction log
state stores, as in Sleeper), the ADD_FILES transaction, carrying the job, run and task, is sent to the state store
committer instead (:func:`sleeper.statestore.committer.send_transaction`), and the run is recorded finished with its
files committed separately: the committer records the files added when it applies them, or the run failed if another
run's commit of the job came first.

The run is then recorded as finished (with the rows read and written), or failed with the error. The Spark job runs
the algorithm the job's ``className`` or ``sleeper.bulk.import.class.name`` selects (:attr:`JobValidation.algorithm`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sleeper.bulk_import.spark_job import active_spark_session, delete_written, spark_session, write_with_spark
from sleeper.bulk_import.validation import JobValidation, validate_job
from sleeper.core import STATE_STORE_COMMITTER_Q, Queue
from sleeper.core.jobs import BulkImportAlgorithm, BulkImportJob, FileJobOutcome, MessageError
from sleeper.core.properties import BULK_IMPORT_FILES_COMMIT_ASYNC
from sleeper.core.statestore import FileReference, JobIdReusedError
from sleeper.core.statestore.transactions import AddFilesTransaction
from sleeper.core.trackers import IngestRun
from sleeper.io import FileSystemOptions
from sleeper.statestore import SleeperRuntime, SleeperTable, commit_new_files, transaction_sender

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sleeper.statestore import StateStore

__all__ = ["BulkImportOutcome", "BulkImportResult", "run_bulk_import", "run_bulk_import_message"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportResult:
    """What a bulk import wrote and committed.

    Attributes:
        rows_read: Rows in the input files.
        rows_written: Rows in the files committed.
        references: The files committed, one per leaf partition holding rows, in leaf order.
        partitions_added: Partitions added by extending the partition tree before writing.
        already_added: True if the job's files had been added before (by an earlier run, or by another run that
            committed first), so this run added nothing.
        seconds: Wall time of the Spark work by phase.
        commit_sent: True if the files were sent to the state store committer rather than committed.
    """

    rows_read: int
    rows_written: int
    references: tuple[FileReference, ...] = ()
    partitions_added: int = 0
    already_added: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    commit_sent: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkImportOutcome(FileJobOutcome[BulkImportResult]):
    """The end of one run of a bulk import job (see ``FileJobOutcome``); ``files`` are the input Parquet files the
    job's paths expanded to."""


def run_bulk_import(
    instance: SleeperRuntime,
    job: BulkImportJob,
    *,
    spark: SparkSession | None = None,
    task_id: str | None = None,
    options: FileSystemOptions | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> BulkImportOutcome:
    """Validates a bulk import job and, if it is accepted, imports its files with Spark.

    Every step is recorded in the instance's ingest job tracker under one new run id. Errors while importing are
    recorded as a failed run and returned, not raised.

    Args:
        instance: The instance (tables, ingest job tracker).
        job: The job.
        spark: The Spark session to use; if omitted and the job is accepted, the process's session is used if it has
            one (and left running), else a local one (:func:`~sleeper.bulk_import.spark_job.spark_session`) is
            started and stopped around the job.
        task_id: The task running the job, recorded in the tracker.
        options: How to reach S3, to read input paths and write data files.
        clock: The time of tracker updates (timezone-aware).

    Returns:
        How the job ended.
    """
    validation = validate_job(instance, job, options=options)
    table = validation.table
    uris = tuple(f.uri for f in validation.files)
    reasons = validation.reasons
    if table is not None and validation.accepted:
        try:
            table.state_store.job_already_added(job.id, validation.inputs_hash)
        except JobIdReusedError as e:
            reasons = (str(e),)
    run = IngestRun(
        instance.ingest_job_tracker,
        job_id=job.id,
        table_id=table.table_id if table is not None else None,
        task_id=task_id,
        clock=clock,
    )
    if table is None or reasons:
        return BulkImportOutcome.rejected(run, job, uris, reasons)
    run.validated(file_count=len(uris))
    committer = instance.queue(STATE_STORE_COMMITTER_Q)
    return import_validated(run, validation, table, spark=spark, options=options, clock=clock, committer=committer)


def import_validated(
    run: IngestRun,
    validation: JobValidation,
    table: SleeperTable,
    *,
    spark: SparkSession | None,
    options: FileSystemOptions | None,
    clock: Callable[[], datetime],
    committer: Queue,
) -> BulkImportOutcome:
    """Records the run started, writes the job's data with Spark and commits it once per job id, and records the
    run finished, or failed with the error (returned, not raised). Used by :func:`run_bulk_import` and by the Spark
    driver of a run the starter validated.

    Args:
        run: The run, validated.
        validation: The job's validation, accepted.
        table: The job's table.
        spark: The Spark session; a local one is started and stopped around the job if omitted.
        options: How to reach S3.
        clock: The time of the state store commit.
        committer: The state store committer's queue, for a table that commits its files asynchronously.

    Returns:
        How the job ended: finished, or failed with the reasons.
    """
    uris = tuple(f.uri for f in validation.files)
    run.started(file_count=len(uris))
    commits_async = table.properties.get_bool(BULK_IMPORT_FILES_COMMIT_ASYNC)
    send_commit = transaction_sender(committer, table.state_store) if commits_async else None
    result = run.attempt(
        lambda: _write_and_commit(
            run, validation, table, spark=spark, options=options, clock=clock, send_commit=send_commit
        )
    )
    return BulkImportOutcome.of_attempt(run, result, uris, files_written=lambda r: len(r.references))


def _write_and_commit(
    run: IngestRun,
    validation: JobValidation,
    table: SleeperTable,
    *,
    spark: SparkSession | None,
    options: FileSystemOptions | None,
    clock: Callable[[], datetime],
    send_commit: Callable[[AddFilesTransaction], None] | None,
) -> BulkImportResult:
    state_store = table.state_store
    if state_store.job_already_added(run.job_id, validation.inputs_hash):
        return BulkImportResult(rows_read=0, rows_written=0, already_added=True)
    owned = spark is None and active_spark_session() is None
    session = spark if spark is not None else spark_session()
    try:
        written = write_with_spark(
            session,
            schema=table.schema,
            properties=table.properties,
            state_store=state_store,
            data_prefix=table.data_prefix,
            files=tuple(f.uri for f in validation.files),
            total_rows=validation.total_rows,
            options=options,
            algorithm=validation.algorithm or BulkImportAlgorithm.LOCAL_SORT,
        )
    finally:
        if owned:  # a session the process already had (handed back by getOrCreate) stays running
            session.stop()
    committed = commit_bulk_import_files(
        state_store,
        written.references,
        job_id=run.job_id,
        task_id=run.task_id,
        job_run_id=run.run_id,
        inputs_hash=validation.inputs_hash,
        rows_read=validation.total_rows,
        options=options,
        clock=clock,
        data_prefix=table.data_prefix,
        send_commit=send_commit,
    )
    return BulkImportResult(
        rows_read=committed.rows_read,
        rows_written=committed.rows_written,
        references=committed.references,
        partitions_added=written.partitions_added,
        already_added=committed.already_added,
        seconds=dict(written.seconds),
        commit_sent=committed.commit_sent,
    )


def commit_bulk_import_files(
    state_store: StateStore,
    references: Sequence[FileReference],
    *,
    job_id: str,
    task_id: str | None,
    job_run_id: str,
    rows_read: int,
    options: FileSystemOptions | None,
    clock: Callable[[], datetime],
    data_prefix: str,
    inputs_hash: str | None = None,
    send_commit: Callable[[AddFilesTransaction], None] | None = None,
) -> BulkImportResult:
    """Commits the files in one ADD_FILES with the job id and the hash of its input files; drops them if another run
    of the job committed first, or if the state store refuses them (``JobIdReusedError`` for other input files).
    With ``send_commit`` the transaction is sent to the state store committer instead. The files are dropped only
    when the commit is known not to be in the log (``COMMIT_NOT_IN_LOG``); after a failed send or any other error
    the commit may have landed, so they stay for the orphan sweeper."""
    if not references:
        return BulkImportResult(rows_read=rows_read, rows_written=0)
    transaction = AddFilesTransaction.of_references(
        references,
        job_id=job_id,
        task_id=task_id,
        job_run_id=job_run_id,
        written_time=clock(),
        inputs_hash=inputs_hash,
    )
    if not commit_new_files(
        state_store,
        transaction,
        send_commit=send_commit,
        delete_files=lambda: delete_written(references, data_prefix, options),
    ):
        return BulkImportResult(rows_read=rows_read, rows_written=0, already_added=True)
    return BulkImportResult(
        rows_read=rows_read,
        rows_written=sum(r.number_of_rows for r in references),
        references=tuple(references),
        commit_sent=send_commit is not None,
    )


def run_bulk_import_message(
    instance: SleeperRuntime,
    body: str,
    *,
    spark: SparkSession | None = None,
    task_id: str | None = None,
    options: FileSystemOptions | None = None,
    allow_local: bool = True,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> BulkImportOutcome:
    """Reads a bulk import job message and runs it; an unreadable message (such as a bad id) is a rejected job.

    Args:
        instance: The instance.
        body: The message body (Sleeper's bulk import job JSON).
        spark: The Spark session to use (see :func:`run_bulk_import`).
        task_id: The task running the job.
        options: How to reach S3.
        allow_local: Whether local file paths are accepted (local runtime).
        clock: The time of tracker updates.

    Returns:
        How the job ended.
    """
    try:
        job = BulkImportJob.from_json(body, allow_local=allow_local)
    except MessageError as e:
        return BulkImportOutcome.unreadable(instance.ingest_job_tracker, e, body, task_id=task_id, clock=clock)
    return run_bulk_import(instance, job, spark=spark, task_id=task_id, options=options, clock=clock)
