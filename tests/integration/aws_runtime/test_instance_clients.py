"""The one holder of an AWS instance's boto3 clients: each client is built once, for the instance's settings, and every
AWS path of the instance (the handlers' wiring, compaction, the admin client, the emulator's pump) takes it from there
rather than building its own."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3.session
import pytest

from sleeper.adapters.aws.instance_clients import AwsClients
from sleeper.core import operations
from sleeper.core.exceptions import PropertyError, SleeperError
from sleeper.core.operations import TriggerKind
from sleeper.emulator.pump import Pump
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.compaction import create_compaction_tasks_on_ecs
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.aws.operations import bulk_import_platform, create_ingest_tasks_on_ecs, ingest_batcher_store
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SERVICES = {
    "dynamodb": "dynamodb",
    "dynamodb_streams": "dynamodbstreams",
    "s3": "s3",
    "sqs": "sqs",
    "ecs": "ecs",
    "emr": "emr",
    "emr_serverless": "emr-serverless",
    "events": "events",
    "sts": "sts",
    "ec2": "ec2",
}
"""Each client of the holder, and the boto3 service it is a client of."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many boto3 clients of each service are built from now on."""
    counts: Counter[str] = Counter()
    build = boto3.session.Session.client

    def counting(self: boto3.session.Session, service_name: str, *args: Any, **kwargs: Any) -> Any:
        counts[service_name] += 1
        return build(self, service_name, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(boto3.session.Session, "client", counting)
    return counts


def should_build_each_client_once_for_the_settings(built: Counter[str]) -> None:
    # Given a holder for the settings of an emulator
    clients = AwsClients(aws_settings())
    # When each of its clients is taken twice
    taken = {name: (getattr(clients, name), getattr(clients, name)) for name in SERVICES}
    # Then each is one client of its service, built once, reaching the settings' region and endpoint
    for name, (first, second) in taken.items():
        assert first is second, name
        assert first.meta.service_model.service_name == SERVICES[name]
        assert (first.meta.region_name, first.meta.endpoint_url) == (REGION, moto_endpoint()), name
    assert built == Counter(SERVICES.values())


def should_share_one_client_of_each_service_between_every_aws_path_of_an_instance(
    instance: AwsInstance, built: Counter[str]
) -> None:
    # Given a new handle on an instance (no stack has set the ECS clusters or the persistent EMR cluster)
    fresh = AwsInstance(instance.config)
    # When the instance itself, the handlers' wiring, compaction, the admin client and the emulator's pump reach AWS
    fresh.queue(operations.INGEST_JOB_Q)
    fresh.tables()
    ingest_batcher_store(fresh)
    bulk_import_platform(fresh, operations.BULK_IMPORT_EMR_SERVERLESS_Q)
    bulk_import_platform(fresh, operations.BULK_IMPORT_EMR_Q)
    with pytest.raises(PropertyError):
        create_ingest_tasks_on_ecs(fresh)
    with pytest.raises(PropertyError):
        create_compaction_tasks_on_ecs(fresh)
    admin = AwsApi(fresh)
    assert admin.batcher_store is not None
    with pytest.raises(SleeperError, match="no EventBridge rules"):
        admin.pause()
    with pytest.raises(SleeperError, match="no EventBridge rules"):
        admin.resume()
    stream_handlers = [spec for spec in operations.HANDLERS if spec.trigger.kind is TriggerKind.STREAM]
    Pump(fresh, environment={}, handlers=stream_handlers, containers=())
    # Then each service's client was built once, and it is the instance's
    assert built == Counter(
        {"s3": 1, "dynamodb": 1, "sqs": 1, "emr-serverless": 1, "emr": 1, "ecs": 1, "events": 1, "dynamodbstreams": 1}
    )
