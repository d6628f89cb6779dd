"""Queue rules shared by every adapter: configuration, sends and receives (sleeper.core.queue)."""

from __future__ import annotations

import pytest

from sleeper.core.queue import (
    InvalidQueueRequestError,
    MessageTooLargeError,
    OutgoingMessage,
    QueueConfig,
    VisibilityLimitError,
    check_receive,
    check_visibility_change,
    dead_letter_config_for,
    merge_config,
    prepare_send,
)


@pytest.mark.parametrize(
    "options",
    [
        {"name": ""},
        {"name": "q", "visibility_timeout_seconds": 43_201},
        {"name": "q", "visibility_timeout_seconds": -1},
        {"name": "q", "delay_seconds": 901},
        {"name": "q", "dead_letter_queue": "dlq"},
        {"name": "q", "max_receive_count": 3},
        {"name": "q", "dead_letter_queue": "dlq", "max_receive_count": 0},
        {"name": "q", "dead_letter_queue": "dlq", "max_receive_count": 1001},
        {"name": "q", "dead_letter_queue": "q", "max_receive_count": 3},
        {"name": "q", "content_based_deduplication": True},
        {"name": "q", "max_message_bytes": 1_048_577},
    ],
    ids=[
        "no name",
        "visibility over 12 h",
        "negative visibility",
        "delay over 15 min",
        "dead letters without a count",
        "count without dead letters",
        "count of 0",
        "count over 1000",
        "its own dead-letter queue",
        "content deduplication on a standard queue",
        "message size over 1 MiB",
    ],
)
def should_refuse_an_invalid_configuration(options: dict[str, object]) -> None:
    # When / Then
    with pytest.raises(InvalidQueueRequestError):
        QueueConfig(**options)  # type: ignore[arg-type]


def should_create_a_queue_with_sqs_defaults() -> None:
    # Given / When
    config = merge_config(None, "jobs")
    # Then
    assert config == QueueConfig(name="jobs", visibility_timeout_seconds=30, max_message_bytes=262_144)


def should_default_the_max_receive_count_when_a_dead_letter_queue_is_named() -> None:
    # Given / When
    config = merge_config(None, "jobs", dead_letter="jobs-dlq")
    # Then
    assert (config.dead_letter_queue, config.max_receive_count) == ("jobs-dlq", 3)


def should_keep_stored_options_that_are_not_given() -> None:
    # Given
    stored = QueueConfig(
        name="jobs", fifo=True, visibility_timeout_seconds=900, dead_letter_queue="d", max_receive_count=5
    )
    # When
    config = merge_config(stored, "jobs", visibility_timeout=60)
    # Then
    assert config == QueueConfig(
        name="jobs", fifo=True, visibility_timeout_seconds=60, dead_letter_queue="d", max_receive_count=5
    )


def should_create_a_dead_letter_queue_of_the_same_type_only_when_missing() -> None:
    # Given
    source = QueueConfig(name="jobs.fifo", fifo=True, dead_letter_queue="dlq.fifo", max_receive_count=1)
    # When / Then
    assert dead_letter_config_for(source, None) == QueueConfig(name="dlq.fifo", fifo=True)
    assert dead_letter_config_for(source, QueueConfig(name="dlq.fifo", fifo=True)) is None
    assert dead_letter_config_for(QueueConfig(name="plain"), None) is None


def should_use_a_hash_of_the_body_as_deduplication_id_when_content_based() -> None:
    # Given
    config = QueueConfig(name="q.fifo", fifo=True, content_based_deduplication=True)
    # When
    first = prepare_send(config, OutgoingMessage(body="same", group_id="g"))
    second = prepare_send(config, OutgoingMessage(body="same", group_id="h"))
    other = prepare_send(config, OutgoingMessage(body="other", group_id="g"))
    # Then
    assert first.dedup_id == second.dedup_id
    assert first.dedup_id != other.dedup_id


def should_apply_the_queue_delay_when_a_send_has_none() -> None:
    # Given
    config = QueueConfig(name="q", delay_seconds=30)
    # When / Then
    assert prepare_send(config, "body").delay_seconds == 30
    assert prepare_send(config, OutgoingMessage(body="body", delay_seconds=5)).delay_seconds == 5


def should_measure_message_size_in_utf8_bytes() -> None:
    # Given a body of 1024 characters but 2048 bytes
    config = QueueConfig(name="q", max_message_bytes=2047)
    # When / Then
    with pytest.raises(MessageTooLargeError):
        prepare_send(config, "é" * 1024)


@pytest.mark.parametrize(
    ("max_messages", "visibility", "wait"),
    [(0, None, 0), (11, None, 0), (1, 43_201, 0), (1, None, 21), (1, None, -1)],
)
def should_refuse_a_receive_outside_sqs_limits(max_messages: int, visibility: float | None, wait: float) -> None:
    # When / Then
    with pytest.raises(InvalidQueueRequestError):
        check_receive(max_messages, visibility, wait)


def should_limit_visibility_to_twelve_hours_after_receipt() -> None:
    # Given a message received at 1000
    # When / Then
    check_visibility_change(600, now=1000 + 42_600, received_at=1000)
    with pytest.raises(VisibilityLimitError):
        check_visibility_change(601, now=1000 + 42_600, received_at=1000)
