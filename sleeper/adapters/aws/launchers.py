"""Starting work on AWS: ECS tasks for compaction and ingest (spec 3.3, 4.4), and bulk import Spark jobs on EMR
Serverless, an EMR cluster per job, or a persistent EMR cluster (spec 3.5).

ECS (the ``TaskLauncher`` ports of :mod:`sleeper.compaction.launch_ports` and :mod:`sleeper.ingest.launch_ports`):

* tasks running and pending = ``pendingTasksCount + runningTasksCount`` of ``DescribeClusters`` on the cluster;
* ``RunTask`` on the cluster (``sleeper.compaction.cluster`` / ``sleeper.ingest.cluster``) with the task definition
  family from the instance properties, at most 10 tasks per call and one call a second (ECS's sustained rate), the
  container override Sleeper uses (the command is the config bucket; the ``CONFIG_BUCKET`` environment variable is
  set too), and tags propagated from the task definition;
* Fargate (ingest always, compaction by default): ``sleeper.fargate.version``, the subnets ``sleeper.subnets`` and the
  security group ``sleeper.ecs.security.group.id``; EC2 (compaction with ``sleeper.compaction.ecs.launch.type=EC2``):
  the EC2 task definition family, bridge networking, no network configuration;
* a call whose failures are only "capacity is unavailable" is retried every 5 s for up to a minute; any other failure,
  or an error from ECS, stops the launch (logged, as Sleeper does: the next scheduled run tries again).

Bulk import (the ports of :mod:`sleeper.bulk_import.launch_ports`):

* :class:`S3BulkImportJobStore` writes the job file to ``sleeper.bulk.import.bucket``;
* :class:`EmrServerlessPlatform`: ``StartJobRun`` on ``sleeper.bulk.import.emr.serverless.application.id`` as
  ``sleeper.bulk.import.emr.serverless.role.arn``, named ``job-<jobRunId>``, logs to the bulk import bucket, Spark
  settings from the ``sleeper.bulk.import.emr.serverless.spark.*`` properties overridden by the job's ``sparkConf``;
* :class:`EmrPlatform`: ``RunJobFlow`` of a cluster ``sleeper-<id>-<tableId>-<jobId>`` with instance fleets from the
  table's ``sleeper.table.bulk.import.emr.*`` properties (overridden by the job's ``platformSpec``), managed scaling,
  and one ``spark-submit`` step; the cluster ends when the step does;
* :class:`PersistentEmrPlatform`: ``AddJobFlowSteps`` on the running cluster named
  ``sleeper.bulk.import.persistent.emr.cluster.name``; when its active steps are at their limit the job is reported
  as :attr:`~sleeper.bulk_import.launch_ports.PlatformStart.PLATFORM_FULL` and :class:`SqsBulkImportRequeue` puts it
  back on ``sleeper.bulk.import.persistent.emr.job.queue.url`` after
  ``sleeper.bulk.import.persistent.emr.cluster.full.requeue.delay`` seconds.

The Spark driver is this port's Python driver, not Sleeper's jar: it gets the arguments Sleeper's driver gets
(config bucket, job id, task id, job run id, ``EMR``) and reads the job from ``bulk_import/<jobId>-<jobRunId>.json``.
Where the driver script lives is a :class:`SparkDriver` (defaults: a path in the bulk import image on EMR
Serverless; ``s3://<sleeper.jars.bucket>/bulk-import-driver-<sleeper.version>.py`` on EMR). The job's
``className`` travels in the job file; no ``--class`` is passed, since a Python driver has none.

No mypy stubs for the ECS and EMR clients are installed, so their clients are typed ``Any``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.adapters.aws.exceptions import AwsError, error_code, translate
from sleeper.bulk_import.launch_ports import BulkImportRun, PlatformStart
from sleeper.core.exceptions import PropertyError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties import InstanceProperties, PropertyDefinition
from sleeper.core.properties import instance_bulk as bulk
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties import table as table_props
from sleeper.core.properties.instance_common import (
    FARGATE_VERSION,
    ID,
    JARS_BUCKET,
    SUBNETS,
)
from sleeper.core.properties.instance_compaction import COMPACTION_ECS_LAUNCHTYPE
from sleeper.core.properties.spark import EMR_JAVA_HOME, emr_spark_conf, serverless_spark_conf

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "CAPACITY_UNAVAILABLE",
    "COMPACTION_CONTAINER_NAME",
    "CONFIG_BUCKET_ENV",
    "DEFAULT_SERVERLESS_ENTRY_POINT",
    "INGEST_CONTAINER_NAME",
    "EcsTaskLauncher",
    "EmrPlatform",
    "EmrServerlessPlatform",
    "PersistentEmrPlatform",
    "S3BulkImportJobStore",
    "SparkDriver",
    "SqsBulkImportRequeue",
    "bulk_import_job_store",
    "compaction_run_task_request",
    "compaction_task_launcher",
    "ecs_client",
    "emr_client",
    "emr_cluster_name",
    "emr_driver",
    "emr_run_job_flow_request",
    "emr_serverless_client",
    "emr_serverless_start_job_run_request",
    "emr_spark_conf",
    "ingest_run_task_request",
    "ingest_task_launcher",
    "persistent_emr_requeue",
    "persistent_emr_step",
    "serverless_spark_conf",
    "spark_submit_command",
]

_LOG = logging.getLogger(__name__)

EcsClient = Any
"""A boto3 ECS client."""
EmrClient = Any
"""A boto3 EMR client."""
EmrServerlessClient = Any
"""A boto3 EMR Serverless client."""

COMPACTION_CONTAINER_NAME = "CompactionTask"
"""The container of the compaction task definitions (``stacks/compaction.py``)."""
INGEST_CONTAINER_NAME = "IngestTask"
"""The container of the ingest task definition (``stacks/ingest.py``)."""
CONFIG_BUCKET_ENV = "CONFIG_BUCKET"
"""The environment variable naming the config bucket in every Sleeper container."""
CAPACITY_UNAVAILABLE = (
    "Capacity is unavailable at this time. Please try again later or in a different availability zone"
)
"""The reason of a ``RunTask`` failure that is worth retrying shortly."""
MAX_TASKS_PER_RUN_TASK = 10
"""ECS starts at most 10 tasks per ``RunTask`` call."""
DEFAULT_SERVERLESS_ENTRY_POINT = "local:///opt/sleeper/bulk_import_driver.py"
"""The Spark driver script inside the bulk import image, run by EMR Serverless."""
_EMR_STEP_JAR = "command-runner.jar"
_CLUSTER_FULL = re.compile(r"Maximum number of active steps.+ for cluster exceeded\.")
_ACTIVE_CLUSTER_STATES = ["BOOTSTRAPPING", "RUNNING", "STARTING", "WAITING"]


# --- clients -------------------------------------------------------------------------------------------------------


def ecs_client(settings: AwsSettings) -> EcsClient:
    """An ECS client for the settings."""
    return settings._session().client("ecs", endpoint_url=settings.endpoint_url, config=settings._config())


def emr_client(settings: AwsSettings) -> EmrClient:
    """An EMR client for the settings."""
    return settings._session().client("emr", endpoint_url=settings.endpoint_url, config=settings._config())


def emr_serverless_client(settings: AwsSettings) -> EmrServerlessClient:
    """An EMR Serverless client for the settings."""
    return settings._session().client("emr-serverless", endpoint_url=settings.endpoint_url, config=settings._config())


def _required(properties: InstanceProperties, prop: PropertyDefinition) -> str:
    value = properties.get(prop)
    if not value:
        raise PropertyError(f"{prop.name} is not set: has the stack that sets it been deployed?")
    return value


# --- ECS tasks -----------------------------------------------------------------------------------------------------


def _run_task_request(
    properties: InstanceProperties,
    *,
    cluster: str,
    task_definition: str,
    container_name: str,
    fargate: bool,
) -> dict[str, Any]:
    config_bucket = _required(properties, cdk.CONFIG_BUCKET)
    request: dict[str, Any] = {
        "cluster": cluster,
        "taskDefinition": task_definition,
        "launchType": "FARGATE" if fargate else "EC2",
        "overrides": {
            "containerOverrides": [
                {
                    "name": container_name,
                    "command": [config_bucket],
                    "environment": [{"name": CONFIG_BUCKET_ENV, "value": config_bucket}],
                }
            ]
        },
        "propagateTags": "TASK_DEFINITION",
    }
    if fargate:
        vpc: dict[str, Any] = {"subnets": properties.get_list(SUBNETS)}
        security_group = properties.get(cdk.ECS_SECURITY_GROUP)
        if security_group:
            vpc["securityGroups"] = [security_group]
        request["platformVersion"] = _required(properties, FARGATE_VERSION)
        request["networkConfiguration"] = {"awsvpcConfiguration": vpc}
    return request


def compaction_run_task_request(
    properties: InstanceProperties, *, container_name: str = COMPACTION_CONTAINER_NAME
) -> dict[str, Any]:
    """The ``RunTask`` request (without ``count``) of compaction tasks, Fargate or EC2 by
    ``sleeper.compaction.ecs.launch.type``.

    Raises:
        PropertyError: If a property the request needs is not set.
    """
    fargate = properties.get_enum(COMPACTION_ECS_LAUNCHTYPE) == "FARGATE"
    family = cdk.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY if fargate else cdk.COMPACTION_TASK_EC2_DEFINITION_FAMILY
    return _run_task_request(
        properties,
        cluster=_required(properties, cdk.COMPACTION_CLUSTER),
        task_definition=_required(properties, family),
        container_name=container_name,
        fargate=fargate,
    )


def ingest_run_task_request(
    properties: InstanceProperties, *, container_name: str = INGEST_CONTAINER_NAME
) -> dict[str, Any]:
    """The ``RunTask`` request (without ``count``) of ingest tasks, always on Fargate.

    Raises:
        PropertyError: If a property the request needs is not set.
    """
    return _run_task_request(
        properties,
        cluster=_required(properties, cdk.INGEST_CLUSTER),
        task_definition=_required(properties, cdk.INGEST_TASK_DEFINITION_FAMILY),
        container_name=container_name,
        fargate=True,
    )


class EcsTaskLauncher:
    """Counts and starts the tasks of one ``RunTask`` request on its cluster (a ``TaskLauncher``)."""

    def __init__(
        self,
        ecs: EcsClient,
        request: Mapping[str, Any],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        seconds_between_calls: float = 1.0,
        capacity_retry_seconds: float = 5.0,
        capacity_retry_timeout_seconds: float = 60.0,
    ) -> None:
        """Creates a launcher.

        Args:
            ecs: An ECS client.
            request: The ``RunTask`` request without ``count`` (see :func:`compaction_run_task_request`).
            sleep: Waits between calls (a fake in tests).
            clock: Seconds from an arbitrary origin, to time out retries when capacity is unavailable.
            seconds_between_calls: The wait between ``RunTask`` calls, to stay within ECS's sustained rate.
            capacity_retry_seconds: The wait before retrying a call that failed for lack of capacity.
            capacity_retry_timeout_seconds: How long to keep retrying for capacity before giving up.
        """
        self._ecs = ecs
        self._request = dict(request)
        self._sleep = sleep
        self._clock = clock
        self._between = seconds_between_calls
        self._retry = capacity_retry_seconds
        self._retry_timeout = capacity_retry_timeout_seconds

    @property
    def cluster(self) -> str:
        """The cluster tasks are started on."""
        return str(self._request["cluster"])

    def running_and_pending_tasks(self) -> int:
        """``pendingTasksCount + runningTasksCount`` of the cluster.

        Raises:
            AwsError: If the cluster cannot be described, or is not found.
        """
        try:
            clusters = self._ecs.describe_clusters(clusters=[self.cluster]).get("clusters", [])
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"DescribeClusters {self.cluster}") from e
        if len(clusters) != 1:
            raise AwsError(f"DescribeClusters {self.cluster}", "ClusterNotFound", "unable to retrieve the cluster")
        return int(clusters[0].get("pendingTasksCount", 0)) + int(clusters[0].get("runningTasksCount", 0))

    def launch_tasks(self, count: int, *, should_abort: Callable[[], bool] = lambda: False) -> int:
        """Starts up to ``count`` tasks, at most 10 per call and one call a second.

        Stops early when ``should_abort`` returns True (checked after each call), when a call fails for any reason
        other than lack of capacity, or when capacity stays unavailable past the retry timeout. Failures are logged,
        not raised: the next scheduled run tries again.

        Returns:
            How many tasks were started.
        """
        launched = 0
        capacity_wait_start: float | None = None
        while launched < count:
            batch = min(MAX_TASKS_PER_RUN_TASK, count - launched)
            try:
                response = self._ecs.run_task(**self._request, count=batch)
            except (ClientError, BotoCoreError) as e:
                _LOG.error("could not launch tasks on %s: %s", self.cluster, e)
                break
            started = len(response.get("tasks", []))
            launched += started
            failures = response.get("failures", [])
            capacity = [f for f in failures if f.get("reason") == CAPACITY_UNAVAILABLE]
            _LOG.info(
                "RunTask on %s (%s, %s): %d started, %d to go, failures %s",
                self.cluster,
                self._request.get("launchType"),
                self._request.get("taskDefinition"),
                started,
                count - launched,
                failures,
            )
            if should_abort():
                _LOG.info("aborted launching tasks on %s", self.cluster)
                break
            if len(capacity) < len(failures):
                _LOG.error("failures launching tasks on %s: %s", self.cluster, failures)
                break
            if launched >= count:
                break
            if capacity:
                now = self._clock()
                capacity_wait_start = now if capacity_wait_start is None else capacity_wait_start
                if now - capacity_wait_start >= self._retry_timeout:
                    _LOG.error("capacity unavailable on %s for %.0f s, giving up", self.cluster, self._retry_timeout)
                    break
                self._sleep(self._retry)
            else:
                capacity_wait_start = None
                self._sleep(self._between)
        return launched


def compaction_task_launcher(ecs: EcsClient, properties: InstanceProperties, **options: Any) -> EcsTaskLauncher:
    """The launcher of compaction tasks (``options`` go to :class:`EcsTaskLauncher`)."""
    return EcsTaskLauncher(ecs, compaction_run_task_request(properties), **options)


def ingest_task_launcher(ecs: EcsClient, properties: InstanceProperties, **options: Any) -> EcsTaskLauncher:
    """The launcher of ingest tasks (``options`` go to :class:`EcsTaskLauncher`)."""
    return EcsTaskLauncher(ecs, ingest_run_task_request(properties), **options)


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
        try:
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=job_json.encode(), ContentType="application/json")
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"PutObject s3://{self.bucket}/{key}") from e
        _LOG.info("wrote bulk import job to s3://%s/%s", self.bucket, key)


def bulk_import_job_store(s3: S3Client, properties: InstanceProperties) -> S3BulkImportJobStore:
    """The job store on ``sleeper.bulk.import.bucket``.

    Raises:
        PropertyError: If the bucket is not set (no bulk import stack is deployed).
    """
    return S3BulkImportJobStore(s3, _required(properties, cdk.BULK_IMPORT_BUCKET))


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
        try:
            self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=job.to_json(), DelaySeconds=self.delay_seconds)
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"SendMessage {self.queue_url}") from e


def persistent_emr_requeue(sqs: SQSClient, properties: InstanceProperties) -> SqsBulkImportRequeue:
    """Puts jobs back on ``sleeper.bulk.import.persistent.emr.job.queue.url`` after
    ``sleeper.bulk.import.persistent.emr.cluster.full.requeue.delay`` seconds."""
    return SqsBulkImportRequeue(
        sqs,
        _required(properties, cdk.BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL),
        properties.get_int(bulk.BULK_IMPORT_PERSISTENT_EMR_REQUEUE_DELAY_SECONDS),
    )


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


def emr_driver(properties: InstanceProperties) -> SparkDriver:
    """The default driver on EMR clusters: ``s3://<sleeper.jars.bucket>/bulk-import-driver-<sleeper.version>.py``.

    Raises:
        PropertyError: If the jars bucket or the version is not set.
    """
    bucket = _required(properties, JARS_BUCKET)
    version = _required(properties, cdk.VERSION)
    return SparkDriver(entry_point=f"s3://{bucket}/bulk-import-driver-{version}.py")


def _driver_arguments(properties: InstanceProperties, job: BulkImportJob, task_id: str, job_run_id: str) -> list[str]:
    return [_required(properties, cdk.CONFIG_BUCKET), job.id, task_id, job_run_id, "EMR"]


def _merge_spark_conf(base: Mapping[str, str], job: BulkImportJob) -> dict[str, str]:
    merged = dict(base)
    merged.update(job.spark_conf or {})
    return merged


def _conf_options(conf: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in conf.items():
        out.extend(("--conf", f"{key}={value}"))
    return out


def spark_submit_command(
    properties: InstanceProperties, run: BulkImportRun, *, task_id: str, driver: SparkDriver
) -> list[str]:
    """The ``spark-submit`` command of an EMR step: cluster deploy mode, the job's ``sparkConf`` (the cluster holds
    the instance's Spark settings), the driver and its arguments."""
    return [
        "spark-submit",
        "--deploy-mode",
        "cluster",
        *_conf_options(_merge_spark_conf({}, run.job)),
        *driver.submit_options,
        driver.entry_point,
        *_driver_arguments(properties, run.job, task_id, run.job_run_id),
    ]


