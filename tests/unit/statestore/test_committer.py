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
from sleeper.core.statestore.transactions.log import LogType
from sleeper.statestore.committer import CommitStatus, apply_commit_requests, send_commit_request, send_transaction
from sleeper.statestore.log_head import StateStoreSettings
from sleeper.statestore.store import StateStore
from tests.reliability_report import Reliability
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


def should_collapse_a_repeated_send_of_the_same_request(reliability: Reliability) -> None:
    # Given the committer's FIFO queue
    queue = InMemoryQueues().queue("StateStoreCommitterQ.fifo", fifo=True)
    request = StateStoreCommitRequest.of_transaction("table-1", _add("a.parquet"))
    # When the same request is sent twice (a retry after a lost reply), and another request once
    send_commit_request(queue, request)
    send_commit_request(queue, request)
    send_commit_request(queue, StateStoreCommitRequest.of_transaction("table-1", _add("b.parquet")))
    # Then the queue holds each request once, in order (one message of the table's group is received at a time)
    received = []
    bodies: list[str] = []
    while messages := queue.receive(10):
        for message in messages:
            bodies.append(message.body)
            received.append(json.loads(message.body)["transaction"]["files"][0]["filename"])
            queue.delete(message.receipt_handle)
    # and the messages, applied, commit each request once
    table = new_table()
    store = table.store()
    store.initialise()
    results = apply_commit_requests(bodies, _lookup(store))
    reliability.record(
        "B5",
        case="a producer sends the same commit request twice within the deduplication window",
        sends=3,
        distinct_requests=2,
        delivered=len(received),
        sends_collapsed=3 - len(received),
        committed=sum(r.status is CommitStatus.COMMITTED for r in results),
        rows_duplicated=max(0, sum(r.number_of_rows for r in store.file_references()) - 20),
    )
    assert received == ["a.parquet", "b.parquet"]


def _job_add(filename: str, *, run: str, job: str = "job-1", inputs: str | None = "h1") -> AddFilesTransaction:
    return AddFilesTransaction.of_references(
        [FileReference(filename=filename, partition_id="root", number_of_rows=10)],
        job_id=job,
        job_run_id=run,
        inputs_hash=inputs,
    )


def should_not_add_a_redelivered_add_files_again(reliability: Reliability) -> None:
    # Given a job's ADD_FILES request that was applied
    table = new_table()
    store = table.store()
    store.initialise()
    request = _request(_job_add("a.parquet", run="run-1"))
    (first,) = apply_commit_requests([request], _lookup(store))
    # When the same message is delivered again
    (again,) = apply_commit_requests([request], _lookup(table.store()))
    # Then it is a duplicate whose files landed, and the log holds one transaction
    references = table.store().file_references()
    reliability.record(
        "B5",
        case="the same ADD_FILES request reaching the committer again (as a send after the deduplication window would)",
        sends=2,
        statuses=[first.status.value, again.status.value],
        transactions_in_log=table.store().last_transaction_numbers()[LogType.FILES],
        rows_duplicated=max(0, sum(r.number_of_rows for r in references) - 10),
    )
    assert first.status is CommitStatus.COMMITTED
    assert again.status is CommitStatus.DUPLICATE and again.status.done and again.landed
    assert again.reason is not None and "delivered again" in again.reason
    assert table.store().last_transaction_numbers()[LogType.FILES] == 1
    assert [r.filename for r in table.store().file_references()] == ["a.parquet"]


def should_not_add_the_files_of_a_second_run_of_a_job_whose_files_were_added() -> None:
    # Given two runs of one job sent their files, and the first run's were applied
    table = new_table()
    store = table.store()
    store.initialise()
    runs = [_request(_job_add("a.parquet", run="run-1")), _request(_job_add("b.parquet", run="run-2"))]
    # When both are applied in one batch
    results = apply_commit_requests(runs, _lookup(store))
    # Then the second is a duplicate that did not land: only the first run's file is in the table
    assert [r.status for r in results] == [CommitStatus.COMMITTED, CommitStatus.DUPLICATE]
    assert not results[1].landed
    assert results[1].reason is not None and "run-2" in results[1].reason and "another run" in results[1].reason
    assert [r.filename for r in table.store().file_references()] == ["a.parquet"]
    assert table.store().last_transaction_numbers()[LogType.FILES] == 1


def should_reject_an_add_files_of_a_job_id_added_from_other_input_files() -> None:
    # Given a job's files added from one input
    table = new_table()
    store = table.store()
    store.initialise()
    apply_commit_requests([_request(_job_add("a.parquet", run="run-1", inputs="h1"))], _lookup(store))
    # When an ADD_FILES reuses its id for other input
    (result,) = apply_commit_requests([_request(_job_add("b.parquet", run="run-2", inputs="h2"))], _lookup(store))
    # Then it is rejected naming the job id
    assert result.status is CommitStatus.REJECTED
    assert result.reason is not None and "job-1" in result.reason


def should_upload_a_body_too_big_for_a_message_and_send_its_key() -> None:
    # Given a store whose bodies of 500 bytes or more go to the body store
    table = new_table()
    store = table.store(settings=StateStoreSettings(body_store_threshold_bytes=500))
    store.initialise()
    queue = InMemoryQueues().queue("StateStoreCommitterQ.fifo", fifo=True)
    small = _add("a.parquet")
    large = AddFilesTransaction.of_references(
        [FileReference(filename=f"f{i:03d}.parquet", partition_id="root", number_of_rows=1) for i in range(20)]
    )
    # When both are sent
    sent = [send_transaction(queue, store, small), send_transaction(queue, store, large)]
    # Then the small one is held in its message and the large one's body is uploaded under the table's prefix
    assert [s.held_in_body_store for s in sent] == [False, True]
    assert sent[1].body_key is not None and sent[1].body_key.startswith(transaction_body_prefix(store.table_id))
    # And the committer applies both, the large one from its uploaded body
    bodies = []
    while messages := queue.receive(10):
        bodies.extend(m.body for m in messages)
        for m in messages:
            queue.delete(m.receipt_handle)
    results = apply_commit_requests(bodies, _lookup(store))
    assert [r.status for r in results] == [CommitStatus.COMMITTED, CommitStatus.COMMITTED]
    assert len(table.store().file_references()) == 21
