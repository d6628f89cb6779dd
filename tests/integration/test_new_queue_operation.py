"""A queue-driven operation registered in the registry alone is served everywhere an operation is.

The operation is a feature entry (:func:`handle_echo`, here), one queue and one handler entry in
:mod:`sleeper.core.operations` and its queue's deployment-set properties (as ``PropertyList.queue`` defines them in
:mod:`sleeper.core.properties.instance_cdk`), added by this test only (monkeypatched): nothing else is edited. It
is then served by the generic Lambda handler (``sleeper.lambdas.sqs:<name>``), the local runner's drain, the
emulator's pump delivering SQS batches to that handler, and the synthesized CDK instance (its queue, function and
event source in the ``QueueOperations`` nested stack, its queue URL recorded in ``instance.properties``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleeper.core import operations
from sleeper.core.operations import HandlerSpec, QueueSpec, Trigger
from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX

pytestmark = [pytest.mark.integration]

NAME = "echo_test_operation"
QUEUE = "EchoTestQ.fifo"
QUEUE_PROPERTIES = PropertyList(InstancePropertyGroup.COMMON).queue("sleeper.echo.test", "bodies to echo")
URL_PROPERTY = QUEUE_PROPERTIES[0].name

ECHO_QUEUE = QueueSpec(name=QUEUE, description="Bodies to echo (a test's operation)", url_property=URL_PROPERTY)
ECHO_HANDLER = HandlerSpec(
    name=NAME,
    handler=f"{operations.SQS_HANDLER_MODULE}:{NAME}",
    runs=f"{__name__}:handle_echo",
    description="Echoes each body it is given (a test's operation)",
    trigger=Trigger.sqs(QUEUE),
)

ECHOED: list[tuple[str, str]] = []
"""What the feature entry was given: the kind of instance and the body, in order."""


def handle_echo(instance: Any, body: str) -> str:
    """The operation's feature entry: records the body and the instance it ran on."""
    ECHOED.append((type(instance).__name__, body))
    return f"echoed {body}"


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The operation in the registry (and nowhere else) for the test's length: its queue's properties defined, its
    queue and handler entries registered."""
    for definition in QUEUE_PROPERTIES:
        monkeypatch.setitem(INSTANCE_PROPERTY_INDEX._by_name, definition.name, definition)
    monkeypatch.setattr(operations, "QUEUES", (*operations.QUEUES, ECHO_QUEUE))
    monkeypatch.setattr(operations, "HANDLERS", (*operations.HANDLERS, ECHO_HANDLER))
    ECHOED.clear()
    yield
    ECHOED.clear()


def _sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {"messageId": f"m{i}", "body": body, "attributes": {"MessageGroupId": "g"}} for i, body in enumerate(bodies)
        ]
    }


@pytest.mark.usefixtures("registered")
def should_generate_a_lambda_handler_running_the_feature_entry_of_its_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the generic SQS handler module, and the instance a deployed function would find
    from sleeper.lambdas import _common, sqs

    instance = object.__new__(_common.AwsInstance)  # the entry only records the instance's kind
    monkeypatch.setattr(_common, "aws_instance", lambda: instance)
    monkeypatch.setattr(_common, "prepare", lambda: instance)
    # When the handler the registry names is looked up and given a batch
    handler = getattr(sqs, NAME)
    response = handler(_sqs_event("one", "two"))
    # Then it is the registry's handler, and each message went through the feature entry, none failed
    assert (handler.__name__, handler.__module__) == (NAME, "sleeper.lambdas.sqs")
    assert response == {"batchItemFailures": []}
    assert ECHOED == [("AwsInstance", "one"), ("AwsInstance", "two")]


@pytest.mark.usefixtures("registered")
def should_drain_its_queue_in_the_local_runner(tmp_path: Path) -> None:
    # Given a local instance with a message on the operation's queue
    from sleeper.runtime.local.handlers import default_handlers
    from sleeper.runtime.local.instance import LocalInstance
    from sleeper.runtime.local.runner import LocalRunner

    instance = LocalInstance.create(tmp_path / "instance")
    instance.queue(QUEUE).send("local", group_id="g", dedup_id=uuid.uuid4().hex)
    # When the runner with the default handlers runs until idle
    handlers = default_handlers()
    summary = LocalRunner(instance, handlers).run_until_idle()
    # Then the queue is drained last (after the registry's own queues) through the feature entry
    assert list(handlers)[-1] == QUEUE
    assert summary.processed[QUEUE] == 1
    assert ECHOED == [("LocalInstance", "local")]


@pytest.mark.aws
@pytest.mark.usefixtures("registered")
def should_be_delivered_by_the_emulators_pump_to_the_generated_handler() -> None:
    # Given an emulated instance provisioned with the operation registered, and a message on its queue
    from sleeper.emulator.instance import EmulatedAwsInstance

    with EmulatedAwsInstance(f"echo-{uuid.uuid4().hex[:8]}", port=0) as emulated:
        with pytest.MonkeyPatch.context() as env:
            for name, value in emulated.environment().items():
                env.setenv(name, value)
            instance = emulated.instance()
            assert instance.properties.get(URL_PROPERTY)
            instance.queue(QUEUE).send("emulated", group_id="g", dedup_id=uuid.uuid4().hex)
            # When the pump runs a round
            delivered = emulated.pump(containers=()).run_once()
    # Then the batch went to the registry's handler, whose feature entry ran on the AWS instance
    assert delivered.delivered.get(NAME) == 1
    assert not delivered.failed.get(NAME)
    assert ECHOED == [("AwsInstance", "emulated")]


@pytest.mark.slow
@pytest.mark.usefixtures("registered")
def should_be_deployed_by_the_synthesized_instance(tmp_path: Path) -> None:
    # Given an instance with no optional stack, synthesized with the operation registered
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    cdk = pytest.importorskip("aws_cdk")
    from aws_cdk.assertions import Template

    from sleeper.cdk import app as sleeper_app

    properties = tmp_path / "instance.properties"
    properties.write_text("sleeper.id=echo\n")
    context = {"artefacts": "ecr", "propertiesFile": str(properties)}
    app = cdk.App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"), context=context)
    stack = sleeper_app.build(app)
    # When the stack deploying operations no feature stack claims is read
    template = Template.from_stack(stack.parts["QueueOperations"]).to_json()
    resources = template["Resources"].values()
    functions = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"]
    queues = {r["Properties"]["QueueName"] for r in resources if r["Type"] == "AWS::SQS::Queue"}
    mappings = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    # Then it deploys the operation's function running the generic handler, its queue, and the queue feeding it
    (function,) = functions
    assert function["ImageConfig"]["Command"] == [f"sleeper.lambdas.sqs.{NAME}"]
    assert function["Environment"]["Variables"]["SLEEPER_HANDLER"] == f"sleeper.lambdas.sqs:{NAME}"
    assert function["FunctionName"] == "sleeper-echo-echo-test-operation"
    assert queues == {"sleeper-echo-EchoTestQ.fifo", "sleeper-echo-EchoTestDLQ.fifo"}
    (mapping,) = mappings
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # And the deployment records the queue's URL and ARN under the properties its registry entry names
    assert {URL_PROPERTY, "sleeper.echo.test.queue.arn", "sleeper.echo.test.dlq.url"} <= set(stack.core.cdk_properties)
