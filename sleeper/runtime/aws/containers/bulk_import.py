"""The bulk import image's Spark driver, run by EMR Serverless or EMR with the arguments the starter
passes: the config bucket, job id, task id, job run id and platform. It reads the job the starter wrote to the bulk
import bucket and runs it (:func:`sleeper.bulk_import.driver.run_started_bulk_import`) under the starter's run id.
Exits 0 when the job finished, 1 when it failed (recorded in the ingest job tracker), 2 on bad arguments."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sleeper.bulk_import import BulkImportJobFileError, BulkImportOutcome, bulk_import_job_key, run_started_bulk_import
from sleeper.core import SleeperError
from sleeper.core.jobs import BulkImportJob
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.trackers import IngestJobFailed, JobOutcome
from sleeper.io import read_bytes, resolve
from sleeper.runtime.aws.containers import LOGGER, configure_logging
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["main", "run_bulk_import_driver"]


def _spark_for_driver() -> SparkSession | None:
    """The session spark-submit made (on EMR and EMR Serverless); None elsewhere, so the job starts a local one."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.builder.appName("sleeper-bulk-import").getOrCreate()


def run_bulk_import_driver(
    instance: AwsInstance, job_id: str, task_id: str, job_run_id: str, *, spark: SparkSession | None = None
) -> BulkImportOutcome:
    """What the bulk import Spark driver does with its arguments: reads ``bulk_import/<jobId>-<jobRunId>.json`` from
    the bulk import bucket and runs the job under the starter's run id.

    Raises:
        BulkImportJobFileError: If the job file cannot be read (recorded as a failed run when the tracker knows the
            job's table).
    """
    key = bulk_import_job_key(job_id, job_run_id)
    location = f"s3a://{instance.properties.get(cdk.BULK_IMPORT_BUCKET.name) or ''}/{key}"
    try:
        filesystem, path = resolve(location, instance.filesystem_options)
        job = BulkImportJob.from_json(read_bytes(filesystem, path).decode())
    except (OSError, UnicodeDecodeError, SleeperError) as e:
        error = BulkImportJobFileError(f"cannot read bulk import job file {location}: {e}")
        _record_driver_failure(instance, job_id, task_id, job_run_id, str(error))
        raise error from e
    return run_started_bulk_import(
        instance,
        job,
        job_run_id=job_run_id,
        task_id=task_id,
        spark=spark if spark is not None else _spark_for_driver(),
        options=instance.filesystem_options,
    )


def _record_driver_failure(instance: AwsInstance, job_id: str, task_id: str, job_run_id: str, reason: str) -> None:
    status = instance.ingest_job_tracker.job(job_id)
    if status is None or status.table_id is None:
        LOGGER.error("bulk import job %s is not tracked; cannot record its failure: %s", job_id, reason)
        return
    instance.ingest_job_tracker.record(
        IngestJobFailed(
            job_id=job_id,
            table_id=status.table_id,
            update_time=datetime.now(tz=UTC),
            job_run_id=job_run_id,
            task_id=task_id,
            reasons=(reason,),
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``<config bucket> <job id> <task id> <job run id> [<platform>]``."""
    configure_logging()
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 4:
        LOGGER.error("usage: bulk_import_driver <config bucket> <job id> <task id> <job run id> [<platform>]")
        return 2
    config_bucket, job_id, task_id, job_run_id = args[:4]
    instance = AwsInstance(AwsRuntimeConfig.from_environment({**os.environ, "CONFIG_BUCKET": config_bucket}))
    configure_logging(instance)
    try:
        outcome = run_bulk_import_driver(instance, job_id, task_id, job_run_id)
    except BulkImportJobFileError as e:
        LOGGER.error("%s", e)
        return 1
    LOGGER.info("Bulk import job %s run %s: %s %s", job_id, job_run_id, outcome.outcome.value, outcome.reasons)
    return 0 if outcome.outcome is JobOutcome.FINISHED else 1


if __name__ == "__main__":
    raise SystemExit(main())
