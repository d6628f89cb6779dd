"""The router: every queue whose operation names a feature entry resolves to a function that exists, and the local
runner and the Lambda handlers send a queue's messages to the same entry, with the same failure mapping."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any, cast

import pytest

from lambdas import _common
from sleeper.core import operations
from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.operations import CONTAINERS, HANDLERS, TriggerKind
from sleeper.runtime import router
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.local.handlers import default_handlers

ROUTED_QUEUES = sorted(
    {q for h in HANDLERS if h.trigger.kind is TriggerKind.SQS and h.runs is not None for q in h.trigger.queues}
)

NOT_YET_ROUTED = {
    operations.INGEST_BATCHER_SUBMIT_Q,
    operations.COMPACTION_JOB_Q,
}
"""Queues whose local handler or Lambda does not go through the router yet (the seam's remaining work)."""


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


def _event(body: str) -> dict[str, Any]:
    return {"Records": [{"messageId": "m1", "body": body, "attributes": {"MessageGroupId": "g"}}]}


BATCHED = {operations.COMPACTION_COMMIT_Q}
"""Queues whose Lambda gives a whole batch to the reader their entry gives batches of one (the commit batcher commits
a table's jobs in one transaction)."""

ROUTED_BOTH = [q for q in ROUTED_QUEUES if q in default_handlers() and q not in NOT_YET_ROUTED | BATCHED]


@pytest.mark.parametrize("queue", sorted(BATCHED))
def should_route_a_batched_queue_locally_to_its_entry(queue: str, recorded: list[tuple[str, object, str]]) -> None:
    # Given an instance
    instance = object()
    # When the local runner's handler handles one message
    default_handlers()[queue](cast(Any, instance), "message")
    # Then it ran the registry's entry for the queue
    assert recorded == [(router.entry_name(queue), instance, "message")]


@pytest.mark.parametrize("queue", ROUTED_BOTH)
def should_route_a_queue_to_the_same_entry_locally_and_in_its_lambda(
    queue: str, recorded: list[tuple[str, object, str]]
) -> None:
    # Given an instance standing for either runtime's
    instance = object()
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


TASK_QUEUES = [c.consumes for c in CONTAINERS if c.consumes is not None and c.consumes not in NOT_YET_ROUTED]


@pytest.mark.parametrize("queue", TASK_QUEUES)
def should_route_a_task_queue_locally_to_the_entry_its_container_runs(
    queue: str, recorded: list[tuple[str, object, str]]
) -> None:
    # Given a queue a container's tasks consume, whose container names the entry each message goes to
    (image,) = [c for c in CONTAINERS if c.consumes == queue]
    instance = object()
    # When the local runner's handler handles one message
    default_handlers()[queue](cast(Any, instance), "job")
    # Then it ran the entry the container names, which exists
    assert recorded == [(image.runs, instance, "job")]
    assert router.entry_name(queue) == image.runs
    module, _, function = str(image.runs).partition(":")
    assert callable(getattr(importlib.import_module(module), function))
