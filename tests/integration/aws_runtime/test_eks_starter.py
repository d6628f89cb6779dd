"""The bulk import starter on EKS, on moto: a job from ``BulkImportEKSQ`` becomes one Step Functions execution of the
state machine ``EksBulkImportStack`` records, named ``<tableId>-<jobId>``, whose input runs the Spark driver on the
starter's job file as a Kubernetes job; an invalid job is tracked rejected and starts nothing; with no state machine
deployed the run is recorded failed and the message returns to the queue."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import stepfunctions_client
from sleeper.core import operations
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.emulator.resources import provision_emulated_instance
from sleeper.lambdas import bulk_import_starter
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
from tests.integration.aws_runtime.conftest import sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
ENDPOINT = "https://ABC123.gr7.eu-west-2.eks.amazonaws.com"


def _state_machine(instance_id: str) -> str:
    """A state machine standing for the one the EKS stack deploys (moto does not run its EKS tasks)."""
    client = stepfunctions_client(aws_settings())
    definition = {"StartAt": "RunSparkJob", "States": {"RunSparkJob": {"Type": "Pass", "End": True}}}
    return str(
        client.create_state_machine(
            name=f"sleeper-{instance_id}-eks-bulk-import",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/state-machine",
        )["stateMachineArn"]
    )


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """An emulated instance with the EKS stack's properties set."""
    instance_id = new_instance_id()
    properties = {
        cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name: _state_machine(instance_id),
        cdk.BULK_IMPORT_EKS_CLUSTER_ENDPOINT.name: ENDPOINT,
        cdk.BULK_IMPORT_EKS_NAMESPACE.name: f"sleeper-{instance_id}-bulk-import-eks",
        cdk.BULK_IMPORT_EKS_CLUSTER_NAME.name: f"sleeper-{instance_id}-bulk-import-eks",
        "sleeper.bulk.import.eks.spark.executor.ephemeral.storage": "100Gi",
    }
    config = provision_emulated_instance(aws_settings(), instance_id, properties=properties)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


def _executions(instance: AwsInstance) -> list[dict[str, Any]]:
    client = stepfunctions_client(aws_settings())
    arn = instance.properties.get(cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name)
    executions = client.list_executions(stateMachineArn=arn)["executions"]
    return [client.describe_execution(executionArn=e["executionArn"]) for e in executions]


def _job(instance: AwsInstance, table_name: str, **fields: Any) -> tuple[str, str]:
    """A job id and its message, with one small input file."""
    rows = pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": pa.array(["a", "b", "c"])})
    path = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(rows, path, filesystem=instance.filesystem)
    job_id = str(uuid.uuid4())
    return job_id, json.dumps({"id": job_id, "tableName": table_name, "files": [path], **fields})


def _eks_queue_event(instance: AwsInstance, body: str) -> tuple[str, dict[str, object]]:
    message_id = str(uuid.uuid4())
    event = sqs_event([(message_id, body, None)])
    queue = f"sleeper-{instance.instance_id}-{operations.BULK_IMPORT_EKS_Q}"
    for record in event["Records"]:  # type: ignore[attr-defined]
        record["eventSourceARN"] = f"arn:aws:sqs:{REGION}:123456789012:{queue}"
    return message_id, event


def should_provision_the_eks_queue_feeding_the_bulk_import_starter(instance: AwsInstance) -> None:
    url = instance.properties.get(cdk.BULK_IMPORT_EKS_JOB_QUEUE_URL.name)
    assert url is not None and url.endswith(f"sleeper-{instance.instance_id}-BulkImportEKSQ")
    assert operations.BULK_IMPORT_EKS_Q in operations.handler(operations.BULK_IMPORT_STARTER).trigger.queues


