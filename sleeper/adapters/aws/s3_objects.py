"""Whole S3 objects through a boto3 S3 client: upload a local file or bytes, list the keys under a prefix, read an
object. For callers that must use a client they were given (Sleeper's Python client takes one), where the rest of
the package reads and writes data files with pyarrow's S3 filesystem.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import AwsError, translate, translated

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["get_bytes", "list_keys", "put_bytes", "upload_file"]


def upload_file(client: S3Client, path: str, bucket: str, key: str) -> None:
    """Uploads a local file (multipart when large, as boto3's transfer manager does).

    Raises:
        AwsError: If S3 refuses or cannot be reached.
    """
    operation = f"PutObject s3://{bucket}/{key}"
    try:
        client.upload_file(path, bucket, key)
    except (ClientError, BotoCoreError) as e:
        raise translate(e, operation) from e
    except S3UploadFailedError as e:  # the transfer manager's wrapping of a client error
        cause = e.__cause__ or e.__context__
        if isinstance(cause, (ClientError, BotoCoreError)):
            raise translate(cause, operation) from e
        raise AwsError(operation, "S3UploadFailedError", str(e)) from e


def put_bytes(client: S3Client, bucket: str, key: str, data: bytes) -> None:
    """Writes an object.

    Raises:
        AwsError: If S3 refuses or cannot be reached.
    """
    with translated(f"PutObject s3://{bucket}/{key}"):
        client.put_object(Bucket=bucket, Key=key, Body=data)


def list_keys(client: S3Client, bucket: str, prefix: str) -> list[str]:
    """The keys of every object under a prefix, in S3's (lexicographic) order.

    Raises:
        AwsError: If S3 refuses or cannot be reached (``AwsResourceNotFoundError`` for a missing bucket).
    """
    keys: list[str] = []
    with translated(f"ListObjectsV2 s3://{bucket}/{prefix}"):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
    return keys


def get_bytes(client: S3Client, bucket: str, key: str) -> bytes:
    """Reads an object whole.

    Raises:
        AwsError: If S3 refuses or cannot be reached, or the object does not exist.
    """
    with translated(f"GetObject s3://{bucket}/{key}"):
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
