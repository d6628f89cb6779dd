"""Properties the deployment honours: EMR Serverless pre-initialised capacity, the EMR EBS and
Athena spill KMS keys, the committer's and state store upkeep Lambdas' concurrency, the compaction EC2 pool's
fixed overhead and point-in-time recovery turned off, in one synthesis of an instance that sets them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402

pytestmark = pytest.mark.slow

EBS_KEY = "arn:aws:kms:eu-west-2:123456789012:key/11111111-2222-3333-4444-555555555555"
SPILL_KEY = "arn:aws:kms:eu-west-2:123456789012:key/66666666-7777-8888-9999-000000000000"
PROPERTIES = {
    "sleeper.id": "props",
    "sleeper.optional.stacks": "EmrServerlessBulkImportStack,EmrBulkImportStack,AthenaStack,CompactionStack",
    "sleeper.compaction.ecs.launch.type": "EC2",
    "sleeper.compaction.task.scaling.overhead.fixed": "1000",
    "sleeper.bulk.import.emr.serverless.initial.capacity.enabled": "true",
    "sleeper.bulk.import.emr.serverless.initial.capacity.executor.count": "3",
    "sleeper.bulk.import.emr.serverless.initial.capacity.driver.count": "1",
    "sleeper.bulk.import.emr.ebs.encryption.key.arn": EBS_KEY,
    "sleeper.athena.spill.master.key.arn": SPILL_KEY,
    "sleeper.statestore.committer.concurrency.max": "7",
    "sleeper.statestore.snapshot.deletion.concurrency.reserved": "3",
    "sleeper.statestore.transaction.follower.concurrency.reserved": "4",
    "sleeper.statestore.dynamo.pointintimerecovery": "false",
    "sleeper.tables.index.dynamo.pointintimerecovery": "false",
}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("props")
    path = directory / "instance.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in PROPERTIES.items()), encoding="utf-8")
    app = cdk.App(
        analytics_reporting=False,
        outdir=str(directory / "cdk.out"),
        context={"artefacts": "ecr", "propertiesFile": str(path)},
    )
    stack = sleeper_app.build(app)
    app.synth()
    found = {"Instance": Template.from_stack(stack).to_json()}
    found.update({name: Template.from_stack(nested).to_json() for name, nested in stack.parts.items()})
    yield found


def _resources(templates: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for t in templates.values() for r in t.get("Resources", {}).values() if r["Type"] == kind]


def _function(templates: dict[str, dict[str, Any]], suffix: str) -> dict[str, Any]:
    (found,) = [
        f for f in _resources(templates, "AWS::Lambda::Function") if str(f.get("FunctionName", "")).endswith(suffix)
    ]
    return found


def should_keep_emr_serverless_workers_initialised(templates: dict[str, dict[str, Any]]) -> None:
    # When the EMR Serverless application is read
    (application,) = _resources(templates, "AWS::EMRServerless::Application")
    # Then it keeps the drivers and executors the properties ask for, sized by the defaults
    capacity = {c["Key"]: c["Value"] for c in application["InitialCapacity"]}
    assert capacity["Executor"]["WorkerCount"] == 3 and capacity["Driver"]["WorkerCount"] == 1
    assert capacity["Executor"]["WorkerConfiguration"] == {"Cpu": "4vCPU", "Memory": "18GB", "Disk": "200GB"}


def should_encrypt_emr_disks_with_the_given_key_the_hosts_may_use(templates: dict[str, dict[str, Any]]) -> None:
    # When the EMR security configuration and the hosts' policies are read
    (configuration,) = _resources(templates, "AWS::EMR::SecurityConfiguration")
    local = configuration["SecurityConfiguration"]["EncryptionConfiguration"]["AtRestEncryptionConfiguration"]
    statements = [s for p in _resources(templates, "AWS::IAM::Policy") for s in p["PolicyDocument"]["Statement"]]
    # Then local disks are encrypted with the key, and a policy lets the hosts use it
    assert local["LocalDiskEncryptionConfiguration"]["AwsKmsKey"] == EBS_KEY
    assert any(s.get("Resource") == EBS_KEY and "kms:GenerateDataKey*" in s["Action"] for s in statements)


def should_encrypt_the_athena_spill_bucket_with_the_given_key(templates: dict[str, dict[str, Any]]) -> None:
    # When the spill bucket is read
    (spill,) = [b for b in _resources(templates, "AWS::S3::Bucket") if "spill" in str(b.get("BucketName"))]
    # Then its default encryption is the key
    (rule,) = spill["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": SPILL_KEY}


def should_set_the_lambda_concurrency_the_properties_give(templates: dict[str, dict[str, Any]]) -> None:
    # When the functions and event sources are read
    sources = _resources(templates, "AWS::Lambda::EventSourceMapping")
    # Then the committer's queue feeds it with at most 7 at once, and the upkeep functions reserve theirs
    assert any(s.get("ScalingConfig") == {"MaximumConcurrency": 7} for s in sources)
    assert _function(templates, "state-snapshot-deletion")["ReservedConcurrentExecutions"] == 3
    assert _function(templates, "state-transaction-follower")["ReservedConcurrentExecutions"] == 4


def should_leave_the_fixed_overhead_out_of_the_compaction_task_memory(templates: dict[str, dict[str, Any]]) -> None:
    # When the compaction task definitions are read
    definitions = [
        d for d in _resources(templates, "AWS::ECS::TaskDefinition") if "compaction" in str(d["Family"]).lower()
    ]
    (ec2,) = [d for d in definitions if "EC2" in d.get("RequiresCompatibilities", [])]
    (fargate,) = [d for d in definitions if "FARGATE" in d.get("RequiresCompatibilities", [])]
    (container,) = ec2["ContainerDefinitions"]
    # Then the EC2 task reserves the task memory less the 1000 MB ECS keeps for itself
    assert container["MemoryReservation"] == int(fargate["Memory"]) - 1000


def should_turn_point_in_time_recovery_off_when_the_properties_say_so(templates: dict[str, dict[str, Any]]) -> None:
    # Given the instance sets both point-in-time recovery properties false (they default to true in this port)
    tables = _resources(templates, "AWS::DynamoDB::Table")

    # When
    pitr = {t["TableName"]: t["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] for t in tables}

    # Then neither the state store's tables nor the table index have it
    state_and_index = {name: on for name, on in pitr.items() if "transaction-log" in name or "table-index" in name}
    assert len(state_and_index) == 7
    assert not any(state_and_index.values())
