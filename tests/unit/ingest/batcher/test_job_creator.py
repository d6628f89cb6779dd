"""The job creator: pending files become jobs on the table's chosen queue, each file in one job only."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta

from sleeper.adapters.memory.batcher_store import InMemoryIngestBatcherStore
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.queue import QueueError
from sleeper.ingest.batcher.job_creator import IngestBatcher, route_bulk_import_to
from sleeper.ingest.batcher.model import TrackedFile
from tests.unit.ingest.batcher.conftest import FakeClock, FakeInstance

STANDARD = {"sleeper.table.ingest.batcher.ingest.queue": "standard_ingest"}


def _add(store: InMemoryIngestBatcherStore, clock: FakeClock, table_id: str, name: str, size: int) -> TrackedFile:
    file = TrackedFile(file=f"bucket/{name}", file_size_bytes=size, table_id=table_id, received_time=clock())
    store.add_file(file)
    return file


def _batcher(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> IngestBatcher:
    return IngestBatcher(instance, store, clock=clock, job_id_supplier=job_ids)


def should_send_a_job_that_reads_as_sleepers_ingest_job_with_the_batched_files(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    _add(store, clock, "t1", "a.parquet", 10)
    _add(store, clock, "t1", "b.parquet", 20)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    [body] = instance.messages("IngestJobQ")
    job = IngestJob.from_json(body)
    assert job == IngestJob(id="job-1", table_id="t1", files=("bucket/a.parquet", "bucket/b.parquet"))
    assert set(json.loads(body)) == {"id", "tableId", "files"}
    assert [c.job for c in created] == [job]
    assert created[0].total_bytes == 30
    assert created[0].queue == "IngestJobQ"
    assert store.pending_files_oldest_first() == []
    assert {f.job_id for f in store.all_files_newest_first()} == {"job-1"}


def should_send_to_the_bulk_import_queue_by_default(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table("events", "t1", {"sleeper.table.ingest.batcher.job.min.size": "0"})
    _add(store, clock, "t1", "a.parquet", 10)

    # When
    _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert instance.messages("IngestJobQ") == []
    [body] = instance.messages("BulkImportEMRServerlessQ")
    assert IngestJob.from_json(body).files == ("bucket/a.parquet",)


def should_wait_until_the_oldest_file_reaches_the_maximum_age(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given files well below the default minimum size of 1G
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.file.max.age.seconds": "60"})
    _add(store, clock, "t1", "a.parquet", 10)
    clock.advance(30)
    _add(store, clock, "t1", "b.parquet", 10)
    batcher = _batcher(instance, store, clock, job_ids)

    # When
    clock.advance(30)
    before = batcher.create_jobs()
    clock.advance(0.001)
    after = batcher.create_jobs()

    # Then both files go in one job once the first is past the maximum age
    assert before == []
    assert [c.job.files for c in after] == [("bucket/a.parquet", "bucket/b.parquet")]


def should_batch_once_the_minimum_files_and_size_are_met(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table(
        "events",
        "t1",
        {
            **STANDARD,
            "sleeper.table.ingest.batcher.job.min.files": "3",
            "sleeper.table.ingest.batcher.job.min.size": "1K",
        },
    )
    batcher = _batcher(instance, store, clock, job_ids)
    _add(store, clock, "t1", "a.parquet", 600)
    _add(store, clock, "t1", "b.parquet", 600)
    two_files = batcher.create_jobs()
    _add(store, clock, "t1", "c.parquet", 1)

    # When
    three_files = batcher.create_jobs()

    # Then
    assert two_files == []
    assert [c.job.files for c in three_files] == [("bucket/a.parquet", "bucket/b.parquet", "bucket/c.parquet")]


def should_split_files_into_jobs_by_maximum_files_and_size(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table(
        "events",
        "t1",
        {
            **STANDARD,
            "sleeper.table.ingest.batcher.job.min.size": "0",
            "sleeper.table.ingest.batcher.job.max.files": "2",
            "sleeper.table.ingest.batcher.job.max.size": "1K",
        },
    )
    for name, size in (("a", 700), ("huge", 4096), ("b", 300), ("c", 100), ("d", 100)):
        _add(store, clock, "t1", f"{name}.parquet", size)
        clock.advance(1)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert [c.job.files for c in created] == [
        ("bucket/a.parquet", "bucket/b.parquet"),
        ("bucket/huge.parquet",),
        ("bucket/c.parquet", "bucket/d.parquet"),
    ]
    assert [c.job.id for c in created] == ["job-1", "job-2", "job-3"]
    assert [IngestJob.from_json(b).files for b in instance.messages("IngestJobQ")] == [c.job.files for c in created]


def should_batch_each_table_by_its_own_settings(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given one table ready to batch and one waiting for more data
    instance.add_table("ready", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    instance.add_table("waiting", "t2", STANDARD)
    _add(store, clock, "t1", "a.parquet", 10)
    waiting = _add(store, clock, "t2", "b.parquet", 10)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert [(c.job.table_id, c.job.files) for c in created] == [("t1", ("bucket/a.parquet",))]
    assert store.pending_files_oldest_first() == [waiting]


def should_batch_only_the_table_asked_for(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    for name, table_id in (("one", "t1"), ("two", "t2")):
        instance.add_table(name, table_id, {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
        _add(store, clock, table_id, f"{name}.parquet", 10)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs(table_id="t2")

    # Then
    assert [c.job.table_id for c in created] == ["t2"]
    assert [f.table_id for f in store.pending_files_oldest_first()] == ["t1"]


def should_never_batch_a_file_twice_over_several_runs(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    batcher = _batcher(instance, store, clock, job_ids)
    _add(store, clock, "t1", "a.parquet", 10)
    first = batcher.create_jobs()
    _add(store, clock, "t1", "b.parquet", 10)

    # When
    second = batcher.create_jobs()
    third = batcher.create_jobs()

    # Then
    assert [c.job.files for c in first] == [("bucket/a.parquet",)]
    assert [c.job.files for c in second] == [("bucket/b.parquet",)]
    assert third == []


class _StaleStore(InMemoryIngestBatcherStore):
    """Reports the pending files read before ``freeze``, as a job creator that read them earlier would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen: list[TrackedFile] | None = None

    def freeze(self) -> None:
        self.frozen = super().pending_files_oldest_first()

    def pending_files_oldest_first(self) -> list[TrackedFile]:
        return list(self.frozen) if self.frozen is not None else super().pending_files_oldest_first()


