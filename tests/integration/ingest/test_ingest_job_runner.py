"""Ingest jobs on a local instance: validation, tracking, queue handling, committing files synchronously and through
the state store committer (``sleeper.table.ingest.job.files.commit.async``, true by default)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.exceptions import JobIdReusedError
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest import IngestJobRunner, run_ingest_queue
from sleeper.io.parquet import read_sorted
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    values=[Field("number", PrimitiveType.LONG), Field("text", PrimitiveType.STRING)],
)


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": pa.array([f"key-{x:05d}" for x in rng.integers(0, 10_000, n)]),
            "number": pa.array(rng.integers(0, 1_000_000, n), type=pa.int64()),
            "text": pa.array([f"text-{i}" for i in range(n)]),
        }
    )


def _write(path: Path, rows: pa.Table) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, path)
    return str(path)


def _table_rows(table: Table[LocalInstance]) -> Counter[tuple[object, ...]]:
    out = Counter[tuple[object, ...]]()
    for filename in {r.filename for r in table.file_references()}:
        for batch in read_sorted(filename, table.schema):
            out.update(tuple(row.values()) for row in batch.to_pylist())
    return out


def _multiset(*tables: pa.Table) -> Counter[tuple[object, ...]]:
    out = Counter[tuple[object, ...]]()
    for t in tables:
        out.update(tuple(row.values()) for row in t.to_pylist())
    return out


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    return sleeper.connect(tmp_path / "instance", create=True).runtime


@pytest.fixture(params=["async", "sync"])
def table(instance: LocalInstance, request: pytest.FixtureRequest) -> Table[LocalInstance]:
    table = instance.create_table("t", SCHEMA, split_points=["key-02500", "key-05000", "key-07500"])
    if request.param == "sync":
        table = table.set_properties({"sleeper.table.ingest.job.files.commit.async": "false"})
    return table


def _settle(instance: LocalInstance) -> None:
    """Applies the commit requests jobs sent to the state store committer, as the local runner does."""
    LocalApi(instance).apply_commits()


def should_ingest_files_and_directories_and_track_the_job_finished(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    first, second, third = _rows(1000, 1), _rows(2000, 2), _rows(500, 3)
    single = _write(tmp_path / "in" / "single.parquet", first)
    _write(tmp_path / "in" / "dir" / "a.parquet", second)
    _write(tmp_path / "in" / "dir" / "nested" / "b.parquet", third)
    (tmp_path / "in" / "dir" / "a.parquet.crc").write_bytes(b"not parquet")
    job = IngestJob(id="job-1", table_name="t", files=(single, f"file://{tmp_path / 'in' / 'dir'}/"))

    # When
    outcome = IngestJobRunner(instance, task_id="task-1").run(job)
    _settle(instance)

    # Then
    assert outcome.outcome is JobOutcome.FINISHED
    assert len(outcome.files) == 3
    assert _table_rows(table) == _multiset(first, second, third)
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None
    assert status.status is IngestJobStatusType.FINISHED
    assert status.table_id == table.table_id
    assert status.latest_run.rows_read == status.latest_run.rows_written == 3500
    assert status.latest_run.task_id == "task-1"


def should_add_the_rows_of_a_job_run_twice_only_once(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    rows = _rows(1000, 4)
    job = IngestJob(id="job-1", table_name="t", files=(_write(tmp_path / "in.parquet", rows),))
    runner = IngestJobRunner(instance)
    runner.run(job)
    _settle(instance)

    # When
    again = runner.run(job)
    _settle(instance)

    # Then
    assert again.outcome is JobOutcome.FINISHED
    assert again.result is not None and again.result.already_added
    assert _table_rows(table) == _multiset(rows)


def should_reject_a_job_id_reused_for_other_files_keeping_the_run_that_wrote_the_data(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a job that added the rows of one file
    rows, other_rows = _rows(1000, 4), _rows(500, 5)
    first = IngestJob(id="same", table_name="t", files=(_write(tmp_path / "a.parquet", rows),))
    runner = IngestJobRunner(instance)
    assert runner.run(first).outcome is JobOutcome.FINISHED
    _settle(instance)
    files_before = sorted((instance.directory / "data").rglob("*.parquet"))

    # When another job with the same id names another file, through the ingest job queue
    reused = IngestJob(id="same", table_name="t", files=(_write(tmp_path / "b7.parquet", other_rows),))
    instance.queue("IngestJobQ").send(reused.to_json())
    summary = run_ingest_queue(instance, runner=runner)

    # Then it is rejected naming the job id and what to do, and deleted from the queue
    (outcome,) = summary.outcomes
    assert outcome.outcome is JobOutcome.REJECTED
    assert len(outcome.reasons) == 1 and "'same'" in outcome.reasons[0] and "new job id" in outcome.reasons[0]
    counts = instance.queue("IngestJobQ").approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 0)
    # And the table holds the first file's rows only, with no new data file
    assert _table_rows(table) == _multiset(rows)
    assert sorted((instance.directory / "data").rglob("*.parquet")) == files_before
    # And the tracker shows the rejected run and the run that wrote the data
    status = instance.ingest_job_tracker.job("same")
    assert status is not None
    assert [run.status for run in status.runs] == [IngestJobStatusType.REJECTED, IngestJobStatusType.FINISHED]
    assert status.runs[0].failure_reasons == outcome.reasons
    assert status.runs[1].rows_written == rows.num_rows


def should_add_nothing_again_for_a_retry_naming_the_same_files_differently(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a job that added the rows of a directory's two files
    rows, more = _rows(300, 6), _rows(200, 7)
    _write(tmp_path / "in" / "a.parquet", rows)
    _write(tmp_path / "in" / "b.parquet", more)
    runner = IngestJobRunner(instance)
    assert runner.run(IngestJob(id="job-1", table_name="t", files=(str(tmp_path / "in"),))).outcome is (
        JobOutcome.FINISHED
    )
    _settle(instance)

    # When it is run again naming the two files instead, in the other order
    again = runner.run(
        IngestJob(
            id="job-1", table_name="t", files=(str(tmp_path / "in" / "b.parquet"), str(tmp_path / "in" / "a.parquet"))
        )
    )

    # Then it is the same input: already done, nothing added
    assert again.outcome is JobOutcome.FINISHED
    assert again.result is not None and again.result.already_added
    assert _table_rows(table) == _multiset(rows, more)


def should_refuse_a_job_id_reused_for_other_files_from_python(table: Table[LocalInstance], tmp_path: Path) -> None:
    # Given rows ingested from a file under a job id
    rows = _rows(100, 8)
    table.ingest(_write(tmp_path / "a.parquet", rows), job_id="same")
    # When another file is ingested under the same id
    with pytest.raises(JobIdReusedError, match="'same'"):
        table.ingest(_write(tmp_path / "b.parquet", _rows(100, 9)), job_id="same")
    # Then nothing was added; the same file again is a retry that adds nothing
    assert table.ingest(str(tmp_path / "a.parquet"), job_id="same").already_added
    assert _table_rows(table) == _multiset(rows)


def should_reject_a_file_with_a_column_of_the_wrong_type_naming_file_and_column(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    good = _write(tmp_path / "good.parquet", _rows(10, 1))
    bad_rows = _rows(10, 2).set_column(1, "number", pa.array(["x"] * 10))
    bad = _write(tmp_path / "bad.parquet", bad_rows)
    job = IngestJob(id="job-1", table_name="t", files=(good, bad))

    # When
    outcome = IngestJobRunner(instance).run(job)

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert len(outcome.reasons) == 1
    assert "bad.parquet" in outcome.reasons[0] and "'number'" in outcome.reasons[0]
    _assert_rejected_and_table_unchanged(instance, table, "job-1", outcome.reasons)


def should_reject_a_file_missing_the_row_key_column(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    path = _write(tmp_path / "no-key.parquet", _rows(10, 1).drop_columns(["key"]))

    # When
    outcome = IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="t", files=(path,)))

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert any("no-key.parquet" in r and "'key'" in r for r in outcome.reasons)
    _assert_rejected_and_table_unchanged(instance, table, "job-1", outcome.reasons)


def should_reject_a_missing_file(instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path) -> None:
    # Given
    good = _write(tmp_path / "good.parquet", _rows(10, 1))
    missing = str(tmp_path / "missing.parquet")

    # When
    outcome = IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="t", files=(good, missing)))

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert outcome.reasons == (f"No files found at {missing}",)
    _assert_rejected_and_table_unchanged(instance, table, "job-1", outcome.reasons)


def should_reject_an_empty_directory(instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path) -> None:
    # Given
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "notes.txt").write_text("no parquet here")

    # When
    outcome = IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="t", files=(str(empty),)))

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert outcome.reasons == (f"No files found at {empty}",)
    _assert_rejected_and_table_unchanged(instance, table, "job-1", outcome.reasons)


def should_reject_a_job_for_an_unknown_table(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    path = _write(tmp_path / "in.parquet", _rows(10, 1))

    # When
    outcome = IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="nope", files=(path,)))

    # Then
    assert outcome.outcome is JobOutcome.REJECTED
    assert outcome.table_id is None
    assert "nope" in outcome.reasons[0]
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.REJECTED
    assert table.file_references() == []


def _assert_rejected_and_table_unchanged(
    instance: LocalInstance, table: Table[LocalInstance], job_id: str, reasons: tuple[str, ...]
) -> None:
    status = instance.ingest_job_tracker.job(job_id)
    assert status is not None
    assert status.status is IngestJobStatusType.REJECTED
    assert status.latest_run.failure_reasons == reasons
    assert table.file_references() == []
    assert list((instance.directory / "data").rglob("*.parquet")) == []


def should_run_queued_jobs_deleting_finished_and_rejected_and_keeping_failed(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given
    rows = _rows(300, 5)
    good = _write(tmp_path / "good.parquet", rows)
    nulls = rows.set_column(1, "number", pa.array([None] * rows.num_rows, type=pa.int64()))
    failing = _write(tmp_path / "nulls.parquet", nulls)
    queue = instance.queue("IngestJobQ")
    queue.send(IngestJob(id="ok", table_name="t", files=(good,)).to_json())
    queue.send(IngestJob(id="rejected", table_name="t", files=(str(tmp_path / "missing.parquet"),)).to_json())
    queue.send(IngestJob(id="fails", table_name="t", files=(failing,)).to_json())
    queue.send('{"id": "unreadable", "files": []}')

    # When
    summary = run_ingest_queue(instance)
    _settle(instance)

    # Then
    by_id = {o.job_id: o.outcome for o in summary.outcomes}
    assert by_id == {
        "ok": JobOutcome.FINISHED,
        "rejected": JobOutcome.REJECTED,
        "fails": JobOutcome.FAILED,
        "unreadable": JobOutcome.REJECTED,
    }
    counts = queue.approximate_counts()
    assert (counts.visible, counts.in_flight) == (0, 1)
    tracker = instance.ingest_job_tracker
    statuses = {job_id: tracker.job(job_id) for job_id in by_id}
    assert {job_id: s.status if s else None for job_id, s in statuses.items()} == {
        "ok": IngestJobStatusType.FINISHED,
        "rejected": IngestJobStatusType.REJECTED,
        "fails": IngestJobStatusType.FAILED,
        "unreadable": IngestJobStatusType.REJECTED,
    }
    assert _table_rows(table) == _multiset(rows)
