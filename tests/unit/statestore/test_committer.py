"""The state store committer: commit requests applied in order, rejected, invalid or left for retry."""

from __future__ import annotations

import json

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.commit import StateStoreCommitRequest, transaction_body_prefix
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AddFilesTransaction,
    DeleteFilesTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.statestore.committer import CommitStatus, apply_commit_requests, send_commit_request
from sleeper.statestore.store import StateStore
from tests.unit.statestore.fakes import new_table


def _add(filename: str, rows: int = 10) -> AddFilesTransaction:
    return AddFilesTransaction.of_references(
        [FileReference(filename=filename, partition_id="root", number_of_rows=rows)]
    )


def _request(transaction: AddFilesTransaction | DeleteFilesTransaction | ReplaceFileReferencesTransaction) -> str:
    return StateStoreCommitRequest.of_transaction("table-1", transaction).to_json()


def _lookup(store: StateStore):  # type: ignore[no-untyped-def]
    def state_store_for(table_id: str) -> StateStore:
        if table_id != "table-1":
            raise TableNotFoundError(f"no table {table_id}")
        return store

    return state_store_for


def should_commit_requests_in_order() -> None:
    # Given a table and two add-files requests
    table = new_table()
    store = table.store()
    store.initialise()
    # When they are applied
    results = apply_commit_requests([_request(_add("a.parquet")), _request(_add("b.parquet"))], _lookup(store))
    # Then both are committed with consecutive numbers and the files are tracked
    assert [r.status for r in results] == [CommitStatus.COMMITTED, CommitStatus.COMMITTED]
    assert [r.transaction_number for r in results] == [1, 2]
    assert sorted(r.filename for r in table.store().file_references()) == ["a.parquet", "b.parquet"]


def should_reject_a_transaction_that_no_longer_fits_and_change_nothing() -> None:
    # Given a file that is still referenced
    table = new_table()
    store = table.store()
    store.initialise()
    store.commit(_add("a.parquet"))
    # When a request deletes it
    (result,) = apply_commit_requests([_request(DeleteFilesTransaction(filenames=("a.parquet",)))], _lookup(store))
    # Then it is rejected (not retried) and the file is still referenced
    assert result.status is CommitStatus.REJECTED
    assert result.status.done
    assert [r.filename for r in table.store().file_references()] == ["a.parquet"]


def should_mark_unreadable_messages_and_unknown_tables_invalid() -> None:
    # Given a message that is not JSON, and one for an unknown table
    table = new_table()
    store = table.store()
    store.initialise()
    unknown = json.loads(_request(_add("a.parquet")))
    unknown["tableId"] = "other"
    # When they are applied
    results = apply_commit_requests(["not json", json.dumps(unknown)], _lookup(store))
    # Then both are invalid, with reasons, and nothing was committed
    assert [r.status for r in results] == [CommitStatus.INVALID, CommitStatus.INVALID]
    assert all(r.reason for r in results)
    assert table.store().file_references() == []


def should_read_a_body_held_in_the_body_store() -> None:
    # Given a transaction body uploaded to the table's transactions prefix
    table = new_table()
    store = table.store()
    store.initialise()
    key = f"{transaction_body_prefix('table-1')}/big.json"
    store.body_store.store(key, json.dumps(_add("big.parquet").to_dict()))
    request = StateStoreCommitRequest.in_body_store("table-1", AddFilesTransaction.TYPE, key)
    # When the request is applied
    (result,) = apply_commit_requests([request.to_json()], _lookup(store))
    # Then the file is committed
    assert result.status is CommitStatus.COMMITTED
    assert [r.filename for r in table.store().file_references()] == ["big.parquet"]


def should_leave_a_missing_body_for_retry() -> None:
    # Given a request pointing at a body that was never uploaded
    table = new_table()
    store = table.store()
    store.initialise()
    key = f"{transaction_body_prefix('table-1')}/missing.json"
    request = StateStoreCommitRequest.in_body_store("table-1", AddFilesTransaction.TYPE, key)
    # When it is applied
    (result,) = apply_commit_requests([request.to_json()], _lookup(store))
    # Then it is to be retried, not dropped
    assert result.status is CommitStatus.RETRY
    assert not result.status.done


def should_report_compaction_jobs_skipped_because_their_inputs_moved() -> None:
    # Given a file assigned to no job, and a compaction commit that expects it assigned
    table = new_table()
    store = table.store()
    store.initialise()
    store.commit(_add("in.parquet"))
    job = ReplaceFileReferencesRequest(
        job_id="job-1",
        input_files=("in.parquet",),
        new_reference=FileReference(filename="out.parquet", partition_id="root", number_of_rows=10),
    )
    # When it is applied
    (result,) = apply_commit_requests([_request(ReplaceFileReferencesTransaction(jobs=(job,)))], _lookup(store))
    # Then the job is reported as skipped and the input is still referenced
    assert [skipped.job_id for skipped, _ in result.skipped_jobs] == ["job-1"]
    assert [r.filename for r in table.store().file_references()] == ["in.parquet"]


def should_collapse_a_repeated_send_of_the_same_request() -> None:
    # Given the committer's FIFO queue
    queue = InMemoryQueues().queue("StateStoreCommitterQ.fifo", fifo=True)
    request = StateStoreCommitRequest.of_transaction("table-1", _add("a.parquet"))
    # When the same request is sent twice (a retry after a lost reply), and another request once
    send_commit_request(queue, request)
    send_commit_request(queue, request)
    send_commit_request(queue, StateStoreCommitRequest.of_transaction("table-1", _add("b.parquet")))
    # Then the queue holds each request once, in order (one message of the table's group is received at a time)
    received = []
    while messages := queue.receive(10):
        for message in messages:
            received.append(json.loads(message.body)["transaction"]["files"][0]["filename"])
            queue.delete(message.receipt_handle)
    assert received == ["a.parquet", "b.parquet"]
