"""The one router of an instance's operations (docs/design.md, "The runtime seam"): a queue's message goes to the
runtime-neutral feature entry the registry names for it, and what happened is mapped the same way in both runtimes.

A feature entry is ``handle_<operation>(instance, body) -> str``: it does one message's work on any instance that
implements its feature's ports, returns a line for the log (empty for nothing to say), and raises when the message
should be delivered again. The registry (:mod:`sleeper.core.operations`) names it as ``module:function`` on the
handler its queue feeds; :func:`feature_entry` imports it with :mod:`importlib`, so the registry stays standard
library only and names what runs without importing it.

The local runner (:mod:`sleeper.runtime.local.runner`) and the Lambda handlers (``sleeper.lambdas._common``) both run a
message through :func:`settle`, the one failure mapping:

* the entry returned: the message is done (deleted);
* the entry raised ``TableNotFoundError``: the table is gone, a retry cannot help, so the message is dropped
  (deleted, and logged);
* the entry raised anything else: the message is to be delivered again (after the queue's receive limit, it goes to
  its dead-letter queue); on a FIFO queue, a Lambda reports every later message of the batch failed too, so a group
  keeps its order.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from sleeper.core import TableNotFoundError, TriggerKind, operations

__all__ = [
    "Disposition",
    "Entry",
    "RoutedHandler",
    "Settled",
    "dispatch",
    "entry_name",
    "feature_entry",
    "handler_entry",
    "has_entry",
    "routed",
    "settle",
]

LOGGER = logging.getLogger("sleeper.runtime.router")

Entry = Callable[[Any, str], str]
"""A feature entry: does one message's work on an instance, returns a line for the log, raises to be retried."""


class Disposition(Enum):
    """What becomes of a message once its entry ran."""

    DONE = "done"
    """Its work is done: delete it."""
    DROPPED = "dropped"
    """Its table does not exist (any more): a retry cannot help, delete it."""
    RETRY = "retry"
    """Its work failed: leave it to be delivered again (then dead-lettered)."""


@dataclass(frozen=True, slots=True)
class Settled:
    """What one message's run came to: its disposition, and the line to log (the entry's, or the error)."""

    disposition: Disposition
    line: str
    error: Exception | None = None

    @property
    def delete(self) -> bool:
        """Whether the message is finished with (done or dropped)."""
        return self.disposition is not Disposition.RETRY


def settle(run: Callable[[], object]) -> Settled:
    """Runs one message's work and maps how it ended (see the module docstring); never raises an ``Exception``."""
    try:
        line = run()
    except TableNotFoundError as e:
        return Settled(Disposition.DROPPED, f"dropped: {e}", e)
    except Exception as e:
        return Settled(Disposition.RETRY, f"failed, to be delivered again: {e}", e)
    return Settled(Disposition.DONE, line if isinstance(line, str) else "")


def entry_name(queue_name: str) -> str:
    """The ``module:function`` of the feature entry the registry names for a queue's messages: the queue's own
    (:attr:`~sleeper.core.operation_specs.QueueSpec.runs`), else the one of the Lambda handler the queue feeds, else
    the one of the container whose tasks consume it, else, for the queue a local instance's scheduler sends a
    scheduled handler's work to, that handler's.

    Raises:
        KeyError: If the registry names no feature entry for the queue.
    """
    spec = next((q for q in operations.QUEUES if q.name == queue_name), None)
    if spec is not None and spec.runs is not None:
        return spec.runs
    for handler in operations.HANDLERS:
        if handler.trigger.kind is TriggerKind.SQS and queue_name in handler.trigger.queues and handler.runs:
            return handler.runs
    for image in operations.CONTAINERS:
        if image.consumes == queue_name and image.runs is not None:
            return image.runs
    for handler in operations.HANDLERS:
        local = handler.local_schedule
        if local is not None and local.queue == queue_name and handler.runs is not None:
            return handler.runs
    raise KeyError(f"no operation names a feature entry for queue {queue_name}")


def has_entry(queue_name: str) -> bool:
    """Whether the registry names a feature entry for a queue's messages (a queue such as the query results queue is
    read by clients, not routed)."""
    try:
        entry_name(queue_name)
    except KeyError:
        return False
    return True


@cache
def feature_entry(queue_name: str) -> Entry:
    """The feature entry for a queue's messages, imported from the registry's ``module:function``.

    Raises:
        KeyError: If the registry names none for the queue.
        ImportError, AttributeError: If the named module or function does not exist.
    """
    return _resolve(entry_name(queue_name))


@cache
def handler_entry(handler_name: str) -> Callable[..., Any]:
    """The feature function the registry names for a handler (its ``runs``), imported: for a handler no queue feeds
    (an API's routes), which calls it with its own arguments, such as the instance and the route's event.

    Raises:
        KeyError: If the registry has no such handler, or it names no feature function.
    """
    spec = operations.handler(handler_name)
    if spec.runs is None:
        raise KeyError(f"handler {handler_name!r} names no feature function")
    return _resolve(spec.runs)


def _resolve(name: str) -> Entry:
    module, _, function = name.partition(":")
    entry = getattr(importlib.import_module(module), function)
    if not callable(entry):
        raise TypeError(f"{name}, a feature entry, is not callable")
    return entry  # type: ignore[no-any-return]


def dispatch(instance: object, queue_name: str, body: str) -> Settled:
    """Runs one message of a queue through its feature entry, with the one failure mapping (:func:`settle`)."""
    return settle(lambda: feature_entry(queue_name)(instance, body))


def drain(instance: Any, queue_name: str) -> int:
    """Handles one queue's visible messages through its feature entry until none is visible, as one worker does
    (the local runner's drain adds tasks, crash points and counts around the same steps); returns how many were
    settled. A message whose entry fails is left in flight, to be delivered again after its visibility timeout."""
    queue = instance.queue(queue_name)
    settled_count = 0
    while messages := queue.receive(1):
        message = messages[0]
        settled = dispatch(instance, queue_name, message.body)
        if settled.disposition is Disposition.RETRY:
            LOGGER.error("%s: message %s failed; it will be delivered again", queue_name, message.message_id)
            continue
        queue.delete(message.receipt_handle)
        settled_count += 1
    return settled_count


@dataclass(frozen=True, slots=True)
class RoutedHandler:
    """A queue's handler for the local runner: the queue's feature entry, resolved through the registry when run."""

    queue_name: str

    def __call__(self, instance: Any, body: str) -> str:
        return feature_entry(self.queue_name)(instance, body)


def routed(*queue_names: str) -> dict[str, RoutedHandler]:
    """The routed handler of each queue, in the order given."""
    return {name: RoutedHandler(name) for name in queue_names}
