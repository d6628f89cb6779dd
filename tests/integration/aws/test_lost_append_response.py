"""An append whose response is lost, on both AWS state stores (DynamoDB and the S3 object log), on a moto server.

The conditional write lands, its response never arrives, and botocore's own retry (standard mode) sends it again: the
retry's condition fails on the first request's entry (DynamoDB ``ConditionalCheckFailed``, S3 412). The log head must
recognise that entry as its own by its transaction id, report the append as landed, and apply it once; otherwise a
synchronous ASSIGN_JOB_IDS leaves references assigned to jobs never sent, and a compaction that landed is tracked
FAILED.

The response is lost by a ``before-send`` hook on the client: it sends the signed request itself (so it lands) and
raises ``ReadTimeoutError`` as a dropped connection would, which botocore retries.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session
from botocore.retries import standard

from sleeper.adapters.aws.clients import s3_client
from sleeper.adapters.aws.s3_log import S3StateStoreBackend
from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.adapters.memory.trackers import InMemoryCompactionJobTracker
from sleeper.compaction.commit import CommitOutcome, commit_job
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.execution import run_compaction
from sleeper.core.partition import partitions_from_split_points
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import ClearFilesTransaction
from sleeper.core.statestore.transactions.log import LogType, TransactionType
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.statestore.ports import StateStoreBackend, TransactionLogEntry
from sleeper.statestore.store import StateStore
from tests.contract.aws_backends import REGION, aws_settings, create_state_store, new_instance_id
from tests.unit.compaction.execution_fixtures import FakeTable, new_table

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


class LoseResponses:
    """Loses the response of a client's next matching requests: each is sent (it lands) and then botocore sees
    ``ReadTimeoutError``, so it retries the request itself.

    Args:
        client: A boto3 client (with retries: the state store's clients use standard mode, 5 attempts).
        operation: The operation, e.g. ``"PutObject"``.
        marker: Only requests whose body holds these bytes lose their response.
    """

    def __init__(self, client: Any, operation: str, marker: bytes) -> None:
        self._marker = marker
        self._armed = 0
        self._session = URLLib3Session()
        self.lost = 0
        service = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register(f"before-send.{service}.{operation}", self._before_send)

    def arm(self, times: int = 1) -> None:
        """Loses the responses of the next ``times`` matching requests."""
        self._armed += times

    def _before_send(self, request: AWSPreparedRequest, **_: Any) -> None:
        if self._armed < 1 or self._marker not in _body(request):
            return
        self._armed -= 1
        response = self._session.send(request)
        assert response.status_code == 200, response.content  # the write landed
        self.lost += 1
        raise ReadTimeoutError(endpoint_url=request.url)


def _body(request: AWSPreparedRequest) -> bytes:
    body = request.body
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    assert isinstance(body, io.IOBase) or hasattr(body, "read")
    position = body.tell()
    data: bytes = body.read()
    body.seek(position)
    return data


@dataclass(frozen=True, slots=True)
class Store:
    """A state store backend on moto, and what loses its log appends' responses."""

    backend: StateStoreBackend
    lose: LoseResponses


@pytest.fixture(autouse=True)
def no_retry_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's retries go at once (its standard mode would wait up to a second)."""
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)


@pytest.fixture(params=["dynamodb", "s3"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "dynamodb":
        aws = create_state_store()
        yield Store(aws.backend, LoseResponses(aws.dynamodb, "TransactWriteItems", b"TRANSACTION_NUMBER"))
    else:
        s3 = s3_client(aws_settings())
        bucket = f"sleeper-{new_instance_id()}-table-data"
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})  # type: ignore[typeddict-item]
        yield Store(S3StateStoreBackend(s3, bucket), LoseResponses(s3, "PutObject", b'"transactionNumber"'))


def _state_store(backend: StateStoreBackend, table_id: str) -> StateStore:
    return StateStore(schema=SCHEMA, table_id=table_id, backend=backend)


def _entries(backend: StateStoreBackend, table_id: str) -> list[TransactionLogEntry]:
    return list(backend.transaction_log(table_id, LogType.FILES).read_transactions_after(0))


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array(keys, pa.int64())})


