"""Which stack deploys each queue-driven operation of the registry: every entry served by the generic SQS handler is
claimed by exactly one feature stack (``OPERATIONS``), so the stack deploying unclaimed operations
(:mod:`stacks.operations`) is absent from an instance built from the registry as shipped."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("aws_cdk")

import stacks.instance  # noqa: E402,F401  (imports every feature stack)
from sleeper.core import operations  # noqa: E402
from stacks.operations import _stack_classes, unclaimed_operations  # noqa: E402


def should_claim_every_generic_queue_operation_in_exactly_one_feature_stack() -> None:
    # Given every nested stack class and the operations each claims
    import aws_cdk as cdk

    claims = Counter(name for cls in _stack_classes(cdk.NestedStack) for name in getattr(cls, "OPERATIONS", ()))
    generic = {spec.name for spec in operations.HANDLERS if spec.module == operations.SQS_HANDLER_MODULE}
    # Then each generic operation is claimed once, nothing else is claimed, and none is left to the generic stack
    assert {name: count for name, count in claims.items() if count != 1} == {}
    assert set(claims) == generic
    assert unclaimed_operations() == ()
