"""JSON round trip of tracker updates, as the durable adapters store them (sleeper.core.trackers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sleeper.core.exceptions import SerDeError
from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
)
from sleeper.core.trackers.ingest import (
    IngestJobAddedFiles,
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobValidated,
)
from sleeper.core.trackers.serde import (
    compaction_update_from_json,
    ingest_update_from_json,
    task_update_from_json,
    update_to_json,
    update_type_name,
)
from sleeper.core.trackers.task import TaskFinished, TaskStarted

T = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
IDS = {"job_id": "job-1", "table_id": "table-1", "update_time": T, "job_run_id": "run-1", "task_id": "task-1"}

INGEST = [
    IngestJobValidated(job_id="job-1", table_id=None, update_time=T, reasons=("bad", "worse"), json_message="{}"),
    IngestJobStarted(**IDS, file_count=3, start_of_run=False),
    IngestJobAddedFiles(**IDS, file_count=2),
    IngestJobFinished(**IDS, rows_read=5, rows_written=4, files_written=2, committed_by_separate_file_updates=True),
    IngestJobFailed(**IDS, reasons=("boom",)),
]
COMPACTION = [
    CompactionJobCreated(job_id="job-1", table_id="t", update_time=T, partition_id="root", input_files_count=3),
    CompactionJobStarted(**IDS),
    CompactionJobFinished(**IDS, rows_read=10, rows_written=9),
    CompactionJobCommitted(**IDS),
    CompactionJobFailed(**IDS, reasons=("a", "b")),
]
TASKS = [
    TaskStarted(task_id="task-1", update_time=T.astimezone(timezone(timedelta(hours=2)))),
    TaskFinished(
        task_id="task-1", update_time=T, job_runs=2, rows_read=3, rows_written=4, time_spent_on_jobs_seconds=1.5
    ),
]


@pytest.mark.parametrize("update", INGEST, ids=update_type_name)
def should_read_back_an_ingest_update(update: object) -> None:
    # Given / When
    text = update_to_json(update)  # type: ignore[arg-type]
    # Then
    assert ingest_update_from_json(text) == update


@pytest.mark.parametrize("update", COMPACTION, ids=update_type_name)
def should_read_back_a_compaction_update(update: object) -> None:
    # Given / When
    text = update_to_json(update)  # type: ignore[arg-type]
    # Then
    assert compaction_update_from_json(text) == update


@pytest.mark.parametrize("update", TASKS, ids=update_type_name)
def should_read_back_a_task_update(update: object) -> None:
    # Given / When
    text = update_to_json(update)  # type: ignore[arg-type]
    # Then
    assert task_update_from_json(text) == update


def should_name_updates_as_sleeper_does() -> None:
    # Given / When
    names = [update_type_name(u) for u in INGEST] + [update_type_name(u) for u in COMPACTION]
    # Then
    assert names == ["validated", "started", "addedFiles", "finished", "failed"] + [
        "created",
        "started",
        "finished",
        "committed",
        "failed",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"type":"unknown","job_id":"j"}',
        '{"type":"started","job_id":"j","table_id":"t","update_time":"2026-01-01T00:00:00+00:00","extra":1}',
        '{"type":"started","job_id":"j","table_id":"t","update_time":"2026-01-01T00:00:00"}',
        '{"type":"started","table_id":"t","update_time":"2026-01-01T00:00:00+00:00"}',
    ],
    ids=["not json", "unknown type", "unknown field", "naive time", "missing job id"],
)
def should_refuse_json_that_is_not_an_update(text: str) -> None:
    # When / Then
    with pytest.raises(SerDeError):
        ingest_update_from_json(text)
