"""Bulk import jobs on EMR (two ``BulkImportPlatform`` implementations of :mod:`sleeper.bulk_import.launch_ports`):

* :class:`EmrPlatform`: ``RunJobFlow`` of a cluster ``sleeper-<id>-<tableId>-<jobId>`` with instance fleets from the
  table's ``sleeper.table.bulk.import.emr.*`` properties (overridden by the job's ``platformSpec``), managed scaling,
  and one ``spark-submit`` step; the cluster ends when the step does;
* :class:`PersistentEmrPlatform`: ``AddJobFlowSteps`` on the running cluster named
  ``sleeper.bulk.import.persistent.emr.cluster.name``; when its active steps are at their limit the job is reported
  as :attr:`~sleeper.bulk_import.launch_ports.PlatformStart.PLATFORM_FULL` and the
  :class:`~.bulk_import.SqsBulkImportRequeue` of :func:`persistent_emr_requeue` puts it back on
  ``sleeper.bulk.import.persistent.emr.job.queue.url`` after
  ``sleeper.bulk.import.persistent.emr.cluster.full.requeue.delay`` seconds.

The driver on EMR is ``s3://<sleeper.jars.bucket>/bulk-import-driver-<sleeper.version>.py`` (:func:`emr_driver`)
unless another :class:`~.bulk_import.SparkDriver` is given.

No mypy stubs for the EMR client are installed, so it is typed ``Any``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.clients import EmrClient
from sleeper.adapters.aws.exceptions import AwsError, error_code, translate, translated
from sleeper.adapters.aws.launchers.bulk_import import (
    SparkDriver,
    SqsBulkImportRequeue,
    conf_options,
    driver_arguments,
    merge_spark_conf,
)
from sleeper.adapters.aws.launchers.common import required_property
from sleeper.bulk_import import BulkImportRun, PlatformStart
from sleeper.core import PropertyError
from sleeper.core.properties import (
    EMR_JAVA_HOME,
    ID,
    JARS_BUCKET,
    SUBNETS,
    InstanceProperties,
    PropertyDefinition,
    emr_spark_conf,
)
from sleeper.core.properties import instance_bulk as bulk
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties import table as table_props

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "EmrPlatform",
    "PersistentEmrPlatform",
    "emr_cluster_name",
    "emr_driver",
    "emr_run_job_flow_request",
    "persistent_emr_requeue",
    "persistent_emr_step",
    "spark_submit_command",
]

_LOG = logging.getLogger(__name__)

_EMR_STEP_JAR = "command-runner.jar"
_CLUSTER_FULL = re.compile(r"Maximum number of active steps.+ for cluster exceeded\.")
_ACTIVE_CLUSTER_STATES = ["BOOTSTRAPPING", "RUNNING", "STARTING", "WAITING"]


def emr_driver(properties: InstanceProperties) -> SparkDriver:
    """The default driver on EMR clusters: ``s3://<sleeper.jars.bucket>/bulk-import-driver-<sleeper.version>.py``.

    Raises:
        PropertyError: If the jars bucket or the version is not set.
    """
    bucket = required_property(properties, JARS_BUCKET)
    version = required_property(properties, cdk.VERSION)
    return SparkDriver(entry_point=f"s3://{bucket}/bulk-import-driver-{version}.py")


def spark_submit_command(
    properties: InstanceProperties, run: BulkImportRun, *, task_id: str, driver: SparkDriver
) -> list[str]:
    """The ``spark-submit`` command of an EMR step: cluster deploy mode, the job's ``sparkConf`` (the cluster holds
    the instance's Spark settings), the driver and its arguments."""
    return [
        "spark-submit",
        "--deploy-mode",
        "cluster",
        *conf_options(merge_spark_conf({}, run.job)),
        *driver.submit_options,
        driver.entry_point,
        *driver_arguments(properties, run.job, task_id, run.job_run_id),
    ]


def _spec(run: BulkImportRun, prop: PropertyDefinition) -> str | None:
    spec = run.job.platform_spec or {}
    if prop.name in spec:
        return spec[prop.name]
    return run.table_properties.get(prop)


