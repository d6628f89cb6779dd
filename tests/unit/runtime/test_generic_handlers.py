"""The generic Lambda handlers resolve what they serve from the registry, and refuse clearly what they cannot serve;
the local drain order is the registry's queue order."""

from __future__ import annotations

import pytest

from sleeper.core import operations
from sleeper.core.operations import HandlerSpec, Trigger
from sleeper.lambdas import sqs, table_trigger


def should_serve_every_registry_entry_naming_a_generic_handler() -> None:
    # Given every entry whose handler is one of the generic modules
    generic = [h for h in operations.HANDLERS if h.module in ("sleeper.lambdas.sqs", "sleeper.lambdas.table_trigger")]
    # When each is looked up as the Lambda runtime interface client does
    found = {h.name: getattr(sqs if h.module == "sleeper.lambdas.sqs" else table_trigger, h.function) for h in generic}
    # Then each is a handler named after its function
    assert len(generic) == 23
    assert all(callable(f) and f.__name__ == h.function for h, f in zip(generic, found.values(), strict=True))


def should_refuse_a_name_the_registry_does_not_serve_there() -> None:
    # When names no entry serves are looked up (a handler of another module, an unknown name, a dunder)
    # Then each is an AttributeError naming what to register, and the module's own dunders are not resolved
    with pytest.raises(AttributeError, match="no handler of the registry is sleeper.lambdas.sqs:query_warm"):
        sqs.query_warm  # noqa: B018
    with pytest.raises(AttributeError, match="no handler of the registry is sleeper.lambdas.table_trigger:nope"):
        table_trigger.nope  # noqa: B018
    assert not hasattr(sqs, "__wrapped__")


def should_refuse_an_entry_fed_by_other_than_one_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an entry of the generic SQS handler fed by two queues, and a trigger entry sending to no queue
    two = HandlerSpec(
        name="two_queues",
        handler="sleeper.lambdas.sqs:two_queues",
        description="",
        trigger=Trigger.sqs(operations.QUERY_Q, operations.LEAF_PARTITION_QUERY_Q),
    )
    nowhere = HandlerSpec(
        name="nowhere",
        handler="sleeper.lambdas.table_trigger:nowhere",
        description="",
        trigger=Trigger.schedule("R", None),
    )
    monkeypatch.setattr(operations, "HANDLERS", (*operations.HANDLERS, two, nowhere))
    # When they are looked up, then each is refused saying what to fix
    with pytest.raises(AttributeError, match=r"not fed by exactly one queue.*Trigger.sqs\(<one queue>\)"):
        sqs.two_queues  # noqa: B018
    with pytest.raises(AttributeError, match="names no queue to send to: set its sends_to"):
        table_trigger.nowhere  # noqa: B018


def should_drain_local_queues_in_the_order_work_flows() -> None:
    # Given the local runner's default handlers
    from sleeper.runtime.local.handlers import default_handlers

    order = list(default_handlers())
    # Then they follow the registry's queue order, and a queue is drained after those sending to it
    assert order == [q.name for q in operations.local_queues() if q.name in order]
    for earlier, later in (
        (operations.INGEST_BATCHER_SUBMIT_Q, operations.INGEST_JOB_Q),
        (operations.FIND_PARTITIONS_TO_SPLIT_Q, operations.PARTITION_SPLITTING_JOB_Q),
        (operations.COMPACTION_JOB_CREATION_Q, operations.PENDING_COMPACTION_JOB_BATCH_Q),
        (operations.PENDING_COMPACTION_JOB_BATCH_Q, operations.COMPACTION_JOB_Q),
        (operations.COMPACTION_JOB_Q, operations.COMPACTION_COMMIT_Q),
        (operations.QUERY_Q, operations.LEAF_PARTITION_QUERY_Q),
        (operations.BULK_EXPORT_Q, operations.LEAF_PARTITION_BULK_EXPORT_Q),
    ):
        assert order.index(earlier) < order.index(later), (earlier, later)
    assert operations.QUERY_RESULTS_Q not in order  # read by clients, not routed