def should_not_send_files_another_job_creator_assigned_first(
    instance: FakeInstance, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given two creators read the same pending files, and the first assigns them before the second does
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    store = _StaleStore()
    _add(store, clock, "t1", "a.parquet", 10)
    _add(store, clock, "t1", "b.parquet", 10)
    store.freeze()
    first = _batcher(instance, store, clock, job_ids).create_jobs()

    # When
    second = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then the second creator sends nothing
    assert [c.job.files for c in first] == [("bucket/a.parquet", "bucket/b.parquet")]
    assert second == []
    assert len(instance.messages("IngestJobQ")) == 1


class _PartlyTakenStore(InMemoryIngestBatcherStore):
    """Lets another job take the first file of every assignment just before it happens."""

    def assign_job_get_assigned(self, job_id: str, files: Sequence[TrackedFile]) -> list[str]:
        super().assign_job_get_assigned(f"other-{job_id}", files[:1])
        return super().assign_job_get_assigned(job_id, files)


def should_send_only_the_files_that_were_assigned(
    instance: FakeInstance, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given groups of one file are assigned atomically, and another job takes the first file
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    store = _PartlyTakenStore(assign_batch_size=1)
    _add(store, clock, "t1", "a.parquet", 10)
    clock.advance(1)
    _add(store, clock, "t1", "b.parquet", 20)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert [(c.job.files, c.total_bytes) for c in created] == [(("bucket/b.parquet",), 20)]
    [body] = instance.messages("IngestJobQ")
    assert IngestJob.from_json(body).files == ("bucket/b.parquet",)


def should_leave_files_pending_when_their_queue_is_not_deployed(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given a table sending to EKS, which this instance does not have
    instance.add_table(
        "events",
        "t1",
        {
            "sleeper.table.ingest.batcher.ingest.queue": "bulk_import_eks",
            "sleeper.table.ingest.batcher.job.min.size": "0",
        },
    )
    file = _add(store, clock, "t1", "a.parquet", 10)

    # When
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert created == []
    assert store.pending_files_oldest_first() == [file]


def should_route_every_bulk_import_mode_to_one_queue(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table(
        "events",
        "t1",
        {
            "sleeper.table.ingest.batcher.ingest.queue": "bulk_import_eks",
            "sleeper.table.ingest.batcher.job.min.size": "0",
        },
    )
    _add(store, clock, "t1", "a.parquet", 10)
    names = route_bulk_import_to("BulkImportNonPersistentEMRQ")

    # When
    [created] = IngestBatcher(instance, store, clock=clock, job_id_supplier=job_ids, queue_names=names).create_jobs()

    # Then
    assert names["standard_ingest"] == "IngestJobQ"
    assert created.queue == "BulkImportNonPersistentEMRQ"
    [body] = instance.messages("BulkImportNonPersistentEMRQ")
    assert IngestJob.from_json(body).files == ("bucket/a.parquet",)


class _FailingQueue:
    def send(self, body: str) -> str:
        raise QueueError("send failed")


def should_report_a_job_that_could_not_be_sent(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given a queue that fails to send
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    _add(store, clock, "t1", "a.parquet", 10)
    instance.queue = lambda name: _FailingQueue()  # type: ignore[assignment,method-assign,return-value]

    # When
    [created] = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then as in Sleeper the job is dropped and its file stays assigned
    assert not created.sent
    assert created.error == "send failed"
    assert store.pending_files_oldest_first() == []


def should_leave_files_of_a_deleted_table_pending(
    instance: FakeInstance, store: InMemoryIngestBatcherStore, clock: FakeClock, job_ids: Callable[[], str]
) -> None:
    # Given
    instance.add_table("events", "t1", {**STANDARD, "sleeper.table.ingest.batcher.job.min.size": "0"})
    orphan = _add(store, clock, "gone", "a.parquet", 10)
    _add(store, clock, "t1", "b.parquet", 10)

    # When
    clock.advance(timedelta(days=1).total_seconds())
    created = _batcher(instance, store, clock, job_ids).create_jobs()

    # Then
    assert [c.job.table_id for c in created] == ["t1"]
    assert store.pending_files_oldest_first() == [orphan]
