"""The one generic scheduled per-table trigger: ``sleeper.lambdas.table_trigger:<function>`` serves the registry
entry whose handler it is (:mod:`sleeper.core.operations`), sending one message per online table (body and message
group = table id) to the FIFO queue the entry ``sends_to``, so one handler runs per table at a time; offline tables
too when the entry's ``offline_property`` is true. The handler is an attribute of this module, resolved from the
registry when asked for (by the Lambda runtime interface client, the emulator or a test)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sleeper.core import operation_wiring
from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler

__all__ = ["TriggerHandler", "handler_for"]

TriggerHandler = Callable[..., dict[str, int]]
"""A Lambda handler for a scheduled event: ``(event, context=None)`` returning ``{"tablesSent": n}``."""


def handler_for(function: str) -> TriggerHandler:
    """The Lambda handler serving the registry entry whose handler is ``sleeper.lambdas.table_trigger:<function>``.

    Raises:
        AttributeError: If no entry of the registry is ``sleeper.lambdas.table_trigger:<function>``, or it sends to no
        queue.
    """
    try:
        spec = operation_wiring.served_by(__name__, function)
    except KeyError as e:
        raise AttributeError(f"module {__name__!r} serves no trigger {function!r}: {e.args[0]}") from None
    sends_to = spec.sends_to
    if sends_to is None:
        raise AttributeError(f"handler {spec.name!r} names no queue to send to: set its sends_to")

    @lambda_handler(service=spec.name)
    def trigger(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
        instance = aws_instance()
        offline = spec.offline_property is not None and instance.properties.get_bool(spec.offline_property)
        sent = instance.send_per_table(sends_to, include_offline=offline)
        LOGGER.info("%s: sent %d table messages to %s", spec.name, sent, sends_to)
        return {"tablesSent": sent}

    trigger.__name__ = trigger.__qualname__ = function
    trigger.__module__ = __name__
    trigger.__doc__ = f"Lambda handler for the scheduled event: {spec.description}."
    return trigger


def __getattr__(name: str) -> TriggerHandler:
    if name.startswith("__"):
        raise AttributeError(name)
    return handler_for(name)
