"""The router: every queue whose operation names a feature entry resolves to a function that exists, and the local
runner and the Lambda handlers send a queue's messages to the same entry, with the same failure mapping."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any, cast

import pytest

from sleeper.core import operations
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.operations import CONTAINERS, HANDLERS, QUEUES, TriggerKind
from sleeper.core.properties import InstanceProperties
from sleeper.lambdas import _common
from sleeper.runtime import router
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.local.handlers import default_handlers


def _has_entry(queue: str) -> bool:
    try:
        router.entry_name(queue)
    except KeyError:
        return False
    return True


ROUTED_QUEUES = sorted(q.name for q in QUEUES if _has_entry(q.name))
"""Every queue whose messages the registry sends to a feature entry."""

CONSUMED_ELSEWHERE = {operations.QUERY_RESULTS_Q}
"""Queues no operation of the instance consumes: their messages are for clients (query results)."""


class _Instance:
    """Stands for either runtime's instance: the entries are replaced, so only what the handlers read of an instance
    before calling them is here (empty instance properties, the default filesystem options)."""

    properties = InstanceProperties({})
    filesystem_options = None


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, object, str]]]:
    """Replaces every feature entry the router resolves with one recording (entry name, instance, body)."""
    calls: list[tuple[str, object, str]] = []

    def resolve(name: str) -> router.Entry:
        def entry(instance: Any, body: str) -> str:
            calls.append((name, instance, body))
            return ""

        return entry

    router.feature_entry.cache_clear()
    monkeypatch.setattr(router, "_resolve", resolve)
    yield calls
    router.feature_entry.cache_clear()


@pytest.mark.parametrize("queue", ROUTED_QUEUES)
def should_resolve_every_queue_feature_entry_to_an_existing_function(queue: str) -> None:
    # Given a queue whose handler names a feature entry in the registry
    # When the router resolves it
    entry = router.feature_entry(queue)
    # Then it is the function the registry names
    module, _, function = router.entry_name(queue).partition(":")
    assert entry is getattr(importlib.import_module(module), function)


def _lambda_for(queue: str) -> Any:
    (spec,) = [h for h in HANDLERS if h.trigger.kind is TriggerKind.SQS and queue in h.trigger.queues]
    return getattr(importlib.import_module(spec.module), spec.function)


def _event(body: str, queue: str = "q") -> dict[str, Any]:
    arn = f"arn:aws:sqs:eu-west-2:123456789012:sleeper-test-{queue}"
    return {
        "Records": [{"messageId": "m1", "body": body, "attributes": {"MessageGroupId": "g"}, "eventSourceARN": arn}]
    }


BATCHED = {operations.COMPACTION_COMMIT_Q}
"""Queues whose Lambda gives a whole batch to the reader their entry gives batches of one (the commit batcher commits
a table's jobs in one transaction)."""

LAMBDA_QUEUES = sorted(
    {q for h in HANDLERS if h.trigger.kind is TriggerKind.SQS for q in h.trigger.queues if q not in BATCHED}
)
"""Every queue feeding a Lambda that runs each message through the router."""

ROUTED_BOTH = [q for q in LAMBDA_QUEUES if q in default_handlers()]


def should_route_every_queue_a_local_instance_consumes() -> None:
    # Given the queues of a local instance, and those an operation consumes
    local = {q.name for q in operations.local_queues()} - CONSUMED_ELSEWHERE
    # When the local runner's handlers are listed
    handlers = default_handlers()
    # Then every consumed queue has one, and each is routed to the entry the registry names for its queue
    assert set(handlers) == local
    assert all(isinstance(h, router.RoutedHandler) and h.queue_name == q for q, h in handlers.items())
    assert local <= set(ROUTED_QUEUES)


@pytest.mark.parametrize("queue", sorted({q.name for q in operations.local_queues()} - CONSUMED_ELSEWHERE))
def should_route_a_local_queue_to_its_entry(queue: str, recorded: list[tuple[str, object, str]]) -> None:
    # Given an instance
    instance = _Instance()
    # When the local runner's handler of a queue handles one message
    default_handlers()[queue](cast(Any, instance), "message")
    # Then it ran the registry's entry for the queue
    assert recorded == [(router.entry_name(queue), instance, "message")]


@pytest.mark.parametrize("queue", LAMBDA_QUEUES)
def should_route_a_queue_through_its_lambda_to_its_entry(queue: str, recorded: list[tuple[str, object, str]]) -> None:
    # Given an instance standing for an AWS instance
    instance = _Instance()
    # When the Lambda the queue feeds handles one message from it
    _common.use_instance(cast(AwsInstance, instance))
    try:
        response = _lambda_for(queue)(_event("job", queue))
    finally:
        _common.use_instance(None)
    # Then it ran the registry's entry for the queue, with the instance and the body
    assert recorded == [(router.entry_name(queue), instance, "job")]
    assert response == {"batchItemFailures": []}


def should_route_each_bulk_import_queue_to_its_own_entry() -> None:
    # Given the bulk import platforms' queues, which feed one starter Lambda
    queues = [
        operations.BULK_IMPORT_EMR_SERVERLESS_Q,
        operations.BULK_IMPORT_EMR_Q,
        operations.BULK_IMPORT_PERSISTENT_EMR_Q,
    ]
    # When their entries are resolved
    entries = [router.feature_entry(q) for q in queues]
    # Then each queue has an entry of its own
    assert len(set(entries)) == 3


def should_fail_a_bulk_import_message_from_another_queue(recorded: list[tuple[str, object, str]]) -> None:
    # Given a message the starter Lambda got from a queue that is not a bulk import queue
    _common.use_instance(cast(AwsInstance, _Instance()))
    try:
        response = _lambda_for(operations.BULK_IMPORT_EMR_Q)(_event("job", "SomeOtherQ"))
    finally:
        _common.use_instance(None)
    # Then it is reported failed and no entry ran
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert recorded == []


@pytest.mark.parametrize("queue", sorted(BATCHED))
def should_route_a_batched_queue_locally_to_its_entry(queue: str, recorded: list[tuple[str, object, str]]) -> None:
    # Given an instance
    instance = _Instance()
    # When the local runner's handler handles one message
    default_handlers()[queue](cast(Any, instance), "message")
    # Then it ran the registry's entry for the queue
    assert recorded == [(router.entry_name(queue), instance, "message")]


@pytest.mark.parametrize("queue", ROUTED_BOTH)
def should_route_a_queue_to_the_same_entry_locally_and_in_its_lambda(
    queue: str, recorded: list[tuple[str, object, str]]
) -> None:
    # Given an instance standing for either runtime's
    instance = _Instance()
    # When the local runner's handler and the queue's Lambda each handle one message
    default_handlers()[queue](cast(Any, instance), "table-1")
    _common.use_instance(cast(AwsInstance, instance))
    try:
        response = _lambda_for(queue)(_event("table-2"))
    finally:
        _common.use_instance(None)
    # Then both ran the registry's entry for the queue, with the instance and the body
    name = router.entry_name(queue)
    assert recorded == [(name, instance, "table-1"), (name, instance, "table-2")]
    assert response == {"batchItemFailures": []}


def should_map_failures_once_for_both_runtimes() -> None:
    # Given work that finishes, names a missing table, or fails
    def missing() -> str:
        raise TableNotFoundError("table t does not exist")

    def failing() -> str:
        raise RuntimeError("boom")

    # When each is settled
    done, dropped, retry = router.settle(lambda: "ok"), router.settle(missing), router.settle(failing)
    # Then the message is deleted, dropped, or left to be delivered again
    assert (done.disposition, done.line, done.delete) == (router.Disposition.DONE, "ok", True)
    assert (dropped.disposition, dropped.delete) == (router.Disposition.DROPPED, True)
    assert (retry.disposition, retry.delete) == (router.Disposition.RETRY, False)
    assert isinstance(retry.error, RuntimeError)


TASK_QUEUES = [c.consumes for c in CONTAINERS if c.consumes is not None]


@pytest.mark.parametrize("queue", TASK_QUEUES)
def should_route_a_task_queue_locally_to_the_entry_its_container_runs(
    queue: str, recorded: list[tuple[str, object, str]]
) -> None:
    # Given a queue a container's tasks consume, whose container names the entry each message goes to
    (image,) = [c for c in CONTAINERS if c.consumes == queue]
    instance = _Instance()
    # When the local runner's handler handles one message
    default_handlers()[queue](cast(Any, instance), "job")
    # Then it ran the entry the container names, which exists
    assert recorded == [(image.runs, instance, "job")]
    assert router.entry_name(queue) == image.runs
    module, _, function = str(image.runs).partition(":")
    assert callable(getattr(importlib.import_module(module), function))