def _spec_int(run: BulkImportRun, prop: PropertyDefinition) -> int:
    value = _spec(run, prop)
    try:
        return int(value or "")
    except ValueError as e:
        raise PropertyError(f"{prop.name} is not an integer: {value!r}") from e


def _instance_types(entries: Sequence[str]) -> list[tuple[str, int | None]]:
    """Instance types each optionally followed by a weight: ``m7i.4xlarge,5,m7i.8xlarge``."""
    out: list[tuple[str, int | None]] = []
    for entry in entries:
        if entry.isdigit():
            if not out:
                raise PropertyError(f"instance type capacity given without an instance type: {entry}")
            out[-1] = (out[-1][0], int(entry))
        else:
            out.append((entry, None))
    return out


def _fleet_instance_types(
    properties: InstanceProperties,
    run: BulkImportRun,
    *,
    x86: PropertyDefinition,
    arm: PropertyDefinition,
    weighted: bool,
    ebs: Mapping[str, Any],
) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    architectures = [
        a.strip().lower()
        for a in (_spec(run, table_props.BULK_IMPORT_EMR_INSTANCE_ARCHITECTURE) or "").split(",")
        if a.strip()
    ]
    for architecture in architectures:
        if architecture not in EMR_JAVA_HOME:
            raise PropertyError(f"unknown EMR instance architecture {architecture!r} (expected x86_64 or arm64)")
        types_prop = arm if architecture == "arm64" else x86
        entries = [e.strip() for e in (_spec(run, types_prop) or "").split(",") if e.strip()]
        for instance_type, weight in _instance_types(entries):
            config: dict[str, Any] = {
                "InstanceType": instance_type,
                "EbsConfiguration": dict(ebs),
                "Configurations": _emr_configurations(properties, architecture),
            }
            if weighted and weight is not None:
                config["WeightedCapacity"] = weight
            configs.append(config)
    return configs


def _emr_configurations(properties: InstanceProperties, architecture: str) -> list[dict[str, Any]]:
    java_home = {"JAVA_HOME": EMR_JAVA_HOME[architecture]}
    return [
        {"Classification": "spark", "Properties": {"maximizeResourceAllocation": "false"}},
        {
            "Classification": "yarn-site",
            "Properties": {
                "yarn.nodemanager.vmem-check-enabled": "false",
                "yarn.nodemanager.pmem-check-enabled": "false",
            },
        },
        {"Classification": "spark-defaults", "Properties": emr_spark_conf(properties, architecture)},
        {"Classification": "spark-env", "Configurations": [{"Classification": "export", "Properties": java_home}]},
        {"Classification": "mapred-site", "Properties": {"mapreduce.map.output.compress": "true"}},
        {"Classification": "hadoop-env", "Configurations": [{"Classification": "export", "Properties": java_home}]},
    ]


def emr_cluster_name(properties: InstanceProperties, run: BulkImportRun) -> str:
    """The name of the cluster created for a job: ``sleeper-<instance id>-<table id>-<job id>``."""
    return "-".join(("sleeper", required_property(properties, ID), run.table_properties.table_id, run.job.id))


