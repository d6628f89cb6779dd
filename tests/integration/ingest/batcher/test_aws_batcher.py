"""The ingest batcher on AWS services (a moto server): Sleeper's DynamoDB item format, and S3 paths with sizes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from sleeper.adapters.aws.batcher_store import (
    DynamoDBIngestBatcherStore,
    create_batcher_store_table,
)
from sleeper.adapters.aws.clients import dynamodb_client, s3_client
from sleeper.adapters.aws.resources import create_bucket
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.naming import batcher_store_table_name
from sleeper.ingest.batcher.job_creator import IngestBatcher
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.submitter import IngestBatcherSubmitter
from sleeper.io.filesystem import FileSystemOptions, S3Options
from tests.contract import aws_backends
from tests.unit.ingest.batcher.conftest import FakeInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

T0 = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


@pytest.fixture
def store() -> DynamoDBIngestBatcherStore:
    client = dynamodb_client(aws_backends.aws_settings())
    instance_id = aws_backends.new_instance_id()
    create_batcher_store_table(client, batcher_store_table_name(instance_id))
    return DynamoDBIngestBatcherStore.for_instance(client, instance_id)


def should_write_items_as_sleeper_does(store: DynamoDBIngestBatcherStore) -> None:
    # Given
    client = dynamodb_client(aws_backends.aws_settings())
    file = TrackedFile(file="bucket/dir/a.parquet", file_size_bytes=1234, table_id="abc", received_time=T0)

    # When
    store.add_file(file)
    store.assign_job_get_assigned("job-1", [file])

    # Then
    [item] = client.scan(TableName=store.table_name)["Items"]
    assert item == {
        "JobId": {"S": "job-1"},
        "FilePath": {"S": "abc/bucket/dir/a.parquet"},
        "FileSize": {"N": "1234"},
        "ReceivedTime": {"N": str(int(T0.timestamp() * 1000))},
        "ExpiryTime": {"N": str(int(T0.timestamp()) + 10080 * 60)},
    }
    assert store.table_name.endswith("-ingest-batcher-store")
    ttl = client.describe_time_to_live(TableName=store.table_name)["TimeToLiveDescription"]
    assert ttl.get("AttributeName") == "ExpiryTime"


def should_read_a_pending_item_sleeper_wrote(store: DynamoDBIngestBatcherStore) -> None:
    # Given
    client = dynamodb_client(aws_backends.aws_settings())
    client.put_item(
        TableName=store.table_name,
        Item={
            "JobId": {"S": "not_assigned_to_job"},
            "FilePath": {"S": "abc/bucket/b.parquet"},
            "FileSize": {"N": "77"},
            "ReceivedTime": {"N": "1714564800123"},
            "ExpiryTime": {"N": "1715169600"},
        },
    )

    # When
    [file] = store.pending_files_oldest_first()

    # Then
    assert file == TrackedFile(
        file="bucket/b.parquet",
        file_size_bytes=77,
        table_id="abc",
        received_time=datetime.fromtimestamp(1714564800.123, tz=UTC),
        expiry_time=datetime.fromtimestamp(1715169600, tz=UTC),
    )


def should_submit_s3_paths_with_sizes_and_batch_them(store: DynamoDBIngestBatcherStore) -> None:
    # Given files in an S3 bucket and a table sending to standard ingest
    settings = aws_backends.aws_settings()
    s3 = s3_client(settings)
    bucket = f"{aws_backends.new_instance_id()}-source"
    create_bucket(s3, bucket, settings.region)
    s3.put_object(Bucket=bucket, Key="dir/a.parquet", Body=b"a" * 10)
    s3.put_object(Bucket=bucket, Key="dir/sub/b.parquet", Body=b"b" * 20)
    s3.put_object(Bucket=bucket, Key="dir/.a.parquet.crc", Body=b"c")
    s3.put_object(Bucket=bucket, Key="single.parquet", Body=b"s" * 5)
    instance = FakeInstance()
    instance.add_table(
        "events",
        "t1",
        {
            "sleeper.table.ingest.batcher.ingest.queue": "standard_ingest",
            "sleeper.table.ingest.batcher.job.min.size": "0",
        },
    )
    options = FileSystemOptions(
        s3=S3Options(
            region=settings.region,
            endpoint_override=aws_backends.moto_endpoint(),
            access_key="testing",
            secret_key="testing",
        )
    )
    submitter = IngestBatcherSubmitter(instance, store, options=options, clock=lambda: T0)

    # When
    body = json.dumps({"tableName": "events", "files": [f"s3a://{bucket}/dir", f"{bucket}/single.parquet"]})
    submitted = submitter.submit_message(body)
    [created] = IngestBatcher(instance, store, clock=lambda: T0).create_jobs()

    # Then
    expected = [(f"{bucket}/dir/a.parquet", 10), (f"{bucket}/dir/sub/b.parquet", 20), (f"{bucket}/single.parquet", 5)]
    assert [(f.file, f.file_size_bytes) for f in submitted] == expected
    [message] = instance.messages("IngestJobQ")
    assert IngestJob.from_json(message) == created.job
    assert sorted(created.job.files) == sorted(path for path, _ in expected)

    # And when the request is delivered again after its files were batched, with one file rewritten since
    s3.put_object(Bucket=bucket, Key="single.parquet", Body=b"t" * 6)
    again = submitter.track_message(body)

    # Then only the rewritten file is tracked again; the others are skipped, naming their job
    assert all(f.file_modified_time is not None for f in submitted)
    assert [(s.file.file, s.job_id) for s in again.skipped] == [(path, created.job.id) for path, _ in expected[:2]]
    assert [(f.file, f.file_size_bytes) for f in again.tracked] == [(f"{bucket}/single.parquet", 6)]
    assert store.pending_files_oldest_first() == list(again.tracked)


def should_write_the_modification_time_beside_sleepers_attributes(store: DynamoDBIngestBatcherStore) -> None:
    # Given
    client = dynamodb_client(aws_backends.aws_settings())
    modified = datetime(2024, 4, 30, 8, 0, 0, 456000, tzinfo=UTC)
    file = TrackedFile(
        file="bucket/a.parquet", file_size_bytes=5, table_id="abc", received_time=T0, file_modified_time=modified
    )

    # When
    store.add_files_unless_batched([file])

    # Then
    [item] = client.scan(TableName=store.table_name)["Items"]
    assert item["FileModificationTime"] == {"N": str(int(modified.timestamp() * 1000))}
    assert set(item) == {"JobId", "FilePath", "FileSize", "ReceivedTime", "ExpiryTime", "FileModificationTime"}


def should_skip_a_file_a_job_creator_assigned_while_it_was_being_checked(
    store: DynamoDBIngestBatcherStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a pending file, and a job creator that assigns it just after the submitter looked for assigned records
    modified = datetime(2024, 4, 30, 8, 0, 0, tzinfo=UTC)
    first = TrackedFile(
        file="bucket/a.parquet", file_size_bytes=5, table_id="abc", received_time=T0, file_modified_time=modified
    )
    store.add_file(first)
    look_up = store._assigned_by_key
    calls: list[int] = []

    def assigned_meanwhile(keys: set[str]) -> dict[str, list[TrackedFile]]:
        found = look_up(keys)
        if not calls:
            assert store.assign_job_get_assigned("job-1", [first]) == ["bucket/a.parquet"]
        calls.append(1)
        return found

    monkeypatch.setattr(store, "_assigned_by_key", assigned_meanwhile)

    # When the same file is submitted again
    again = TrackedFile(
        file="bucket/a.parquet", file_size_bytes=5, table_id="abc", received_time=T0, file_modified_time=modified
    )
    skipped = store.add_files_unless_batched([again])

    # Then the put found the pending record gone, checked again and skipped the file
    assert len(calls) == 2
    assert [s.job_id for s in skipped] == ["job-1"]
    assert store.pending_files_oldest_first() == []
