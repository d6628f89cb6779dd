"""Which stack deploys each queue-driven operation of the registry: every entry served by the generic SQS handler is
claimed by exactly one feature stack (``OPERATIONS``), so the stack deploying unclaimed operations
(:mod:`sleeper.cdk.operations`) is absent from an instance built from the registry as shipped; with an operation
registered alone, that stack is built before the policies and alarms that must cover it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk")

import sleeper.cdk.instance  # noqa: E402,F401  (imports every feature stack)
from sleeper.cdk.instance import QUEUE_OPERATIONS  # noqa: E402
from sleeper.cdk.operations import _stack_classes, unclaimed_operations  # noqa: E402
from sleeper.core import operations  # noqa: E402


def should_claim_every_generic_queue_operation_in_exactly_one_feature_stack() -> None:
    # Given every nested stack class and the operations each claims
    import aws_cdk as cdk

    claims = Counter(name for cls in _stack_classes(cdk.NestedStack) for name in getattr(cls, "OPERATIONS", ()))
    generic = {spec.name for spec in operations.HANDLERS if spec.module == operations.SQS_HANDLER_MODULE}
    # Then each generic operation is claimed once, nothing else is claimed, and none is left to the generic stack
    assert {name: count for name, count in claims.items() if count != 1} == {}
    assert set(claims) == generic
    assert unclaimed_operations() == ()


ECHO = "echo_stack_operation"
ECHO_Q = "EchoStackQ.fifo"


@pytest.fixture
def registered_operation(monkeypatch: pytest.MonkeyPatch) -> str:
    """An operation served by the generic SQS handler, in the registry only (no feature stack claims it)."""
    from sleeper.core.operations import HandlerSpec, QueueSpec, Trigger
    from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
    from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX

    properties = PropertyList(InstancePropertyGroup.COMMON).queue("sleeper.echo.stack", "bodies to echo")
    for definition in properties:
        monkeypatch.setitem(INSTANCE_PROPERTY_INDEX._by_name, definition.name, definition)
    queue = QueueSpec(name=ECHO_Q, description="Bodies to echo (a test's)", url_property=properties[0].name)
    handler = HandlerSpec(
        name=ECHO,
        handler=f"{operations.SQS_HANDLER_MODULE}:{ECHO}",
        runs="builtins:print",
        description="Echoes each body (a test's)",
        trigger=Trigger.sqs(ECHO_Q),
    )
    monkeypatch.setattr(operations, "QUEUES", (*operations.QUEUES, queue))
    monkeypatch.setattr(operations, "HANDLERS", (*operations.HANDLERS, handler))
    return ECHO


def should_plan_the_stack_of_unclaimed_operations_only_when_there_are_some(registered_operation: str) -> None:
    # Given the plan of an instance with the operation registered, and one without
    from sleeper.core.deploy.plan import planned_stacks
    from sleeper.core.properties import InstanceProperties

    properties = InstanceProperties({"sleeper.id": "echo"})
    with_operation = {stack.name: stack.description for stack in planned_stacks(properties)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(operations, "HANDLERS", tuple(h for h in operations.HANDLERS if h.name != registered_operation))
        without = [stack.name for stack in planned_stacks(properties)]
    # Then the stack is planned with the operation named, before the policies covering its queue, and only then
    names = list(with_operation)
    assert registered_operation in with_operation[QUEUE_OPERATIONS]
    assert names.index(QUEUE_OPERATIONS) < names.index("ManagedPolicies")
    assert QUEUE_OPERATIONS not in without


def should_list_the_stack_of_unclaimed_operations_in_a_dry_run(
    registered_operation: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration directory, with an operation no feature stack claims registered
    from sleeper.cli.deploy import run_deploy

    (tmp_path / "instance.properties").write_text("sleeper.id=echo\n")
    # When sleeper deploy --dry-run prints what the app would build
    run_deploy(tmp_path, dry_run=True)
    # Then the stack deploying that operation is listed, naming it
    assert f"  {QUEUE_OPERATIONS}: the operations no feature stack deploys: {registered_operation}\n" in (
        capsys.readouterr().out
    )


def should_build_unclaimed_operations_before_the_policies_and_alarms_covering_them(
    registered_operation: str, tmp_path: Path
) -> None:
    # Given an operation no feature stack claims, and an instance with its dashboard
    import aws_cdk as cdk

    from sleeper.cdk import app as sleeper_app
    from sleeper.cdk.alarms import AlarmsStack
    from sleeper.cdk.policies import ManagedPoliciesStack

    (tmp_path / "instance.properties").write_text("sleeper.id=echo\nsleeper.optional.stacks=DashboardStack\n")
    context = {"artefacts": "ecr", "propertiesFile": str(tmp_path / "instance.properties")}
    # When the instance is built
    stack = sleeper_app.build(cdk.App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"), context=context))
    # Then the operation's stack comes before the managed policies, whose admin may send to every queue of the
    # instance, its own included
    parts = list(stack.parts)
    assert parts.index(QUEUE_OPERATIONS) < parts.index("ManagedPolicies")
    policies = stack.parts["ManagedPolicies"]
    assert isinstance(policies, ManagedPoliciesStack)
    document = policies.resolve(policies.admin.document)
    (sends,) = [s for s in document["Statement"] if "sqs:SendMessage" in s["Action"]]
    assert len(sends["Resource"]) == len(stack.core.queues)
    # And the alarms (which the dashboard shows) watch its function and its queue
    alarms = stack.parts["Alarms"]
    assert isinstance(alarms, AlarmsStack)
    assert "sleeper-echo-echo-stack-operation" in alarms.watched.functions
    assert ECHO_Q in alarms.watched.queues
