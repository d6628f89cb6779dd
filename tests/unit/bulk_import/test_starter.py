"""The bulk import starter: validate, record, write the job file, start on the platform, over fakes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.trackers import InMemoryIngestJobTracker
from sleeper.bulk_import.launch_ports import BulkImportRun, PlatformStart
from sleeper.bulk_import.starter import PlatformFullError, StartOutcome, start_bulk_import, start_bulk_import_message
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.bulk_import import BulkImportJob
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.statestore.store import StateStore

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.STRING)], values=[Field("value", PrimitiveType.LONG)])
T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@dataclass
class FakeTable:
    table_id: str
    properties: TableProperties
    schema: Schema = SCHEMA
    data_prefix: str = "data/t"

    @property
    def state_store(self) -> StateStore:
        raise AssertionError("the starter must not touch the state store")


@dataclass
class FakeInstance:
    tables: list[FakeTable] = field(default_factory=list)
    ingest_job_tracker: InMemoryIngestJobTracker = field(default_factory=InMemoryIngestJobTracker)

    def add_table(self, name: str, table_id: str) -> FakeTable:
        properties = TableProperties(InstanceProperties(), {"sleeper.table.name": name, "sleeper.table.id": table_id})
        properties.set_schema(SCHEMA)
        table = FakeTable(table_id=table_id, properties=properties)
        self.tables.append(table)
        return table

    def table(self, name: str) -> FakeTable:
        for t in self.tables:
            if t.properties.table_name == name:
                return t
        raise TableNotFoundError(name)

    def table_by_id(self, table_id: str) -> FakeTable:
        for t in self.tables:
            if t.table_id == table_id:
                return t
        raise TableNotFoundError(table_id)


class FakeJobStore:
    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def write_job(self, key: str, job_json: str) -> None:
        self.files[key] = job_json


class FakePlatform:
    def __init__(self, result: PlatformStart = PlatformStart.STARTED, error: Exception | None = None) -> None:
        self.runs: list[BulkImportRun] = []
        self._result = result
        self._error = error

    def start(self, run: BulkImportRun) -> PlatformStart:
        self.runs.append(run)
        if self._error is not None:
            raise self._error
        return self._result


class FakeRequeue:
    def __init__(self) -> None:
        self.jobs: list[BulkImportJob] = []

    def requeue(self, job: BulkImportJob) -> None:
        self.jobs.append(job)


@pytest.fixture
def fs() -> pafs.FileSystem:
    filesystem = in_memory_filesystem()
    rows = pa.table({"key": ["a", "b", "c"], "value": pa.array([1, 2, 3], pa.int64())})
    for path in ("bucket/in/one.parquet", "bucket/in/dir/two.parquet"):
        with filesystem.open_output_stream(path) as out:
            pq.write_table(rows, out)
    return filesystem


@pytest.fixture
def instance() -> FakeInstance:
    instance = FakeInstance()
    instance.add_table("events", "t1")
    return instance


def should_write_the_resolved_job_and_start_it_on_the_platform(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given
    job = BulkImportJob(id="job-1", table_name="events", files=("bucket/in/one.parquet", "bucket/in/dir"))
    platform, store = FakePlatform(), FakeJobStore()

    # When
    start = start_bulk_import(
        instance, job, platform=platform, job_store=store, job_run_id="run-1", filesystem=fs, clock=lambda: T0
    )

    # Then the job file holds the table id and name and the expanded files
    assert start.outcome is StartOutcome.STARTED
    assert start.job_file_key == "bulk_import/job-1-run-1.json"
    written = json.loads(store.files["bulk_import/job-1-run-1.json"])
    assert written == {
        "id": "job-1",
        "tableName": "events",
        "tableId": "t1",
        "files": ["s3a://bucket/in/one.parquet", "s3a://bucket/in/dir/two.parquet"],
    }
    # And the platform got the same job, its run and the table's properties
    [run] = platform.runs
    assert (run.job.to_dict(), run.job_run_id, run.job_file_key) == (written, "run-1", "bulk_import/job-1-run-1.json")
    assert run.table_properties.table_id == "t1"
    # And the run is recorded as accepted, waiting for the Spark driver
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None
    assert status.status is IngestJobStatusType.ACCEPTED
    assert status.latest_run.job_run_id == "run-1"


def should_reject_a_job_with_missing_files_without_writing_or_starting(
    instance: FakeInstance, fs: pafs.FileSystem
) -> None:
    # Given
    job = BulkImportJob(id="job-2", table_name="events", files=("bucket/in/missing.parquet",))
    platform, store = FakePlatform(), FakeJobStore()

    # When
    start = start_bulk_import(instance, job, platform=platform, job_store=store, filesystem=fs, clock=lambda: T0)

    # Then
    assert start.outcome is StartOutcome.REJECTED
    assert start.reasons and "missing.parquet" in start.reasons[0]
    assert (platform.runs, store.files) == ([], {})
    status = instance.ingest_job_tracker.job("job-2")
    assert status is not None
    assert status.status is IngestJobStatusType.REJECTED


def should_reject_a_job_for_an_unknown_table(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given
    job = BulkImportJob(id="job-3", table_name="nope", files=("bucket/in/one.parquet",))
    platform, store = FakePlatform(), FakeJobStore()

    # When
    start = start_bulk_import(instance, job, platform=platform, job_store=store, filesystem=fs, clock=lambda: T0)

    # Then
    assert (start.outcome, start.table_id, start.reasons) == (
        StartOutcome.REJECTED,
        None,
        ("Table not found with name 'nope'",),
    )
    assert platform.runs == []


def should_reject_an_unreadable_message_with_its_reason(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given an id with upper-case letters, which cannot name EMR resources
    body = '{"id": "Job_1", "tableName": "events", "files": ["bucket/in/one.parquet"]}'
    platform = FakePlatform()

    # When
    start = start_bulk_import_message(
        instance, body, platform=platform, job_store=FakeJobStore(), filesystem=fs, clock=lambda: T0
    )

    # Then
    assert start.outcome is StartOutcome.REJECTED
    assert "lowercase alphanumerics and dashes" in start.reasons[0]
    assert platform.runs == []
    status = instance.ingest_job_tracker.job(start.job_id)
    assert status is not None
    assert status.status is IngestJobStatusType.REJECTED


def should_requeue_the_job_when_the_platform_is_full(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given
    body = '{"id": "job-4", "tableName": "events", "files": ["bucket/in/one.parquet"]}'
    requeue = FakeRequeue()

    # When
    start = start_bulk_import_message(
        instance,
        body,
        platform=FakePlatform(PlatformStart.PLATFORM_FULL),
        job_store=FakeJobStore(),
        requeue=requeue,
        filesystem=fs,
        clock=lambda: T0,
    )

    # Then
    assert start.outcome is StartOutcome.REQUEUED
    assert [j.to_dict() for j in requeue.jobs] == [
        {"id": "job-4", "tableName": "events", "tableId": "t1", "files": ["s3a://bucket/in/one.parquet"]}
    ]


def should_record_a_failed_run_and_raise_when_the_platform_fails(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given
    job = BulkImportJob(id="job-5", table_id="t1", files=("bucket/in/one.parquet",))
    platform = FakePlatform(error=RuntimeError("no capacity"))

    # When
    with pytest.raises(RuntimeError, match="no capacity"):
        start_bulk_import(instance, job, platform=platform, job_store=FakeJobStore(), filesystem=fs, clock=lambda: T0)

    # Then
    status = instance.ingest_job_tracker.job("job-5")
    assert status is not None
    assert status.status is IngestJobStatusType.FAILED
    assert status.latest_run.failure_reasons == ("RuntimeError: no capacity",)


def should_fail_when_the_platform_is_full_and_there_is_no_queue(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given
    job = BulkImportJob(id="job-6", table_name="events", files=("bucket/in/one.parquet",))

    # When / Then
    with pytest.raises(PlatformFullError):
        start_bulk_import(
            instance,
            job,
            platform=FakePlatform(PlatformStart.PLATFORM_FULL),
            job_store=FakeJobStore(),
            filesystem=fs,
            clock=lambda: T0,
        )
    status = instance.ingest_job_tracker.job("job-6")
    assert status is not None
    assert status.status is IngestJobStatusType.FAILED


def should_reject_a_job_naming_an_algorithm_this_port_does_not_run(instance: FakeInstance, fs: pafs.FileSystem) -> None:
    # Given a job naming a Java driver class of its own
    job = BulkImportJob(
        id="job-7", table_name="events", files=("bucket/in/one.parquet",), class_name="com.example.MyDriver"
    )
    platform, store = FakePlatform(), FakeJobStore()

    # When
    start = start_bulk_import(instance, job, platform=platform, job_store=store, filesystem=fs, clock=lambda: T0)

    # Then it is rejected, tracked, and nothing is written or started
    assert start.outcome is StartOutcome.REJECTED
    assert len(start.reasons) == 1
    assert "className 'com.example.MyDriver' is not a bulk import algorithm" in start.reasons[0]
    assert (platform.runs, store.files) == ([], {})
    status = instance.ingest_job_tracker.job("job-7")
    assert status is not None
    assert status.status is IngestJobStatusType.REJECTED


@pytest.mark.parametrize(
    "class_name",
    ["dataframe-sort", "local-sort", "sleeper.bulkimport.runner.dataframe.BulkImportJobDataframeDriver"],
)
def should_start_a_job_naming_an_algorithm_it_runs_with_the_name_in_its_file(
    instance: FakeInstance, fs: pafs.FileSystem, class_name: str
) -> None:
    # Given
    job = BulkImportJob(id="job-8", table_name="events", files=("bucket/in/one.parquet",), class_name=class_name)
    platform, store = FakePlatform(), FakeJobStore()

    # When
    start = start_bulk_import(
        instance, job, platform=platform, job_store=store, job_run_id="run-8", filesystem=fs, clock=lambda: T0
    )

    # Then the Spark driver gets the name in the job file
    assert start.outcome is StartOutcome.STARTED
    assert json.loads(store.files["bulk_import/job-8-run-8.json"])["className"] == class_name
    assert len(platform.runs) == 1