def emr_run_job_flow_request(
    properties: InstanceProperties, run: BulkImportRun, *, driver: SparkDriver
) -> dict[str, Any]:
    """The ``RunJobFlow`` request of an EMR cluster that runs one job and ends.

    Raises:
        PropertyError: If a property the request needs is not set or invalid.
    """
    name = emr_cluster_name(properties, run)
    ebs = {
        "EbsBlockDeviceConfigs": [
            {
                "VolumeSpecification": {
                    "SizeInGB": properties.get_int(bulk.BULK_IMPORT_EMR_EBS_VOLUME_SIZE_IN_GB),
                    "VolumeType": required_property(properties, bulk.BULK_IMPORT_EMR_EBS_VOLUME_TYPE),
                },
                "VolumesPerInstance": properties.get_int(bulk.BULK_IMPORT_EMR_EBS_VOLUMES_PER_INSTANCE),
            }
        ],
        "EbsOptimized": True,
    }
    initial = _spec_int(run, table_props.BULK_IMPORT_EMR_INITIAL_EXECUTOR_CAPACITY)
    executors: dict[str, Any] = {
        "Name": "Executors",
        "InstanceFleetType": "CORE",
        "InstanceTypeConfigs": _fleet_instance_types(
            properties,
            run,
            x86=table_props.BULK_IMPORT_EMR_EXECUTOR_X86_INSTANCE_TYPES,
            arm=table_props.BULK_IMPORT_EMR_EXECUTOR_ARM_INSTANCE_TYPES,
            weighted=True,
            ebs=ebs,
        ),
    }
    if _spec(run, table_props.BULK_IMPORT_EMR_EXECUTOR_MARKET_TYPE) == "ON_DEMAND":
        executors["TargetOnDemandCapacity"] = initial
    else:
        executors["TargetSpotCapacity"] = initial
    driver_fleet = {
        "Name": "Driver",
        "InstanceFleetType": "MASTER",
        "InstanceTypeConfigs": _fleet_instance_types(
            properties,
            run,
            x86=table_props.BULK_IMPORT_EMR_MASTER_X86_INSTANCE_TYPES,
            arm=table_props.BULK_IMPORT_EMR_MASTER_ARM_INSTANCE_TYPES,
            weighted=False,
            ebs=ebs,
        ),
        "TargetOnDemandCapacity": 1,
    }
    instances: dict[str, Any] = {
        "Ec2SubnetIds": properties.get_list(SUBNETS),
        "InstanceFleets": [executors, driver_fleet],
    }
    key_name = properties.get(bulk.BULK_IMPORT_EMR_EC2_KEYPAIR_NAME)
    if key_name:
        instances["Ec2KeyName"] = key_name
    extra_group = properties.get(bulk.BULK_IMPORT_EMR_MASTER_ADDITIONAL_SECURITY_GROUP)
    if extra_group:
        instances["AdditionalMasterSecurityGroups"] = [extra_group]
    request: dict[str, Any] = {
        "Name": name,
        "Instances": instances,
        "VisibleToAllUsers": True,
        "ManagedScalingPolicy": {
            "ComputeLimits": {
                "UnitType": "InstanceFleetUnits",
                "MinimumCapacityUnits": initial,
                "MaximumCapacityUnits": _spec_int(run, table_props.BULK_IMPORT_EMR_MAX_EXECUTOR_CAPACITY),
            }
        },
        "ScaleDownBehavior": "TERMINATE_AT_TASK_COMPLETION",
        "ReleaseLabel": _spec(run, table_props.BULK_IMPORT_EMR_RELEASE_LABEL),
        "Applications": [{"Name": "Spark"}],
        "ServiceRole": required_property(properties, cdk.BULK_IMPORT_EMR_CLUSTER_ROLE_NAME),
        "JobFlowRole": required_property(properties, cdk.BULK_IMPORT_EMR_EC2_ROLE_NAME),
        "Steps": [
            {
                "Name": f"Bulk Load (job id {run.job.id})",
                "HadoopJarStep": {
                    "Jar": _EMR_STEP_JAR,
                    "Args": spark_submit_command(properties, run, task_id=f"{name}-EMR", driver=driver),
                },
            }
        ],
        "Tags": [{"Key": k, "Value": v} for k, v in properties.tags().items()],
    }
    security_configuration = properties.get(cdk.BULK_IMPORT_EMR_SECURITY_CONF_NAME)
    if security_configuration:
        request["SecurityConfiguration"] = security_configuration
    bucket = properties.get(cdk.BULK_IMPORT_BUCKET)
    if bucket:
        request["LogUri"] = f"s3://{bucket}/logs"
    return request


