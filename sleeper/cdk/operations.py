"""Queue-driven operations of the registry that no feature stack deploys: each gets its queue and its function from
its registry entry alone (:func:`sleeper.cdk.common.queue_operation`), so an operation registered in
:mod:`sleeper.core.operations` is deployed before it has a stack of its own.

A feature stack claims the operations it deploys under its nested stack's name in
:data:`sleeper.core.deploy.plan.CLAIMED_OPERATIONS`, which its ``OPERATIONS`` class attribute reads
(``QueryStack.OPERATIONS`` ...); an entry served by the generic SQS handler (``sleeper.lambdas.sqs:<name>``) that no
stack claims is deployed here, in the ``QueueOperations`` nested stack, allowed to read the instance and its tables'
state, and the deployment plan (``sleeper deploy --dry-run``) lists that stack with those operations. An operation
needing more moves to a stack of its own that claims it and grants what it needs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk.common import QueueOperation, SleeperCore, queue_operation
from sleeper.core import HandlerSpec, operations
from sleeper.core.deploy import plan

__all__ = ["QueueOperationsStack", "claimed_operations", "unclaimed_operations"]


def _stack_classes(base: type) -> Iterator[type]:
    subclass: type
    for subclass in base.__subclasses__():
        yield subclass
        yield from _stack_classes(subclass)


def claimed_operations() -> frozenset[str]:
    """The registry entries the feature stacks deploy: the ``OPERATIONS`` of every nested stack class defined."""
    return frozenset(name for cls in _stack_classes(cdk.NestedStack) for name in getattr(cls, "OPERATIONS", ()))


def unclaimed_operations() -> tuple[HandlerSpec, ...]:
    """The registry's entries served by the generic SQS handler that no feature stack claims, in registry order (the
    plan's :func:`sleeper.core.deploy.plan.unclaimed_operations`)."""
    unclaimed = set(plan.unclaimed_operations())
    return tuple(spec for spec in operations.HANDLERS if spec.name in unclaimed)


def _pascal(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


class QueueOperationsStack(cdk.NestedStack):
    """For each operation given, ``sleeper-<id>-<queue>`` and the function ``sleeper-<id>-<name with dashes>`` it
    feeds (construct ids ``<Name>Queue`` and ``<Name>Handler``), from the registry entry; the function reads the
    instance and its tables' state.

    Attributes:
        operations: The deployed operations, by registry name.
    """

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, specs: Sequence[HandlerSpec]) -> None:
        super().__init__(scope, construct_id, description="Sleeper queue-driven operations")
        self.operations: dict[str, QueueOperation] = {}
        for spec in specs:
            deployed = queue_operation(
                self, core, spec.name, prefix=_pascal(spec.name), name_suffix=spec.name.replace("_", "-")
            )
            core.grant_table_state_read(deployed.function)
            self.operations[spec.name] = deployed
