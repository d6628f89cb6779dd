"""The Spark driver's side of a bulk import started by the starter (spec 3.5): run one job under the run id the
starter recorded it validated under.

The starter (:mod:`sleeper.bulk_import.starter`) validated the job, recorded it under a new run id and wrote it, with
its table id and name set and its paths expanded to files, to ``bulk_import/<jobId>-<jobRunId>.json``. The driver
EMR Serverless or EMR runs reads that file and calls :func:`run_started_bulk_import`, which:

1. checks the job's table and files again (they may have changed since the start); a job that no longer passes is
   recorded as a failed run with the reasons, and nothing is written;
2. records the run started (not the start of a run: the starter's validation began it);
3. writes the data with Spark and commits it once per job id (as :func:`sleeper.bulk_import.runner.run_bulk_import`
   does: a job whose files were added before from the same input files adds nothing, one whose id was used for other
   input files fails with ``JobIdReusedError`` before Spark starts, and a run that loses the race drops its files);
4. records the run finished, or failed with the error.

So the job's one run in the tracker goes validated → started → finished (or failed), as Sleeper's driver records it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sleeper.bulk_import.exceptions import BulkImportError
from sleeper.bulk_import.ports import BulkImportInstance
from sleeper.bulk_import.runner import BulkImportOutcome, BulkImportResult, JobOutcome, commit_bulk_import_files
from sleeper.bulk_import.spark_job import spark_session, write_with_spark
from sleeper.bulk_import.validation import validate_job
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.trackers.ingest import IngestJobFailed, IngestJobFinished, IngestJobStarted
from sleeper.io.filesystem import FileSystemOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BulkImportJobFileError", "run_started_bulk_import"]

_LOG = logging.getLogger(__name__)


class BulkImportJobFileError(BulkImportError):
    """The job file the starter wrote for a run cannot be read."""


def run_started_bulk_import(
    instance: BulkImportInstance,
    job: BulkImportJob,
    *,
    job_run_id: str,
    task_id: str | None = None,
    spark: SparkSession | None = None,
    options: FileSystemOptions | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
) -> BulkImportOutcome:
    """Runs a job the starter started, recording every step under its run id. Errors are recorded and returned.

    Args:
        instance: The instance (tables, ingest job tracker).
        job: The job, as the starter wrote it.
        job_run_id: The run the starter recorded.
        task_id: The task running the job (the EMR Serverless application or EMR cluster).
        spark: The Spark session; a local one is started and stopped around the job if omitted.
        options: How to reach S3.
        clock: The time of tracker updates.

    Returns:
        How the job ended: finished, or failed (nothing written) with the reasons.
    """
    tracker = instance.ingest_job_tracker
    validation = validate_job(instance, job, options=options)
    table = validation.table
    uris = tuple(f.uri for f in validation.files)
    if table is None or not validation.accepted:
        reasons = validation.reasons or ("the job's table was not found",)
        _LOG.warning("bulk import job %s run %s no longer valid: %s", job.id, job_run_id, "; ".join(reasons))
        table_id = table.table_id if table is not None else job.table_id
        if table_id is not None:
            tracker.record(
                IngestJobFailed(
                    job_id=job.id,
                    table_id=table_id,
                    update_time=clock(),
                    job_run_id=job_run_id,
                    task_id=task_id,
                    reasons=reasons,
                )
            )
        return BulkImportOutcome(job_id=job.id, outcome=JobOutcome.FAILED, table_id=table_id, reasons=reasons)
    table_id = table.table_id
    tracker.record(
        IngestJobStarted(
            job_id=job.id,
            table_id=table_id,
            update_time=clock(),
            job_run_id=job_run_id,
            task_id=task_id,
            file_count=len(uris),
            start_of_run=False,
        )
    )
    state_store = table.state_store
    try:
        if state_store.job_already_added(job.id, validation.inputs_hash):
            result = BulkImportResult(rows_read=0, rows_written=0, already_added=True)
        else:
            session = spark if spark is not None else spark_session()
            try:
                written = write_with_spark(
                    session,
                    schema=table.schema,
                    properties=table.properties,
                    state_store=state_store,
                    data_prefix=table.data_prefix,
                    files=uris,
                    total_rows=validation.total_rows,
                    options=options,
                )
            finally:
                if spark is None:
                    session.stop()
            committed = commit_bulk_import_files(
                state_store,
                written.references,
                job_id=job.id,
                task_id=task_id,
                job_run_id=job_run_id,
                inputs_hash=validation.inputs_hash,
                rows_read=validation.total_rows,
                options=options,
                clock=clock,
                data_prefix=table.data_prefix,
            )
            result = BulkImportResult(
                rows_read=committed.rows_read,
                rows_written=committed.rows_written,
                references=committed.references,
                partitions_added=written.partitions_added,
                already_added=committed.already_added,
                seconds=dict(written.seconds),
            )
    except Exception as e:
        _LOG.exception("bulk import job %s run %s failed", job.id, job_run_id)
        reasons = (f"{type(e).__name__}: {e}",)
        tracker.record(
            IngestJobFailed(
                job_id=job.id,
                table_id=table_id,
                update_time=clock(),
                job_run_id=job_run_id,
                task_id=task_id,
                reasons=reasons,
            )
        )
        return BulkImportOutcome(
            job_id=job.id, outcome=JobOutcome.FAILED, table_id=table_id, files=uris, reasons=reasons
        )
    tracker.record(
        IngestJobFinished(
            job_id=job.id,
            table_id=table_id,
            update_time=clock(),
            job_run_id=job_run_id,
            task_id=task_id,
            rows_read=result.rows_read,
            rows_written=result.rows_written,
            files_written=len(result.references),
        )
    )
    return BulkImportOutcome(job_id=job.id, outcome=JobOutcome.FINISHED, table_id=table_id, files=uris, result=result)
