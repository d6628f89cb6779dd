"""The boto3 clients an AWS instance's runtime uses, built once from :class:`AwsSettings` and shared."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client, s3_client
from sleeper.adapters.aws.exceptions import error_code, translate
from sleeper.adapters.aws.sqs_queue import sqs_client

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

__all__ = ["AwsClients"]

_NO_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


class AwsClients:
    """DynamoDB, S3 and SQS clients for one set of settings, each built on first use (boto3 clients are safe to
    share between threads).

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
    def s3(self) -> S3Client:
        """The S3 client."""
        return s3_client(self.settings)

    @cached_property
    def sqs(self) -> SQSClient:
        """The SQS client."""
        return sqs_client(self.settings)

    def queue_url(self, name: str) -> str | None:
        """The URL of the SQS queue with a name, or None if there is none.

        Raises:
            AwsError: If SQS fails otherwise.
        """
        try:
            return self.sqs.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError as e:
            if error_code(e) in _NO_QUEUE_CODES:
                return None
            raise translate(e, f"GetQueueUrl {name}") from e
        except BotoCoreError as e:
            raise translate(e, f"GetQueueUrl {name}") from e
