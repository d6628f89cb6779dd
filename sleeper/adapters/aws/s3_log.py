"""A table's transaction logs and snapshot records as S3 objects, with no DynamoDB (beyond Sleeper).

The layout is :mod:`sleeper.statestore.object_log`'s, in the data bucket. An append is a ``PutObject`` with
``If-None-Match: *`` on the next number's key: S3 writes it only if no object has that key, so two writers can never
both take a number (S3 answers 412 Precondition Failed to the loser, or 409 ConditionalRequestConflict while another
conditional write of the key is in flight; both are a collision here, as nothing was written). Reads list the keys
after a number (S3 lists are strongly consistent, in key order) and get each object.

A deleted table has a tombstone object outside its prefix. S3 has no transaction over two objects, so an append is
checked after it lands: if the table has a tombstone then, the appended entry is deleted again and the append is
refused (``TableDeletedError``). An append that lands after the tombstone is therefore always refused; one that
landed before it is deleted with the rest of the table, as on DynamoDB. The logic is
:mod:`sleeper.adapters.object_log`'s; this module gives it the bucket.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from sleeper.adapters.aws.exceptions import AwsError, translated
from sleeper.adapters.aws.s3_transaction_bodies import S3TransactionBodyStore
from sleeper.adapters.object_log import ObjectStateStoreBackend
from sleeper.core.jobs import transaction_body_prefix
from sleeper.statestore import numbered_name

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import PaginatorConfigTypeDef

__all__ = ["S3StateStoreBackend"]

_COLLISION_CODES = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_DELETE_BATCH = 1000


class _Bucket:
    """The object store of the logs (``sleeper.adapters.object_log.Objects``): the few S3 calls they make, each
    translating botocore errors to ``AwsError``."""

    def __init__(self, client: S3Client, bucket: str, page_size: int | None = None) -> None:
        self.client = client
        self.bucket = bucket
        self.pagination: PaginatorConfigTypeDef = {} if page_size is None else {"PageSize": page_size}

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Writes an object only if none has its key; False if one has (or another conditional write is in flight)."""
        try:
            with translated(self._op("PutObject", key), unless=_COLLISION_CODES):
                self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*", ContentType="application/json"
                )
        except ClientError:
            return False
        return True

    def put(self, key: str, data: bytes) -> None:
        with translated(self._op("PutObject", key)):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def get(self, key: str) -> bytes | None:
        """An object's bytes, or None if there is none."""
        try:
            with translated(self._op("GetObject", key), unless=_MISSING_CODES):
                return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError:
            return None

    def exists(self, key: str) -> bool:
        try:
            with translated(self._op("HeadObject", key), unless=_MISSING_CODES):
                self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError:
            return False
        return True

    def numbered_keys(self, prefix: str, *, after: int = -1) -> Iterator[str]:
        """Keys under a prefix in key order (the number order of numbered names), those of numbers above ``after``,
        page by page as they are consumed."""
        paginator = self.client.get_paginator("list_objects_v2")
        if after >= 0:
            pages = paginator.paginate(
                Bucket=self.bucket,
                Prefix=prefix,
                StartAfter=prefix + numbered_name(after),
                PaginationConfig=self.pagination,
            )
        else:
            pages = paginator.paginate(Bucket=self.bucket, Prefix=prefix, PaginationConfig=self.pagination)
        with translated(self._op("ListObjectsV2", prefix)):
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"]

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            with translated(self._op("DeleteObjects", batch[0])):
                response = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
                )
            errors = response.get("Errors", [])
            if errors:
                first = errors[0]
                raise AwsError(
                    self._op("DeleteObjects", first.get("Key", batch[0])),
                    first.get("Code", ""),
                    f"{first.get('Message', '')} ({len(errors)} objects not deleted)",
                )

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def _op(self, action: str, key: str) -> str:
        return f"{action} {self.where(key)}"


class S3StateStoreBackend(ObjectStateStoreBackend):
    """The state store of tables whose logs are S3 objects: logs, snapshot records and large bodies all in the data
    bucket. Implements ``sleeper.statestore.ports.StateStoreBackend``.

    Args:
        client: The S3 client.
        data_bucket: The instance's data bucket.
        list_page_size: At most this many keys per listing page; None takes S3's pages of up to 1,000.
    """

    def __init__(self, client: S3Client, data_bucket: str, *, list_page_size: int | None = None) -> None:
        super().__init__(_Bucket(client, data_bucket, list_page_size))
        self._client = client
        self._bucket = data_bucket

    def body_store(self, table_id: str) -> S3TransactionBodyStore:
        """The large-body store: the data bucket (keys start with the table id)."""
        return S3TransactionBodyStore(self._client, self._bucket)

    def delete_table(self, table_id: str) -> None:
        """Writes the table's tombstone (from then on its appends are refused), then deletes its log entries with
        their large bodies, its snapshot records, and every body under its ``statestore/transactions/``.

        Raises:
            AwsError: If S3 fails; calling again finishes.
        """
        super().delete_table(table_id)
        self.body_store(table_id).delete_under(transaction_body_prefix(table_id))
