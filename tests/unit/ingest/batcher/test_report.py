"""The batcher report: all files newest first or pending ones oldest first, as JSON-ready rows."""

from __future__ import annotations

from datetime import timedelta

from sleeper.adapters.memory.batcher_store import InMemoryIngestBatcherStore
from sleeper.ingest.batcher.model import TrackedFile
from sleeper.ingest.batcher.report import batcher_report, report_rows
from tests.unit.ingest.batcher.conftest import T0


def should_report_every_file_or_only_pending_ones(store: InMemoryIngestBatcherStore) -> None:
    # Given
    old = TrackedFile(file="bucket/old", file_size_bytes=1, table_id="t1", received_time=T0)
    new = TrackedFile(
        file="bucket/new",
        file_size_bytes=2,
        table_id="t2",
        received_time=T0 + timedelta(seconds=1),
        file_modified_time=T0 - timedelta(hours=1),
    )
    store.add_file(old)
    store.add_file(new)
    store.assign_job_get_assigned("job-1", [new])

    # When
    everything = report_rows(batcher_report(store), {"t1": "events"})
    pending = report_rows(batcher_report(store, pending_only=True), {"t1": "events"})

    # Then
    assert everything == [
        {
            "file": "bucket/new",
            "tableName": "t2",
            "tableId": "t2",
            "sizeBytes": 2,
            "receivedTime": "2024-05-01T12:00:01.000+00:00",
            "status": "ASSIGNED",
            "jobId": "job-1",
            "modifiedTime": "2024-05-01T11:00:00.000+00:00",
        },
        {
            "file": "bucket/old",
            "tableName": "events",
            "tableId": "t1",
            "sizeBytes": 1,
            "receivedTime": "2024-05-01T12:00:00.000+00:00",
            "status": "PENDING",
            "jobId": None,
            "modifiedTime": None,
        },
    ]
    assert pending == everything[1:]
