"""The pump delivers the files transaction log's DynamoDB stream as Lambda's event source mapping does: records
written after the mapping (the pump) was made, in Lambda's event shape, read again from a record reported failed.
Through it, the transaction follower records a compaction commit that the committer applied, once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sleeper.core import operations
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.operations import HandlerSpec, Trigger, TriggerKind
from sleeper.core.trackers.compaction import CompactionJobCommitted, CompactionJobStatusType
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import STREAM_RETRY_ATTEMPTS
from tests.integration.aws_local import fake_handlers
from tests.integration.aws_runtime.test_compaction_handlers import (
    _assign,
    _finished_but_uncommitted_job,
    _table_of_three_files,
    _updates_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.aws]

FAKE_FOLLOWER = HandlerSpec(
    name=operations.TRANSACTION_FOLLOWER,
    handler="tests.integration.aws_local.fake_handlers:stream",
    description="records stream events",
    trigger=Trigger(kind=TriggerKind.STREAM),
)


@pytest.fixture
def events() -> Iterator[list[Any]]:
    fake_handlers.EVENTS.clear()
    fake_handlers.FAIL_STREAM_RECORD_AT.clear()
    yield fake_handlers.EVENTS  # type: ignore[misc]
    fake_handlers.EVENTS.clear()
    fake_handlers.FAIL_STREAM_RECORD_AT.clear()


def _sequences(event: Any) -> list[str]:
    return [str(r["dynamodb"]["SequenceNumber"]) for r in event["Records"]]


def should_deliver_new_log_entries_in_lambdas_shape(emulated: EmulatedAwsInstance, events: list[Any]) -> None:
    # Given a pump following the stream, then a table created and three files added to it
    pump = emulated.pump(handlers=(FAKE_FOLLOWER,))
    table = _table_of_three_files(emulated.instance())
    # When the pump runs until idle
    result = pump.run_until_idle(timeout_seconds=60)
    # Then the entries written since the pump was made were delivered as Lambda's DynamoDB stream records
    delivered = [r for e in events for r in e["Records"]]
    assert result.delivered[operations.TRANSACTION_FOLLOWER] == len(delivered) > 0
    assert {r["dynamodb"]["NewImage"]["TABLE_ID"]["S"] for r in delivered} == {table.table_id}
    assert all(r["eventSource"] == "aws:dynamodb" and r["eventName"] == "INSERT" for r in delivered)
    assert all(str(r["eventSourceARN"]).startswith("arn:aws:dynamodb:") for r in delivered)
    assert all(isinstance(r["dynamodb"]["ApproximateCreationDateTime"], float) for r in delivered)
    assert pump.run_until_idle(timeout_seconds=60).delivered == {}


def should_read_the_stream_again_from_a_record_reported_failed(
    emulated: EmulatedAwsInstance, events: list[Any]
) -> None:
    # Given a pump following the stream whose handler will report the second record of its next batch failed
    pump = emulated.pump(handlers=(FAKE_FOLLOWER,))
    _table_of_three_files(emulated.instance())
    fake_handlers.FAIL_STREAM_RECORD_AT.append(1)
    # When the pump delivers a batch, then the next
    failed_round = pump.run_once()
    retry_round = pump.run_once()
    # Then the second delivery starts at the record that failed, and succeeds
    first, second = (_sequences(e) for e in events[:2])
    assert len(first) >= 2 and second[0] == first[1]
    assert second == first[1:]
    assert failed_round.failed == {operations.TRANSACTION_FOLLOWER: 1}
    assert retry_round.failed == {}


def should_record_a_committed_compaction_through_the_follower_once(emulated: EmulatedAwsInstance) -> None:
    # Given a pump delivering the stream to the transaction follower, and a finished, uncommitted compaction job
    pump = emulated.pump(handlers=(operations.handler(operations.TRANSACTION_FOLLOWER),))
    instance = emulated.instance()
    table = _table_of_three_files(instance)
    job_id, transaction = _finished_but_uncommitted_job(instance, table)
    job = transaction.jobs[0]
    _assign(
        table,
        CompactionJob(
            table_id=table.table_id,
            job_id=job_id,
            input_files=job.input_files,
            output_file=job.new_reference.filename,
            partition_id="root",
        ),
    )
    # When the committer applies its transaction (no tracker update) and the pump runs until idle, twice
    table.state_store.commit(transaction)
    delivered = pump.run_until_idle(timeout_seconds=60)
    repeat = pump.run_until_idle(timeout_seconds=60)
    # Then the follower got the log's new entries and recorded the job committed, once
    assert delivered.delivered.get(operations.TRANSACTION_FOLLOWER, 0) > 0 and delivered.failed == {}
    assert repeat.delivered == {}
    assert sum(isinstance(u, CompactionJobCommitted) for u in _updates_of(instance, job_id)) == 1
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED


def should_skip_a_record_that_keeps_failing(emulated: EmulatedAwsInstance, events: list[Any]) -> None:
    # Given a pump following the stream whose handler reports the first record of every batch failed, more times
    # than the mapping retries it
    pump = emulated.pump(handlers=(FAKE_FOLLOWER,))
    _table_of_three_files(emulated.instance())
    fake_handlers.FAIL_STREAM_RECORD_AT.extend([0] * (STREAM_RETRY_ATTEMPTS + 1))
    # When the pump runs until idle
    result = pump.run_until_idle(timeout_seconds=60)
    # Then the record was delivered once and retried STREAM_RETRY_ATTEMPTS times, then the stream went on after it
    first = _sequences(events[0])
    retries = [_sequences(e) for e in events[1 : STREAM_RETRY_ATTEMPTS + 1]]
    assert len(first) >= 2 and retries == [first] * STREAM_RETRY_ATTEMPTS
    assert _sequences(events[STREAM_RETRY_ATTEMPTS + 1]) == first[1:]
    assert result.failed == {operations.TRANSACTION_FOLLOWER: STREAM_RETRY_ATTEMPTS + 1}
