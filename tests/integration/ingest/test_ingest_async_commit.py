"""Ingest jobs committing through the state store committer (``sleeper.table.ingest.job.files.commit.async``): each
job's rows land once however often its commit is delivered and however many workers ran it, and the job tracker
records the commit when the committer applies it."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.operations import STATE_STORE_COMMITTER_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.statestore.transactions.serde import Transaction
from sleeper.core.trackers.ingest import IngestJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest import IngestJobOutcome, IngestJobRunner
from sleeper.io.parquet import read_sorted
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.committer import handle_commit_request
from sleeper.statestore.log_head import AddTransactionResult
from sleeper.statestore.store import StateStore

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("text", PrimitiveType.STRING)])


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    return LocalInstance.create(tmp_path / "instance")


@pytest.fixture
def table(instance: LocalInstance) -> Table[LocalInstance]:
    return instance.create_table("t", SCHEMA, split_points=[500])


def _input(tmp_path: Path, n: int = 1000) -> tuple[str, pa.Table]:
    rng = np.random.default_rng(5)
    rows = pa.table({"key": pa.array(rng.integers(0, 1000, n), type=pa.int64()), "text": [f"t{i}" for i in range(n)]})
    path = tmp_path / "in.parquet"
    pq.write_table(rows, path)
    return str(path), rows


def _table_rows(table: Table[LocalInstance]) -> Counter[tuple[object, ...]]:
    out = Counter[tuple[object, ...]]()
    for filename in {r.filename for r in table.file_references()}:
        for batch in read_sorted(filename, table.schema):
            out.update(tuple(row.values()) for row in batch.to_pylist())
    return out


def _multiset(rows: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row.values()) for row in rows.to_pylist())


def _commit_requests(instance: LocalInstance) -> list[str]:
    queue = instance.queue(STATE_STORE_COMMITTER_Q)
    bodies: list[str] = []
    while messages := queue.receive(10):
        for message in messages:
            bodies.append(message.body)
            queue.delete(message.receipt_handle)
    return bodies


def _add_files_transactions(table: Table[LocalInstance]) -> int:
    store = table.state_store
    return sum(
        1
        for entry in store.backend.transaction_log(table.table_id, LogType.FILES).read_transactions_after(0)
        if entry.transaction_type is TransactionType.ADD_FILES
    )


def should_send_the_files_to_the_committer_which_adds_them_and_completes_the_run(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a job on a table committing asynchronously (the default)
    path, rows = _input(tmp_path)
    # When it runs
    outcome = IngestJobRunner(instance, task_id="task-1").run(IngestJob(id="job-1", table_name="t", files=(path,)))
    # Then it finished writing, but nothing is in the table: its files wait on the committer's queue, and the tracker
    # shows the run uncommitted
    assert outcome.outcome is JobOutcome.FINISHED and outcome.result is not None and outcome.result.commit_sent
    assert table.file_references() == []
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.UNCOMMITTED
    (body,) = _commit_requests(instance)
    transaction = StateStoreCommitRequest.from_json(body).transaction()
    assert isinstance(transaction, AddFilesTransaction)
    assert (transaction.job_id, transaction.task_id) == ("job-1", "task-1")
    assert transaction.job_run_id == status.latest_run.job_run_id
    # When the committer applies it
    line = handle_commit_request(instance, body)
    # Then the rows are in the table and the tracker records the files added, finishing the run
    assert "ADD_FILES committed" in line
    assert _table_rows(table) == _multiset(rows)
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert status.latest_run.files_added == status.latest_run.files_written == len(outcome.result.files)


def should_add_the_rows_once_when_the_commit_message_is_delivered_twice(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a job whose commit request was sent
    path, rows = _input(tmp_path)
    IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="t", files=(path,)))
    (body,) = _commit_requests(instance)
    # When the committer is given the same message twice (a redelivery after a lost delete)
    first = handle_commit_request(instance, body)
    again = handle_commit_request(instance, body)
    # Then the second adds nothing: the rows are in the table once, in one ADD_FILES
    assert "committed" in first
    assert "duplicate" in again and "delivered again" in again
    assert _table_rows(table) == _multiset(rows)
    assert _add_files_transactions(table) == 1
    # And the run is finished, its files added once
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert status.latest_run.files_added == status.latest_run.files_written


def should_add_the_rows_once_when_two_workers_run_the_job_at_once(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a job delivered to two workers, each with its own connection to the instance
    path, rows = _input(tmp_path, n=20_000)
    job = IngestJob(id="job-1", table_name="t", files=(path,))
    start = threading.Barrier(2)
    outcomes: list[IngestJobOutcome] = []

    def work(task: str) -> None:
        worker = sleeper.connect(instance.directory).runtime
        assert isinstance(worker, LocalInstance)
        runner = IngestJobRunner(worker, task_id=task, local_dir=tmp_path / task)
        start.wait()
        outcomes.append(runner.run(job))

    # When both run it at the same time, then the committer applies what they sent
    threads = [threading.Thread(target=work, args=(f"task-{i}",)) for i in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    LocalApi(instance).apply_commits()
    # Then both wrote and sent their files, but the table holds the rows once, from one ADD_FILES
    assert [o.outcome for o in outcomes] == [JobOutcome.FINISHED, JobOutcome.FINISHED]
    assert _table_rows(table) == _multiset(rows)
    assert _add_files_transactions(table) == 1
    # And the tracker shows one run finished and the other failed, saying another run's files were added first
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.FINISHED
    assert sorted(run.status.value for run in status.runs) == ["FAILED", "FINISHED"]
    (failed,) = [run for run in status.runs if run.status is IngestJobStatusType.FAILED]
    assert any("another run of job job-1 added its files first" in r for r in failed.failure_reasons)


def should_commit_directly_when_the_table_says_so(
    instance: LocalInstance, table: Table[LocalInstance], tmp_path: Path
) -> None:
    # Given a table whose ingest commits its own files
    path, rows = _input(tmp_path)
    table.set_properties({"sleeper.table.ingest.job.files.commit.async": "false"})
    # When a job runs
    outcome = IngestJobRunner(instance).run(IngestJob(id="job-1", table_name="t", files=(path,)))
    # Then the rows are in the table at once, and nothing was sent to the committer
    assert outcome.result is not None and not outcome.result.commit_sent
    assert _table_rows(table) == _multiset(rows)
    assert _commit_requests(instance) == []
    status = instance.ingest_job_tracker.job("job-1")
    assert status is not None and status.status is IngestJobStatusType.FINISHED


@pytest.mark.parametrize("cache_size, stores_loaded", [("10", 1), ("0", 3)])
def should_keep_each_tables_state_store_between_commit_requests(
    instance: LocalInstance,
    table: Table[LocalInstance],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cache_size: str,
    stores_loaded: int,
) -> None:
    # Given three jobs' commit requests, and the instance's state store cache size
    instance.properties.set("sleeper.statestore.provider.cache.size", cache_size)
    path, rows = _input(tmp_path, n=300)
    runner = IngestJobRunner(instance)
    for i in range(3):
        runner.run(IngestJob(id=f"job-{i}", table_name="t", files=(path,)))
    bodies = _commit_requests(instance)
    committed_by: list[int] = []
    commit = StateStore.commit

    def spied(self: StateStore, transaction: Transaction, *, body_key: str | None = None) -> AddTransactionResult:
        committed_by.append(id(self))
        return commit(self, transaction, body_key=body_key)

    monkeypatch.setattr(StateStore, "commit", spied)
    # When the committer applies them one message at a time, as the router gives them
    lines = [handle_commit_request(instance, body) for body in bodies]
    # Then one state store (its state read once, then only new entries) served them while the cache holds the table,
    # and a new one (the whole state loaded) each time without it; each request landed
    assert len(committed_by) == 3 and len(set(committed_by)) == stores_loaded
    assert all("committed" in line for line in lines)
    assert _add_files_transactions(table) == 3
    assert sum(_table_rows(table).values()) == 3 * rows.num_rows
