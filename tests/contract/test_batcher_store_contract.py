"""The ingest batcher store contract: one suite over the in-memory, SQLite and DynamoDB (moto server) stores.

The DynamoDB store runs on the moto server of ``tests/contract/aws_backends.py``, one fresh table per store; moto is
slow, so the data here stays tiny.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sleeper.adapters.local.batcher_store import SqliteIngestBatcherStore
from sleeper.adapters.memory.batcher_store import InMemoryIngestBatcherStore
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.ports import IngestBatcherStore

StoreFactory = Callable[..., IngestBatcherStore]
"""Makes a new, empty store; ``assign_batch_size`` may be given."""

T0 = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


def _aws_store(**kwargs: Any) -> IngestBatcherStore:
    try:
        from tests.contract import aws_backends
    except Exception as e:  # an optional family: any failure to import means it cannot run here
        pytest.skip(f"AWS contract backends cannot be imported: {e}")
    from sleeper.adapters.aws.batcher_store import DynamoDBIngestBatcherStore, create_batcher_store_table
    from sleeper.adapters.aws.clients import dynamodb_client
    from sleeper.core.naming import batcher_store_table_name

    client = dynamodb_client(aws_backends.aws_settings())
    name = batcher_store_table_name(aws_backends.new_instance_id())
    create_batcher_store_table(client, name)
    return DynamoDBIngestBatcherStore(client, name, **kwargs)


@pytest.fixture(params=["memory", "sqlite", pytest.param("aws", marks=pytest.mark.aws)])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    family: str = request.param
    if family == "memory":
        return InMemoryIngestBatcherStore
    if family == "sqlite":
        return lambda **kwargs: SqliteIngestBatcherStore(tmp_path / f"{uuid.uuid4().hex}.db", **kwargs)
    return _aws_store


@pytest.fixture
def store(make_store: StoreFactory) -> IngestBatcherStore:
    return make_store()


def _file(path: str, *, table: str = "t1", size: int = 100, seconds: float = 0, job: str | None = None) -> TrackedFile:
    return TrackedFile(
        file=path, file_size_bytes=size, table_id=table, received_time=T0 + timedelta(seconds=seconds), job_id=job
    )


def should_list_pending_files_oldest_first(store: IngestBatcherStore) -> None:
    # Given
    newest = _file("bucket/c.parquet", seconds=20)
    oldest = _file("bucket/b.parquet", table="t2", seconds=0)
    middle = _file("bucket/a.parquet", seconds=10)
    for file in (newest, oldest, middle):
        store.add_file(file)

    # When
    pending = store.pending_files_oldest_first()

    # Then
    assert pending == [oldest, middle, newest]


def should_read_back_sizes_and_times_at_sleepers_precision(store: IngestBatcherStore) -> None:
    # Given
    file = TrackedFile(
        file="bucket/dir/file.parquet",
        file_size_bytes=5 * 1024**4,
        table_id="abc123",
        received_time=T0 + timedelta(microseconds=999),
        expiry_time=T0 + timedelta(minutes=10080, microseconds=5),
    )

    # When
    store.add_file(file)

    # Then
    [stored] = store.all_files_newest_first()
    assert stored == file
    assert stored.received_time == T0
    assert stored.expiry_time == (T0 + timedelta(minutes=10080)).replace(microsecond=0)
    assert stored.file_size_bytes == 5 * 1024**4


def should_overwrite_a_pending_file_when_it_is_resubmitted(store: IngestBatcherStore) -> None:
    # Given
    store.add_file(_file("bucket/a.parquet", size=100, seconds=0))

    # When
    resubmitted = _file("bucket/a.parquet", size=200, seconds=30)
    store.add_file(resubmitted)

    # Then
    assert store.pending_files_oldest_first() == [resubmitted]
    assert store.all_files_newest_first() == [resubmitted]


def should_keep_the_same_path_of_different_tables_apart(store: IngestBatcherStore) -> None:
    # Given
    first = _file("bucket/a.parquet", table="t1")
    second = _file("bucket/a.parquet", table="t2", seconds=1)

    # When
    store.add_file(first)
    store.add_file(second)

    # Then
    assert store.pending_files_oldest_first() == [first, second]


def should_assign_pending_files_to_a_job(store: IngestBatcherStore) -> None:
    # Given
    a = _file("bucket/a.parquet", seconds=0)
    b = _file("bucket/b.parquet", seconds=1)
    c = _file("bucket/c.parquet", seconds=2)
    for file in (a, b, c):
        store.add_file(file)

    # When
    assigned = store.assign_job_get_assigned("job-1", [a, b])

    # Then
    assert assigned == ["bucket/a.parquet", "bucket/b.parquet"]
    assert store.pending_files_oldest_first() == [c]
    assert store.all_files_newest_first() == [c, b.assigned_to("job-1"), a.assigned_to("job-1")]


def should_never_assign_a_file_to_a_second_job(store: IngestBatcherStore) -> None:
    # Given two job creators read the same pending files
    a = _file("bucket/a.parquet", seconds=0)
    b = _file("bucket/b.parquet", seconds=1)
    store.add_file(a)
    store.add_file(b)
    seen_by_second = store.pending_files_oldest_first()

    # When
    first = store.assign_job_get_assigned("job-1", [a, b])
    second = store.assign_job_get_assigned("job-2", seen_by_second)

    # Then
    assert first == ["bucket/a.parquet", "bucket/b.parquet"]
    assert second == []
    assert {f.job_id for f in store.all_files_newest_first()} == {"job-1"}


def should_leave_a_whole_group_pending_when_another_job_took_one_of_its_files(make_store: StoreFactory) -> None:
    # Given groups of two files are assigned atomically, and another job took file b
    store = make_store(assign_batch_size=2)
    a, b, c, d = (_file(f"bucket/{n}.parquet", seconds=i) for i, n in enumerate("abcd"))
    for file in (a, b, c, d):
        store.add_file(file)
    assert store.assign_job_get_assigned("job-1", [b]) == ["bucket/b.parquet"]

    # When
    assigned = store.assign_job_get_assigned("job-2", [a, b, c, d])

    # Then the group (a, b) stays as it was, the group (c, d) moves
    assert assigned == ["bucket/c.parquet", "bucket/d.parquet"]
    assert store.pending_files_oldest_first() == [a]
    jobs = {f.file: f.job_id for f in store.all_files_newest_first()}
    assert jobs == {
        "bucket/a.parquet": None,
        "bucket/b.parquet": "job-1",
        "bucket/c.parquet": "job-2",
        "bucket/d.parquet": "job-2",
    }


def should_assign_each_file_once_when_job_creators_race(store: IngestBatcherStore) -> None:
    # Given
    files = [_file(f"bucket/{i}.parquet", seconds=i) for i in range(3)]
    for file in files:
        store.add_file(file)
    barrier = threading.Barrier(2)
    results: dict[str, list[str]] = {}

    def create(job_id: str) -> None:
        pending = store.pending_files_oldest_first()
        barrier.wait()
        results[job_id] = store.assign_job_get_assigned(job_id, pending)

    # When
    threads = [threading.Thread(target=create, args=(job,)) for job in ("job-1", "job-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then every file is in exactly one job, and the store agrees with what each creator was told
    assigned = results["job-1"] + results["job-2"]
    assert sorted(assigned) == sorted(f.file for f in files)
    stored = {f.file: f.job_id for f in store.all_files_newest_first()}
    assert stored == {path: job for job, paths in results.items() for path in paths}
    assert store.pending_files_oldest_first() == []


def should_track_an_assigned_file_again_when_it_is_resubmitted(store: IngestBatcherStore) -> None:
    # Given
    a = _file("bucket/a.parquet", seconds=0)
    store.add_file(a)
    store.assign_job_get_assigned("job-1", [a])

    # When
    again = _file("bucket/a.parquet", seconds=60)
    store.add_file(again)

    # Then
    assert store.pending_files_oldest_first() == [again]
    assert store.all_files_newest_first() == [again, a.assigned_to("job-1")]


def should_delete_every_pending_file_and_keep_assigned_ones(store: IngestBatcherStore) -> None:
    # Given
    a = _file("bucket/a.parquet", seconds=0)
    b = _file("bucket/b.parquet", seconds=1)
    store.add_file(a)
    store.add_file(b)
    store.assign_job_get_assigned("job-1", [a])

    # When
    store.delete_all_pending()

    # Then
    assert store.pending_files_oldest_first() == []
    assert store.all_files_newest_first() == [a.assigned_to("job-1")]


def should_delete_the_given_records(store: IngestBatcherStore) -> None:
    # Given
    a = _file("bucket/a.parquet", seconds=0)
    b = _file("bucket/b.parquet", seconds=1)
    store.add_file(a)
    store.add_file(b)
    store.assign_job_get_assigned("job-1", [a])

    # When
    store.delete_files([a.assigned_to("job-1")])

    # Then
    assert store.all_files_newest_first() == [b]


MTIME = datetime(2024, 4, 30, 8, 15, 0, 250000, tzinfo=UTC)


def _submitted(path: str, *, size: int = 100, seconds: float = 0, modified: datetime | None = MTIME) -> TrackedFile:
    return TrackedFile(
        file=path,
        file_size_bytes=size,
        table_id="t1",
        received_time=T0 + timedelta(seconds=seconds),
        file_modified_time=modified,
    )


def should_read_back_the_modification_time_of_pending_and_assigned_files(store: IngestBatcherStore) -> None:
    # Given
    file = _submitted("bucket/a.parquet", modified=MTIME + timedelta(microseconds=999))
    other = _submitted("bucket/b.parquet", seconds=1, modified=None)

    # When
    store.add_file(file)
    store.add_file(other)
    store.assign_job_get_assigned("job-1", [file])

    # Then the time is kept to the millisecond, and an unknown time stays unknown
    assert store.all_files_newest_first() == [other, file.assigned_to("job-1")]
    assert file.file_modified_time == MTIME
    assert store.pending_files_oldest_first()[0].file_modified_time is None


def should_not_track_again_a_file_batched_into_a_job_and_unchanged_since(store: IngestBatcherStore) -> None:
    # Given
    first = _submitted("bucket/a.parquet")
    assert store.add_files_unless_batched([first]) == []
    store.assign_job_get_assigned("job-1", [first])

    # When the same file is submitted again (a redelivered request)
    again = _submitted("bucket/a.parquet", seconds=600)
    skipped = store.add_files_unless_batched([again])

    # Then it is skipped, naming its job, and only the assigned record is kept
    assert [(s.file, s.batched, s.job_id) for s in skipped] == [(again, first.assigned_to("job-1"), "job-1")]
    assert "job-1" in skipped[0].reason
    assert store.pending_files_oldest_first() == []
    assert store.all_files_newest_first() == [first.assigned_to("job-1")]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"size": 101}, id="size"),
        pytest.param({"modified": MTIME + timedelta(seconds=1)}, id="modification time"),
        pytest.param({"modified": None}, id="modification time unknown"),
    ],
)
def should_track_again_a_batched_file_that_changed_since(store: IngestBatcherStore, change: dict[str, Any]) -> None:
    # Given
    first = _submitted("bucket/a.parquet")
    store.add_files_unless_batched([first])
    store.assign_job_get_assigned("job-1", [first])

    # When the file is rewritten under the same path and submitted again
    rewritten = _submitted("bucket/a.parquet", seconds=600, **change)
    skipped = store.add_files_unless_batched([rewritten])

    # Then it is tracked again as pending, beside the assigned record
    assert skipped == []
    assert store.pending_files_oldest_first() == [rewritten]
    assert store.all_files_newest_first() == [rewritten, first.assigned_to("job-1")]


def should_track_again_a_batched_file_whose_record_has_no_modification_time(store: IngestBatcherStore) -> None:
    # Given a record stored before modification times were kept
    old = _submitted("bucket/a.parquet", modified=None)
    store.add_file(old)
    store.assign_job_get_assigned("job-1", [old])

    # When
    again = _submitted("bucket/a.parquet", seconds=600)
    skipped = store.add_files_unless_batched([again])

    # Then it counts as changed
    assert skipped == []
    assert store.pending_files_oldest_first() == [again]


def should_replace_a_pending_file_when_it_is_submitted_again(store: IngestBatcherStore) -> None:
    # Given
    store.add_files_unless_batched([_submitted("bucket/a.parquet")])

    # When the same, unchanged file is submitted again before any job took it
    again = _submitted("bucket/a.parquet", seconds=30)
    skipped = store.add_files_unless_batched([again])

    # Then its pending record is replaced, as before
    assert skipped == []
    assert store.pending_files_oldest_first() == [again]
    assert store.all_files_newest_first() == [again]


def should_skip_only_the_batched_files_of_a_request(store: IngestBatcherStore) -> None:
    # Given a was batched; b is pending; c is new; the same path of another table is not a's record
    a, b = _submitted("bucket/a.parquet"), _submitted("bucket/b.parquet", seconds=1)
    store.add_files_unless_batched([a, b])
    store.assign_job_get_assigned("job-1", [a])

    # When
    request = [
        _submitted("bucket/c.parquet", seconds=60),
        _submitted("bucket/a.parquet", seconds=60),
        _submitted("bucket/b.parquet", seconds=60),
        TrackedFile(
            file="bucket/a.parquet", file_size_bytes=100, table_id="t2", received_time=T0, file_modified_time=MTIME
        ),
    ]
    skipped = store.add_files_unless_batched(request)

    # Then
    assert [s.file for s in skipped] == [request[1]]
    assert store.pending_files_oldest_first() == [request[3], request[2], request[0]]  # ties: by table, path
