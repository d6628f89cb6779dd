"""Committing compaction jobs: synchronously, through the commit queues, and on the committer side."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker
from sleeper.compaction.commit import (
    CommitMode,
    CommitOutcome,
    JobReadiness,
    apply_compaction_commits,
    check_job,
    commit_job,
    commit_mode,
    delete_output,
    handle_commit_messages,
)
from sleeper.compaction.creation import pre_split_file_references
from sleeper.compaction.execution import run_compaction
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.compaction import CompactionJob, CompactionJobCommitRequest
from sleeper.core.partition import split_partition
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.files import ReplaceFileReferencesTransaction
from sleeper.core.statestore.transactions.log import TransactionType
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.io.sketches import sketches_path
from tests.reliability_report import Reliability
from tests.unit.compaction.execution_fixtures import FakeInstance, FakeTable, new_table, utc_clock

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})


def _table_with_job(**properties: str) -> tuple[FakeTable, CompactionJob]:
    table = new_table(SCHEMA, properties=properties)
    files = [table.add_file(_rows([1, 3, 5])), table.add_file(_rows([2, 4]))]
    return table, table.job(files)


def _run_and_commit(
    table: FakeTable, job: CompactionJob, tracker: InMemoryCompactionJobTracker, **kwargs: object
) -> tuple[CommitOutcome, str]:
    result = run_compaction(job, table, filesystem=table.filesystem)
    return commit_job(
        job,
        table,
        rows_written=result.rows_written,
        task_id="task-1",
        job_run_id="run-1",
        tracker=tracker,
        clock=utc_clock(),
        filesystem=table.filesystem,
        **kwargs,  # type: ignore[arg-type]
    )


def _references(table: FakeTable) -> list[tuple[str, str, int, str | None]]:
    table.state_store.refresh()
    return sorted((r.filename, r.partition_id, r.number_of_rows, r.job_id) for r in table.state_store.file_references())


def should_replace_the_inputs_by_the_output_in_a_synchronous_commit() -> None:
    # Given
    table, job = _table_with_job()
    tracker = InMemoryCompactionJobTracker()

    # When
    outcome, _ = _run_and_commit(table, job, tracker)

    # Then
    assert outcome is CommitOutcome.COMMITTED
    assert _references(table) == [(job.output_file, "root", 5, None)]
    status = tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED


def should_report_a_committed_job_as_already_committed_before_it_runs_again() -> None:
    # Given
    table, job = _table_with_job()
    tracker = InMemoryCompactionJobTracker()
    _run_and_commit(table, job, tracker)

    # When
    check = check_job(job, table, tracker=tracker)

    # Then
    assert check.readiness is JobReadiness.ALREADY_COMMITTED
    assert job.output_file in check.reason


def should_reject_a_second_commit_of_a_job_and_keep_the_table_and_the_output() -> None:
    # Given
    table, job = _table_with_job()
    tracker = InMemoryCompactionJobTracker()
    _run_and_commit(table, job, tracker)
    before = _references(table)
    output = table.read(job.output_file)

    # When the same job is committed again (two runs raced past the check)
    outcome, reason = commit_job(
        job, table, rows_written=5, task_id="task-2", job_run_id="run-2", tracker=tracker, filesystem=table.filesystem
    )

    # Then
    assert outcome is CommitOutcome.ALREADY_COMMITTED
    assert "committed first" in reason
    assert _references(table) == before
    assert table.read(job.output_file).equals(output)
    status = tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED


def should_delete_the_output_when_the_inputs_are_not_assigned_to_the_job() -> None:
    # Given a job whose inputs were never assigned to it
    table = new_table(SCHEMA)
    files = [table.add_file(_rows([1])), table.add_file(_rows([2]))]
    job = table.job(files, assign=False)
    tracker = InMemoryCompactionJobTracker()
    before = _references(table)

    # When
    outcome, reason = _run_and_commit(table, job, tracker)

    # Then
    assert outcome is CommitOutcome.REJECTED
    assert "not job" in reason
    assert not table.exists(job.output_file)
    assert not table.exists(sketches_path(job.output_file))
    assert _references(table) == before
    status = tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FAILED


@pytest.mark.parametrize(
    ("assigned", "expected"),
    [("none", JobReadiness.AWAITING_ASSIGNMENT), ("other", JobReadiness.NOT_ASSIGNED), ("self", JobReadiness.READY)],
)
def should_check_whether_the_inputs_are_assigned_to_the_job(assigned: str, expected: JobReadiness) -> None:
    # Given
    table = new_table(SCHEMA)
    files = [table.add_file(_rows([1])), table.add_file(_rows([2]))]
    if assigned == "other":
        table.job(files, job_id="other-job")
    job = table.job(files, assign=assigned == "self")

    # When
    check = check_job(job, table)

    # Then
    assert check.readiness is expected


def should_send_a_commit_request_to_the_commit_queue_when_batching() -> None:
    # Given
    table, job = _table_with_job(**{"sleeper.table.compaction.job.commit.async": "true"})
    instance = FakeInstance()
    instance.add(table)
    before = _references(table)

    # When
    outcome, _ = _run_and_commit(table, job, instance.compaction_job_tracker, queue=instance.queue)

    # Then the table is unchanged until the committer applies the request
    assert commit_mode(table) is CommitMode.ASYNC_BATCHED
    assert outcome is CommitOutcome.SENT
    assert _references(table) == before
    (message,) = instance.queue("CompactionCommitQ").receive(1)
    request = CompactionJobCommitRequest.from_json(message.body)
    assert (request.table_id, request.request.job_id, request.request.new_reference.number_of_rows) == (
        table.table_id,
        job.job_id,
        5,
    )
    assert request.request.job_run_id == "run-1"


def should_send_a_transaction_to_the_state_store_committer_without_batching() -> None:
    # Given
    table, job = _table_with_job(
        **{
            "sleeper.table.compaction.job.commit.async": "true",
            "sleeper.table.compaction.job.async.commit.batching": "false",
        }
    )
    instance = FakeInstance()
    instance.add(table)

    # When
    outcome, _ = _run_and_commit(table, job, instance.compaction_job_tracker, queue=instance.queue)

    # Then
    assert outcome is CommitOutcome.SENT
    (message,) = instance.queue("StateStoreCommitterQ.fifo").receive(1)
    assert message.group_id == table.table_id
    request = StateStoreCommitRequest.from_json(message.body)
    assert request.transaction_type is TransactionType.REPLACE_FILE_REFERENCES
    transaction = request.transaction()
    assert isinstance(transaction, ReplaceFileReferencesTransaction)
    assert [j.job_id for j in transaction.jobs] == [job.job_id]


def should_commit_a_batch_once_per_table_and_refuse_duplicates_and_stale_jobs() -> None:
    # Given two finished jobs on one table, one sent twice, and a job whose inputs were never assigned to it
    instance = FakeInstance()
    table = instance.add(new_table(SCHEMA, split_points=[10]))
    left, right = table.leaf(0), table.leaf(1)
    job_a = table.job(
        [table.add_file(_rows([1]), partitions=[left.id]), table.add_file(_rows([2]), partitions=[left.id])], left.id
    )
    job_b = table.job([table.add_file(_rows([11]), partitions=[right.id])], right.id)
    stale = table.job([table.add_file(_rows([3]), partitions=[left.id])], left.id, assign=False)
    requests = []
    for job in (job_a, job_b, stale):
        result = run_compaction(job, table, filesystem=table.filesystem)
        requests.append(
            job.commit_request(task_id="t", job_run_id=f"run-{job.job_id}", rows_written=result.rows_written)
        )
    requests.append(requests[0])

    # When
    result = apply_compaction_commits(
        requests, instance.table_by_id, instance.compaction_job_tracker, filesystem=table.filesystem
    )

    # Then
    assert sorted(job_id for _, job_id in result.committed) == sorted([job_a.job_id, job_b.job_id])
    assert [job_id for _, job_id, _ in result.failed] == [stale.job_id]
    assert [job_id for _, job_id in result.already_committed] == [job_a.job_id]
    assert result.transactions == 1
    outputs = {r[0] for r in _references(table)}
    assert {job_a.output_file, job_b.output_file} <= outputs
    assert table.exists(job_a.output_file)
    assert not table.exists(stale.output_file)
    for job, expected in ((job_a, CompactionJobStatusType.FINISHED), (stale, CompactionJobStatusType.FAILED)):
        status = instance.compaction_job_tracker.job(job.job_id)
        assert status is not None and status.status is expected
        assert all(run.status is expected for run in status.runs)


def should_fail_commits_of_tables_that_no_longer_exist_and_report_unreadable_messages() -> None:
    # Given
    tracker = InMemoryCompactionJobTracker()
    table, job = _table_with_job()
    request = job.commit_request(task_id="t", job_run_id="r", rows_written=5)

    def no_table(table_id: str) -> FakeTable:
        raise TableNotFoundError(table_id)

    # When
    result = handle_commit_messages([request.to_json(), "{not json"], no_table, tracker)

    # Then
    assert [(job_id, "does not exist" in reason) for _, job_id, reason in result.failed] == [(job.job_id, True)]
    assert len(result.invalid_messages) == 1
    assert result.committed == ()


def should_commit_each_table_of_a_batch_on_its_own_and_retry_only_the_failing_messages() -> None:
    # Given a batch with a commit of a table whose state store cannot be reached, an unreadable message and a commit
    # of a table that works
    tracker = InMemoryCompactionJobTracker()
    broken, broken_job = _table_with_job()
    table, job = _table_with_job()
    result = run_compaction(job, table, filesystem=table.filesystem)
    request = job.commit_request(task_id="t", job_run_id="r", rows_written=result.rows_written)
    broken_request = broken_job.commit_request(task_id="t", job_run_id="r", rows_written=5)

    def by_id(table_id: str) -> FakeTable:
        if table_id == broken.table_id:
            raise ConnectionError("state store unreachable")
        return table

    # When the batch is read and applied
    batch = handle_commit_messages(
        [broken_request.to_json(), "{not json", request.to_json()], by_id, tracker, filesystem=table.filesystem
    )

    # Then the working table's job is committed, and only the other two messages are to be delivered again
    assert batch.committed == ((table.table_id, job.job_id),)
    assert job.output_file in {r.filename for r in table.state_store.file_references()}
    assert batch.retry == (0, 1)
    assert [(table_id, str(error)) for table_id, error in batch.table_errors] == [
        (broken.table_id, "state store unreachable")
    ]
    assert len(batch.invalid_messages) == 1


class _RefusingDeletes:
    """A filesystem that refuses every delete, as S3 does for a role without s3:DeleteObject."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def delete_file(self, path: str) -> None:
        self.attempts.append(path)
        raise PermissionError(f"AccessDenied: {path}")


