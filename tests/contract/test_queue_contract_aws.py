"""The Queue contract (tests/contract/test_queue_contract.py) run against SQS on moto (``mock_aws``, in-process).

Only the behaviours that need no fake clock and that SQS shares with the other adapters are imported here; the
time-dependent ones run with real one-second timeouts in tests/integration/aws/test_sqs_queue.py. Left out, because
SQS behaves differently (see ``sleeper.adapters.aws.sqs_queue``): one message per FIFO group per receive, stale
receipt handles, message ids of dropped duplicates, and redriving messages sent to a dead-letter queue directly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from sleeper.adapters.aws.clients import AwsSettings, sqs_client
from sleeper.adapters.aws.sqs_queue import SqsQueues
from tests.contract.test_queue_contract import (
    should_count_visible_and_in_flight_messages,
    should_deduplicate_within_a_batch,
    should_deliver_a_sent_message_once_with_a_receive_count_of_one,
    should_fail_to_redrive_to_an_unknown_queue,
    should_keep_a_queues_options_when_opened_by_name_alone,
    should_keep_queues_apart,
    should_receive_at_most_the_requested_number_of_messages_in_send_order,
    should_refuse_a_dead_letter_queue_of_another_type,
    should_refuse_a_max_receive_count_without_a_dead_letter_queue,
    should_refuse_an_unknown_queue_option_and_create_nothing,
    should_reject_a_deduplication_id_on_a_standard_queue,
    should_reject_a_fifo_send_that_breaks_a_fifo_rule,
    should_reject_a_message_larger_than_the_queue_allows,
    should_reject_a_receive_of_an_unsupported_number_of_messages,
    should_return_a_message_at_once_when_its_visibility_is_set_to_zero,
    should_return_message_ids_of_a_batch_in_order,
    should_send_nothing_from_a_batch_with_an_invalid_message,
    should_wait_for_a_message_in_a_long_poll,
)

pytestmark = [pytest.mark.integration, pytest.mark.aws]

__all__ = [
    "should_count_visible_and_in_flight_messages",
    "should_deduplicate_within_a_batch",
    "should_deliver_a_sent_message_once_with_a_receive_count_of_one",
    "should_fail_to_redrive_to_an_unknown_queue",
    "should_keep_a_queues_options_when_opened_by_name_alone",
    "should_keep_queues_apart",
    "should_receive_at_most_the_requested_number_of_messages_in_send_order",
    "should_refuse_a_dead_letter_queue_of_another_type",
    "should_refuse_a_max_receive_count_without_a_dead_letter_queue",
    "should_refuse_an_unknown_queue_option_and_create_nothing",
    "should_reject_a_deduplication_id_on_a_standard_queue",
    "should_reject_a_fifo_send_that_breaks_a_fifo_rule",
    "should_reject_a_message_larger_than_the_queue_allows",
    "should_reject_a_receive_of_an_unsupported_number_of_messages",
    "should_return_a_message_at_once_when_its_visibility_is_set_to_zero",
    "should_return_message_ids_of_a_batch_in_order",
    "should_send_nothing_from_a_batch_with_an_invalid_message",
    "should_wait_for_a_message_in_a_long_poll",
]


@pytest.fixture
def queues() -> Iterator[SqsQueues]:
    """The queues of an empty moto account (the contract's ``queues`` fixture, for SQS)."""
    with mock_aws():
        yield SqsQueues(sqs_client(AwsSettings("eu-west-2", access_key_id="testing", secret_access_key="testing")))
