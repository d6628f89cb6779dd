"""The AWS launchers: ECS tasks, EMR Serverless job runs, EMR clusters and steps, the job file and the requeue.

ECS, EMR Serverless, EMR, S3 and SQS run on this process's moto server. Where moto does not model the behaviour
(ECS capacity failures, EMR's limit on active steps, Fargate tasks in a cluster's counts) the request and response
shapes are checked with botocore's Stubber instead.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from sleeper.adapters.aws.clients import ecs_client, emr_client, emr_serverless_client, s3_client, sqs_client
from sleeper.adapters.aws.launchers.bulk_import import SparkDriver, bulk_import_job_store
from sleeper.adapters.aws.launchers.ecs import (
    CAPACITY_UNAVAILABLE,
    COMPACTION_CONTAINER_NAME,
    EcsTaskLauncher,
    compaction_task_launcher,
    ingest_run_task_request,
)
from sleeper.adapters.aws.launchers.emr import (
    EmrPlatform,
    PersistentEmrPlatform,
    emr_driver,
    emr_run_job_flow_request,
    persistent_emr_requeue,
)
from sleeper.adapters.aws.launchers.emr_serverless import EmrServerlessPlatform
from sleeper.adapters.aws.resources import create_bucket, create_queue
from sleeper.adapters.aws.sqs_queue import SqsQueues
from sleeper.bulk_import.launch_ports import BulkImportRun, PlatformStart, bulk_import_job_key
from sleeper.compaction.task_creation import create_compaction_tasks
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.properties import instance_bulk as bulk
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties.instance_common import ID, JARS_BUCKET, SUBNETS, TAGS
from sleeper.core.properties.instance_compaction import COMPACTION_ECS_LAUNCHTYPE, MAXIMUM_CONCURRENT_COMPACTION_TASKS
from sleeper.core.properties.table import (
    BULK_IMPORT_EMR_EXECUTOR_ARM_INSTANCE_TYPES,
    BULK_IMPORT_EMR_EXECUTOR_MARKET_TYPE,
)
from tests.contract.aws_backends import REGION, aws_settings

pytestmark = pytest.mark.integration


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []
        self.now = 0.0

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _properties(**values: str) -> InstanceProperties:
    properties = InstanceProperties()
    properties.set(ID, "inst")
    properties.set(cdk.CONFIG_BUCKET, "sleeper-inst-config")
    properties.set(SUBNETS, "subnet-a,subnet-b")
    properties.set(cdk.ECS_SECURITY_GROUP, "sg-1")
    for name, value in values.items():
        properties.set(name, value)
    return properties


def _tasks(ecs: Any, cluster: str) -> list[dict[str, Any]]:
    arns = ecs.list_tasks(cluster=cluster)["taskArns"]
    return ecs.describe_tasks(cluster=cluster, tasks=arns)["tasks"] if arns else []


# --- ECS -------------------------------------------------------------------------------------------------------------


def should_launch_compaction_tasks_on_fargate_in_calls_of_ten_for_the_jobs_on_the_queue() -> None:
    # Given a cluster, a task definition and 23 jobs waiting on the compaction job queue
    ecs = ecs_client(aws_settings())
    cluster, family = _unique("compaction-cluster"), _unique("CompactionTaskOnFargate")
    ecs.create_cluster(clusterName=cluster)
    # moto 5.2.5 fails RunTask for awsvpc task definitions (its ENI lacks a DNS name), so this one uses bridge mode
    ecs.register_task_definition(
        family=family, containerDefinitions=[{"name": COMPACTION_CONTAINER_NAME, "image": "compaction", "memory": 512}]
    )
    properties = _properties()
    properties.set(cdk.COMPACTION_CLUSTER, cluster)
    properties.set(cdk.COMPACTION_TASK_FARGATE_DEFINITION_FAMILY, family)
    properties.set(MAXIMUM_CONCURRENT_COMPACTION_TASKS, 100)
    queue = SqsQueues(sqs_client(aws_settings())).queue(_unique("CompactionJobQ"))
    queue.send_batch([f'{{"job": {i}}}' for i in range(23)])
    sleep = FakeSleep()
    launcher = compaction_task_launcher(ecs, properties, sleep=sleep, clock=sleep.clock)

    # When
    result = create_compaction_tasks(properties, queue, launcher)

    # Then 23 tasks run with Sleeper's container override, after three calls one second apart
    tasks = _tasks(ecs, cluster)
    assert (result.visible_jobs, result.launched, len(tasks)) == (23, 23, 23)
    assert sleep.waits == [1.0, 1.0]
    assert {t["launchType"] for t in tasks} == {"FARGATE"}
    assert tasks[0]["overrides"]["containerOverrides"] == [
        {
            "name": COMPACTION_CONTAINER_NAME,
            "command": ["sleeper-inst-config"],
            "environment": [{"name": "CONFIG_BUCKET", "value": "sleeper-inst-config"}],
        }
    ]


def should_launch_compaction_tasks_on_ec2_and_count_them_as_running() -> None:
    # Given a cluster with one registered EC2 container instance
    settings = aws_settings()
    ec2 = boto3.client(
        "ec2", region_name=REGION, endpoint_url=settings.endpoint_url, aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )  # fmt: skip
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]
    ecs = ecs_client(settings)
    cluster, family = _unique("compaction-cluster"), _unique("CompactionTaskOnEC2")
    ecs.create_cluster(clusterName=cluster)
    document = {
        "instanceId": instance["InstanceId"],
        "availabilityZone": instance["Placement"]["AvailabilityZone"],
        "region": REGION,
        "instanceType": instance["InstanceType"],
        "privateIp": instance["PrivateIpAddress"],
    }
    ecs.register_container_instance(cluster=cluster, instanceIdentityDocument=json.dumps(document))
    ecs.register_task_definition(
        family=family, containerDefinitions=[{"name": COMPACTION_CONTAINER_NAME, "image": "compaction", "memory": 256}]
    )
    properties = _properties()
    properties.set(COMPACTION_ECS_LAUNCHTYPE, "EC2")
    properties.set(cdk.COMPACTION_CLUSTER, cluster)
    properties.set(cdk.COMPACTION_TASK_EC2_DEFINITION_FAMILY, family)
    launcher = compaction_task_launcher(ecs, properties, sleep=FakeSleep())

    # When
    before = launcher.running_and_pending_tasks()
    launched = launcher.launch_tasks(3)

    # Then
    assert (before, launched, launcher.running_and_pending_tasks()) == (0, 3, 3)
    assert {t["launchType"] for t in _tasks(ecs, cluster)} == {"EC2"}


def should_send_ingest_tasks_to_fargate_in_the_instance_subnets() -> None:
    # Given
    properties = _properties()
    properties.set(cdk.INGEST_CLUSTER, "sleeper-inst-ingest-cluster")
    properties.set(cdk.INGEST_TASK_DEFINITION_FAMILY, "sleeper-inst-IngestTask")
    ecs = ecs_client(aws_settings())
    launcher = EcsTaskLauncher(ecs, ingest_run_task_request(properties), sleep=FakeSleep())
    expected = {
        "cluster": "sleeper-inst-ingest-cluster",
        "taskDefinition": "sleeper-inst-IngestTask",
        "launchType": "FARGATE",
        "platformVersion": "1.4.0",
        "networkConfiguration": {
            "awsvpcConfiguration": {"subnets": ["subnet-a", "subnet-b"], "securityGroups": ["sg-1"]}
        },
        "overrides": {
            "containerOverrides": [
                {
                    "name": "IngestTask",
                    "command": ["sleeper-inst-config"],
                    "environment": [{"name": "CONFIG_BUCKET", "value": "sleeper-inst-config"}],
                }
            ]
        },
        "propagateTags": "TASK_DEFINITION",
        "count": 2,
    }

    # When
    with Stubber(ecs) as stub:
        stub.add_response("run_task", {"tasks": [{"taskArn": "a"}, {"taskArn": "b"}], "failures": []}, expected)
        launched = launcher.launch_tasks(2)
        stub.assert_no_pending_responses()

    # Then
    assert launched == 2


def should_retry_when_capacity_is_unavailable_and_stop_on_other_failures() -> None:
    # Given
    properties = _properties()
    properties.set(cdk.INGEST_CLUSTER, "c")
    properties.set(cdk.INGEST_TASK_DEFINITION_FAMILY, "f")
    ecs = ecs_client(aws_settings())
    sleep = FakeSleep()
    launcher = EcsTaskLauncher(ecs, ingest_run_task_request(properties), sleep=sleep, clock=sleep.clock)
    capacity = {"arn": "x", "reason": CAPACITY_UNAVAILABLE}

    # When
    with Stubber(ecs) as stub:
        stub.add_response("run_task", {"tasks": [{"taskArn": "a"}], "failures": [capacity, capacity]})
        stub.add_response(
            "run_task", {"tasks": [{"taskArn": "b"}], "failures": [{"arn": "y", "reason": "RESOURCE:CPU"}]}
        )
        launched = launcher.launch_tasks(3)
        stub.assert_no_pending_responses()

    # Then one task was started by each call, the second after the capacity retry wait
    assert launched == 2
    assert sleep.waits == [5.0]


def should_count_pending_and_running_tasks_of_the_cluster() -> None:
    # Given moto counts only EC2 tasks, so the count of a Fargate cluster is stubbed
    ecs = ecs_client(aws_settings())
    launcher = EcsTaskLauncher(ecs, {"cluster": "c"})

    # When
    with Stubber(ecs) as stub:
        stub.add_response(
            "describe_clusters",
            {"clusters": [{"clusterName": "c", "pendingTasksCount": 4, "runningTasksCount": 7}]},
            {"clusters": ["c"]},
        )
        count = launcher.running_and_pending_tasks()

    # Then
    assert count == 11


# --- bulk import -----------------------------------------------------------------------------------------------------


def _run(job: BulkImportJob, table_values: dict[str, str] | None = None) -> BulkImportRun:
    table = TableProperties(InstanceProperties(), {"sleeper.table.name": "events", "sleeper.table.id": "t1"})
    for name, value in (table_values or {}).items():
        table.set(name, value)
    return BulkImportRun(
        job=job, job_run_id="run-1", table_properties=table, job_file_key=bulk_import_job_key(job.id, "run-1")
    )


JOB = BulkImportJob(
    id="job-1",
    table_id="t1",
    table_name="events",
    files=("s3a://in/a.parquet",),
    spark_conf={"spark.executor.instances": "3", "spark.custom": "x"},
)


@pytest.fixture
def bulk_properties() -> InstanceProperties:
    properties = _properties()
    properties.set(cdk.BULK_IMPORT_BUCKET, "sleeper-inst-bulk-import")
    properties.set(JARS_BUCKET, "sleeper-jars")
    properties.set(cdk.VERSION, "0.1.0")
    properties.set(TAGS, "project,sleeper")
    return properties


def should_start_a_job_run_on_emr_serverless(bulk_properties: InstanceProperties) -> None:
    # Given
    client = emr_serverless_client(aws_settings())
    app = client.create_application(name=_unique("sleeper-inst-bulk-import"), releaseLabel="emr-7.12.0", type="SPARK")
    bulk_properties.set(cdk.BULK_IMPORT_EMR_SERVERLESS_APPLICATION_ID, app["applicationId"])
    bulk_properties.set(cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_NAME, "sleeper-inst-bulk-import")
    bulk_properties.set(cdk.BULK_IMPORT_EMR_SERVERLESS_CLUSTER_ROLE_ARN, "arn:aws:iam::123456789012:role/job")
    platform = EmrServerlessPlatform(client, bulk_properties)

    # When
    started = platform.start(_run(JOB))

    # Then
    assert started is PlatformStart.STARTED
    [summary] = client.list_job_runs(applicationId=app["applicationId"])["jobRuns"]
    run = client.get_job_run(applicationId=app["applicationId"], jobRunId=summary["id"])["jobRun"]
    submit = run["jobDriver"]["sparkSubmit"]
    assert (run["name"], run["executionRole"]) == ("job-run-1", "arn:aws:iam::123456789012:role/job")
    assert submit["entryPoint"] == "local:///opt/sleeper/bulk_import_driver.py"
    assert submit["entryPointArguments"] == [
        "sleeper-inst-config", "job-1", "sleeper-inst-bulk-import-EMRS", "run-1", "EMR",
    ]  # fmt: skip
    parameters = submit["sparkSubmitParameters"].split(" ")
    assert "spark.executor.instances=3" in parameters  # the job's sparkConf wins over the property (36)
    assert "spark.executor.instances=36" not in parameters
    assert {"spark.custom=x", "spark.emr-serverless.executor.disk=200G"} <= set(parameters)
    assert run["configurationOverrides"]["monitoringConfiguration"]["s3MonitoringConfiguration"] == {
        "logUri": "s3://sleeper-inst-bulk-import"
    }


def should_create_an_emr_cluster_per_job_with_the_table_and_job_settings(bulk_properties: InstanceProperties) -> None:
    # Given a table asking for on-demand executors, and a job overriding the executor types by its platform spec
    client = emr_client(aws_settings())
    bulk_properties.set(cdk.BULK_IMPORT_EMR_CLUSTER_ROLE_NAME, "service-role")
    bulk_properties.set(cdk.BULK_IMPORT_EMR_EC2_ROLE_NAME, "instance-profile")
    job_id = _unique("job")
    job = BulkImportJob(
        id=job_id,
        table_id="t1",
        table_name="events",
        files=("s3a://in/a.parquet",),
        spark_conf={"spark.custom": "x"},
        platform_spec={BULK_IMPORT_EMR_EXECUTOR_ARM_INSTANCE_TYPES.name: "m7g.8xlarge,2,m7g.4xlarge"},
    )
    platform = EmrPlatform(client, bulk_properties)

    # When
    run = _run(job, {BULK_IMPORT_EMR_EXECUTOR_MARKET_TYPE.name: "ON_DEMAND"})
    started = platform.start(run)

    # Then
    assert started is PlatformStart.STARTED
    name = f"sleeper-inst-t1-{job_id}"
    [summary] = [c for c in client.list_clusters()["Clusters"] if c["Name"] == name]
    cluster = client.describe_cluster(ClusterId=summary["Id"])["Cluster"]
    assert cluster["ReleaseLabel"] == "emr-7.12.0"
    assert cluster["Tags"] == [{"Key": "project", "Value": "sleeper"}]
    [step] = client.list_steps(ClusterId=summary["Id"])["Steps"]
    assert step["Name"] == f"Bulk Load (job id {job_id})"
    assert step["Config"]["Args"] == [
        "spark-submit", "--deploy-mode", "cluster", "--conf", "spark.custom=x",
        "s3://sleeper-jars/bulk-import-driver-0.1.0.py",
        "sleeper-inst-config", job_id, f"{name}-EMR", "run-1", "EMR",
    ]  # fmt: skip
    # And the instance fleets (moto has no ListInstanceFleets, so they are read from the request)
    request = emr_run_job_flow_request(bulk_properties, run, driver=emr_driver(bulk_properties))
    executors, driver = request["Instances"]["InstanceFleets"]
    assert [(c["InstanceType"], c.get("WeightedCapacity")) for c in executors["InstanceTypeConfigs"]] == [
        ("m7g.8xlarge", 2),
        ("m7g.4xlarge", None),
    ]
    assert (executors["TargetOnDemandCapacity"], "TargetSpotCapacity" in executors) == (2, False)
    assert ([c["InstanceType"] for c in driver["InstanceTypeConfigs"]], driver["TargetOnDemandCapacity"]) == (
        ["m7g.xlarge"],
        1,
    )
    assert request["ManagedScalingPolicy"]["ComputeLimits"]["MaximumCapacityUnits"] == 10


@pytest.fixture
def persistent_cluster(bulk_properties: InstanceProperties) -> Iterator[tuple[Any, str]]:
    client = emr_client(aws_settings())
    name = _unique("sleeper-inst-persistent-emr")
    response = client.run_job_flow(
        Name=name,
        ReleaseLabel="emr-7.12.0",
        Instances={"MasterInstanceType": "m7g.xlarge", "InstanceCount": 1, "KeepJobFlowAliveWhenNoSteps": True},
        JobFlowRole="instance-profile",
        ServiceRole="service-role",
    )
    bulk_properties.set(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME, name)
    yield client, response["JobFlowId"]
    client.terminate_job_flows(JobFlowIds=[response["JobFlowId"]])


def should_add_a_step_to_the_persistent_emr_cluster(
    bulk_properties: InstanceProperties, persistent_cluster: tuple[Any, str]
) -> None:
    # Given
    client, cluster_id = persistent_cluster
    platform = PersistentEmrPlatform(client, bulk_properties, driver=SparkDriver(entry_point="s3://b/driver.py"))

    # When
    started = platform.start(_run(JOB))

    # Then
    assert started is PlatformStart.STARTED
    assert platform.cluster_id() == cluster_id
    [step] = client.list_steps(ClusterId=cluster_id)["Steps"]
    assert step["ActionOnFailure"] == "CONTINUE"
    assert step["Config"]["Args"][-6:] == [
        "s3://b/driver.py", "sleeper-inst-config", "job-1", platform.cluster_name, "run-1", "EMR",
    ]  # fmt: skip


def should_report_the_persistent_cluster_full_when_its_active_steps_are_at_their_limit(
    bulk_properties: InstanceProperties,
) -> None:
    # Given moto does not limit active steps, so EMR's answer is stubbed
    bulk_properties.set(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME, "persistent")
    client = emr_client(aws_settings())
    platform = PersistentEmrPlatform(client, bulk_properties)
    message = "Maximum number of active steps(State = 'Running', 'Pending' or 'Cancel_Pending') for cluster exceeded."

    # When
    with Stubber(client) as stub:
        stub.add_response("list_clusters", {"Clusters": [{"Id": "j-1", "Name": "persistent"}]})
        stub.add_client_error("add_job_flow_steps", "ValidationException", message)
        stub.add_client_error("add_job_flow_steps", "ValidationException", "Something else is wrong.")
        full = platform.start(_run(JOB))
        with pytest.raises(Exception, match="Something else is wrong"):
            platform.start(_run(JOB))

    # Then
    assert full is PlatformStart.PLATFORM_FULL


def should_write_the_job_file_and_requeue_a_job_with_the_delay(bulk_properties: InstanceProperties) -> None:
    # Given
    settings = aws_settings()
    s3, sqs = s3_client(settings), sqs_client(settings)
    bucket = _unique("sleeper-inst-bulk-import")
    create_bucket(s3, bucket, REGION)
    bulk_properties.set(cdk.BULK_IMPORT_BUCKET, bucket)
    url = create_queue(sqs, _unique("BulkImportPersistentEMRQ"))
    bulk_properties.set(cdk.BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL, url)
    # A delay no loaded machine outlasts between the send and the check below (a delayed message counts as delayed
    # only until its delay ends)
    bulk_properties.set(bulk.BULK_IMPORT_PERSISTENT_EMR_REQUEUE_DELAY_SECONDS, 600)

    # When
    bulk_import_job_store(s3, bulk_properties).write_job("bulk_import/job-1-run-1.json", JOB.to_json())
    requeue = persistent_emr_requeue(sqs, bulk_properties)
    requeue.requeue(JOB)

    # Then
    written = s3.get_object(Bucket=bucket, Key="bulk_import/job-1-run-1.json")["Body"].read().decode()
    assert BulkImportJob.from_json(written) == JOB
    assert requeue.delay_seconds == 600
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