def should_leave_an_output_it_may_not_delete_to_the_orphan_sweeper(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a store that refuses deletes (on AWS only the garbage collector may delete data files)
    filesystem = _RefusingDeletes()
    output = tmp_path / "data" / "out.parquet"
    # When the output of a refused commit is deleted
    with caplog.at_level(logging.WARNING):
        delete_output(str(output), data_prefix=tmp_path.as_uri(), filesystem=filesystem)  # type: ignore[arg-type]
    # Then the output and its sketches were both tried, nothing raised, and each refusal is logged for the sweeper
    assert [Path(p).name for p in filesystem.attempts] == ["out.parquet", "out.sketches"]
    assert caplog.text.count("for the orphan sweeper") == 2


def should_commit_a_job_onto_its_partition_split_since_and_move_the_output_down_later(
    reliability: Reliability,
) -> None:
    # Given a job created on the root leaf, whose partition is split before the job commits (docs/reliability.md A6)
    table, job = _table_with_job()
    tracker = InMemoryCompactionJobTracker()
    expected = sorted(table.read(f).column("key").to_pylist() for f in job.input_files)
    parent, left, right = split_partition(SCHEMA, table.leaf(), 0, 3, id_supplier=iter(["L", "R"]).__next__)
    table.state_store.commit(SplitPartitionTransaction(parent=parent, new_children=(left, right)))

    # When the job runs and commits, then job creation pre-splits references on non-leaf partitions
    outcome, _ = _run_and_commit(table, job, tracker)
    on_parent = _references(table)
    moved = pre_split_file_references(table.state_store)
    after_move = _references(table)

    # Then the commit is accepted onto the non-leaf root, with every row, and its reference later moves to both leaves
    output_rows = sorted(table.read(job.output_file).column("key").to_pylist())
    input_rows = sorted(key for keys in expected for key in keys)
    lost = sum((Counter(input_rows) - Counter(output_rows)).values())
    duplicated = sum((Counter(output_rows) - Counter(input_rows)).values())
    reliability.record(
        "A6",
        case="job created on leaf P, P split, then the job commits",
        commit_outcome=outcome.value,
        committed_onto_non_leaf=[p for _, p, _, _ in on_parent] == ["root"] and table.leaf().id != "root",
        rows_in=len(input_rows),
        rows_out=len(output_rows),
        rows_lost=lost,
        rows_duplicated=duplicated,
        references_moved_down=moved,
        references_after=[p for _, p, _, _ in after_move],
    )
    assert outcome is CommitOutcome.COMMITTED
    assert on_parent == [(job.output_file, "root", 5, None)]
    assert output_rows == input_rows == [1, 2, 3, 4, 5]
    assert moved == 1
    assert sorted((f, p) for f, p, _, _ in after_move) == [(job.output_file, "L"), (job.output_file, "R")]
    status = tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
