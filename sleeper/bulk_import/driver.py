"""The Spark driver's side of a bulk import started by the starter: run one job under the run id the
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
from sleeper.bulk_import.runner import BulkImportOutcome, import_validated
from sleeper.bulk_import.validation import validate_job
from sleeper.core import STATE_STORE_COMMITTER_Q
from sleeper.core.jobs import BulkImportJob
from sleeper.core.trackers import IngestRun, JobOutcome
from sleeper.io import FileSystemOptions
from sleeper.statestore import SleeperRuntime

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BulkImportJobFileError", "run_started_bulk_import"]

_LOG = logging.getLogger(__name__)


class BulkImportJobFileError(BulkImportError):
    """The job file the starter wrote for a run cannot be read."""


def run_started_bulk_import(
    instance: SleeperRuntime,
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
    validation = validate_job(instance, job, options=options)
    table = validation.table
    run = IngestRun(
        instance.ingest_job_tracker,
        job_id=job.id,
        table_id=table.table_id if table is not None else job.table_id,
        task_id=task_id,
        run_id=job_run_id,
        clock=clock,
    )
    if table is None or not validation.accepted:
        reasons = validation.reasons or ("the job's table was not found",)
        _LOG.warning("bulk import job %s run %s no longer valid: %s", job.id, job_run_id, "; ".join(reasons))
        if run.table_id is not None:
            run.failed(reasons)
        return BulkImportOutcome(job_id=job.id, outcome=JobOutcome.FAILED, table_id=run.table_id, reasons=reasons)
    committer = instance.queue(STATE_STORE_COMMITTER_Q)
    return import_validated(run, validation, table, spark=spark, options=options, clock=clock, committer=committer)