def _table_on(store: Store) -> FakeTable:
    table = new_table(SCHEMA)
    state_store = _state_store(store.backend, table.table_id)
    state_store.initialise(partitions_from_split_points(SCHEMA, []))
    return dataclasses.replace(table, state_store=state_store)


def _references(table: FakeTable) -> list[tuple[str, str | None]]:
    table.state_store.refresh()
    return sorted((r.filename, r.job_id) for r in table.state_store.file_references())


def _types(entries: list[TransactionLogEntry]) -> list[TransactionType]:
    return [e.transaction_type for e in entries]


def should_report_an_append_as_landed_when_its_response_was_lost(store: Store) -> None:
    # Given a table, and the next append's response lost
    state_store = _state_store(store.backend, "table-1")
    state_store.initialise()
    store.lose.arm()
    reference = FileReference(
        filename="file-1.parquet",
        partition_id="root",
        number_of_rows=10,
        count_approximate=False,
        only_contains_data_for_this_partition=True,
    )

    # When a file is added
    number = state_store.add_files([reference])

    # Then the add is reported as landed, once, with its own entry
    assert store.lose.lost == 1
    assert number == 1
    entries = _entries(store.backend, "table-1")
    assert [e.transaction_number for e in entries] == [1]
    assert entries[0].transaction_id is not None
    assert [r.filename for r in state_store.file_references()] == ["file-1.parquet"]
    # And a new reader sees the same
    assert [r.filename for r in _state_store(store.backend, "table-1").file_references()] == ["file-1.parquet"]


def should_count_a_lost_response_as_an_unknown_outcome_not_a_collision(store: Store) -> None:
    # Given
    state_store = _state_store(store.backend, "table-1")
    state_store.initialise()
    store.lose.arm()

    # When
    result = state_store.commit(ClearFilesTransaction())

    # Then
    assert (result.transaction_number, result.collisions, result.ambiguous_failures) == (1, 0, 1)


def should_send_the_jobs_of_a_synchronous_assignment_whose_response_was_lost(store: Store) -> None:
    # Given a table with two files, and the ASSIGN_JOB_IDS append's response lost
    table = _table_on(store)
    files = [table.add_file(_rows([1, 3])), table.add_file(_rows([2]))]
    queues = InMemoryQueues()
    queue = queues.queue("CompactionJobQ")
    tracker = InMemoryCompactionJobTracker()
    store.lose.arm()

    # When compaction jobs are created (assigned synchronously)
    result = create_compaction_jobs(table, queue, tracker, compact_all=True)

    # Then the job is reported created and sent, and the files are assigned to it
    assert store.lose.lost == 1
    assert result.jobs_created == 1
    assert result.jobs_lost_to_race == 0
    (job,) = result.jobs
    sent = queue.receive(max_messages=10, wait_seconds=0)
    assert [m.body for m in sent] == [job.to_json()]
    assert _references(table) == sorted((f, job.job_id) for f in files)
    # And the assignment is in the log once
    assert _types(_entries(store.backend, table.table_id)).count(TransactionType.ASSIGN_JOB_IDS) == 1


def should_track_a_compaction_as_finished_when_its_commit_response_was_lost(store: Store) -> None:
    # Given a job whose inputs are assigned to it, run, and its commit's response lost
    table = _table_on(store)
    files = [table.add_file(_rows([1, 3])), table.add_file(_rows([2]))]
    job = table.job(files)
    written = run_compaction(job, table, filesystem=table.filesystem)
    tracker = InMemoryCompactionJobTracker()
    store.lose.arm()

    # When it is committed synchronously
    outcome, reason = commit_job(
        job,
        table,
        rows_written=written.rows_written,
        task_id="task-1",
        job_run_id="run-1",
        tracker=tracker,
        filesystem=table.filesystem,
    )

    # Then it is committed and tracked finished, the output kept
    assert store.lose.lost == 1
    assert (outcome, reason) == (CommitOutcome.COMMITTED, "")
    status = tracker.job(job.job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    assert _references(table) == [(job.output_file, None)]
    assert table.exists(job.output_file)
    # And the commit is in the log once
    assert _types(_entries(store.backend, table.table_id)).count(TransactionType.REPLACE_FILE_REFERENCES) == 1
