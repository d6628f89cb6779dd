"""The generic job tracker (sleeper.core.trackers.jobs) over a store that records what it is asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Generic

from sleeper.core.trackers.compaction import CompactionJobCreated, CompactionJobStatusType, CompactionJobUpdate
from sleeper.core.trackers.ingest import IngestJobStarted, IngestJobStatusType, IngestJobUpdate, IngestJobValidated
from sleeper.core.trackers.jobs import COMPACTION_JOBS, INGEST_JOBS, JobTracker, U

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class ListStore(Generic[U]):
    """A job update store in a list, noting every read it is asked for."""

    def __init__(self) -> None:
        self.updates: list[U] = []
        self.reads: list[str] = []

    def append(self, update: U) -> None:
        self.updates.append(update)

    def updates_of_job(self, job_id: str) -> list[U]:
        self.reads.append(f"job {job_id}")
        return [u for u in self.updates if u.job_id == job_id]

    def updates_of_table(self, table_id: str) -> list[U]:
        self.reads.append(f"table {table_id}")
        return [u for u in self.updates if u.table_id == table_id]

    def updates_of_rejected_jobs(self) -> list[U]:
        self.reads.append("rejected")
        return list(self.updates)


def should_derive_ingest_statuses_from_the_stored_updates_with_the_ttl() -> None:
    # Given an ingest job tracker with a time to live of one hour
    store: ListStore[IngestJobUpdate] = ListStore()
    tracker = JobTracker(store, INGEST_JOBS, ttl=timedelta(hours=1))
    # When a job is started in one table and another is rejected naming none
    tracker.record(IngestJobStarted(job_id="job-1", table_id="t1", update_time=T0))
    tracker.record(IngestJobValidated(job_id="job-2", table_id=None, update_time=T0, reasons=("no such table",)))
    # Then the statuses come from the store's updates, expiring an hour after each job's first update
    job = tracker.job("job-1")
    assert job is not None
    assert (job.status, job.expiry_date) == (IngestJobStatusType.IN_PROGRESS, T0 + timedelta(hours=1))
    assert [s.job_id for s in tracker.unfinished_jobs("t1")] == ["job-1"]
    assert [s.job_id for s in tracker.invalid_jobs()] == ["job-2"]
    assert tracker.job("job-3") is None
    assert store.reads == ["job job-1", "table t1", "rejected", "job job-3"]


def should_list_no_invalid_compaction_jobs_without_reading_the_store() -> None:
    # Given a compaction job tracker holding a created job
    store: ListStore[CompactionJobUpdate] = ListStore()
    tracker = JobTracker(store, COMPACTION_JOBS)
    tracker.record(
        CompactionJobCreated(job_id="job-1", table_id="t1", update_time=T0, partition_id="root", input_files_count=2)
    )
    # When its invalid jobs are listed, Then there are none (compaction jobs are not validated) and nothing is read
    assert tracker.invalid_jobs() == []
    assert store.reads == []
    # And its jobs come with the compaction status
    assert [s.status for s in tracker.jobs("t1")] == [CompactionJobStatusType.CREATED]
