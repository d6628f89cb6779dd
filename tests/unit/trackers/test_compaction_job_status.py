"""Compaction job and task statuses derived from tracker updates (sleeper.core.trackers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobStatusType,
    CompactionJobUpdate,
    compaction_job_status,
    compaction_job_statuses,
)
from sleeper.core.trackers.task import TaskFinished, TaskStarted, task_status, task_statuses

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def created(job: str = "job-1", seconds: float = 0) -> CompactionJobCreated:
    return CompactionJobCreated(
        job_id=job, table_id="table-1", update_time=at(seconds), partition_id="root", input_files_count=12
    )


def started(run: str = "run-1", seconds: float = 1) -> CompactionJobStarted:
    return CompactionJobStarted(
        job_id="job-1", table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1"
    )


def finished(run: str = "run-1", seconds: float = 2) -> CompactionJobFinished:
    return CompactionJobFinished(
        job_id="job-1",
        table_id="table-1",
        update_time=at(seconds),
        job_run_id=run,
        task_id="task-1",
        rows_read=1000,
        rows_written=900,
    )


def committed(run: str = "run-1", seconds: float = 3) -> CompactionJobCommitted:
    return CompactionJobCommitted(
        job_id="job-1", table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1"
    )


def failed(run: str = "run-1", seconds: float = 3, reason: str = "boom") -> CompactionJobFailed:
    return CompactionJobFailed(
        job_id="job-1", table_id="table-1", update_time=at(seconds), job_run_id=run, task_id="task-1", reasons=(reason,)
    )


@pytest.mark.parametrize(
    ("updates", "expected"),
    [
        ([created()], CompactionJobStatusType.CREATED),
        ([created(), started()], CompactionJobStatusType.IN_PROGRESS),
        ([created(), started(), finished()], CompactionJobStatusType.UNCOMMITTED),
        ([created(), started(), finished(), committed()], CompactionJobStatusType.FINISHED),
        ([created(), started(), failed()], CompactionJobStatusType.FAILED),
        ([created(), started(), finished(), failed(seconds=4)], CompactionJobStatusType.FAILED),
    ],
    ids=["created", "in progress", "uncommitted", "finished", "failed", "commit failed"],
)
def should_derive_the_status_of_a_job_from_its_furthest_update(
    updates: list[CompactionJobUpdate], expected: CompactionJobStatusType
) -> None:
    # Given / When
    status = compaction_job_status(updates)
    # Then
    assert status.status == expected


def should_keep_what_the_job_was_created_with() -> None:
    # Given / When
    status = compaction_job_status([created(seconds=0), started(seconds=5)])
    # Then
    assert (status.partition_id, status.input_files_count, status.create_time) == ("root", 12, at(0))
    assert [run.job_run_id for run in status.runs] == ["run-1"]


def should_report_a_created_job_without_runs() -> None:
    # Given / When
    status = compaction_job_status([created()])
    # Then
    assert status.runs == ()
    assert status.latest_run is None
    assert status.is_unfinished


def should_let_a_committed_run_outrank_a_failed_duplicate_run() -> None:
    # Given a job committed by one run and failed by a redelivery
    updates = [created(), started("run-1", 1), finished("run-1", 2), committed("run-1", 3)]
    updates += [started("run-2", 10), failed("run-2", 11, "input files not assigned to job")]
    # When
    status = compaction_job_status(updates)
    # Then
    assert status.status == CompactionJobStatusType.FINISHED
    assert not status.is_unfinished
    latest = status.latest_run
    assert latest is not None
    assert latest.failure_reasons == ("input files not assigned to job",)


def should_count_a_finished_job_with_a_run_in_progress_as_unfinished() -> None:
    # Given
    updates = [created(), started("run-1", 1), committed("run-1", 3), started("run-2", 10)]
    # When
    status = compaction_job_status(updates)
    # Then
    assert status.status == CompactionJobStatusType.FINISHED
    assert status.is_unfinished


def should_summarise_a_run() -> None:
    # Given / When
    run = compaction_job_status([created(), started(), finished(), committed()]).runs[0]
    # Then
    assert (run.start_time, run.finish_time, run.commit_time) == (at(1), at(2), at(3))
    assert (run.rows_read, run.rows_written, run.task_id) == (1000, 900, "task-1")


def should_list_jobs_in_order_of_creation() -> None:
    # Given / When
    statuses = compaction_job_statuses([created("b", 10), created("a", 20), created("c", 5)])
    # Then
    assert [s.job_id for s in statuses] == ["c", "b", "a"]


def should_report_a_task_in_progress_then_finished() -> None:
    # Given
    start = TaskStarted(task_id="task-1", update_time=at(0))
    finish = TaskFinished(
        task_id="task-1", update_time=at(60), job_runs=3, rows_read=30, rows_written=20, time_spent_on_jobs_seconds=45
    )
    # When
    running = task_status([start])
    done = task_status([finish, start])
    # Then
    assert not running.is_finished
    assert (done.start_time, done.finish_time, done.job_runs, done.rows_written) == (at(0), at(60), 3, 20)
    assert done.is_in_period(at(30), at(90))
    assert not done.is_in_period(at(61), at(90))


def should_list_tasks_in_order_of_start() -> None:
    # Given / When
    statuses = task_statuses([TaskStarted(task_id="b", update_time=at(5)), TaskStarted(task_id="a", update_time=at(9))])
    # Then
    assert [s.task_id for s in statuses] == ["b", "a"]
