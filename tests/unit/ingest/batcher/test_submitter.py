"""The submitter: requests are read, paths expanded with sizes and stored; bad requests go to the dead-letter queue."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyarrow import fs as pafs

from sleeper.adapters.memory.batcher_store import InMemoryIngestBatcherStore
from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.ingest.batcher.exceptions import (
    BatcherFileNotFoundError,
    BatcherTableNotFoundError,
    InvalidSubmitRequestError,
    SubmitRequestError,
)
from sleeper.ingest.batcher.model import SubmitRequest, TrackedFile
from sleeper.ingest.batcher.submitter import (
    IngestBatcherSubmitter,
    handle_submit_message,
    parse_submit_request,
    submit_files,
)
from tests.unit.ingest.batcher.conftest import T0, FakeClock, FakeInstance


def _write(fs: pafs.FileSystem, path: str, size: int) -> None:
    with fs.open_output_stream(path) as out:
        out.write(b"x" * size)


@pytest.fixture
def fs() -> pafs.FileSystem:
    return in_memory_filesystem()


@pytest.fixture
def submitter(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem, clock: FakeClock
) -> IngestBatcherSubmitter:
    instance.add_table("events", "t1")
    return IngestBatcherSubmitter(instance, store, filesystem=fs, clock=clock)


def should_read_a_submit_request() -> None:
    # Given
    body = '{"tableName": "events", "files": ["bucket/a.parquet", "s3a://bucket/dir"]}'

    # When
    request = parse_submit_request(body)

    # Then
    assert request == SubmitRequest(table_name="events", files=("bucket/a.parquet", "s3a://bucket/dir"))
    assert request.json_message == body
    assert parse_submit_request(request.to_json()) == request


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("not json", "not valid JSON"),
        ('["events"]', "must be an object"),
        ('{"files": ["bucket/a"]}', "$.tableName"),
        ('{"tableName": "events"}', "$.files"),
        ('{"tableName": "events", "files": []}', "must not be empty"),
        ('{"tableName": "events", "files": [null]}', "$.files[0]"),
        ('{"tableName": "events", "files": ["bucket/../etc"]}', "$.files[0]"),
        ('{"tableName": "events", "files": ["/local/file"]}', "$.files[0]"),
        ('{"tableName": "events", "files": ["bucket/a"], "extra": 1}', "$.extra"),
    ],
)
def should_reject_an_invalid_request(body: str, problem: str) -> None:
    # Given / When
    with pytest.raises(InvalidSubmitRequestError) as caught:
        parse_submit_request(body)

    # Then
    assert problem in str(caught.value)
    assert caught.value.json_message == body


def should_store_each_file_with_its_size_received_time_and_expiry(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 10)
    _write(fs, "bucket/b.parquet", 25)

    # When
    files = submitter.submit_message('{"tableName": "events", "files": ["bucket/a.parquet", "s3://bucket/b.parquet"]}')

    # Then
    expected = [
        TrackedFile(
            file=f"bucket/{name}.parquet",
            file_size_bytes=size,
            table_id="t1",
            received_time=T0,
            expiry_time=T0 + timedelta(minutes=10080),
        )
        for name, size in (("a", 10), ("b", 25))
    ]
    assert files == expected
    assert store.pending_files_oldest_first() == expected


def should_expand_a_directory_to_every_file_under_it_except_checksums(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/dir/b.parquet", 2)
    _write(fs, "bucket/dir/sub/a.parquet", 3)
    _write(fs, "bucket/dir/.b.parquet.crc", 1)
    _write(fs, "bucket/other/c.parquet", 4)

    # When
    files = submitter.submit(SubmitRequest(table_name="events", files=("bucket/dir",)))

    # Then
    assert [(f.file, f.file_size_bytes) for f in files] == [
        ("bucket/dir/b.parquet", 2),
        ("bucket/dir/sub/a.parquet", 3),
    ]
    assert len(store.pending_files_oldest_first()) == 2


def should_take_the_time_to_live_from_the_table(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem, clock: FakeClock
) -> None:
    # Given
    instance.add_table("short", "t2", {"sleeper.table.ingest.batcher.file.tracking.ttl.minutes": "5"})
    _write(fs, "bucket/a.parquet", 1)
    submitter = IngestBatcherSubmitter(instance, store, filesystem=fs, clock=clock)

    # When
    [file] = submitter.submit(SubmitRequest(table_name="short", files=("bucket/a.parquet",)))

    # Then
    assert file.expiry_time == T0 + timedelta(minutes=5)


def should_overwrite_a_pending_file_when_it_is_resubmitted(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem, clock: FakeClock
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 1)
    submitter.submit(SubmitRequest(table_name="events", files=("bucket/a.parquet",)))
    _write(fs, "bucket/a.parquet", 7)
    clock.advance(60)

    # When
    submitter.submit(SubmitRequest(table_name="events", files=("bucket/a.parquet",)))

    # Then
    [file] = store.all_files_newest_first()
    assert (file.file_size_bytes, file.received_time) == (7, T0 + timedelta(seconds=60))


def should_reject_a_request_for_an_unknown_table(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 1)

    # When / Then
    with pytest.raises(BatcherTableNotFoundError, match="nope"):
        submitter.submit_message('{"tableName": "nope", "files": ["bucket/a.parquet"]}')
    assert store.all_files_newest_first() == []


def should_reject_the_whole_request_when_a_path_names_no_file(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 1)
    fs.create_dir("bucket/empty")

    # When / Then
    for missing in ("bucket/missing.parquet", "bucket/empty"):
        with pytest.raises(BatcherFileNotFoundError, match=missing):
            submitter.submit(SubmitRequest(table_name="events", files=("bucket/a.parquet", missing)))
    assert store.all_files_newest_first() == []


def should_send_a_rejected_request_to_the_dead_letter_queue(
    submitter: IngestBatcherSubmitter, instance: FakeInstance, store: InMemoryIngestBatcherStore
) -> None:
    # Given
    body = '{"tableName": "events", "files": ["bucket/missing.parquet"]}'
    dead_letters = instance.queues.queue("IngestBatcherSubmitDLQ")

    # When
    outcome = handle_submit_message(submitter, body, dead_letter_queue=dead_letters)

    # Then
    assert not outcome.accepted
    assert outcome.rejected_reason is not None and "bucket/missing.parquet" in outcome.rejected_reason
    assert [m.body for m in dead_letters.receive(max_messages=10)] == [body]
    assert store.all_files_newest_first() == []


def should_not_send_an_accepted_request_to_the_dead_letter_queue(
    submitter: IngestBatcherSubmitter, instance: FakeInstance, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 5)
    dead_letters = instance.queues.queue("IngestBatcherSubmitDLQ")

    # When
    outcome = handle_submit_message(
        submitter, '{"tableName": "events", "files": ["bucket/a.parquet"]}', dead_letter_queue=dead_letters
    )

    # Then
    assert outcome.accepted
    assert [f.file for f in outcome.files] == ["bucket/a.parquet"]
    assert "1 files" in outcome.describe()
    assert dead_letters.receive(max_messages=10) == []


def should_submit_files_named_directly(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given
    _write(fs, "bucket/a.parquet", 5)

    # When
    files = submit_files(submitter, "events", ["bucket/a.parquet"])

    # Then
    assert store.pending_files_oldest_first() == files


def should_reject_an_unsafe_path_submitted_directly(submitter: IngestBatcherSubmitter) -> None:
    # Given / When / Then
    with pytest.raises(SubmitRequestError, match=r"\$\.files\[0\]"):
        submit_files(submitter, "events", ["bucket/../../etc/passwd"])


# --- a file already batched into a job -------------------------------------------------------------------------------
@pytest.fixture
def local_submitter(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock
) -> IngestBatcherSubmitter:
    instance.add_table("events", "t1")
    return IngestBatcherSubmitter(instance, store, allow_local=True, clock=clock)


def _write_local(path: Path, size: int, *, modified: datetime = T0 - timedelta(hours=1)) -> str:
    path.write_bytes(b"x" * size)
    os.utime(path, (modified.timestamp(), modified.timestamp()))
    return str(path)


def should_keep_the_modification_time_of_each_file(
    local_submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, tmp_path: Path
) -> None:
    # Given
    modified = datetime(2024, 4, 1, 9, 30, 15, 250000, tzinfo=UTC)
    path = _write_local(tmp_path / "a.parquet", 5, modified=modified)
    (tmp_path / "dir").mkdir()
    _write_local(tmp_path / "dir" / "b.parquet", 6)

    # When
    files = local_submitter.submit(SubmitRequest(table_name="events", files=(path, str(tmp_path / "dir"))))

    # Then
    assert [f.file_modified_time for f in files] == [modified, T0 - timedelta(hours=1)]
    assert store.pending_files_oldest_first() == files


def should_skip_a_file_already_batched_into_a_job_and_unchanged_since(
    local_submitter: IngestBatcherSubmitter,
    store: InMemoryIngestBatcherStore,
    instance: FakeInstance,
    clock: FakeClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a request whose file was batched into a job
    body = json.dumps({"tableName": "events", "files": [_write_local(tmp_path / "a.parquet", 5)]})
    dead_letters = instance.queues.queue("IngestBatcherSubmitDLQ")
    [first] = handle_submit_message(local_submitter, body, dead_letter_queue=dead_letters).files
    store.assign_job_get_assigned("job-1", [first])
    clock.advance(600)

    # When the request is delivered again
    with caplog.at_level(logging.INFO, logger="sleeper.ingest.batcher.submitter"):
        outcome = handle_submit_message(local_submitter, body, dead_letter_queue=dead_letters)

    # Then the file is not tracked again: the skip is reported with its job, and logged
    assert outcome.accepted
    assert outcome.files == ()
    assert [(s.file.file, s.job_id) for s in outcome.skipped] == [(str(tmp_path / "a.parquet"), "job-1")]
    assert "skipped 1 files already batched" in outcome.describe() and "job-1" in outcome.describe()
    assert any("job-1" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    assert store.all_files_newest_first() == [first.assigned_to("job-1")]
    assert dead_letters.receive(max_messages=10) == []


@pytest.mark.parametrize(
    ("size", "modified"),
    [pytest.param(6, T0 - timedelta(hours=1), id="size"), pytest.param(5, T0, id="modification time")],
)
def should_track_again_a_batched_file_rewritten_under_the_same_path(
    local_submitter: IngestBatcherSubmitter,
    store: InMemoryIngestBatcherStore,
    clock: FakeClock,
    tmp_path: Path,
    size: int,
    modified: datetime,
) -> None:
    # Given
    path = _write_local(tmp_path / "a.parquet", 5)
    request = SubmitRequest(table_name="events", files=(path,))
    [first] = local_submitter.submit(request)
    store.assign_job_get_assigned("job-1", [first])
    clock.advance(600)

    # When the file is rewritten and submitted again
    _write_local(tmp_path / "a.parquet", size, modified=modified)
    result = local_submitter.track(request)

    # Then it is tracked again
    assert result.skipped == ()
    assert [(f.file_size_bytes, f.file_modified_time) for f in result.tracked] == [(size, modified)]
    assert store.pending_files_oldest_first() == list(result.tracked)


def should_track_again_a_batched_file_when_the_filesystem_gives_no_modification_time(
    submitter: IngestBatcherSubmitter, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given a filesystem without modification times (the in-memory one)
    _write(fs, "bucket/a.parquet", 5)
    request = SubmitRequest(table_name="events", files=("bucket/a.parquet",))
    [first] = submitter.submit(request)
    store.assign_job_get_assigned("job-1", [first])

    # When
    result = submitter.track(request)

    # Then it counts as changed, as before modification times were kept
    assert result.skipped == ()
    assert len(store.pending_files_oldest_first()) == 1


def should_send_a_request_naming_a_file_twice_to_the_dead_letter_queue(
    submitter: IngestBatcherSubmitter, instance: FakeInstance, store: InMemoryIngestBatcherStore, fs: pafs.FileSystem
) -> None:
    # Given a directory and a file inside it, named in two spellings
    fs.create_dir("bucket/dir")
    _write(fs, "bucket/dir/a.parquet", 10)
    _write(fs, "bucket/dir/b.parquet", 20)
    body = json.dumps({"tableName": "events", "files": ["s3://bucket/dir", "bucket/dir/b.parquet"]})
    dlq = instance.queues.queue("IngestBatcherSubmitDLQ")

    # When
    outcome = handle_submit_message(submitter, body, dead_letter_queue=dlq)

    # Then the request is refused, naming the file and both paths, and nothing is tracked
    assert not outcome.accepted
    assert outcome.rejected_reason is not None
    assert "bucket/dir/b.parquet is named more than once" in outcome.rejected_reason
    assert "'s3://bucket/dir' and 'bucket/dir/b.parquet'" in outcome.rejected_reason
    assert [m.body for m in dlq.receive(10)] == [body]
    assert store.all_files_newest_first() == []
    with pytest.raises(InvalidSubmitRequestError, match="named more than once"):
        submit_files(submitter, "events", ["bucket/dir/a.parquet", "s3a://bucket/dir/a.parquet"])
