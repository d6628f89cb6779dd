"""The one generic SQS handler: ``sleeper.lambdas.sqs:<name>`` serves the registry entry named ``<name>``
(:mod:`sleeper.core.operations`), fed by one queue, by running each message of a batch through the feature entry the
registry names for that queue (:func:`sleeper.lambdas._common.route_messages`). The stacks deploy such an entry with the
image command ``sleeper.lambdas.sqs.<name>``; the Lambda runtime interface client, the emulator and tests find the
handler as an attribute of this module, resolved from the registry when asked for, so a new queue-driven operation
needs no module here. Its log lines name the entry as their ``service`` (unless ``POWERTOOLS_SERVICE_NAME`` says
otherwise) and carry the function's Lambda context (:func:`sleeper.lambdas._common.lambda_handler`).

Example::

    from sleeper.lambdas import sqs

    sqs.garbage_collector({"Records": [...]})  # one batch of GCJobQ.fifo, as Lambda delivers it
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sleeper.core import operation_wiring
from sleeper.lambdas._common import lambda_handler, route_messages

__all__ = ["SqsHandler", "handler_for"]

SqsHandler = Callable[..., dict[str, list[dict[str, str]]]]
"""A Lambda handler for an SQS batch: ``(event, context=None)`` returning the partial batch response."""


def handler_for(name: str) -> SqsHandler:
    """The Lambda handler serving the registry entry ``name``, whose handler is ``sleeper.lambdas.sqs:<name>``.

    Raises:
        AttributeError: If no entry of the registry is ``sleeper.lambdas.sqs:<name>``, or it is not fed by exactly one
        queue
            (the message says which, and what to register).
    """
    try:
        spec = operation_wiring.served_by(__name__, name)
        queue_name = operation_wiring.queue_fed(spec).name
    except (KeyError, ValueError) as e:
        raise AttributeError(f"module {__name__!r} serves no handler {name!r}: {e.args[0]}") from None

    @lambda_handler(service=spec.name)
    def handler(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
        return route_messages(event, queue_name)

    handler.__name__ = handler.__qualname__ = name
    handler.__module__ = __name__
    handler.__doc__ = f"Lambda handler for an SQS batch from {queue_name}: {spec.description}."
    return handler


def __getattr__(name: str) -> SqsHandler:
    if name.startswith("__"):
        raise AttributeError(name)
    return handler_for(name)
