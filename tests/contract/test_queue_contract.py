"""Contract of the Queue port (sleeper.core.queue), run against every adapter: in-memory and SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from sleeper.adapters.local.queue import SqliteQueues
from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.core.queue import (
    InvalidQueueRequestError,
    MessageTooLargeError,
    OutgoingMessage,
    Queue,
    QueueCounts,
    QueueNotFoundError,
    Queues,
    ReceiptHandleError,
    VisibilityLimitError,
)

ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    """Seconds since the epoch, moved on by the test."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def queues(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Queues:
    if request.param == "memory":
        return InMemoryQueues(clock)
    return SqliteQueues(tmp_path / "sleeper.db", clock)


def _fifo(queues: Queues, name: str = "jobs.fifo", **options: object) -> Queue:
    return queues.queue(name, fifo=True, **options)  # type: ignore[arg-type]


# --- sending and receiving -------------------------------------------------------------------------------------------


def should_deliver_a_sent_message_once_with_a_receive_count_of_one(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    message_id = queue.send('{"id":"job-1"}')
    # When
    received = queue.receive(10)
    # Then
    assert [(m.message_id, m.body, m.receive_count) for m in received] == [(message_id, '{"id":"job-1"}', 1)]
    assert queue.receive(10) == []


def should_receive_at_most_the_requested_number_of_messages_in_send_order(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    queue.send_batch([f"m{i}" for i in range(5)])
    # When
    first = queue.receive(3)
    second = queue.receive(3)
    # Then
    assert [m.body for m in first] == ["m0", "m1", "m2"]
    assert [m.body for m in second] == ["m3", "m4"]


def should_return_message_ids_of_a_batch_in_order(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    # When
    ids = queue.send_batch(["a", OutgoingMessage(body="b"), "c"])
    # Then
    received = queue.receive(10)
    assert [(m.message_id, m.body) for m in received] == list(zip(ids, ["a", "b", "c"], strict=True))
    assert len(set(ids)) == 3


def should_send_nothing_from_a_batch_with_an_invalid_message(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    # When
    with pytest.raises(InvalidQueueRequestError):
        queue.send_batch(["a", OutgoingMessage(body="b", dedup_id="only-fifo")])
    # Then
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_reject_a_message_larger_than_the_queue_allows(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    # When / Then
    with pytest.raises(MessageTooLargeError):
        queue.send("x" * (256 * 1024 + 1))
    queue.send("x" * (256 * 1024))
    assert queue.approximate_counts().visible == 1


@pytest.mark.parametrize("max_messages", [0, 11])
def should_reject_a_receive_of_an_unsupported_number_of_messages(queues: Queues, max_messages: int) -> None:
    # Given
    queue = queues.queue("jobs")
    # When / Then
    with pytest.raises(InvalidQueueRequestError):
        queue.receive(max_messages)


def should_hold_a_delayed_message_back_until_its_delay_passes(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs")
    queue.send("later", delay_seconds=30)
    # When
    clock.advance(29)
    early = queue.receive()
    early_counts = queue.approximate_counts()
    clock.advance(1)
    on_time = queue.receive()
    # Then
    assert early == []
    assert early_counts == QueueCounts(visible=0, in_flight=0)
    assert [m.body for m in on_time] == ["later"]


def should_count_visible_and_in_flight_messages(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    queue.send_batch(["a", "b", "c"])
    # When
    queue.receive(2)
    # Then
    assert queue.approximate_counts() == QueueCounts(visible=1, in_flight=2)


def should_keep_queues_apart(queues: Queues) -> None:
    # Given
    jobs = queues.queue("jobs")
    other = queues.queue("other")
    jobs.send("for jobs")
    # When
    received = other.receive(10)
    # Then
    assert received == []
    assert [m.body for m in jobs.receive(10)] == ["for jobs"]


def should_wait_for_a_message_in_a_long_poll(queues: Queues) -> None:
    # Given a consumer waiting on an empty queue
    queue = queues.queue("jobs")
    results: list[list[str]] = []
    consumer = threading.Thread(target=lambda: results.append([m.body for m in queue.receive(wait_seconds=20)]))
    consumer.start()
    # When a producer sends
    queue.send("hello")
    consumer.join(timeout=60)
    # Then the consumer gets it
    assert results == [["hello"]]


# --- visibility ------------------------------------------------------------------------------------------------------


def should_redeliver_a_message_after_its_visibility_timeout(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=60)
    queue.send("job")
    first = queue.receive()[0]
    # When
    clock.advance(59)
    hidden = queue.receive()
    clock.advance(1)
    again = queue.receive()
    # Then
    assert hidden == []
    assert [(m.message_id, m.receive_count) for m in again] == [(first.message_id, 2)]
    assert again[0].receipt_handle != first.receipt_handle


def should_use_the_visibility_timeout_of_the_receive_over_the_queue_default(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=60)
    queue.send("job")
    queue.receive(visibility_timeout_seconds=5)
    # When
    clock.advance(5)
    again = queue.receive()
    # Then
    assert [m.receive_count for m in again] == [2]


def should_keep_a_message_hidden_while_its_visibility_is_extended(queues: Queues, clock: FakeClock) -> None:
    # Given a message received with a 30 s visibility timeout
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    message = queue.receive()[0]
    # When the worker extends it every 20 s
    for _ in range(5):
        clock.advance(20)
        queue.change_visibility(message.receipt_handle, 30)
    hidden = queue.receive()
    clock.advance(30)
    visible = queue.receive()
    # Then it stays hidden until the last extension runs out
    assert hidden == []
    assert [m.receive_count for m in visible] == [2]


def should_return_a_message_at_once_when_its_visibility_is_set_to_zero(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=300)
    queue.send("job")
    message = queue.receive()[0]
    # When
    queue.change_visibility(message.receipt_handle, 0)
    # Then
    assert [m.receive_count for m in queue.receive()] == [2]


def should_refuse_to_extend_visibility_with_a_stale_receipt_handle(queues: Queues, clock: FakeClock) -> None:
    # Given a message received again after its first delivery timed out
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    stale = queue.receive()[0]
    clock.advance(30)
    queue.receive()
    # When / Then the first worker learns it lost the message
    with pytest.raises(ReceiptHandleError):
        queue.change_visibility(stale.receipt_handle, 30)


def should_refuse_to_extend_visibility_after_it_expired(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    message = queue.receive()[0]
    clock.advance(31)
    # When / Then
    with pytest.raises(ReceiptHandleError):
        queue.change_visibility(message.receipt_handle, 30)


def should_refuse_to_keep_a_message_hidden_beyond_twelve_hours_after_it_was_received(
    queues: Queues, clock: FakeClock
) -> None:
    # Given a message kept alive for almost 12 hours
    queue = queues.queue("jobs", visibility_timeout=600)
    queue.send("job")
    message = queue.receive()[0]
    for _ in range(142):
        clock.advance(300)
        queue.change_visibility(message.receipt_handle, 600)
    # When / Then an extension to exactly 12 hours is allowed, and one past it is not
    queue.change_visibility(message.receipt_handle, 600)
    with pytest.raises(VisibilityLimitError):
        queue.change_visibility(message.receipt_handle, 601)


# --- deleting --------------------------------------------------------------------------------------------------------


def should_delete_a_message_with_its_receipt_handle(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    message = queue.receive()[0]
    # When
    queue.delete(message.receipt_handle)
    clock.advance(60)
    # Then
    assert queue.receive() == []
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_not_delete_a_newer_delivery_with_a_stale_receipt_handle(queues: Queues, clock: FakeClock) -> None:
    # Given a message redelivered after its first delivery timed out
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    stale = queue.receive()[0]
    clock.advance(30)
    current = queue.receive()[0]
    # When the first worker deletes with its old handle
    queue.delete(stale.receipt_handle)
    # Then the newer delivery is still in flight, and its own handle deletes it
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=1)
    queue.delete(current.receipt_handle)
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_delete_a_message_whose_visibility_expired_if_nobody_received_it_since(
    queues: Queues, clock: FakeClock
) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=30)
    queue.send("job")
    message = queue.receive()[0]
    clock.advance(45)
    # When
    queue.delete(message.receipt_handle)
    # Then
    assert queue.receive() == []


# --- dead letters ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_receive_count", [1, 3])
def should_dead_letter_a_message_after_exactly_max_receive_count_receives(
    queues: Queues, clock: FakeClock, max_receive_count: int
) -> None:
    # Given a message that always fails (never deleted)
    queue = queues.queue("jobs", visibility_timeout=60, dead_letter="jobs-dlq", max_receive_count=max_receive_count)
    queue.send("poison")
    counts: list[int] = []
    for _ in range(max_receive_count):
        counts.extend(m.receive_count for m in queue.receive())
        clock.advance(60)
    # When it is due again
    after = queue.receive()
    # Then it was delivered exactly max_receive_count times and now sits in the dead-letter queue
    assert counts == list(range(1, max_receive_count + 1))
    assert after == []
    dlq = queues.queue("jobs-dlq")
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)
    assert [(m.body, m.receive_count) for m in dlq.receive()] == [("poison", 1)]


def should_keep_redelivering_without_a_dead_letter_queue(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=10)
    queue.send("job")
    # When
    counts: list[int] = []
    for _ in range(6):
        counts.extend(m.receive_count for m in queue.receive())
        clock.advance(10)
    # Then
    assert counts == [1, 2, 3, 4, 5, 6]


def should_deliver_other_messages_while_dead_lettering_one(queues: Queues, clock: FakeClock) -> None:
    # Given one message already received the maximum number of times, and a fresh one
    queue = queues.queue("jobs", visibility_timeout=10, dead_letter="jobs-dlq", max_receive_count=1)
    queue.send("poison")
    queue.receive()
    clock.advance(10)
    queue.send("fresh")
    # When
    received = queue.receive(10)
    # Then
    assert [m.body for m in received] == ["fresh"]
    assert queues.queue("jobs-dlq").approximate_counts().visible == 1


def should_redrive_dead_letters_back_to_the_queue_they_came_from(queues: Queues, clock: FakeClock) -> None:
    # Given two dead-lettered messages
    queue = queues.queue("jobs", visibility_timeout=10, dead_letter="jobs-dlq", max_receive_count=1)
    queue.send_batch(["a", "b"])
    queue.receive(10)
    clock.advance(10)
    assert queue.receive(10) == []
    dlq = queues.queue("jobs-dlq")
    # When
    moved = dlq.redrive_dead_letters()
    # Then they are delivered again from the start
    assert moved == 2
    assert dlq.approximate_counts() == QueueCounts(visible=0, in_flight=0)
    assert sorted((m.body, m.receive_count) for m in queue.receive(10)) == [("a", 1), ("b", 1)]


def should_redrive_dead_letters_to_a_named_queue(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = queues.queue("jobs", visibility_timeout=10, dead_letter="jobs-dlq", max_receive_count=1)
    retry = queues.queue("retry")
    queue.send("a")
    queue.receive()
    clock.advance(10)
    queue.receive()
    # When
    moved = queues.queue("jobs-dlq").redrive_dead_letters("retry")
    # Then
    assert moved == 1
    assert [m.body for m in retry.receive()] == ["a"]
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_not_redrive_dead_letters_in_flight_or_without_a_source(queues: Queues, clock: FakeClock) -> None:
    # Given a dead letter being inspected (in flight) and a message sent to the dead-letter queue directly
    queue = queues.queue("jobs", visibility_timeout=10, dead_letter="jobs-dlq", max_receive_count=1)
    queue.send("a")
    queue.receive()
    clock.advance(10)
    queue.receive()
    dlq = queues.queue("jobs-dlq")
    dlq.receive()
    dlq.send("direct")
    # When
    moved = dlq.redrive_dead_letters()
    # Then
    assert moved == 0
    assert dlq.approximate_counts() == QueueCounts(visible=1, in_flight=1)


def should_fail_to_redrive_to_an_unknown_queue(queues: Queues) -> None:
    # Given
    dlq = queues.queue("jobs-dlq")
    dlq.send("a")
    # When / Then
    with pytest.raises(QueueNotFoundError):
        dlq.redrive_dead_letters("missing")
    assert dlq.approximate_counts().visible == 1


# --- FIFO ------------------------------------------------------------------------------------------------------------


def should_deliver_one_message_of_a_group_at_a_time_in_order(queues: Queues) -> None:
    # Given
    queue = _fifo(queues)
    for i in range(3):
        queue.send(f"t1-{i}", group_id="table-1", dedup_id=f"d{i}")
    # When / Then each message comes only after the previous one is deleted
    bodies = []
    for _ in range(3):
        received = queue.receive(10)
        assert len(received) == 1
        assert queue.receive(10) == []
        bodies.append(received[0].body)
        queue.delete(received[0].receipt_handle)
    assert bodies == ["t1-0", "t1-1", "t1-2"]


def should_deliver_the_heads_of_different_groups_together(queues: Queues) -> None:
    # Given
    queue = _fifo(queues)
    queue.send_batch(
        [
            OutgoingMessage(body="a1", group_id="a", dedup_id="1"),
            OutgoingMessage(body="a2", group_id="a", dedup_id="2"),
            OutgoingMessage(body="b1", group_id="b", dedup_id="3"),
            OutgoingMessage(body="b2", group_id="b", dedup_id="4"),
        ]
    )
    # When
    received = queue.receive(10)
    # Then
    assert [(m.body, m.group_id) for m in received] == [("a1", "a"), ("b1", "b")]


def should_block_a_group_until_its_head_is_deleted_or_visible_again(queues: Queues, clock: FakeClock) -> None:
    # Given a group whose head was received and not deleted
    queue = _fifo(queues, visibility_timeout=30)
    queue.send("a1", group_id="a", dedup_id="1")
    queue.send("a2", group_id="a", dedup_id="2")
    head = queue.receive()[0]
    # When
    clock.advance(29)
    blocked = queue.receive(10)
    clock.advance(1)
    again = queue.receive(10)
    # Then the head comes again before the rest of its group
    assert blocked == []
    assert [(m.message_id, m.receive_count) for m in again] == [(head.message_id, 2)]


def should_drop_a_duplicate_send_within_the_deduplication_window(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = _fifo(queues)
    first = queue.send("commit", group_id="table", dedup_id="table-txn-7")
    # When the producer retries within five minutes
    clock.advance(299)
    second = queue.send("commit", group_id="table", dedup_id="table-txn-7")
    # Then the retry is dropped
    assert second == first
    assert queue.approximate_counts() == QueueCounts(visible=1, in_flight=0)


def should_drop_a_duplicate_send_even_after_the_first_was_deleted(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = _fifo(queues)
    queue.send("commit", group_id="table", dedup_id="txn")
    queue.delete(queue.receive()[0].receipt_handle)
    # When
    clock.advance(60)
    queue.send("commit", group_id="table", dedup_id="txn")
    # Then
    assert queue.receive() == []


def should_accept_a_deduplication_id_again_after_the_window(queues: Queues, clock: FakeClock) -> None:
    # Given
    queue = _fifo(queues)
    first = queue.send("commit", group_id="table", dedup_id="txn")
    # When
    clock.advance(300)
    second = queue.send("commit", group_id="table", dedup_id="txn")
    # Then
    assert second != first
    assert queue.approximate_counts().visible == 2


def should_deduplicate_by_content_when_configured(queues: Queues) -> None:
    # Given
    queue = _fifo(queues, content_based_deduplication=True)
    # When
    first = queue.send("same", group_id="g")
    second = queue.send("same", group_id="g")
    third = queue.send("different", group_id="g")
    # Then
    assert first == second
    assert third != first


def should_deduplicate_within_a_batch(queues: Queues) -> None:
    # Given
    queue = _fifo(queues)
    # When
    ids = queue.send_batch(
        [OutgoingMessage(body="x", group_id="g", dedup_id="1"), OutgoingMessage(body="x", group_id="g", dedup_id="1")]
    )
    # Then
    assert ids[0] == ids[1]
    assert queue.approximate_counts().visible == 1


def should_dead_letter_the_head_of_a_group_and_deliver_the_next(queues: Queues, clock: FakeClock) -> None:
    # Given a group whose head was received the maximum number of times
    queue = _fifo(queues, visibility_timeout=10, dead_letter="jobs-dlq.fifo", max_receive_count=1)
    queue.send("a1", group_id="a", dedup_id="1")
    queue.send("a2", group_id="a", dedup_id="2")
    queue.receive()
    clock.advance(10)
    # When
    received = queue.receive()
    # Then
    assert [m.body for m in received] == ["a2"]
    dlq = queues.queue("jobs-dlq.fifo")
    assert dlq.config.fifo
    assert [(m.body, m.group_id) for m in dlq.receive()] == [("a1", "a")]


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (OutgoingMessage(body="x", dedup_id="1"), "group"),
        (OutgoingMessage(body="x", group_id="g"), "deduplication"),
        (OutgoingMessage(body="x", group_id="g", dedup_id="1", delay_seconds=5), "delay"),
    ],
)
def should_reject_a_fifo_send_that_breaks_a_fifo_rule(queues: Queues, message: OutgoingMessage, problem: str) -> None:
    # Given
    queue = _fifo(queues)
    # When / Then
    with pytest.raises(InvalidQueueRequestError, match=problem):
        queue.send_batch([message])


def should_reject_a_deduplication_id_on_a_standard_queue(queues: Queues) -> None:
    # Given
    queue = queues.queue("jobs")
    # When / Then
    with pytest.raises(InvalidQueueRequestError, match="FIFO"):
        queue.send("x", dedup_id="1")


# --- configuration ---------------------------------------------------------------------------------------------------


def should_keep_a_queues_options_when_opened_by_name_alone(queues: Queues) -> None:
    # Given
    queues.queue("jobs.fifo", fifo=True, visibility_timeout=900, dead_letter="jobs-dlq.fifo", max_receive_count=3)
    # When
    config = queues.queue("jobs.fifo").config
    # Then
    assert (config.fifo, config.visibility_timeout_seconds, config.dead_letter_queue, config.max_receive_count) == (
        True,
        900,
        "jobs-dlq.fifo",
        3,
    )
    assert queues.names() == ["jobs-dlq.fifo", "jobs.fifo"]


def should_refuse_a_dead_letter_queue_of_another_type(queues: Queues) -> None:
    # Given
    queues.queue("dlq")
    # When / Then
    with pytest.raises(InvalidQueueRequestError, match="FIFO"):
        queues.queue("jobs.fifo", fifo=True, dead_letter="dlq")


def should_refuse_a_max_receive_count_without_a_dead_letter_queue(queues: Queues) -> None:
    # When / Then
    with pytest.raises(InvalidQueueRequestError):
        queues.queue("jobs", max_receive_count=3)


def should_refuse_an_unknown_queue_option_and_create_nothing(queues: Queues) -> None:
    # When / Then
    with pytest.raises(InvalidQueueRequestError, match="visibility_timeout_seconds"):
        queues.queue("jobs", visibility_timeout_seconds=60)  # type: ignore[call-arg]
    assert queues.names() == []


# --- SQLite only -----------------------------------------------------------------------------------------------------


def should_keep_messages_and_deliveries_when_the_database_is_reopened(tmp_path: Path, clock: FakeClock) -> None:
    # Given a message in flight and one waiting, in a database that is then closed
    before = SqliteQueues(tmp_path / "sleeper.db", clock)
    queue = before.queue("jobs", visibility_timeout=30)
    queue.send_batch(["a", "b"])
    in_flight = queue.receive()[0]
    before.close()
    # When it is opened again
    after = SqliteQueues(tmp_path / "sleeper.db", clock).queue("jobs")
    # Then nothing is lost and the delivery is still valid
    assert after.approximate_counts() == QueueCounts(visible=1, in_flight=1)
    after.delete(in_flight.receipt_handle)
    assert [m.body for m in after.receive(10)] == ["b"]


_WORKER = """
import json, sys
from sleeper.adapters.local.queue import SqliteQueues

queue = SqliteQueues(sys.argv[1]).queue("jobs")
print("ready", flush=True)
sys.stdin.readline()  # wait until every worker is ready
processed = []
while True:
    messages = queue.receive(1, visibility_timeout_seconds=600, wait_seconds=1)
    for message in messages:
        processed.append([message.body, message.receive_count])
        queue.delete(message.receipt_handle)
    if not messages and queue.approximate_counts() == (0, 0):
        break
with open(sys.argv[2], "w") as out:
    json.dump(processed, out)
"""


@pytest.mark.integration
def should_process_every_message_exactly_once_with_four_consumer_processes(tmp_path: Path) -> None:
    # Given 400 messages in a SQLite queue
    db = tmp_path / "sleeper.db"
    queue = SqliteQueues(db).queue("jobs", visibility_timeout=600)
    bodies = [f"job-{i}" for i in range(400)]
    for start in range(0, 400, 10):
        queue.send_batch(bodies[start : start + 10])
    # When four processes consume it, deleting each message after processing it
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs = [tmp_path / f"worker-{n}.json" for n in range(4)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db), str(out)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for out in outputs
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    codes = [worker.wait(timeout=300) for worker in workers]
    for worker in workers:
        assert worker.stdout is not None
        worker.stdout.close()
    # Then every message was processed exactly once, on its first delivery
    assert codes == [0, 0, 0, 0]
    processed = [entry for out in outputs for entry in json.loads(out.read_text())]
    assert Counter(body for body, _ in processed) == Counter(bodies)
    assert {count for _, count in processed} == {1}
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)
