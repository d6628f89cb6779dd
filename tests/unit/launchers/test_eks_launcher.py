"""The EKS platform's request to Step Functions: the execution name within 80 characters, the Spark driver pod's
name, the executor pod template, and a clear error when the EKS stack's properties are not set."""

from __future__ import annotations

import json

import pytest

from sleeper.adapters.aws.launchers.eks import (
    eks_execution_name,
    eks_start_execution_request,
    executor_pod_template,
    job_pod_prefix,
)
from sleeper.bulk_import.launch_ports import BulkImportRun
from sleeper.core.exceptions import PropertyError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.properties import instance_cdk as cdk

JOB = BulkImportJob(id="my-job", files=("s3a://bucket/in.parquet",), table_name="t", table_id="t-id")


def _run(properties: InstanceProperties) -> BulkImportRun:
    return BulkImportRun(
        job=JOB, job_run_id="run-1", table_properties=TableProperties(properties), job_file_key="bulk_import/x.json"
    )


def _deployed() -> InstanceProperties:
    return InstanceProperties(
        {
            cdk.CONFIG_BUCKET.name: "config",
            cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name: "arn:aws:states:eu-west-2:1:stateMachine:sm",
            cdk.BULK_IMPORT_EKS_CLUSTER_ENDPOINT.name: "https://eks.example",
            cdk.BULK_IMPORT_EKS_NAMESPACE.name: "ns",
        }
    )


def should_name_the_execution_after_the_table_and_job_within_80_characters() -> None:
    assert eks_execution_name("t-id", "my-job") == "t-id-my-job"
    long_job = "j" * 63
    name = eks_execution_name("x" * 40, long_job)
    assert name == "x" * 16 + "-" + long_job and len(name) == 80


def should_name_the_driver_pod_with_at_most_26_characters_of_the_job_id() -> None:
    assert job_pod_prefix("my-job") == "job-my-job"
    assert job_pod_prefix("a" * 40) == "job-" + "a" * 26


def should_give_executors_the_ephemeral_storage_in_the_drivers_zone() -> None:
    template = executor_pod_template("my-job", "50Gi")
    assert 'ephemeral-storage: "50Gi"' in template and template.count("50Gi") == 2
    assert "- my-job" in template and "topology.kubernetes.io/zone" in template


def should_take_the_job_conf_over_the_instance_conf() -> None:
    properties = _deployed()
    job = BulkImportJob(id="my-job", files=JOB.files, table_id="t-id", spark_conf={"spark.executor.memory": "2g"})
    run = BulkImportRun(job=job, job_run_id="r", table_properties=TableProperties(properties), job_file_key="k")
    args = json.loads(eks_start_execution_request(properties, run)["input"])["args"]
    assert "spark.executor.memory=2g" in args and "spark.executor.memory=16g" not in args


@pytest.mark.parametrize(
    "missing",
    [
        cdk.BULK_IMPORT_EKS_STATE_MACHINE_ARN.name,
        cdk.BULK_IMPORT_EKS_CLUSTER_ENDPOINT.name,
        cdk.BULK_IMPORT_EKS_NAMESPACE.name,
    ],
)
def should_say_which_property_the_undeployed_stack_would_set(missing: str) -> None:
    values = _deployed().to_dict()
    del values[missing]
    with pytest.raises(PropertyError, match=missing):
        eks_start_execution_request(InstanceProperties(values), _run(InstanceProperties(values)))
