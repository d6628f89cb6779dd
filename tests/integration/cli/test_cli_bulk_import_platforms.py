"""``sleeper bulk-import --queue --platform`` on an instance on AWS (a moto server): each platform's job goes to its
own queue, in Sleeper's JSON with the job's ``className``; what cannot be done is refused in one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleeper.cli.main import run
from sleeper.core.operations import (
    BULK_IMPORT_EKS_Q,
    BULK_IMPORT_EMR_Q,
    BULK_IMPORT_EMR_SERVERLESS_Q,
    BULK_IMPORT_PERSISTENT_EMR_Q,
    BULK_IMPORT_PLATFORM_QUEUES,
)
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.provision import provision_instance
from sleeper.ingest.batcher.job_creator import INGEST_QUEUE_NAMES
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.local.instance import LocalInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
EMR_QUEUES = (BULK_IMPORT_EMR_SERVERLESS_Q, BULK_IMPORT_EMR_Q, BULK_IMPORT_PERSISTENT_EMR_Q)


@pytest.fixture(scope="module")
def instance() -> AwsInstance:
    """An instance with the EMR platforms' queues deployed (no EKS stack)."""
    aws = AwsInstance(provision_instance(aws_settings(), new_instance_id(), queues=EMR_QUEUES), table_cache_seconds=0)
    aws.create_table("nums", SCHEMA)
    return aws


@pytest.fixture
def on_aws(instance: AwsInstance, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsInstance]:
    for name in ("CONFIG_BUCKET", "SLEEPER_INSTANCE_ID", "SLEEPER_ACCOUNT", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("SLEEPER_INSTANCE", f"aws:{instance.instance_id}")
    yield instance


def _bodies(instance: AwsInstance, logical_queue: str) -> list[dict[str, object]]:
    queue, bodies = instance.queue(logical_queue), []
    while batch := queue.receive(10):
        for message in batch:
            bodies.append(json.loads(message.body))
            queue.delete(message.receipt_handle)
    return bodies


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert run(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return " ".join(captured.err.split())


@pytest.mark.parametrize(
    ("platform", "queue"),
    [(None, BULK_IMPORT_EMR_SERVERLESS_Q), *zip(["emr-serverless", "emr", "persistent-emr"], EMR_QUEUES, strict=True)],
)
def should_send_the_job_to_the_queue_of_its_platform(
    on_aws: AwsInstance, platform: str | None, queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # When
    argv = ["bulk-import", "nums", "bucket/in.parquet", "--queue", "--job-id", "job-1"]
    argv += ["--class-name", "dataframe-sort"] + (["--platform", platform] if platform else [])
    capsys.readouterr()
    assert run(argv) == 0

    # Then only the platform's queue has the job, with its algorithm
    said = " ".join(capsys.readouterr().out.split())
    assert said == f"Sent bulk import job job-1 to {on_aws.queue(queue).name}"
    sent = {q: _bodies(on_aws, q) for q in EMR_QUEUES}
    assert sent.pop(queue) == [
        {"id": "job-1", "tableName": "nums", "files": ["bucket/in.parquet"], "className": "dataframe-sort"}
    ]
    assert all(bodies == [] for bodies in sent.values())


def should_send_an_eks_job_to_the_queue_the_eks_stack_deploys(
    instance: AwsInstance, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance whose EKS queue is deployed
    with_eks = AwsInstance(
        provision_instance(aws_settings(), new_instance_id(), queues=(BULK_IMPORT_EKS_Q,)), table_cache_seconds=0
    )
    with_eks.create_table("nums", SCHEMA)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("SLEEPER_INSTANCE", f"aws:{with_eks.instance_id}")
    # When a job is sent with --platform eks
    capsys.readouterr()
    assert run(["bulk-import", "nums", "bucket/in.parquet", "--queue", "--platform", "eks", "--job-id", "job-2"]) == 0
    # Then it is on BulkImportEKSQ, the queue the ingest batcher's bulk_import_eks target uses too
    assert _bodies(with_eks, BULK_IMPORT_EKS_Q) == [
        {"id": "job-2", "tableName": "nums", "files": ["bucket/in.parquet"]}
    ]
    assert INGEST_QUEUE_NAMES["bulk_import_eks"] == BULK_IMPORT_EKS_Q


def should_refuse_a_platform_whose_stack_is_not_deployed(
    on_aws: AwsInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _fails(capsys, ["bulk-import", "nums", "bucket/in.parquet", "--queue", "--platform", "eks"])
    assert "BulkImportEKSQ" in error


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--queue", "--platform", "yarn"], "unknown bulk import platform 'yarn': use one of emr-serverless, emr"),
        (["--platform", "emr"], "--platform chooses the queue a job is sent to: give --queue too"),
        (["--queue", "--class-name", "com.example.Driver"], "--class-name 'com.example.Driver' is not a bulk import"),
    ],
)
def should_refuse_what_cannot_be_done_and_send_nothing(
    on_aws: AwsInstance, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _fails(capsys, ["bulk-import", "nums", "bucket/in.parquet", *extra])
    assert all(_bodies(on_aws, q) == [] for q in EMR_QUEUES)


def should_refuse_a_platform_on_a_local_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    local = LocalInstance.create(tmp_path / "instance")
    local.create_table("nums", SCHEMA)
    monkeypatch.setenv("SLEEPER_INSTANCE", str(tmp_path / "instance"))
    error = _fails(capsys, ["bulk-import", "nums", str(tmp_path / "in.parquet"), "--queue", "--platform", "emr"])
    assert "a local instance has no bulk import platforms ('emr' given)" in error


def should_name_every_platform_in_one_place() -> None:
    assert list(BULK_IMPORT_PLATFORM_QUEUES) == ["emr-serverless", "emr", "persistent-emr", "eks"]