def should_start_one_execution_running_the_driver_as_a_kubernetes_job(instance: AwsInstance) -> None:
    # Given a table and a job for it on the EKS queue, with Spark settings of its own and the DataFrame sort
    table = instance.create_table(f"eks-{uuid.uuid4().hex[:8]}", SCHEMA)
    job_id, body = _job(instance, table.name, sparkConf={"spark.executor.instances": "3"}, className="dataframe-sort")
    _, event = _eks_queue_event(instance, body)
    before = len(_executions(instance))

    # When the starter handles it
    response = bulk_import_starter.handler(event)

    # Then the message is done with and exactly one execution was started, named after the table and job
    assert response == {"batchItemFailures": []}
    executions = _executions(instance)
    assert len(executions) == before + 1
    (execution,) = [e for e in executions if e["name"] == f"{table.table_id}-{job_id}"]
    execution_input = json.loads(execution["input"])
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.ACCEPTED
    run_id = status.latest_run.job_run_id
    # And its input names the job, the driver pod and the executors' ephemeral storage
    assert execution_input["job"]["id"] == job_id
    assert execution_input["job"]["tableId"] == table.table_id
    assert execution_input["jobPodPrefix"] == f"job-{job_id[:26]}"
    assert 'ephemeral-storage: "100Gi"' in execution_input["executorPodTemplate"]
    # And the Kubernetes job runs spark-submit on the cluster, with the job's settings over the instance's, then the
    # driver on the starter's job file
    args = execution_input["args"]
    assert args[:3] == ["spark-submit", "--deploy-mode", "cluster"]
    conf = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")
    assert conf["spark.master"] == f"k8s://{ENDPOINT}"
    assert conf["spark.kubernetes.namespace"] == instance.properties.get(cdk.BULK_IMPORT_EKS_NAMESPACE.name)
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "spark"
    assert conf["spark.executor.instances"] == "3"
    assert conf["spark.executor.memory"] == "16g"
    assert args[-6:] == [
        "local:///opt/sleeper/bulk_import_driver.py",
        instance.config.config_bucket,
        job_id,
        instance.properties.get(cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name),
        run_id,
        "EKS",
    ]
    # And the job file the driver reads holds the job with its algorithm
    key = f"bulk_import/{job_id}-{run_id}.json"
    bucket = instance.properties.get(cdk.BULK_IMPORT_BUCKET.name)
    written = json.loads(instance.clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert written["className"] == "dataframe-sort"


@pytest.mark.parametrize(
    ("table", "fields", "reason"),
    [
        ("no-such-table", {}, "Table not found"),
        (None, {"className": "com.example.MyDriver"}, "is not a bulk import algorithm"),
    ],
)
def should_track_an_invalid_job_rejected_and_start_nothing(
    instance: AwsInstance, table: str | None, fields: dict[str, str], reason: str
) -> None:
    # Given an invalid job on the EKS queue
    name = table or instance.create_table(f"eks-{uuid.uuid4().hex[:8]}", SCHEMA).name
    job_id, body = _job(instance, name, **fields)
    _, event = _eks_queue_event(instance, body)
    before = len(_executions(instance))
    # When the starter handles it
    response = bulk_import_starter.handler(event)
    # Then it is rejected in the tracker with the reason, the message is done with, and nothing was started
    assert response == {"batchItemFailures": []}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert any(reason in r for r in status.latest_run.updates[0].reasons)  # type: ignore[union-attr]
    assert len(_executions(instance)) == before


def should_record_the_run_failed_when_the_kubernetes_job_fails_before_the_driver_records_it(
    instance: AwsInstance,
) -> None:
    # Given a job started on EKS, whose run the tracker records accepted
    table = instance.create_table(f"eks-{uuid.uuid4().hex[:8]}", SCHEMA)
    job_id, body = _job(instance, table.name)
    bulk_import_starter.handler(_eks_queue_event(instance, body)[1])
    (execution,) = [e for e in _executions(instance) if e["name"] == f"{table.table_id}-{job_id}"]
    state = json.loads(execution["input"])
    # When the state machine reports the Kubernetes job failed (its driver pod never ran)
    state["error"] = {"Error": "States.TaskFailed", "Cause": "ImagePullBackOff"}
    result = bulk_import_starter.platform_failure(state)
    # Then the run is recorded failed with the platform's reason
    assert result == {"jobId": job_id, "jobRunId": state["jobRunId"], "recorded": True}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.FAILED
    assert any("ImagePullBackOff" in reason for reason in status.latest_run.failure_reasons)
    # And a second report of the same run records nothing more
    assert bulk_import_starter.platform_failure(state)["recorded"] is False
