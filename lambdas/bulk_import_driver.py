"""Bulk import Spark driver, the bulk import image's entry point on EMR Serverless and EMR (spec 3.5): arguments are
the config bucket, job id, task id, job run id and platform, as the starter passes them; runs the job the starter
wrote to the bulk import bucket, recording it under the starter's run id. Exits 0 when the job finished, 1 when it
failed (recorded in the ingest job tracker), 2 on bad arguments."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from lambdas._common import LOGGER, aws_instance, use_instance
from sleeper.bulk_import.driver import BulkImportJobFileError
from sleeper.core.trackers.runs import JobOutcome
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from sleeper.runtime.aws.operations import run_bulk_import_driver


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``<config bucket> <job id> <task id> <job run id> [<platform>]``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 4:
        LOGGER.error("usage: bulk_import_driver <config bucket> <job id> <task id> <job run id> [<platform>]")
        return 2
    config_bucket, job_id, task_id, job_run_id = args[:4]
    use_instance(AwsInstance(AwsRuntimeConfig.from_environment({**os.environ, "CONFIG_BUCKET": config_bucket})))
    try:
        outcome = run_bulk_import_driver(aws_instance(), job_id, task_id, job_run_id)
    except BulkImportJobFileError as e:
        LOGGER.error("%s", e)
        return 1
    LOGGER.info("Bulk import job %s run %s: %s %s", job_id, job_run_id, outcome.outcome.value, outcome.reasons)
    return 0 if outcome.outcome is JobOutcome.FINISHED else 1


if __name__ == "__main__":
    raise SystemExit(main())
