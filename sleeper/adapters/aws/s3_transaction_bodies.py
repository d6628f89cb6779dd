"""Large transaction bodies in the data bucket.

Keys are data-bucket keys such as ``<table id>/statestore/transactions/<time>-<uuid>.json``; the log entry's
``BODY_S3_KEY`` holds the same key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import AwsError, error_code, translate, translated
from sleeper.statestore import TransactionBodyNotFoundError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3TransactionBodyStore:
    """Transaction bodies as UTF-8 JSON objects in a bucket.

    Implements ``sleeper.statestore.ports.TransactionBodyStore``.
    """

    def __init__(self, client: S3Client, bucket: str) -> None:
        """Creates the store.

        Args:
            client: The S3 client.
            bucket: The data bucket of the instance.
        """
        self._client = client
        self._bucket = bucket

    def store(self, key: str, body: str) -> None:
        """Stores a body under a key (overwriting the same body is harmless).

        Raises:
            AwsError: If S3 fails.
        """
        with translated(self._operation("PutObject", key)):
            self._client.put_object(
                Bucket=self._bucket, Key=key, Body=body.encode("utf-8"), ContentType="application/json"
            )

    def load(self, key: str) -> str:
        """Loads a body.

        Raises:
            TransactionBodyNotFoundError: If there is none under the key.
            AwsError: If S3 fails otherwise.
        """
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=key)
            return response["Body"].read().decode("utf-8")
        except ClientError as e:
            if error_code(e) in _MISSING_CODES:
                raise TransactionBodyNotFoundError(f"no transaction body at s3://{self._bucket}/{key}") from e
            raise translate(e, self._operation("GetObject", key)) from e
        except BotoCoreError as e:
            raise translate(e, self._operation("GetObject", key)) from e

    def delete(self, key: str) -> None:
        """Deletes a body; a missing body is not an error.

        Raises:
            AwsError: If S3 fails.
        """
        with translated(self._operation("DeleteObject", key)):
            self._client.delete_object(Bucket=self._bucket, Key=key)

    def delete_under(self, prefix: str) -> int:
        """Deletes every object whose key starts with a prefix, e.g. a table's ``<table id>/statestore/``.

        Returns:
            How many objects were deleted.

        Raises:
            AwsError: If S3 fails, or refuses to delete some of the objects.
        """
        deleted = 0
        paginator = self._client.get_paginator("list_objects_v2")
        with translated(self._operation("DeleteObjects", prefix)):
            for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
                keys = [obj["Key"] for obj in page.get("Contents", [])]
                if not keys:
                    continue
                response = self._client.delete_objects(
                    Bucket=self._bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
                )
                errors = response.get("Errors", [])
                if errors:
                    first = errors[0]
                    raise AwsError(
                        self._operation("DeleteObjects", first.get("Key", prefix)),
                        first.get("Code", ""),
                        f"{first.get('Message', '')} ({len(errors)} objects not deleted)",
                    )
                deleted += len(keys)
        return deleted

    def _operation(self, action: str, key: str) -> str:
        return f"{action} s3://{self._bucket}/{key}"
