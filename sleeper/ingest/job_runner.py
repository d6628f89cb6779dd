"""Ingest jobs: validate, track, read the files and run standard ingest.

A job names a table and Parquet files or directories. :class:`IngestJobRunner` checks it before anything is written:

* the table must exist (looked up by id when the job has one, else by name);
* every path must be one the instance lets ingest read (:mod:`sleeper.ingest.sources`: on AWS, the data bucket
  outside the tables' prefixes and the buckets of ``sleeper.ingest.source.bucket``), checked before any read;
* every path must exist; a directory is expanded recursively to the ``.parquet`` files inside it, and a path that
  holds no such file rejects the job;
* no file may be named twice (the same path twice, or a directory and a file inside it: its rows would be added
  twice), :func:`sleeper.core.jobs.ingest.expand_job_files`;
* every file must be readable Parquet holding each column of the table with a type that reads as the table's;
* if files were already added under the job id, it must have been from the same input files (the hash of the sorted
  file list, :func:`sleeper.core.statestore.state.input_files_hash`): a job id cannot be reused for other files.

A rejected job is recorded in the ingest job tracker with its reasons and changes nothing. An accepted job is recorded
as validated and started, its files are read in order as Arrow batches and given to
:func:`sleeper.ingest.standard.ingest_batches` with the job id and the input files hash (so a job delivered twice adds
its rows once), within the memory and local disk limits the properties set, and it is recorded as finished, or
failed with the error.

When the table's ``sleeper.table.ingest.job.files.commit.async`` is true (by default it is, for transaction log state
stores, as in Sleeper), the job does not commit its files: it sends the ADD_FILES transaction, carrying the job id,
the run and the task, to the state store committer's queue (its body uploaded first if too big for a message) and is
recorded as finished with its files committed separately. The committer records the files added on the run when it
applies the transaction (:mod:`sleeper.statestore.committer`), which completes the run in the tracker.

:func:`run_ingest_queue` takes jobs from the instance's ``IngestJobQ``: finished and rejected jobs are deleted from
the queue, failed ones are left to be delivered again (and reach the dead-letter queue after the queue's
``maxReceiveCount``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.core import INGEST_JOB_Q as INGEST_JOB_QUEUE
from sleeper.core import STATE_STORE_COMMITTER_Q, TableNotFoundError
from sleeper.core.jobs import FileJobOutcome, IngestJob, MessageError, expand_job_files
from sleeper.core.properties import INGEST_FILES_COMMIT_ASYNC
from sleeper.core.statestore import JobIdReusedError, input_files_hash
from sleeper.core.statestore.transactions import AddFilesTransaction
from sleeper.core.trackers import IngestRun, JobOutcome
from sleeper.ingest.ports import IngestRuntime
from sleeper.ingest.standard import IngestLimits, IngestResult, ingest_batches
from sleeper.io import (
    FileSystemOptions,
    InputFile,
    InputFileError,
    SchemaMismatchError,
    arrow_schema,
    expand_paths,
    read_batches,
    read_footer,
    schema_problems,
)
from sleeper.statestore import SleeperTable, transaction_sender

__all__ = [
    "INGEST_JOB_QUEUE",
    "IngestJobOutcome",
    "IngestJobRunner",
    "QueueRunSummary",
    "run_ingest_queue",
]


READ_BATCH_ROWS = 65536
"""Rows per batch read from an input file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJobOutcome(FileJobOutcome[IngestResult]):
    """The end of one run of an ingest job (see ``FileJobOutcome``); ``result`` is what standard ingest wrote."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueRunSummary:
    """What :func:`run_ingest_queue` did.

    Attributes:
        outcomes: The outcome of every message received, in order.
    """

    outcomes: tuple[IngestJobOutcome, ...] = field(default=())

    def count(self, outcome: JobOutcome) -> int:
        """The number of jobs that ended this way."""
        return sum(1 for o in self.outcomes if o.outcome is outcome)


class IngestJobRunner:
    """Validates and runs ingest jobs against the tables of an instance.

    Args:
        instance: The instance (tables, ingest job tracker).
        task_id: The task running the jobs, recorded in the tracker.
        limits: The memory and local disk limits; by default those each table's and the instance's properties set
            (:class:`sleeper.ingest.local_store.IngestLimits`).
        local_dir: Where ingest writes sorted runs.
        options: How to reach S3 for S3 paths (``bucket/key``, ``s3://``, ``s3a://``).
        filesystem: A filesystem to read every input path from instead of the one its form names (tests).
        clock: The time of tracker updates (timezone-aware).
        async_commit: Whether to send the files to the state store committer; None follows each table's
            ``sleeper.table.ingest.job.files.commit.async``.
    """

    def __init__(
        self,
        instance: IngestRuntime,
        *,
        task_id: str | None = None,
        limits: IngestLimits | None = None,
        local_dir: str | Path | None = None,
        options: FileSystemOptions | None = None,
        filesystem: pafs.FileSystem | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
        async_commit: bool | None = None,
    ) -> None:
        self._instance = instance
        self._task_id = task_id
        self._limits = limits
        self._async_commit = async_commit
        self._local_dir = local_dir
        self._options = options
        self._filesystem = filesystem
        self._clock = clock

    def run_message(self, body: str) -> IngestJobOutcome:
        """Reads an ingest job message and runs it; an unreadable message is a rejected job.

        Args:
            body: The message body (Sleeper's ingest job JSON).

        Returns:
            How the job ended.
        """
        try:
            job = IngestJob.from_json(body, allow_local=True)
        except MessageError as e:
            tracker = self._instance.ingest_job_tracker
            return IngestJobOutcome.unreadable(tracker, e, body, task_id=self._task_id, clock=self._clock)
        return self.run(job)

    def run(self, job: IngestJob) -> IngestJobOutcome:
        """Validates a job and, if it is accepted, ingests its files.

        Every step is recorded in the instance's ingest job tracker under one new run id. Errors while ingesting
        are recorded as a failed run and returned, not raised.

        Args:
            job: The job.

        Returns:
            How the job ended.
        """
        table = job.resolve_table(by_id=self._table_by_id, by_name=self._table_by_name)
        run = IngestRun(
            self._instance.ingest_job_tracker,
            job_id=job.id,
            table_id=table.table_id if table is not None else None,
            task_id=self._task_id,
            clock=self._clock,
        )
        if table is None:
            missing = TableNotFoundError.of(table_name=job.table_name, table_id=job.table_id)
            return IngestJobOutcome.rejected(run, job, (), (str(missing),))
        refused = self._instance.ingest_sources.problems(job.files, lambda name: self._table_by_id(name) is not None)
        if refused:  # before anything is read
            return IngestJobOutcome.rejected(run, job, (), tuple(refused))
        inputs, reasons = expand_job_files(
            job.files, lambda p: expand_paths([p], self._options, filesystem=self._filesystem), _uri
        )
        files = tuple(i.path for i in inputs)
        if not reasons:
            reasons = self._check_schemas(table, inputs)
        inputs_hash = input_files_hash(i.uri for i in inputs)
        if not reasons:
            try:
                table.state_store.job_already_added(job.id, inputs_hash)
            except JobIdReusedError as e:
                reasons = [str(e)]
        if reasons:
            return IngestJobOutcome.rejected(run, job, files, tuple(reasons))
        run.validated(file_count=len(files))
        run.started(file_count=len(files))
        send_commit = self._commit_sender(table)
        result = run.attempt(
            lambda: ingest_batches(
                table.schema,
                table.properties,
                table.state_store,
                table.data_prefix,
                self._read(table, inputs),
                job_id=job.id,
                inputs_hash=inputs_hash,
                local_dir=self._local_dir,
                limits=self._limits,
                filesystem=self._filesystem,
                options=self._options,
                send_commit=send_commit,
                task_id=self._task_id if send_commit is not None else None,
                job_run_id=run.run_id if send_commit is not None else None,
            ),
            # the job's data, not this code, is at fault (a file that cannot be decoded, a value that does not fit the
            # table's type): its message says why
            expected=(InputFileError, SchemaMismatchError),
        )
        return IngestJobOutcome.of_attempt(run, result, files, files_written=lambda r: len(r.files))

    def _commit_sender(self, table: SleeperTable) -> Callable[[AddFilesTransaction], None] | None:
        commits_async = self._async_commit
        if commits_async is None:
            commits_async = table.properties.get_bool(INGEST_FILES_COMMIT_ASYNC)
        if not commits_async:
            return None
        return transaction_sender(self._instance.queue(STATE_STORE_COMMITTER_Q), table.state_store)

    # --- validation ------------------------------------------------------------------------------------------
    def _table_by_id(self, table_id: str) -> SleeperTable | None:
        try:
            return self._instance.table_by_id(table_id)
        except TableNotFoundError:
            return None

    def _table_by_name(self, name: str) -> SleeperTable | None:
        try:
            return self._instance.table(name)
        except TableNotFoundError:
            return None

    def _check_schemas(self, table: SleeperTable, inputs: Sequence[InputFile]) -> list[str]:
        target = arrow_schema(table.schema)
        reasons: list[str] = []
        for file in inputs:
            try:
                file_schema, _ = read_footer(file)
            except Exception as e:  # any unreadable file rejects the job, whatever pyarrow raised
                reasons.append(f"File {file.path} is not readable Parquet: {e}")
                continue
            # every batch read is conformed with a safe cast (as rows given to Table.ingest are): one rule for both
            reasons.extend(schema_problems(file.path, file_schema, target, values_checked=True))
        return reasons

    # --- reading -----------------------------------------------------------------------------------------------
    def _read(self, table: SleeperTable, inputs: Sequence[InputFile]) -> Iterator[pa.RecordBatch]:
        columns = list(table.schema.field_names)
        for file in inputs:
            yield from read_batches(file, columns, batch_rows=READ_BATCH_ROWS)


def _uri(file: InputFile) -> str:
    return file.uri


def run_ingest_queue(
    instance: IngestRuntime,
    *,
    until_idle: bool = True,
    runner: IngestJobRunner | None = None,
    wait_seconds: float = 0,
    max_jobs: int | None = None,
) -> QueueRunSummary:
    """Runs ingest jobs from the instance's ingest job queue.

    Finished and rejected jobs are deleted from the queue; failed jobs are left to be delivered again once their
    visibility timeout passes.

    Args:
        instance: The instance (its ingest job queue and tables).
        until_idle: Stop when a receive finds no message; otherwise keep polling (up to ``max_jobs``).
        runner: The runner to use; one with default settings if omitted.
        wait_seconds: How long each receive waits for a message (long polling).
        max_jobs: Stop after this many messages.

    Returns:
        The outcome of every message received.
    """
    queue = instance.queue(INGEST_JOB_QUEUE)
    chosen = runner or IngestJobRunner(instance)
    outcomes: list[IngestJobOutcome] = []
    while max_jobs is None or len(outcomes) < max_jobs:
        messages = queue.receive(1, wait_seconds=wait_seconds)
        if not messages:
            if until_idle:
                break
            continue
        message = messages[0]
        outcome = chosen.run_message(message.body)
        outcomes.append(outcome)
        if outcome.outcome is not JobOutcome.FAILED:
            queue.delete(message.receipt_handle)
    return QueueRunSummary(outcomes=tuple(outcomes))
