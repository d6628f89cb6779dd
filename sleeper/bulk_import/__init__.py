"""Bulk import with Spark: validate a job, extend the partition tree if the table has too few leaves,
partition and sort the input with Spark, write one data file per leaf with this port's writer, commit once per job.

PySpark (the ``spark`` extra) is imported only when a Spark job runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.bulk_import.exceptions import (
    BulkImportConfigError,
    BulkImportError,
    InsufficientDataForSplittingError,
    SparkUnavailableError,
)
from sleeper.bulk_import.leaves import LeafTagger, spark_partition_keys
from sleeper.bulk_import.presplit import PreSplitSettings, plan_partition_tree_extension
from sleeper.bulk_import.runner import (
    BulkImportOutcome,
    BulkImportResult,
    run_bulk_import,
    run_bulk_import_message,
)
from sleeper.bulk_import.spark_job import SparkWriteResult, spark_session, write_with_spark
from sleeper.bulk_import.validation import InputFile, JobValidation, validate_job
from sleeper.core import lazy_face

__all__ = [
    "BulkImportConfigError",
    "BulkImportError",
    "BulkImportOutcome",
    "BulkImportResult",
    "InputFile",
    "InsufficientDataForSplittingError",
    "JobValidation",
    "LeafTagger",
    "PreSplitSettings",
    "SparkUnavailableError",
    "SparkWriteResult",
    "plan_partition_tree_extension",
    "run_bulk_import",
    "run_bulk_import_message",
    "spark_partition_keys",
    "spark_session",
    "validate_job",
    "write_with_spark",
]

if TYPE_CHECKING:
    from sleeper.bulk_import.driver import BulkImportJobFileError as BulkImportJobFileError
    from sleeper.bulk_import.driver import run_started_bulk_import as run_started_bulk_import
    from sleeper.bulk_import.launch_ports import BulkImportPlatform as BulkImportPlatform
    from sleeper.bulk_import.launch_ports import BulkImportRequeue as BulkImportRequeue
    from sleeper.bulk_import.launch_ports import BulkImportRun as BulkImportRun
    from sleeper.bulk_import.launch_ports import PlatformStart as PlatformStart
    from sleeper.bulk_import.launch_ports import bulk_import_job_key as bulk_import_job_key
    from sleeper.bulk_import.ports import BulkImportLaunch as BulkImportLaunch
    from sleeper.bulk_import.ports import BulkImportStartRuntime as BulkImportStartRuntime
    from sleeper.bulk_import.starter import PlatformFullError as PlatformFullError

__getattr__, __dir__ = lazy_face(__name__, __file__)
