"""Contract of the tracker ports (sleeper.core.trackers), run against every adapter: in-memory and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sleeper.adapters.local.trackers import (
    SqliteCompactionJobTracker,
    SqliteIngestJobTracker,
    SqliteQueryTracker,
    SqliteTaskTracker,
)
from sleeper.adapters.memory.trackers import (
    InMemoryCompactionJobTracker,
    InMemoryIngestJobTracker,
    InMemoryQueryTracker,
    InMemoryTaskTracker,
)
from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobStatusType,
    CompactionJobTracker,
    CompactionJobUpdate,
)
from sleeper.core.trackers.ingest import (
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobStatusType,
    IngestJobTracker,
    IngestJobValidated,
)
from sleeper.core.trackers.query import RUN_SEPARATOR, QueryState, QueryTracker, QueryUpdate
from sleeper.core.trackers.task import TaskFinished, TaskStarted, TaskTracker

T0 = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
BACKENDS = ["memory", "sqlite"]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ingest_tracker(backend: str, tmp_path: Path) -> IngestJobTracker:
    return InMemoryIngestJobTracker() if backend == "memory" else SqliteIngestJobTracker(tmp_path / "sleeper.db")


@pytest.fixture
def compaction_tracker(backend: str, tmp_path: Path) -> CompactionJobTracker:
    if backend == "memory":
        return InMemoryCompactionJobTracker()
    return SqliteCompactionJobTracker(tmp_path / "sleeper.db")


@pytest.fixture
def task_tracker(backend: str, tmp_path: Path) -> TaskTracker:
    return InMemoryTaskTracker() if backend == "memory" else SqliteTaskTracker(tmp_path / "sleeper.db", kind="ingest")


@pytest.fixture
def query_tracker(backend: str, tmp_path: Path) -> QueryTracker:
    return InMemoryQueryTracker() if backend == "memory" else SqliteQueryTracker(tmp_path / "sleeper.db")


def ingest_started(job: str, table: str = "table-1", run: str = "run-1", seconds: float = 0) -> IngestJobStarted:
    return IngestJobStarted(job_id=job, table_id=table, update_time=at(seconds), job_run_id=run, task_id="task-1")


def ingest_finished(job: str, table: str = "table-1", run: str = "run-1", seconds: float = 5) -> IngestJobFinished:
    return IngestJobFinished(
        job_id=job,
        table_id=table,
        update_time=at(seconds),
        job_run_id=run,
        task_id="task-1",
        rows_read=10,
        rows_written=10,
        files_written=1,
    )


# --- ingest jobs -----------------------------------------------------------------------------------------------------


def should_report_an_ingest_job_from_its_recorded_updates(ingest_tracker: IngestJobTracker) -> None:
    # Given
    ingest_tracker.record(ingest_started("job-1"))
    ingest_tracker.record(ingest_finished("job-1"))
    # When
    status = ingest_tracker.job("job-1")
    # Then
    assert status is not None
    assert (status.job_id, status.table_id, status.status) == ("job-1", "table-1", IngestJobStatusType.FINISHED)
    assert status.latest_run.updates == (ingest_started("job-1"), ingest_finished("job-1"))
    assert status.latest_run.start_time == T0


def should_report_no_status_for_an_unknown_job(ingest_tracker: IngestJobTracker) -> None:
    # Given
    ingest_tracker.record(ingest_started("job-1"))
    # When / Then
    assert ingest_tracker.job("job-2") is None


def should_list_a_tables_ingest_jobs_and_the_unfinished_ones(ingest_tracker: IngestJobTracker) -> None:
    # Given
    ingest_tracker.record(ingest_started("done", seconds=0))
    ingest_tracker.record(ingest_finished("done", seconds=5))
    ingest_tracker.record(ingest_started("running", seconds=1))
    ingest_tracker.record(ingest_started("failing", seconds=2))
    ingest_tracker.record(
        IngestJobFailed(
            job_id="failing", table_id="table-1", update_time=at(3), job_run_id="run-1", reasons=("disk full",)
        )
    )
    ingest_tracker.record(ingest_started("elsewhere", table="table-2"))
    # When
    jobs = ingest_tracker.jobs("table-1")
    unfinished = ingest_tracker.unfinished_jobs("table-1")
    # Then
    assert [(j.job_id, j.status) for j in jobs] == [
        ("done", IngestJobStatusType.FINISHED),
        ("running", IngestJobStatusType.IN_PROGRESS),
        ("failing", IngestJobStatusType.FAILED),
    ]
    assert [j.job_id for j in unfinished] == ["running", "failing"]
    assert jobs[2].latest_run.failure_reasons == ("disk full",)


def should_list_rejected_ingest_jobs_of_every_table(ingest_tracker: IngestJobTracker) -> None:
    # Given
    message = '{"id":"bad","tableName":"missing","files":[]}'
    ingest_tracker.record(
        IngestJobValidated(job_id="bad", table_id=None, update_time=at(0), reasons=("no files",), json_message=message)
    )
    ingest_tracker.record(IngestJobValidated(job_id="good", table_id="table-1", update_time=at(1), job_run_id="r"))
    # When
    invalid = ingest_tracker.invalid_jobs()
    # Then
    assert [(j.job_id, j.status) for j in invalid] == [("bad", IngestJobStatusType.REJECTED)]
    validated = invalid[0].latest_run.updates[0]
    assert isinstance(validated, IngestJobValidated)
    assert validated.json_message == message


def should_count_a_retried_ingest_job_once_with_every_run(ingest_tracker: IngestJobTracker) -> None:
    # Given
    ingest_tracker.record(ingest_started("job-1", run="run-1", seconds=0))
    ingest_tracker.record(IngestJobFailed(job_id="job-1", table_id="table-1", update_time=at(1), job_run_id="run-1"))
    ingest_tracker.record(ingest_started("job-1", run="run-2", seconds=10))
    # When
    jobs = ingest_tracker.jobs("table-1")
    # Then
    assert len(jobs) == 1
    assert [run.job_run_id for run in jobs[0].runs] == ["run-2", "run-1"]
    assert jobs[0].status == IngestJobStatusType.IN_PROGRESS


# --- compaction jobs -------------------------------------------------------------------------------------------------


def should_report_a_compaction_job_through_its_life(compaction_tracker: CompactionJobTracker) -> None:
    # Given
    ids = {"job_id": "job-1", "table_id": "table-1", "job_run_id": "run-1", "task_id": "task-1"}
    updates: list[CompactionJobUpdate] = [
        CompactionJobCreated(
            job_id="job-1", table_id="table-1", update_time=at(0), partition_id="root", input_files_count=4
        ),
        CompactionJobStarted(**ids, update_time=at(1)),
        CompactionJobFinished(**ids, update_time=at(2), rows_read=40, rows_written=40),
        CompactionJobCommitted(**ids, update_time=at(3)),
    ]
    # When
    statuses = []
    for update in updates:
        compaction_tracker.record(update)
        status = compaction_tracker.job("job-1")
        assert status is not None
        statuses.append(status.status)
    # Then
    assert statuses == [
        CompactionJobStatusType.CREATED,
        CompactionJobStatusType.IN_PROGRESS,
        CompactionJobStatusType.UNCOMMITTED,
        CompactionJobStatusType.FINISHED,
    ]
    assert compaction_tracker.unfinished_jobs("table-1") == []


def should_list_a_tables_compaction_jobs(compaction_tracker: CompactionJobTracker) -> None:
    # Given
    for job, table, seconds in [("b", "table-1", 2), ("a", "table-1", 1), ("c", "table-2", 0)]:
        compaction_tracker.record(
            CompactionJobCreated(
                job_id=job, table_id=table, update_time=at(seconds), partition_id="root", input_files_count=2
            )
        )
    # When
    jobs = compaction_tracker.jobs("table-1")
    # Then
    assert [j.job_id for j in jobs] == ["a", "b"]
    assert [j.job_id for j in compaction_tracker.unfinished_jobs("table-1")] == ["a", "b"]


# --- tasks -----------------------------------------------------------------------------------------------------------


def should_report_tasks_in_progress_and_finished(task_tracker: TaskTracker) -> None:
    # Given
    task_tracker.record(TaskStarted(task_id="task-1", update_time=at(0)))
    task_tracker.record(TaskStarted(task_id="task-2", update_time=at(5)))
    task_tracker.record(TaskFinished(task_id="task-1", update_time=at(60), job_runs=2, rows_written=50))
    # When
    finished = task_tracker.task("task-1")
    running = task_tracker.tasks_in_progress()
    # Then
    assert finished is not None
    assert (finished.finish_time, finished.job_runs, finished.rows_written) == (at(60), 2, 50)
    assert [t.task_id for t in running] == ["task-2"]
    assert [t.task_id for t in task_tracker.all_tasks()] == ["task-1", "task-2"]
    assert task_tracker.task("task-3") is None


# --- queries ---------------------------------------------------------------------------------------------------------


def should_roll_sub_queries_up_into_the_query(query_tracker: QueryTracker) -> None:
    # Given a query split into two sub-queries
    query_tracker.record(QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=at(0)))
    query_tracker.record_all(
        [QueryUpdate(query_id="q", sub_query_id=s, state=QueryState.QUEUED, update_time=at(1)) for s in ("a", "b")]
    )
    # When both finish, one with an error
    query_tracker.record(
        QueryUpdate(query_id="q", sub_query_id="a", state=QueryState.COMPLETED, update_time=at(2), row_count=7)
    )
    midway = query_tracker.status("q")
    query_tracker.record(
        QueryUpdate(
            query_id="q", sub_query_id="b", state=QueryState.FAILED, update_time=at(3), error_message="file missing"
        )
    )
    # Then the query stays in progress until the last one, then becomes partially failed
    assert midway is not None
    assert midway.last_known_state == QueryState.IN_PROGRESS
    parent = query_tracker.status("q")
    assert parent is not None
    assert (parent.last_known_state, parent.row_count, parent.error_message) == (
        QueryState.PARTIALLY_FAILED,
        7,
        "file missing",
    )
    assert parent.last_update_time == at(3)
    assert parent.expiry_date == at(3) + timedelta(days=1)
    assert [(s.sub_query_id, s.last_known_state) for s in query_tracker.sub_queries("q")] == [
        ("a", QueryState.COMPLETED),
        ("b", QueryState.FAILED),
    ]
    assert [(r.query_id, r.sub_query_id) for r in query_tracker.failed_queries()] == [("q", "-"), ("q", "b")]


def should_complete_a_query_when_every_sub_query_completes(query_tracker: QueryTracker) -> None:
    # Given
    query_tracker.record_all(
        [QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=at(0))]
        + [QueryUpdate(query_id="q", sub_query_id=s, state=QueryState.QUEUED, update_time=at(0)) for s in "abc"]
    )
    # When
    for rows, sub in enumerate("abc"):
        query_tracker.record(
            QueryUpdate(query_id="q", sub_query_id=sub, state=QueryState.COMPLETED, update_time=at(1), row_count=rows)
        )
    # Then
    parent = query_tracker.status("q")
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 3)
    assert [r.sub_query_id for r in query_tracker.queries_with_state(QueryState.COMPLETED)] == ["-", "a", "b", "c"]


def should_ignore_a_duplicate_update_of_a_finished_sub_query(query_tracker: QueryTracker) -> None:
    # Given a finished query
    query_tracker.record(QueryUpdate(query_id="q", sub_query_id="a", state=QueryState.QUEUED, update_time=at(0)))
    query_tracker.record(
        QueryUpdate(query_id="q", sub_query_id="a", state=QueryState.COMPLETED, update_time=at(1), row_count=4)
    )
    # When the sub-query's message is delivered again
    query_tracker.record(QueryUpdate(query_id="q", sub_query_id="a", state=QueryState.IN_PROGRESS, update_time=at(2)))
    query_tracker.record(
        QueryUpdate(query_id="q", sub_query_id="a", state=QueryState.COMPLETED, update_time=at(3), row_count=4)
    )
    # Then nothing changed
    sub = query_tracker.status("q", "a")
    parent = query_tracker.status("q")
    assert sub is not None
    assert parent is not None
    assert (sub.last_known_state, sub.last_update_time) == (QueryState.COMPLETED, at(1))
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 4)


def should_roll_up_only_the_sub_queries_of_the_finishing_run_of_a_reused_query_id(query_tracker: QueryTracker) -> None:
    # Given a query whose first run (tag r1) returned 100 rows
    first = [f"r1{RUN_SEPARATOR}{s}" for s in "ab"]
    query_tracker.record(QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=at(0)))
    for sub in first:
        query_tracker.record(
            QueryUpdate(query_id="q", sub_query_id=sub, state=QueryState.COMPLETED, update_time=at(1), row_count=50)
        )
    assert query_tracker.status("q") is not None
    # When the same id is sent again (run r2) and returns 10 rows
    second = [f"r2{RUN_SEPARATOR}{s}" for s in "ab"]
    query_tracker.record(QueryUpdate(query_id="q", state=QueryState.IN_PROGRESS, update_time=at(2)))
    query_tracker.record_all(
        [QueryUpdate(query_id="q", sub_query_id=s, state=QueryState.QUEUED, update_time=at(2)) for s in second]
    )
    for sub in second:
        query_tracker.record(
            QueryUpdate(query_id="q", sub_query_id=sub, state=QueryState.COMPLETED, update_time=at(3), row_count=5)
        )
    # Then the query reports the second run's rows, not the sum of both runs
    parent = query_tracker.status("q")
    assert parent is not None
    assert (parent.last_known_state, parent.row_count) == (QueryState.COMPLETED, 10)


def should_list_every_query_with_parents_first(query_tracker: QueryTracker) -> None:
    # Given
    query_tracker.record(QueryUpdate(query_id="q2", state=QueryState.QUEUED, update_time=at(0)))
    query_tracker.record(QueryUpdate(query_id="q1", sub_query_id="0a", state=QueryState.QUEUED, update_time=at(0)))
    query_tracker.record(QueryUpdate(query_id="q1", state=QueryState.IN_PROGRESS, update_time=at(0)))
    # When
    rows = query_tracker.all_queries()
    # Then
    assert [(r.query_id, r.sub_query_id) for r in rows] == [("q1", "-"), ("q1", "0a"), ("q2", "-")]
    assert query_tracker.status("missing") is None


# --- SQLite only -----------------------------------------------------------------------------------------------------


def should_share_one_database_between_trackers_and_processes(tmp_path: Path) -> None:
    # Given trackers of both kinds opened twice on one database, with the same job id in each kind
    db = tmp_path / "sleeper.db"
    SqliteIngestJobTracker(db).record(ingest_started("job-1"))
    SqliteCompactionJobTracker(db).record(
        CompactionJobCreated(
            job_id="job-1", table_id="table-1", update_time=at(0), partition_id="p", input_files_count=1
        )
    )
    SqliteTaskTracker(db, kind="compaction").record(TaskStarted(task_id="task-1", update_time=at(0)))
    # When they are read through new instances
    ingest = SqliteIngestJobTracker(db).job("job-1")
    compaction = SqliteCompactionJobTracker(db).job("job-1")
    # Then each kind sees only its own updates
    assert ingest is not None
    assert compaction is not None
    assert (ingest.status, compaction.status) == (IngestJobStatusType.IN_PROGRESS, CompactionJobStatusType.CREATED)
    assert SqliteTaskTracker(db, kind="ingest").all_tasks() == []
    assert [t.task_id for t in SqliteTaskTracker(db, kind="compaction").all_tasks()] == ["task-1"]


def should_forget_updates_after_their_time_to_live(tmp_path: Path) -> None:
    # Given
    tracker = SqliteIngestJobTracker(tmp_path / "sleeper.db", ttl=timedelta(days=7))
    memory = InMemoryIngestJobTracker(ttl=timedelta(days=7))
    queries = SqliteQueryTracker(tmp_path / "sleeper.db")
    for t in (tracker, memory):
        t.record(ingest_started("old", seconds=0))
        t.record(ingest_started("new", seconds=3600))
    queries.record(QueryUpdate(query_id="q", state=QueryState.COMPLETED, update_time=at(0)))
    # When
    now = at(0) + timedelta(days=7)
    removed = [tracker.delete_expired(now), memory.delete_expired(now), queries.delete_expired(now)]
    # Then
    assert removed == [1, 1, 1]
    assert [j.job_id for j in tracker.jobs("table-1")] == ["new"]
    assert [j.job_id for j in memory.jobs("table-1")] == ["new"]
    assert queries.all_queries() == []
