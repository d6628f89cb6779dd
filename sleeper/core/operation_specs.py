"""The shapes of the registry of operations (:mod:`sleeper.core.operations`): what a queue, a trigger, a schedule, a
Lambda handler and a container are described by. Standard library only; the registry itself holds the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "IMAGE_ENVIRONMENT",
    "ContainerSpec",
    "HandlerSpec",
    "LocalSchedule",
    "QueueSpec",
    "Schedule",
    "Trigger",
    "TriggerKind",
]

IMAGE_ENVIRONMENT = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MIMALLOC_ALLOW_THP": "0"}
"""The environment variables every image starts its processes with (each ``containers/*/Dockerfile`` sets them, the
emulator gives them to the task processes it starts, and the ``sleeper`` command sets those the user's environment
does not). Arrow allocates from the C library rather than from the mimalloc pyarrow bundles, and the mimalloc that
DataFusion's wheel allocates with keeps off transparent huge pages (why, and the figures: :mod:`sleeper.io.memory`)."""


class TriggerKind(Enum):
    """What invokes a Lambda function."""

    SQS = "sqs"
    """Batches of messages from an SQS queue (partial batch failures reported)."""
    SCHEDULE = "schedule"
    """An EventBridge scheduled rule."""
    STREAM = "stream"
    """The DynamoDB stream of the files transaction log."""
    NONE = "none"
    """Invoked directly (by a client or another function)."""
    API = "api"
    """An API Gateway API's routes (the WebSocket query API, the REST API): invoked with the route's event, its
    return value is the response to the caller."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """What invokes a handler.

    Attributes:
        kind: The kind of trigger.
        queues: For SQS: the logical names of the queues feeding it (``sleeper-<id>-<name>``).
        batch_size: For SQS: messages per invocation.
        rule: For a schedule: the EventBridge rule name (``<id>-<rule>``).
        period_property: For a schedule: the instance property holding its period (None for a fixed period).
        period_unit_seconds: For a schedule: seconds per unit of ``period_property`` (60 for minutes).
        fixed_period_seconds: For a schedule without a period property: its period.
    """

    kind: TriggerKind
    queues: tuple[str, ...] = ()
    batch_size: int = 1
    rule: str | None = None
    period_property: str | None = None
    period_unit_seconds: int = 60
    fixed_period_seconds: int | None = None

    @classmethod
    def sqs(cls, *queues: str, batch_size: int = 1) -> Trigger:
        """Fed by SQS queues."""
        return cls(kind=TriggerKind.SQS, queues=tuple(queues), batch_size=batch_size)

    @classmethod
    def schedule(
        cls, rule: str, period_property: str | None, *, unit_seconds: int = 60, fixed_period_seconds: int | None = None
    ) -> Trigger:
        """Invoked by a scheduled rule, with its period from an instance property or fixed."""
        return cls(
            kind=TriggerKind.SCHEDULE,
            rule=rule,
            period_property=period_property,
            period_unit_seconds=unit_seconds,
            fixed_period_seconds=fixed_period_seconds,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSpec:
    """One queue of an instance.

    Attributes:
        name: The logical name (``sleeper-<id>-<name>`` on AWS); a name ending ``.fifo`` is a FIFO queue.
        description: What its messages are.
        url_property: The instance property a deployment records its URL in; None for a queue only a local
            instance has.
        local: Whether a local instance has it.
        visibility_timeout_seconds: How long a received message stays invisible (a local instance's setting; the
            stacks take it from the instance properties of the queue's consumer).
        max_receive_count: Receives before a message moves to the dead-letter queue, as the stacks and a local
            instance set it.
        runs: The runtime-neutral feature entry its messages go to (``module:function``), when the queue names its
            own: a queue only a local instance has, which no Lambda or container consumes, or one of several queues
            feeding one handler whose work differs by queue (each bulk import platform's queue). Otherwise the
            handler it feeds, or the container consuming it, names the entry (:mod:`sleeper.runtime.router`).
    """

    name: str
    description: str
    url_property: str | None = None
    local: bool = True
    visibility_timeout_seconds: int = 900
    max_receive_count: int = 3
    runs: str | None = None

    @property
    def fifo(self) -> bool:
        """Whether it is a FIFO queue."""
        return self.name.endswith(".fifo")

    @property
    def on_aws(self) -> bool:
        """Whether an AWS instance has it (a deployment records its URL)."""
        return self.url_property is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalSchedule:
    """How a local instance's scheduler runs a scheduled handler (see :func:`local_schedules`).

    Attributes:
        name: The schedule's name, for logs and period overrides.
        queue: The FIFO queue the scheduler sends to, whose worker does the handler's work.
        per_table: One message per online table (body = table id); otherwise one message with an empty body.
    """

    name: str
    queue: str
    per_table: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """A periodic operation of a local instance, derived from a handler's schedule and its :class:`LocalSchedule`.

    Attributes:
        name: The operation, for logs and period overrides.
        queue: The FIFO queue its messages go to.
        period_property: The instance property holding its period.
        unit_seconds: Seconds per unit of the period property (60 for minutes).
        per_table: One message per online table (body = table id); otherwise one message with an empty body.
    """

    name: str
    queue: str
    period_property: str
    unit_seconds: int
    per_table: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerSpec:
    """One Lambda handler.

    Attributes:
        name: The handler's name in the registry (the stacks look it up by this name).
        handler: ``module:function`` run by the Lambda image.
        description: What it does.
        trigger: What invokes it.
        memory_mb: Default memory (the default of ``memory_property`` when one is named).
        timeout_seconds: Default timeout (the default of ``timeout_property`` when one is named).
        memory_property: The instance property overriding the memory, if any.
        timeout_property: The instance property overriding the timeout, if any.
        sends_to: For a per-table scheduled trigger: the FIFO queue it sends one message per online table to.
        offline_property: For a per-table trigger: an instance property that, when true, includes offline tables.
        runs: The runtime-neutral feature function it runs (``module:function``), or None for a trigger that only
            sends messages, a handler whose work is the runtime's own, or one whose queues each name their entry
            (:attr:`QueueSpec.runs`).
        local_schedule: For a scheduled handler a local instance runs too: how its scheduler runs it.
    """

    name: str
    handler: str
    description: str
    trigger: Trigger
    memory_mb: int = 1024
    timeout_seconds: int = 900
    memory_property: str | None = None
    timeout_property: str | None = None
    sends_to: str | None = None
    offline_property: str | None = None
    runs: str | None = None
    local_schedule: LocalSchedule | None = None

    @property
    def module(self) -> str:
        """The module holding the handler function."""
        return self.handler.partition(":")[0]

    @property
    def function(self) -> str:
        """The handler function's name."""
        return self.handler.partition(":")[2]

    @property
    def lambda_command(self) -> str:
        """The image command the Lambda runtime interface client takes: ``module.function``."""
        return f"{self.module}.{self.function}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerSpec:
    """One container image.

    Attributes:
        name: The image name (``containers/<name>/Dockerfile``; the ECR repository ``<prefix>/<name>``).
        description: What runs in it.
        entry_point: ``module:function`` its command runs, or None when the command is chosen per use (the Lambda
            image runs the handler named in ``SLEEPER_HANDLER``).
        consumes: The logical name of the queue its tasks take work from, if any.
        runs: The runtime-neutral feature function its entry point runs (``module:function``), if any: for a task
            consuming a queue, the entry each of its messages goes to (:mod:`sleeper.runtime.router`).
    """

    name: str
    description: str
    entry_point: str | None
    consumes: str | None = None
    runs: str | None = None

    @property
    def dockerfile(self) -> str:
        """The Dockerfile, relative to the repository root."""
        return f"containers/{self.name}/Dockerfile"

    @property
    def module(self) -> str | None:
        """The module of the entry point, if any."""
        return self.entry_point.partition(":")[0] if self.entry_point else None
