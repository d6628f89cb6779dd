"""What the generic handlers, the stacks and the local runner derive from the registry of operations
(:mod:`sleeper.core.operations`, read as it is when called): the entry a generic handler module serves under an
attribute name, the one queue feeding an entry, the instance properties a deployment records a queue in, and the
periodic operations of a local instance. Standard library and ``sleeper.core`` only.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.core import operations
from sleeper.core.operation_specs import HandlerSpec, QueueSpec, Schedule, TriggerKind
from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX

__all__ = ["QueueProperties", "local_schedules", "queue_fed", "queue_properties", "served_by"]


def served_by(module: str, function: str) -> HandlerSpec:
    """The handler whose ``module:function`` this is: how a generic handler module (``sleeper.lambdas.sqs``,
    ``sleeper.lambdas.table_trigger``) finds the entry it serves under an attribute name.

    Raises:
        KeyError: If no handler of the registry is ``module:function``.
    """
    path = f"{module}:{function}"
    found = next((spec for spec in operations.HANDLERS if spec.handler == path), None)
    if found is None:
        raise KeyError(f"no handler of the registry is {path}")
    return found


def queue_fed(spec: HandlerSpec) -> QueueSpec:
    """The one queue feeding an SQS-triggered handler.

    Raises:
        ValueError: If the handler is not fed by exactly one queue of the registry.
    """
    if spec.trigger.kind is not TriggerKind.SQS or len(spec.trigger.queues) != 1:
        raise ValueError(
            f"handler {spec.name!r} is not fed by exactly one queue (trigger {spec.trigger.kind.value}, "
            f"queues {list(spec.trigger.queues)}): give it Trigger.sqs(<one queue>)"
        )
    try:
        return operations.queue(spec.trigger.queues[0])
    except KeyError:
        raise ValueError(
            f"handler {spec.name!r} is fed by {spec.trigger.queues[0]!r}, which is not in QUEUES: register it"
        ) from None


@dataclass(frozen=True, slots=True)
class QueueProperties:
    """The deployment-set properties recording a queue and its dead-letter queue (a name each, None where the queue
    records none).

    Attributes:
        url: The queue's URL.
        arn: The queue's ARN.
        dlq_url: Its dead-letter queue's URL.
        dlq_arn: Its dead-letter queue's ARN.
    """

    url: str
    arn: str | None
    dlq_url: str | None
    dlq_arn: str | None


def queue_properties(spec: QueueSpec) -> QueueProperties:
    """The properties a deployment records a queue in, from its URL property (``<prefix>.queue.url``): the ARN,
    dead-letter URL and dead-letter ARN properties defined beside it (``<prefix>.queue.arn``, ``<prefix>.dlq.url`` or
    ``<prefix>.queue.dlq.url``, and the ARN to match), or none where none is defined (a bulk import queue records no
    dead-letter queue). ``PropertyList.queue`` (:mod:`sleeper.core.properties.instance_cdk`) defines all four.

    Raises:
        ValueError: If the queue names no URL property, or one that is not a defined ``<prefix>.queue.url``.
    """
    url = spec.url_property or ""
    prefix = url.removesuffix(".queue.url")
    if prefix == url or INSTANCE_PROPERTY_INDEX.get(url) is None:
        raise ValueError(
            f"queue {spec.name!r} names no defined <prefix>.queue.url property ({url!r}): define its properties with "
            "PropertyList.queue(<prefix>, <what it holds>) in sleeper.core.properties.instance_cdk"
        )

    def defined(name: str) -> str | None:
        return name if INSTANCE_PROPERTY_INDEX.get(name) is not None else None

    dlq = next((f"{prefix}.{part}" for part in ("dlq", "queue.dlq") if defined(f"{prefix}.{part}.url")), None)
    return QueueProperties(
        url,
        defined(f"{prefix}.queue.arn"),
        None if dlq is None else f"{dlq}.url",
        None if dlq is None else f"{dlq}.arn",
    )


def local_schedules() -> tuple[Schedule, ...]:
    """The periodic operations of a local instance: the scheduled handlers it runs, with their periods."""
    schedules = []
    for spec in operations.HANDLERS:
        local, trigger = spec.local_schedule, spec.trigger
        if local is None or trigger.period_property is None:
            continue
        schedules.append(
            Schedule(
                name=local.name,
                queue=local.queue,
                period_property=trigger.period_property,
                unit_seconds=trigger.period_unit_seconds,
                per_table=local.per_table,
            )
        )
    return tuple(schedules)