class EmrPlatform:
    """Starts each bulk import job on an EMR cluster of its own (a ``BulkImportPlatform``)."""

    def __init__(self, client: EmrClient, properties: InstanceProperties, *, driver: SparkDriver | None = None) -> None:
        self._client = client
        self._properties = properties
        self._driver = driver

    def start(self, run: BulkImportRun) -> PlatformStart:
        """Calls ``RunJobFlow``.

        Raises:
            AwsError: If EMR refuses the cluster.
        """
        driver = self._driver or emr_driver(self._properties)
        request = emr_run_job_flow_request(self._properties, run, driver=driver)
        with translated(f"RunJobFlow {request['Name']}"):
            response = self._client.run_job_flow(**request)
        _LOG.info("started bulk import job %s on EMR cluster %s", run.job.id, response.get("JobFlowId"))
        return PlatformStart.STARTED


def persistent_emr_step(
    properties: InstanceProperties, run: BulkImportRun, *, cluster_name: str, driver: SparkDriver
) -> dict[str, Any]:
    """The step that runs a job on the persistent cluster (a failed step leaves the cluster running)."""
    return {
        "Name": f"Bulk Load (job id {run.job.id})",
        "ActionOnFailure": "CONTINUE",
        "HadoopJarStep": {
            "Jar": _EMR_STEP_JAR,
            "Args": spark_submit_command(properties, run, task_id=cluster_name, driver=driver),
        },
    }


class PersistentEmrPlatform:
    """Adds each bulk import job as a step of the persistent EMR cluster (a ``BulkImportPlatform``)."""

    def __init__(self, client: EmrClient, properties: InstanceProperties, *, driver: SparkDriver | None = None) -> None:
        self._client = client
        self._properties = properties
        self._driver = driver
        self.cluster_name = required_property(properties, cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME)
        self._cluster_id: str | None = None

    def cluster_id(self) -> str:
        """The id of the active cluster with the persistent cluster's name (looked up once).

        Raises:
            AwsError: If no active cluster has the name, or EMR cannot be asked.
        """
        if self._cluster_id is None:
            operation = f"ListClusters {self.cluster_name}"
            with translated(operation):
                pages = self._client.get_paginator("list_clusters").paginate(ClusterStates=_ACTIVE_CLUSTER_STATES)
                found = [
                    c["Id"] for page in pages for c in page.get("Clusters", []) if c.get("Name") == self.cluster_name
                ]
            if not found:
                raise AwsError(operation, "ClusterNotFound", f"found no active cluster named {self.cluster_name}")
            self._cluster_id = found[0]
        return self._cluster_id

    def start(self, run: BulkImportRun) -> PlatformStart:
        """Calls ``AddJobFlowSteps``; the cluster is full if its active steps are at their limit.

        Raises:
            AwsError: If EMR refuses the step for any other reason.
        """
        driver = self._driver or emr_driver(self._properties)
        step = persistent_emr_step(self._properties, run, cluster_name=self.cluster_name, driver=driver)
        cluster_id = self.cluster_id()
        try:
            self._client.add_job_flow_steps(JobFlowId=cluster_id, Steps=[step])
        except ClientError as e:
            message = e.response.get("Error", {}).get("Message", "")
            if _CLUSTER_FULL.fullmatch(message):
                _LOG.info("persistent EMR cluster %s is full: %s", cluster_id, message)
                return PlatformStart.PLATFORM_FULL
            raise translate(e, f"AddJobFlowSteps {cluster_id} ({error_code(e)})") from e
        except BotoCoreError as e:
            raise translate(e, f"AddJobFlowSteps {cluster_id}") from e
        _LOG.info("added bulk import job %s as a step of EMR cluster %s", run.job.id, cluster_id)
        return PlatformStart.STARTED


def persistent_emr_requeue(sqs: SQSClient, properties: InstanceProperties) -> SqsBulkImportRequeue:
    """Puts jobs back on ``sleeper.bulk.import.persistent.emr.job.queue.url`` after
    ``sleeper.bulk.import.persistent.emr.cluster.full.requeue.delay`` seconds."""
    return SqsBulkImportRequeue(
        sqs,
        required_property(properties, cdk.BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL),
        properties.get_int(bulk.BULK_IMPORT_PERSISTENT_EMR_REQUEUE_DELAY_SECONDS),
    )
