"""Plumbing shared by the handlers: the instance from the environment, and SQS batches with per-message failures."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from sleeper.core import operations
from sleeper.iterators.shipping import install_user_code
from sleeper.runtime.aws.containers import IDLE_WAIT_ENV, idle_wait_seconds
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from sleeper.runtime.router import Disposition, feature_entry, settle

__all__ = [
    "IDLE_WAIT_ENV",
    "LOGGER",
    "SqsRecord",
    "aws_instance",
    "batch_response",
    "for_each_message",
    "for_each_record",
    "idle_wait_seconds",
    "route_messages",
    "route_records",
    "sqs_records",
    "use_instance",
]

LOGGER = logging.getLogger("lambdas")
_given: AwsInstance | None = None
_from_environment: AwsInstance | None = None


def aws_instance() -> AwsInstance:
    """The instance given to :func:`use_instance`, else the one the environment names (``CONFIG_BUCKET``, or
    ``SLEEPER_INSTANCE_ID`` with ``SLEEPER_ACCOUNT``, the region and any ``AWS_ENDPOINT_URL``).

    The instance from the environment is built once per process and reused by warm invocations for as long as the
    environment names the same instance (a process running the handlers of several instances, as an emulator's
    tests do, gets each invocation's own).

    The first time an instance is built, the iterator code its ``sleeper.userjars`` lists is installed
    (:func:`sleeper.iterators.shipping.install_user_code`), before any handler can load an iterator.

    Raises:
        AwsRuntimeConfigError: If no instance was given and the environment does not say where the instance is.
        UserCodeError: If a listed wheel cannot be installed.
    """
    global _from_environment
    if _given is not None:
        return _given
    config = AwsRuntimeConfig.from_environment()
    if _from_environment is None or _from_environment.config != config:
        instance = AwsInstance(config)
        install_user_code(instance.properties, options=instance.filesystem_options)
        _from_environment = instance
    return _from_environment


def use_instance(instance: AwsInstance | None) -> None:
    """Makes the handlers use an instance (None: the environment's again, read anew), e.g. in a container or a
    test."""
    global _given, _from_environment
    if instance is not None:
        install_user_code(instance.properties, options=instance.filesystem_options)
    _given = instance
    _from_environment = None


@dataclass(frozen=True, slots=True)
class SqsRecord:
    """One message of an SQS event."""

    message_id: str
    body: str
    group_id: str | None
    source_arn: str | None = None


def sqs_records(event: Mapping[str, Any]) -> list[SqsRecord]:
    """The messages of an SQS event, in order."""
    return [
        SqsRecord(
            r["messageId"], r["body"], r.get("attributes", {}).get("MessageGroupId"), r.get("eventSourceARN") or None
        )
        for r in event.get("Records", [])
    ]


def batch_response(failed_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """The partial batch response: the failed messages return to the queue, the others are deleted."""
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed_ids]}


def for_each_message(
    event: Mapping[str, Any], handle: Callable[[str], object], *, stop_at_failure: bool = False
) -> dict[str, list[dict[str, str]]]:
    """Runs ``handle`` on each message body (see :func:`for_each_record`)."""
    return for_each_record(event, lambda record: handle(record.body), stop_at_failure=stop_at_failure)


def for_each_record(
    event: Mapping[str, Any], handle: Callable[[SqsRecord], object], *, stop_at_failure: bool = False
) -> dict[str, list[dict[str, str]]]:
    """Runs ``handle`` on each message, mapping how each ended with the router's one failure mapping
    (:func:`sleeper.runtime.router.settle`): a message whose handling raises is reported failed; one naming a table
    that does not exist (any more) is logged and dropped, as a retry cannot help.

    Args:
        event: The SQS event.
        handle: Handles one message (a returned string is logged).
        stop_at_failure: After a failure, report every later message failed without handling it (FIFO queues, so
            messages of a group keep their order).
    """
    failed: list[str] = []
    for record in sqs_records(event):
        if failed and stop_at_failure:
            failed.append(record.message_id)
            continue
        settled = settle(partial(handle, record))
        if settled.disposition is Disposition.DROPPED:
            LOGGER.warning("Dropping message %s: %s", record.message_id, settled.error)
        elif settled.disposition is Disposition.RETRY:
            LOGGER.error("Message %s failed", record.message_id, exc_info=settled.error)
            failed.append(record.message_id)
        elif settled.line:
            LOGGER.info("%s", settled.line)
    return batch_response(failed)


def route_messages(event: Mapping[str, Any], queue_name: str) -> dict[str, list[dict[str, str]]]:
    """Runs each message of a batch from a queue through the feature entry the registry names for the queue
    (:mod:`sleeper.runtime.router`), on the instance from the environment; on a FIFO queue a failure fails the rest
    of the batch too, so a group keeps its order.
    """
    entry = feature_entry(queue_name)
    fifo = operations.queue(queue_name).fifo
    return for_each_message(event, lambda body: entry(aws_instance(), body), stop_at_failure=fifo)


def route_records(event: Mapping[str, Any], queue_of: Callable[[SqsRecord], str]) -> dict[str, list[dict[str, str]]]:
    """Runs each message of a batch through the feature entry the registry names for the queue it came from (a
    handler fed by several queues whose work differs by queue); a message from a queue that ``queue_of`` refuses
    (raising) is reported failed. For standard queues only: a failure does not fail the rest of the batch."""
    return for_each_record(event, lambda record: feature_entry(queue_of(record))(aws_instance(), record.body))
