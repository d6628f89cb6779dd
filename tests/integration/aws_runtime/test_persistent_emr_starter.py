"""The bulk import starter on the persistent EMR cluster, on moto: a job from ``BulkImportPersistentEMRQ`` becomes one
step of the running cluster named by ``sleeper.bulk.import.persistent.emr.cluster.name``, running the Spark driver on
the starter's job file; a job for no table adds no step; with no such cluster running the message returns to the
queue."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws.clients import emr_client
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


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """An emulated instance whose persistent cluster is named as the stack names it; the cluster is started per test."""
    instance_id = new_instance_id()
    properties = {
        cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name: f"sleeper-{instance_id}-persistentEMR",
        "sleeper.jars.bucket": f"sleeper-{instance_id}-jars",
        cdk.VERSION.name: "0.0.1",
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


def _emr(instance: AwsInstance) -> Any:
    return emr_client(instance.config.settings)


def _start_cluster(instance: AwsInstance, name: str) -> str:
    """A running cluster that outlives its steps, as the persistent stack deploys it."""
    response = _emr(instance).run_job_flow(
        Name=name,
        ReleaseLabel="emr-7.12.0",
        Applications=[{"Name": "Spark"}],
        Instances={
            "MasterInstanceType": "m7g.xlarge",
            "SlaveInstanceType": "m7g.4xlarge",
            "InstanceCount": 2,
            "KeepJobFlowAliveWhenNoSteps": True,
        },
        StepConcurrencyLevel=2,
        JobFlowRole="EMR_EC2_DefaultRole",
        ServiceRole="EMR_DefaultRole",
    )
    return str(response["JobFlowId"])


def _stop_cluster(instance: AwsInstance, cluster_id: str) -> None:
    _emr(instance).terminate_job_flows(JobFlowIds=[cluster_id])


def _steps(instance: AwsInstance, cluster_id: str) -> list[dict[str, Any]]:
    return list(_emr(instance).list_steps(ClusterId=cluster_id)["Steps"])


def _job(instance: AwsInstance, table_name: str) -> tuple[str, str]:
    """A job id and its message, with one small input file."""
    rows = pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": pa.array(["a", "b", "c"])})
    path = f"{instance.data_bucket}/ingest-source/{uuid.uuid4()}.parquet"
    pq.write_table(rows, path, filesystem=instance.filesystem)
    job_id = str(uuid.uuid4())
    return job_id, json.dumps({"id": job_id, "tableName": table_name, "files": [path]})


def _persistent_queue_event(instance: AwsInstance, body: str) -> tuple[str, dict[str, object]]:
    message_id = str(uuid.uuid4())
    event = sqs_event([(message_id, body, None)])
    queue = f"sleeper-{instance.instance_id}-{operations.BULK_IMPORT_PERSISTENT_EMR_Q}"
    for record in event["Records"]:  # type: ignore[attr-defined]
        record["eventSourceARN"] = f"arn:aws:sqs:{REGION}:123456789012:{queue}"
    return message_id, event


@pytest.fixture
def cluster(instance: AwsInstance) -> Iterator[str]:
    """The persistent cluster, running for one test."""
    cluster_id = _start_cluster(instance, instance.properties.get(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name))
    yield cluster_id
    _stop_cluster(instance, cluster_id)


def should_provision_the_persistent_queue_with_the_registry_queues(instance: AwsInstance) -> None:
    # When the persistent queue's URL is read from the instance properties
    url = instance.properties.get(cdk.BULK_IMPORT_PERSISTENT_EMR_JOB_QUEUE_URL.name)
    # Then the emulated instance created it under Sleeper's name, and it feeds the bulk import starter
    assert url is not None and url.endswith(f"sleeper-{instance.instance_id}-BulkImportPersistentEMRQ")
    starter = operations.handler(operations.BULK_IMPORT_STARTER)
    assert operations.BULK_IMPORT_PERSISTENT_EMR_Q in starter.trigger.queues


def should_add_one_step_to_the_named_cluster_for_a_job_from_the_persistent_queue(
    instance: AwsInstance, cluster: str
) -> None:
    # Given a table, the running persistent cluster and a job for the table on the persistent queue
    table = instance.create_table(f"persistent-{uuid.uuid4().hex[:8]}", SCHEMA)
    job_id, body = _job(instance, table.name)
    _, event = _persistent_queue_event(instance, body)
    # When the starter handles it
    response = bulk_import_starter.handler(event)
    # Then the message is done with and the cluster has exactly one step, running the driver on this job's run
    assert response == {"batchItemFailures": []}
    (step,) = _steps(instance, cluster)
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.latest_run.job_run_id is not None
    args = step["Config"]["Args"]
    assert step["ActionOnFailure"] == "CONTINUE"
    assert args[:3] == ["spark-submit", "--deploy-mode", "cluster"]
    assert args[-5:] == [
        instance.config.config_bucket,
        job_id,
        instance.properties.get(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name),
        status.latest_run.job_run_id,
        "EMR",
    ]


def should_add_no_step_for_a_job_naming_no_table(instance: AwsInstance, cluster: str) -> None:
    # Given a job for a table that does not exist, on the persistent queue
    job_id, body = _job(instance, "no-such-table")
    _, event = _persistent_queue_event(instance, body)
    # When the starter handles it
    response = bulk_import_starter.handler(event)
    # Then the job is rejected in the tracker and the cluster has no step
    assert response == {"batchItemFailures": []}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert _steps(instance, cluster) == []


def should_return_the_job_to_the_queue_when_no_persistent_cluster_is_running(instance: AwsInstance) -> None:
    # Given a table and a job for it, with no cluster of the persistent cluster's name running
    table = instance.create_table(f"persistent-{uuid.uuid4().hex[:8]}", SCHEMA)
    job_id, body = _job(instance, table.name)
    message_id, event = _persistent_queue_event(instance, body)
    # When the starter handles it
    response = bulk_import_starter.handler(event)
    # Then the message is reported failed, so SQS delivers it again (and dead-letters it after the redrive limit),
    # and the run is recorded failed because no cluster has the persistent cluster's name
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None and status.status is IngestJobStatusType.FAILED
    name = instance.properties.get(cdk.BULK_IMPORT_PERSISTENT_EMR_CLUSTER_NAME.name) or ""
    assert any(name in reason for run in status.runs for reason in run.failure_reasons)
