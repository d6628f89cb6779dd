"""The one holder of the boto3 clients an AWS instance's runtime uses, each built once from :class:`AwsSettings` (by
the builders of :mod:`sleeper.adapters.aws.clients`) and shared.

:class:`~sleeper.runtime.aws.instance.AwsInstance` owns one; every AWS path (the handlers' operations, compaction,
the admin client, the emulator's pump) takes its clients from it rather than building and caching its own.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from sleeper.adapters.aws.clients import (
    AwsSettings,
    EcsClient,
    EmrClient,
    EmrServerlessClient,
    dynamodb_client,
    ec2_client,
    ecs_client,
    emr_client,
    emr_serverless_client,
    events_client,
    s3_client,
    sqs_client,
    stepfunctions_client,
    streams_client,
    sts_client,
)
from sleeper.adapters.aws.resources import queue_url_or_none

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

__all__ = ["AwsClients"]


class AwsClients:
    """Every client for one set of settings, each built on first use (boto3 clients are safe to share between
    threads).

    Args:
        settings: How to reach AWS.
    """

    def __init__(self, settings: AwsSettings) -> None:
        self.settings = settings

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        """The DynamoDB client."""
        return dynamodb_client(self.settings)

    @cached_property
    def dynamodb_streams(self) -> Any:
        """The DynamoDB Streams client."""
        return streams_client(self.settings)

    @cached_property
    def s3(self) -> S3Client:
        """The S3 client."""
        return s3_client(self.settings)

    @cached_property
    def sqs(self) -> SQSClient:
        """The SQS client."""
        return sqs_client(self.settings)

    @cached_property
    def ecs(self) -> EcsClient:
        """The ECS client."""
        return ecs_client(self.settings)

    @cached_property
    def emr(self) -> EmrClient:
        """The EMR client."""
        return emr_client(self.settings)

    @cached_property
    def emr_serverless(self) -> EmrServerlessClient:
        """The EMR Serverless client."""
        return emr_serverless_client(self.settings)

    @cached_property
    def events(self) -> Any:
        """The EventBridge client."""
        return events_client(self.settings)

    @cached_property
    def sts(self) -> Any:
        """The STS client."""
        return sts_client(self.settings)

    @cached_property
    def ec2(self) -> Any:
        """The EC2 client."""
        return ec2_client(self.settings)

    @cached_property
    def stepfunctions(self) -> Any:
        """The Step Functions client."""
        return stepfunctions_client(self.settings)

    def queue_url(self, name: str) -> str | None:
        """The URL of the SQS queue with a name, or None if there is none.

        Raises:
            AwsError: If SQS fails otherwise.
        """
        return queue_url_or_none(self.sqs, name)
