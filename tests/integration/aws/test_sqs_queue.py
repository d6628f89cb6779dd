"""The queue port over SQS (moto, in-process): what needs real time, SQS's own rules, and Sleeper's queue names.

Visibility timeouts run in real time on moto, so the tests that wait for one use 1 s timeouts and a long poll that
returns as soon as the message is due, rather than sleeping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from moto import mock_aws

from sleeper.adapters.aws.clients import AwsSettings, sqs_client
from sleeper.adapters.aws.resources import create_queue, queue_arn
from sleeper.adapters.aws.sqs_queue import SqsQueue, SqsQueues
from sleeper.core.naming import dead_letter_queue_name, queue_name
from sleeper.core.queue import OutgoingMessage, QueueConfig, QueueCounts, ReceiptHandleError

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SETTINGS = AwsSettings("eu-west-2", access_key_id="testing", secret_access_key="testing")


@pytest.fixture
def queues() -> Iterator[SqsQueues]:
    with mock_aws():
        yield SqsQueues(sqs_client(SETTINGS))


# --- visibility and dead letters (real time) -------------------------------------------------------------------------


def should_redeliver_a_message_after_its_visibility_timeout(queues: SqsQueues) -> None:
    # Given a message received with a one-second visibility timeout
    queue = queues.queue("jobs", visibility_timeout=1)
    queue.send("job")
    first = queue.receive()[0]
    # When a consumer polls until it is due again
    again = queue.receive(wait_seconds=5)
    # Then it is delivered again under a new handle, counted
    assert [(m.message_id, m.body, m.receive_count) for m in again] == [(first.message_id, "job", 2)]
    assert again[0].receipt_handle != first.receipt_handle


def should_keep_a_message_hidden_while_its_visibility_is_extended(queues: SqsQueues) -> None:
    # Given a message received with a one-second visibility timeout
    queue = queues.queue("jobs", visibility_timeout=1)
    queue.send("job")
    message = queue.receive()[0]
    # When the worker extends it before it runs out
    queue.change_visibility(message.receipt_handle, 30)
    hidden = queue.receive(wait_seconds=2)
    # Then it stays in flight past the original timeout
    assert hidden == []
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=1)


def should_dead_letter_a_message_received_too_often_and_redrive_it_back(queues: SqsQueues) -> None:
    # Given a message that is received once and never deleted, on a queue allowing one receive
    queue = queues.queue("jobs", visibility_timeout=1, dead_letter="jobs-dlq", max_receive_count=1)
    queue.send("poison")
    assert [m.receive_count for m in queue.receive()] == [1]
    # When it is due again
    after = queue.receive(wait_seconds=2)
    dlq = queues.queue("jobs-dlq")
    counts_in_dlq = dlq.approximate_counts()
    moved = dlq.redrive_dead_letters()
    # Then it went to the dead-letter queue instead, and redriving sends it back to start again
    assert after == []
    assert counts_in_dlq == QueueCounts(visible=1, in_flight=0)
    assert moved == 1
    assert dlq.approximate_counts() == QueueCounts(visible=0, in_flight=0)
    assert [(m.body, m.receive_count) for m in queue.receive()] == [("poison", 1)]


# --- redrive, FIFO, batches ------------------------------------------------------------------------------------------


def should_redrive_dead_letters_to_a_named_queue(queues: SqsQueues) -> None:
    # Given messages in a dead-letter queue and another queue to retry them on
    queues.queue("jobs", dead_letter="jobs-dlq", max_receive_count=3)
    dlq = queues.queue("jobs-dlq")
    retry = queues.queue("retry")
    dlq.send_batch(["a", "b"])
    # When
    moved = dlq.redrive_dead_letters("retry")
    # Then
    assert moved == 2
    assert sorted(m.body for m in retry.receive(10)) == ["a", "b"]
    assert dlq.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_redrive_a_fifo_dead_letter_into_its_group(queues: SqsQueues) -> None:
    # Given a FIFO dead-letter queue holding a message of group "table-1"
    queue = queues.queue("commits.fifo", dead_letter="commits-dlq.fifo", max_receive_count=1)
    dlq = queues.queue("commits-dlq.fifo")
    dlq.send("commit", group_id="table-1", dedup_id="txn-1")
    # When
    moved = dlq.redrive_dead_letters()
    # Then it is back on the FIFO queue in the same group
    assert moved == 1
    assert [(m.body, m.group_id) for m in queue.receive()] == [("commit", "table-1")]


def should_block_a_fifo_group_while_a_message_of_it_is_in_flight(queues: SqsQueues) -> None:
    # Given two groups, one message received from the first
    queue = queues.queue("jobs.fifo", fifo=True)
    queue.send_batch(
        [
            OutgoingMessage(body="a1", group_id="a", dedup_id="1"),
            OutgoingMessage(body="a2", group_id="a", dedup_id="2"),
            OutgoingMessage(body="b1", group_id="b", dedup_id="3"),
        ]
    )
    head = queue.receive()[0]
    # When
    while_in_flight = queue.receive(10)
    queue.delete(head.receipt_handle)
    after_delete = queue.receive(10)
    # Then the first group waits for its head to be deleted, and keeps its order
    assert (head.body, head.group_id) == ("a1", "a")
    assert [m.body for m in while_in_flight] == ["b1"]
    assert [m.body for m in after_delete] == ["a2"]


def should_drop_a_fifo_send_with_a_deduplication_id_already_sent(queues: SqsQueues) -> None:
    # Given
    queue = queues.queue("commits.fifo", fifo=True)
    queue.send("commit", group_id="table", dedup_id="table-txn-7")
    # When the producer retries
    queue.send("commit", group_id="table", dedup_id="table-txn-7")
    # Then only one message is queued
    assert queue.approximate_counts() == QueueCounts(visible=1, in_flight=0)


def should_send_a_large_batch_in_batches_of_ten(queues: SqsQueues) -> None:
    # Given
    queue = queues.queue("jobs")
    bodies = [f"job-{i}" for i in range(25)]
    # When
    ids = queue.send_batch(bodies)
    # Then every message is queued once, with its own id
    received = [m for _ in range(3) for m in queue.receive(10)]
    assert len(set(ids)) == 25
    assert sorted((m.message_id, m.body) for m in received) == sorted(zip(ids, bodies, strict=True))


def should_refuse_to_change_visibility_with_a_handle_sqs_does_not_know(queues: SqsQueues) -> None:
    # Given
    queue = queues.queue("jobs")
    queue.send("job")
    # When / Then
    with pytest.raises(ReceiptHandleError):
        queue.change_visibility("not-a-receipt-handle", 30)


def should_delete_nothing_with_a_handle_sqs_does_not_know(queues: SqsQueues) -> None:
    # Given
    queue = queues.queue("jobs")
    queue.send("job")
    # When
    queue.delete("not-a-receipt-handle")
    # Then
    assert queue.approximate_counts() == QueueCounts(visible=1, in_flight=0)


# --- names, resources and configuration ------------------------------------------------------------------------------


def should_name_queues_and_dead_letter_queues_as_sleeper_does() -> None:
    # When / Then
    assert queue_name("abc", "IngestJobQ") == "sleeper-abc-IngestJobQ"
    assert dead_letter_queue_name("abc", "IngestJobQ") == "sleeper-abc-IngestJobDLQ"
    assert dead_letter_queue_name("abc", "StateStoreCommitterQ.fifo") == "sleeper-abc-StateStoreCommitterDLQ.fifo"
    assert dead_letter_queue_name("abc", "LeafPartitionQueryQueue") == "sleeper-abc-LeafPartitionQueryDLQ"
    assert dead_letter_queue_name("abc", "Jobs") == "sleeper-abc-Jobs-DLQ"


def should_create_a_fifo_queue_with_its_dead_letter_queue_and_redrive_policy() -> None:
    with mock_aws():
        # Given Sleeper's committer queue configuration
        client = sqs_client(SETTINGS)
        name = queue_name("abc", "StateStoreCommitterQ.fifo")
        dlq_name = dead_letter_queue_name("abc", "StateStoreCommitterQ.fifo")
        config = QueueConfig(
            name=name, fifo=True, visibility_timeout_seconds=900, dead_letter_queue=dlq_name, max_receive_count=1
        )
        # When
        url = create_queue(client, name, config)
        # Then the queue and its dead-letter queue exist with SQS's FIFO and redrive attributes
        attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        dlq_url = client.get_queue_url(QueueName=dlq_name)["QueueUrl"]
        dlq_attributes = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["FifoQueue"])["Attributes"]
        assert (attributes["FifoQueue"], attributes["VisibilityTimeout"]) == ("true", "900")
        assert json.loads(attributes["RedrivePolicy"]) == {
            "deadLetterTargetArn": queue_arn(client, dlq_url),
            "maxReceiveCount": 1,
        }
        assert dlq_attributes["FifoQueue"] == "true"


def should_read_a_deployed_queues_configuration_through_a_url_resolver() -> None:
    with mock_aws():
        # Given a deployed queue whose URL the instance properties hold under a logical name
        client = sqs_client(SETTINGS)
        name = queue_name("abc", "IngestJobQ")
        dlq_name = dead_letter_queue_name("abc", "IngestJobQ")
        config = QueueConfig(name=name, visibility_timeout_seconds=900, dead_letter_queue=dlq_name, max_receive_count=3)
        urls = {name: create_queue(client, name, config)}
        # When it is opened through a resolver reading those URLs
        queue = SqsQueues(client, urls.get).queue(name)
        # Then its options come from SQS
        assert isinstance(queue, SqsQueue)
        assert queue.url == urls[name]
        assert queue.config == config


def should_update_the_options_of_an_existing_queue(queues: SqsQueues) -> None:
    # Given
    queues.queue("jobs", visibility_timeout=30)
    # When
    queues.queue("jobs", visibility_timeout=600, dead_letter="jobs-dlq", max_receive_count=2)
    # Then a new family reading SQS sees the change
    config = SqsQueues(sqs_client(SETTINGS)).queue("jobs").config
    assert (config.visibility_timeout_seconds, config.dead_letter_queue, config.max_receive_count) == (
        600,
        "jobs-dlq",
        2,
    )
    assert queues.names() == ["jobs", "jobs-dlq"]


def should_list_only_queues_with_the_familys_prefix() -> None:
    with mock_aws():
        # Given queues of two instances
        client = sqs_client(SETTINGS)
        for instance in ("one", "two"):
            create_queue(client, queue_name(instance, "IngestJobQ"))
        # When
        names = SqsQueues(client, name_prefix="sleeper-one-").names()
        # Then
        assert names == ["sleeper-one-IngestJobQ"]