def emr_serverless_start_job_run_request(
    properties: InstanceProperties, run: BulkImportRun, *, driver: SparkDriver
) -> dict[str, Any]:
    """The ``StartJobRun`` request of a job on the instance's EMR Serverless application.

    Raises:
        PropertyError: If the application, its role, the config or bulk import bucket is not set.
    """
    application_name = _required(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME)
    parameters = [*driver.submit_options, *_conf_options(_merge_spark_conf(serverless_spark_conf(properties), run.job))]
    return {
        "applicationId": _required(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID),
        "name": f"job-{run.job_run_id}",
        "executionRoleArn": _required(properties, cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN),
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": driver.entry_point,
                "entryPointArguments": _driver_arguments(
                    properties, run.job, f"{application_name}-EMRS", run.job_run_id
                ),
                "sparkSubmitParameters": " ".join(parameters),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {
                "s3MonitoringConfiguration": {"logUri": f"s3://{_required(properties, cdk.BULK_IMPORT_BUCKET)}"}
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
        try:
            response = self._client.start_job_run(**request)
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"StartJobRun {request['applicationId']}") from e
        _LOG.info("started bulk import job %s as EMR Serverless job run %s", run.job.id, response.get("jobRunId"))
        return PlatformStart.STARTED


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
    return "-".join(("sleeper", _required(properties, ID), run.table_properties.table_id, run.job.id))


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
                    "VolumeType": _required(properties, bulk.BULK_IMPORT_EMR_EBS_VOLUME_TYPE),
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
        "ServiceRole": _required(properties, cdk.BULK_IMPORT_EMR_CLUSTER_ROLE_NAME),
        "JobFlowRole": _required(properties, cdk.BULK_IMPORT_EMR_EC2_ROLE_NAME),
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
        try:
            response = self._client.run_job_flow(**request)
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"RunJobFlow {request['Name']}") from e
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
        self.cluster_name = _required(properties, cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME)
        self._cluster_id: str | None = None

    def cluster_id(self) -> str:
        """The id of the active cluster with the persistent cluster's name (looked up once).

        Raises:
            AwsError: If no active cluster has the name, or EMR cannot be asked.
        """
        if self._cluster_id is None:
            operation = f"ListClusters {self.cluster_name}"
            try:
                pages = self._client.get_paginator("list_clusters").paginate(ClusterStates=_ACTIVE_CLUSTER_STATES)
                found = [
                    c["Id"] for page in pages for c in page.get("Clusters", []) if c.get("Name") == self.cluster_name
                ]
            except (ClientError, BotoCoreError) as e:
                raise translate(e, operation) from e
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
