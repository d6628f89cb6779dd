"""What every bulk import platform shares (the ports of :mod:`sleeper.bulk_import.launch_ports`):

* :class:`S3BulkImportJobStore` writes the job file to ``sleeper.bulk.import.bucket``;
* :class:`SqsBulkImportRequeue` sends a job back to a queue after a delay (the persistent EMR cluster's, when it is
  full: see :func:`~sleeper.adapters.aws.launchers.emr.persistent_emr_requeue`);
* the Spark driver. It is this port's Python driver, not Sleeper's jar: it gets the arguments Sleeper's driver gets
  (config bucket, job id, task id, job run id, ``EMR``) and reads the job from
  ``bulk_import/<jobId>-<jobRunId>.json``. Where the driver script lives is a :class:`SparkDriver` (defaults: a path
  in the bulk import image on EMR Serverless; ``s3://<sleeper.jars.bucket>/bulk-import-driver-<sleeper.version>.py``
  on EMR, see :func:`~sleeper.adapters.aws.launchers.emr.emr_driver`). The job's ``className`` travels in the job
  file; no ``--class`` is passed, since a Python driver has none.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleeper.adapters.aws.exceptions import translated
from sleeper.adapters.aws.launchers.common import required_property
from sleeper.core.jobs import BulkImportJob
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_cdk as cdk

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "DEFAULT_SERVERLESS_ENTRY_POINT",
    "S3BulkImportJobStore",
    "SparkDriver",
    "SqsBulkImportRequeue",
    "bulk_import_job_store",
    "conf_options",
    "driver_arguments",
    "merge_spark_conf",
]

_LOG = logging.getLogger(__name__)

DEFAULT_SERVERLESS_ENTRY_POINT = "local:///opt/sleeper/bulk_import_driver.py"
"""The Spark driver script inside the bulk import image, run by EMR Serverless."""


# --- bulk import: the job file and the requeue -----------------------------------------------------------------------


class S3BulkImportJobStore:
    """Writes bulk import job files to the bulk import bucket (a ``BulkImportJobStore``)."""

    def __init__(self, s3: S3Client, bucket: str) -> None:
        self._s3 = s3
        self.bucket = bucket

    def write_job(self, key: str, job_json: str) -> None:
        """Puts the job's JSON at ``s3://<bucket>/<key>``.

        Raises:
            AwsError: If the object cannot be written.
        """
        with translated(f"PutObject s3://{self.bucket}/{key}"):
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=job_json.encode(), ContentType="application/json")
        _LOG.info("wrote bulk import job to s3://%s/%s", self.bucket, key)


def bulk_import_job_store(s3: S3Client, properties: InstanceProperties) -> S3BulkImportJobStore:
    """The job store on ``sleeper.bulk.import.bucket``.

    Raises:
        PropertyError: If the bucket is not set (no bulk import stack is deployed).
    """
    return S3BulkImportJobStore(s3, required_property(properties, cdk.BULK_IMPORT_BUCKET))


class SqsBulkImportRequeue:
    """Sends bulk import jobs back to a queue after a delay (a ``BulkImportRequeue``)."""

    def __init__(self, sqs: SQSClient, queue_url: str, delay_seconds: int) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self.delay_seconds = min(max(delay_seconds, 0), 900)

    def requeue(self, job: BulkImportJob) -> None:
        """Sends the job's JSON to the queue, delayed.

        Raises:
            AwsError: If the message cannot be sent.
        """
        with translated(f"SendMessage {self.queue_url}"):
            self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=job.to_json(), DelaySeconds=self.delay_seconds)


# --- bulk import: Spark -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkDriver:
    """The bulk import Spark driver script and any ``spark-submit`` options it needs.

    Attributes:
        entry_point: The driver script (``local://`` in an image, or ``s3://``).
        submit_options: Extra ``spark-submit`` options before the script, e.g. ``("--py-files", "s3://…/x.zip")``.
    """

    entry_point: str = DEFAULT_SERVERLESS_ENTRY_POINT
    submit_options: tuple[str, ...] = ()


def driver_arguments(properties: InstanceProperties, job: BulkImportJob, task_id: str, job_run_id: str) -> list[str]:
    """The arguments of the Spark driver: config bucket, job id, task id, job run id and ``EMR``, as Sleeper's.

    Raises:
        PropertyError: If the config bucket is not set.
    """
    return [required_property(properties, cdk.CONFIG_BUCKET), job.id, task_id, job_run_id, "EMR"]


def merge_spark_conf(base: Mapping[str, str], job: BulkImportJob) -> dict[str, str]:
    """Spark settings: the base, overridden by the job's own ``sparkConf``."""
    merged = dict(base)
    merged.update(job.spark_conf or {})
    return merged


def conf_options(conf: Mapping[str, str]) -> list[str]:
    """Spark settings as ``spark-submit`` options: ``--conf key=value`` each."""
    out: list[str] = []
    for key, value in conf.items():
        out.extend(("--conf", f"{key}={value}"))
    return out
