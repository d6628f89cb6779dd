"""Ingest job statuses derived from tracker updates (sleeper.core.trackers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.trackers.base import TrackerError
from sleeper.core.trackers.ingest import (
    IngestJobAddedFiles,
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobStatusType,
    IngestJobUpdate,
    IngestJobValidated,
    ValidationResult,
    ingest_job_status,
    ingest_job_statuses,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def accepted(run: str = "run-1", seconds: float = 0, job: str = "job-1") -> IngestJobValidated:
    return IngestJobValidated(job_id=job, table_id="table-1", update_time=at(seconds), job_run_id=run, file_count=2)


def started(run: str = "run-1", seconds: float = 1, job: str = "job-1") -> IngestJobStarted:
    return IngestJobStarted(
        job_id=job, table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1", file_count=2
    )


def finished(run: str = "run-1", seconds: float = 3, *, files: int = 2, separate: bool = False) -> IngestJobFinished:
    return IngestJobFinished(
        job_id="job-1",
        table_id="table-1",
        update_time=at(seconds),
        job_run_id=run,
        task_id="task-1",
        rows_read=100,
        rows_written=100,
        files_written=files,
        committed_by_separate_file_updates=separate,
    )


def added(files: int, run: str = "run-1", seconds: float = 4) -> IngestJobAddedFiles:
    return IngestJobAddedFiles(
        job_id="job-1", table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1", file_count=files
    )


def failed(run: str = "run-1", seconds: float = 3, reason: str = "boom") -> IngestJobFailed:
    return IngestJobFailed(
        job_id="job-1", table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1", reasons=(reason,)
    )


def rejected() -> IngestJobValidated:
    return IngestJobValidated(
        job_id="job-1",
        table_id=None,
        update_time=at(0),
        reasons=("Table not found: missing",),
        json_message='{"id":"job-1","tableName":"missing","files":["a.parquet"]}',
    )


@pytest.mark.parametrize(
    ("updates", "expected"),
    [
        ([rejected()], IngestJobStatusType.REJECTED),
        ([accepted()], IngestJobStatusType.ACCEPTED),
        ([accepted(), started()], IngestJobStatusType.IN_PROGRESS),
        ([started()], IngestJobStatusType.IN_PROGRESS),
        ([started(), added(1)], IngestJobStatusType.IN_PROGRESS),
        ([started(), failed()], IngestJobStatusType.FAILED),
        ([started(), finished(separate=True), added(1)], IngestJobStatusType.UNCOMMITTED),
        ([started(), finished(separate=True), added(1), added(1, seconds=5)], IngestJobStatusType.FINISHED),
        ([started(), finished()], IngestJobStatusType.FINISHED),
    ],
    ids=[
        "rejected",
        "accepted",
        "started after validation",
        "started",
        "some files added",
        "failed",
        "finished, files uncommitted",
        "finished, all files committed",
        "finished, committed synchronously",
    ],
)
def should_derive_the_status_of_a_run_from_its_furthest_update(
    updates: list[IngestJobUpdate], expected: IngestJobStatusType
) -> None:
    # Given the updates of one run
    # When
    status = ingest_job_status(updates)
    # Then
    assert status.status == expected
    assert status.latest_run.status == expected


def should_let_a_failure_outrank_a_finish_in_the_same_run() -> None:
    # Given
    updates = [started(), finished(), failed(seconds=5, reason="commit failed")]
    # When
    status = ingest_job_status(updates)
    # Then
    assert status.status == IngestJobStatusType.FAILED
    assert status.latest_run.failure_reasons == ("commit failed",)


def should_let_a_run_in_progress_outrank_an_earlier_failed_run() -> None:
    # Given a failed run and its retry
    updates = [started("run-1", 0), failed("run-1", 1), started("run-2", 10)]
    # When
    status = ingest_job_status(updates)
    # Then
    assert status.status == IngestJobStatusType.IN_PROGRESS
    assert [run.job_run_id for run in status.runs] == ["run-2", "run-1"]
    assert status.is_unfinished


def should_stay_finished_when_a_duplicate_run_fails_later() -> None:
    # Given a job that finished and then failed on a duplicate delivery
    updates = [started("run-1", 0), finished("run-1", 2), started("run-2", 10), failed("run-2", 11, "already added")]
    # When
    status = ingest_job_status(updates)
    # Then
    assert status.status == IngestJobStatusType.FINISHED
    assert status.latest_run.status == IngestJobStatusType.FAILED
    assert not status.is_unfinished


def should_group_updates_into_runs_by_run_id_whatever_order_they_were_recorded_in() -> None:
    # Given updates of two runs recorded out of time order
    updates = [finished("run-2", 13), started("run-1", 0), started("run-2", 10), failed("run-1", 5)]
    # When
    status = ingest_job_status(updates)
    # Then
    assert [(run.job_run_id, run.status) for run in status.runs] == [
        ("run-2", IngestJobStatusType.FINISHED),
        ("run-1", IngestJobStatusType.FAILED),
    ]
    assert status.runs[0].start_time == at(10)
    assert status.runs[0].finish_time == at(13)
    assert status.runs[0].rows_written == 100


def should_summarise_files_written_and_added_in_a_run() -> None:
    # Given
    updates = [started(), finished(files=3, separate=True), added(2)]
    # When
    run = ingest_job_status(updates).latest_run
    # Then
    assert (run.files_written, run.files_added, run.status) == (3, 2, IngestJobStatusType.UNCOMMITTED)


@pytest.mark.parametrize(
    ("updates", "unfinished"),
    [
        ([accepted()], True),
        ([started()], True),
        ([started(), failed()], True),
        ([started(), finished(separate=True)], True),
        ([started(), finished()], False),
        ([rejected()], False),
    ],
    ids=["accepted", "in progress", "failed (may retry)", "uncommitted", "finished", "rejected"],
)
def should_tell_whether_a_job_is_unfinished(updates: list[IngestJobUpdate], unfinished: bool) -> None:
    # Given / When
    status = ingest_job_status(updates)
    # Then
    assert status.is_unfinished == unfinished


def should_keep_the_reasons_and_message_of_a_rejected_job() -> None:
    # Given
    update = rejected()
    # When
    status = ingest_job_status([update])
    # Then
    assert update.result == ValidationResult.REJECTED
    assert status.table_id is None
    assert status.latest_run.failure_reasons == ("Table not found: missing",)
    assert status.latest_run.updates == (update,)


def should_expire_a_job_a_time_to_live_after_its_first_update() -> None:
    # Given / When
    status = ingest_job_status([started(seconds=100), finished(seconds=200)], ttl=timedelta(days=7))
    # Then
    assert status.expiry_date == at(100) + timedelta(days=7)


def should_list_jobs_in_order_of_their_first_update() -> None:
    # Given
    updates = [started(job="late", seconds=50), started(job="early", seconds=5), accepted(job="late", seconds=40)]
    # When
    statuses = ingest_job_statuses(updates)
    # Then
    assert [s.job_id for s in statuses] == ["early", "late"]
    assert statuses[1].status == IngestJobStatusType.IN_PROGRESS


def should_refuse_updates_of_different_jobs_as_one_status() -> None:
    # When / Then
    with pytest.raises(TrackerError):
        ingest_job_status([started(job="a"), started(job="b")])


def should_refuse_a_time_without_a_time_zone() -> None:
    # When / Then
    with pytest.raises(TrackerError):
        IngestJobStarted(job_id="job-1", table_id="table-1", update_time=datetime(2026, 1, 1))
