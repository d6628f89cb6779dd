"""Where to reach AWS, and builders for the boto3 clients the adapters take: one function per service, each making a
new client (an instance's runtime shares one of each: :class:`~sleeper.adapters.aws.instance_clients.AwsClients`).

Setting ``endpoint_url`` to an emulator (a moto server, LocalStack) switches every client to it with no other change.
No mypy stubs are installed for ECS, EMR, EMR Serverless, EventBridge, STS, DynamoDB Streams or EC2, so their clients
are typed ``Any``.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

import boto3.session
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

EcsClient = Any
"""A boto3 ECS client."""
EmrClient = Any
"""A boto3 EMR client."""
EmrServerlessClient = Any
"""A boto3 EMR Serverless client."""


@dataclass(frozen=True, slots=True)
class AwsSettings:
    """How to reach AWS.

    Attributes:
        region: The AWS region, e.g. ``"eu-west-2"``.
        endpoint_url: An endpoint for every service (an emulator), or None for the real AWS endpoints.
        access_key_id: Explicit credentials (an emulator needs any non-empty pair); None uses boto3's usual chain.
        secret_access_key: The secret of ``access_key_id`` (left out of the repr, so it reaches no log).
        max_attempts: Attempts per call, including the client's own retries of throttling and transient errors.
    """

    region: str
    endpoint_url: str | None = None
    _: KW_ONLY
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    max_attempts: int = 5

    def __post_init__(self) -> None:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("give both access_key_id and secret_access_key, or neither")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def _config(self, *, path_style: bool = False) -> Config:
        config = Config(region_name=self.region, retries={"mode": "standard", "max_attempts": self.max_attempts})
        if path_style:
            # Emulators serve buckets by path; virtual-host addressing would need DNS for <bucket>.<endpoint host>.
            config = config.merge(Config(s3={"addressing_style": "path"}))
        return config

    def _session(self) -> boto3.session.Session:
        # A session of our own per client: boto3's default session is not safe to share between threads.
        return boto3.session.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
        )


def dynamodb_client(settings: AwsSettings) -> DynamoDBClient:
    """A DynamoDB client for the settings.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client("dynamodb", endpoint_url=settings.endpoint_url, config=settings._config())


def s3_client(settings: AwsSettings) -> S3Client:
    """An S3 client for the settings; path-style addressing when an emulator endpoint is set.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client(
        "s3",
        endpoint_url=settings.endpoint_url,
        config=settings._config(path_style=settings.endpoint_url is not None),
    )


def sqs_client(settings: AwsSettings) -> SQSClient:
    """An SQS client for the settings.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client("sqs", endpoint_url=settings.endpoint_url, config=settings._config())


def _untyped_client(settings: AwsSettings, service: str) -> Any:
    """A new client of a service without mypy stubs installed."""
    client: Any = settings._session().client(
        service,  # type: ignore[call-overload]
        endpoint_url=settings.endpoint_url,
        config=settings._config(),
    )
    return client


def ecs_client(settings: AwsSettings) -> EcsClient:
    """An ECS client for the settings."""
    return _untyped_client(settings, "ecs")


def emr_client(settings: AwsSettings) -> EmrClient:
    """An EMR client for the settings."""
    return _untyped_client(settings, "emr")


def emr_serverless_client(settings: AwsSettings) -> EmrServerlessClient:
    """An EMR Serverless client for the settings."""
    return _untyped_client(settings, "emr-serverless")


def events_client(settings: AwsSettings) -> Any:
    """An EventBridge client for the settings."""
    return _untyped_client(settings, "events")


def sts_client(settings: AwsSettings) -> Any:
    """An STS client for the settings."""
    return _untyped_client(settings, "sts")


def streams_client(settings: AwsSettings) -> Any:
    """A DynamoDB Streams client for the settings."""
    return _untyped_client(settings, "dynamodbstreams")


def ec2_client(settings: AwsSettings) -> Any:
    """An EC2 client for the settings (the emulator makes a network for tasks with it)."""
    return _untyped_client(settings, "ec2")


def stepfunctions_client(settings: AwsSettings) -> Any:
    """A Step Functions client for the settings (bulk import on EKS starts executions with it)."""
    return _untyped_client(settings, "stepfunctions")
