"""Instance and table properties in the config bucket, laid out as Sleeper lays them out.

``s3://<config bucket>/instance.properties`` holds the instance properties (user and deployment values together) and
``s3://<config bucket>/tables/table-<table id>.properties`` the properties of each table, schema JSON inside
``sleeper.table.schema``. Both are Java ``.properties`` text, so Sleeper's own clients read them unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from sleeper.adapters.aws.exceptions import AwsResourceNotFoundError, translated
from sleeper.core import TableNotFoundError
from sleeper.core.properties import INSTANCE_PROPERTIES_KEY, javaprops, table_properties_key

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["TABLES_PREFIX", "S3PropertiesStore"]

TABLES_PREFIX = "tables/"
"""Where the table properties objects live in the config bucket."""

_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3PropertiesStore:
    """Reads and writes the properties objects of one instance's config bucket.

    Args:
        client: The S3 client.
        bucket: The config bucket (``sleeper-<cid>-config-<account>``).
    """

    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    @property
    def bucket(self) -> str:
        """The config bucket."""
        return self._bucket

    def load_instance(self) -> dict[str, str]:
        """The instance properties.

        Raises:
            AwsResourceNotFoundError: If the bucket holds no ``instance.properties``.
            AwsError: If S3 fails otherwise.
        """
        data = self._get(INSTANCE_PROPERTIES_KEY)
        if data is None:
            raise AwsResourceNotFoundError(
                f"GetObject s3://{self._bucket}/{INSTANCE_PROPERTIES_KEY}",
                "NoSuchKey",
                "no Sleeper instance properties in the config bucket",
            )
        return javaprops.decode(data)

    def save_instance(self, values: dict[str, str]) -> None:
        """Writes the instance properties (an S3 put: readers see the old or the new object, never a mix).

        Raises:
            AwsError: If S3 fails.
        """
        self._put(INSTANCE_PROPERTIES_KEY, javaprops.dump(values))

    def load_table(self, table_id: str) -> dict[str, str]:
        """The properties of a table.

        Raises:
            TableNotFoundError: If the bucket holds no properties for the table.
            AwsError: If S3 fails otherwise.
        """
        data = self._get(table_properties_key(table_id))
        if data is None:
            raise TableNotFoundError(f"table {table_id} has no properties in s3://{self._bucket}")
        return javaprops.decode(data)

    def save_table(self, table_id: str, values: dict[str, str]) -> None:
        """Writes the properties of a table.

        Raises:
            AwsError: If S3 fails.
        """
        self._put(table_properties_key(table_id), javaprops.dump(values))

    def delete_table(self, table_id: str) -> None:
        """Deletes the properties of a table; a table without properties is not an error.

        Raises:
            AwsError: If S3 fails.
        """
        key = table_properties_key(table_id)
        with translated(f"DeleteObject s3://{self._bucket}/{key}"):
            self._client.delete_object(Bucket=self._bucket, Key=key)

    def table_ids(self) -> list[str]:
        """The ids of every table with properties in the bucket, sorted.

        Raises:
            AwsError: If S3 fails.
        """
        ids: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        with translated(f"ListObjectsV2 s3://{self._bucket}/{TABLES_PREFIX}"):
            for page in paginator.paginate(Bucket=self._bucket, Prefix=TABLES_PREFIX):
                for obj in page.get("Contents", []):
                    name = obj["Key"].removeprefix(TABLES_PREFIX)
                    if name.startswith("table-") and name.endswith(".properties") and "/" not in name:
                        ids.append(name.removeprefix("table-").removesuffix(".properties"))
        return sorted(ids)

    def _get(self, key: str) -> bytes | None:
        try:
            with translated(f"GetObject s3://{self._bucket}/{key}", unless=_MISSING_CODES):
                response = self._client.get_object(Bucket=self._bucket, Key=key)
                return response["Body"].read()
        except ClientError:
            return None

    def _put(self, key: str, text: str) -> None:
        with translated(f"PutObject s3://{self._bucket}/{key}"):
            self._client.put_object(Bucket=self._bucket, Key=key, Body=text.encode("utf-8"), ContentType="text/plain")
