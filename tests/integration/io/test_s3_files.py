"""Data files and sketches on S3 through ``s3a://`` URIs, against a moto server reached by ``endpoint_override``."""

from __future__ import annotations

import uuid
from typing import Final

import boto3
import pyarrow as pa
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.exceptions import MissingFileError
from sleeper.io.filesystem import FileSystemOptions, S3Options, delete, exists, list_files, resolve, size
from sleeper.io.parquet import KeyBounds, ParquetSettings, SortedFileWriter, read_file_metadata, read_sorted
from sleeper.io.sketches import Sketches

pytestmark = [pytest.mark.integration, pytest.mark.aws]

REGION: Final = "eu-west-2"
SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("timestamp", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.STRING, nullable=True)],
)


@pytest.fixture
def options(endpoint: str) -> FileSystemOptions:
    return FileSystemOptions(
        s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing")
    )


@pytest.fixture
def bucket(endpoint: str) -> str:
    name = f"sleeper-test-table-data-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client(
        "s3",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
    return name


def _table(rows: int) -> pa.Table:
    return pa.table(
        {
            "key": [f"key-{i:06d}" for i in range(rows)],
            "timestamp": pa.array(range(rows), type=pa.int64()),
            "value": [None if i % 3 == 0 else f"value {i}" for i in range(rows)],
        }
    )


def should_write_and_read_a_sorted_file_with_its_sketches_on_s3(bucket: str, options: FileSystemOptions) -> None:
    # Given
    uri = f"s3a://{bucket}/table/data/partition_root/file.parquet"
    table = _table(3000)

    # When
    with SortedFileWriter(uri, SCHEMA, options=options, settings=ParquetSettings(row_group_rows=1000)) as writer:
        for batch in table.to_batches(max_chunksize=700):
            writer.write(batch)
    written = writer.result
    in_range = list(read_sorted(uri, SCHEMA, regions=[[KeyBounds("key", "key-001500", "key-001510")]], options=options))
    everything = pa.Table.from_batches(
        list(read_sorted(f"s3://{bucket}/table/data/partition_root/file.parquet", SCHEMA, options=options))
    )
    fs, sketches_key = resolve(f"s3a://{bucket}/table/data/partition_root/file.sketches", options)
    sketches = Sketches.read(fs, sketches_key, SCHEMA)

    # Then
    assert written.sketches_location == f"s3a://{bucket}/table/data/partition_root/file.sketches"
    assert pa.Table.from_batches(in_range).to_pylist() == table.slice(1500, 10).to_pylist()
    assert everything.to_pylist() == table.to_pylist()
    assert read_file_metadata(uri, SCHEMA, options=options).row_group_count == 3
    assert (sketches.min("key"), sketches.max("key")) == ("key-000000", "key-002999")
    assert written.size_bytes == size(fs, f"{bucket}/table/data/partition_root/file.parquet")


def should_list_check_and_delete_files_on_s3(bucket: str, options: FileSystemOptions) -> None:
    # Given
    for name in ("p1/a.parquet", "p2/b.parquet"):
        with SortedFileWriter(f"s3a://{bucket}/t/data/{name}", SCHEMA, options=options) as writer:
            writer.write(_table(10))
    fs, prefix = resolve(f"s3a://{bucket}/t/data", options)

    # When
    listed = [info.path for info in list_files(fs, prefix)]
    delete(fs, f"{bucket}/t/data/p1/a.parquet")
    delete(fs, f"{bucket}/t/data/p1/a.parquet")

    # Then
    assert listed == [
        f"{bucket}/t/data/{name}" for name in ("p1/a.parquet", "p1/a.sketches", "p2/b.parquet", "p2/b.sketches")
    ]
    assert not exists(fs, f"{bucket}/t/data/p1/a.parquet")
    assert exists(fs, f"{bucket}/t/data/p2/b.parquet")
    with pytest.raises(MissingFileError):
        list(read_sorted(f"s3a://{bucket}/t/data/p1/a.parquet", SCHEMA, options=options))


def should_leave_no_object_when_writing_fails(bucket: str, options: FileSystemOptions) -> None:
    # Given
    uri = f"s3a://{bucket}/t/data/failed.parquet"

    # When
    with pytest.raises(RuntimeError, match="producer failed"), SortedFileWriter(uri, SCHEMA, options=options) as w:
        w.write(_table(100))
        raise RuntimeError("producer failed")

    # Then
    fs, prefix = resolve(f"s3a://{bucket}/t", options)
    assert list_files(fs, prefix) == []
