"""Bulk import jobs on the instance's EMR Serverless application (a ``BulkImportPlatform`` of
:mod:`sleeper.bulk_import.launch_ports`).

:class:`EmrServerlessPlatform`: ``StartJobRun`` on ``sleeper.bulk.import.emr.serverless.application.id`` as
``sleeper.bulk.import.emr.serverless.role.arn``, named ``job-<jobRunId>``, logs to the bulk import bucket, Spark
settings from the ``sleeper.bulk.import.emr.serverless.spark.*`` properties overridden by the job's ``sparkConf``;
the driver is the script in the bulk import image unless another :class:`~.bulk_import.SparkDriver` is given.

No mypy stubs for the EMR Serverless client are installed, so it is typed ``Any``.
"""

from __future__ import annotations

import logging
from typing import Any

from sleeper.adapters.aws.clients import EmrServerlessClient
from sleeper.adapters.aws.exceptions import translated
from sleeper.adapters.aws.launchers.bulk_import import SparkDriver, conf_options, driver_arguments, merge_spark_conf
from sleeper.adapters.aws.launchers.common import required_property
from sleeper.bulk_import import BulkImportRun, PlatformStart
from sleeper.core.properties import InstanceProperties, serverless_spark_conf
from sleeper.core.properties import instance_cdk as cdk

__all__ = ["EmrServerlessPlatform", "emr_serverless_start_job_run_request"]

_LOG = logging.getLogger(__name__)


def emr_serverless_start_job_run_request(
    properties: InstanceProperties, run: BulkImportRun, *, driver: SparkDriver
) -> dict[str, Any]:
    """The ``StartJobRun`` request of a job on the instance's EMR Serverless application.

    Raises:
        PropertyError: If the application, its role, the config or bulk import bucket is not set.
    """
    application_name = required_property(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME)
    parameters = [*driver.submit_options, *conf_options(merge_spark_conf(serverless_spark_conf(properties), run.job))]
    return {
        "applicationId": required_property(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID),
        "name": f"job-{run.job_run_id}",
        "executionRoleArn": required_property(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN),
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": driver.entry_point,
                "entryPointArguments": driver_arguments(
                    properties, run.job, f"{application_name}-EMRS", run.job_run_id
                ),
                "sparkSubmitParameters": " ".join(parameters),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {
                "s3MonitoringConfiguration": {"logUri": f"s3://{required_property(properties, cdk.BULK_IMPORT_BUCKET)}"}
            }
        },
    }


class EmrServerlessPlatform:
    """Starts bulk import jobs on the instance's EMR Serverless application (a ``BulkImportPlatform``)."""

    def __init__(
        self, client: EmrServerlessClient, properties: InstanceProperties, *, driver: SparkDriver | None = None
    ) -> None:
        self._client = client
        self._properties = properties
        self._driver = driver or SparkDriver()

    def start(self, run: BulkImportRun) -> PlatformStart:
        """Calls ``StartJobRun``.

        Raises:
            AwsError: If EMR Serverless refuses the job.
        """
        request = emr_serverless_start_job_run_request(self._properties, run, driver=self._driver)
        with translated(f"StartJobRun {request['applicationId']}"):
            response = self._client.start_job_run(**request)
        _LOG.info("started bulk import job %s as EMR Serverless job run %s", run.job.id, response.get("jobRunId"))
        return PlatformStart.STARTED
