"""Running a function as Lambda does: its handler loaded by the registry's ``module:function`` with importlib, run
with the environment the deployed function would have, Lambda's context object, and the events of its triggers.

A handler finds the instance as it does when deployed, from its environment (``CONFIG_BUCKET``, the region, and the
emulator's ``AWS_ENDPOINT_URL`` and credentials): nothing is handed to it another way.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["LambdaContext", "TurnLock", "function_environment", "resolve_handler", "scheduled_event"]

_LOG = logging.getLogger(__name__)


class TurnLock:
    """A reentrant lock handed to its waiters in the order they asked for it.

    ``threading.RLock`` is not fair: a thread that releases it and asks again at once (a pump delivering one message
    after another) usually takes it again before a thread already waiting wakes up. Two pumps and the WebSocket API
    invoke functions from different threads, and with that lock one of them could wait many invocations of another
    (seen in the emulated A3 race: the pump firing the scheduled rules waited for the lock in 17 of 30 samples while
    the other delivered queue after queue). Here a thread that asks while others wait queues behind them.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._waiting: deque[object] = deque()

    def acquire(self) -> None:
        """Takes the lock, after every thread that was waiting for it when this one asked (at once if it holds it)."""
        me = threading.get_ident()
        with self._condition:
            if self._owner == me:
                self._depth += 1
                return
            turn = object()
            self._waiting.append(turn)
            while self._owner is not None or self._waiting[0] is not turn:
                self._condition.wait()
            self._waiting.popleft()
            self._owner, self._depth = me, 1

    def release(self) -> None:
        """Releases one level of the lock; the next waiter in line takes it when the last level is released.

        Raises:
            RuntimeError: If this thread does not hold the lock.
        """
        with self._condition:
            if self._owner != threading.get_ident():
                raise RuntimeError("release of a TurnLock this thread does not hold")
            self._depth -= 1
            if not self._depth:
                self._owner = None
                self._condition.notify_all()

    def waiting(self) -> int:
        """How many threads are waiting for the lock."""
        with self._condition:
            return len(self._waiting)

    def __enter__(self) -> TurnLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


_ENVIRONMENT_LOCK = TurnLock()
"""Held while a function runs in its environment: the process has one environment, and the pumps and the WebSocket
API invoke functions from different threads, each in its turn."""


def resolve_handler(path: str) -> Callable[..., Any] | None:
    """The function ``module:function`` names, imported as Lambda imports a handler, or None if its module does not
    exist (yet) or cannot be imported."""
    module_name, _, function = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name == e.name or module_name.startswith(e.name + ".")):
            return None
        _LOG.warning("cannot import %s: %s", module_name, e)
        return None
    except Exception as e:  # a module being written may not import yet: skip it until it does
        _LOG.warning("cannot import %s: %s", module_name, e)
        return None
    found = getattr(module, function, None)
    return found if callable(found) else None


@contextmanager
def function_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """Sets the environment variables a deployed function has while it is invoked in this process, as Lambda gives a
    function its environment, and puts back what this process had afterwards. One function runs at a time (the
    process has one environment, and the pump and the WebSocket API invoke from different threads).

    A variable that another thread changed while the function ran (a test setting or removing it) is left as that
    thread made it: only the values this function set are put back, so an invocation on the pump's thread never
    brings back a value the rest of the process has since replaced or removed."""
    with _ENVIRONMENT_LOCK:
        previous = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            yield
        finally:
            for name, value in previous.items():
                if os.environ.get(name) != environment[name]:
                    continue  # changed by another thread meanwhile: theirs now
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def scheduled_event(rule_arn: str, region: str, account: str, when: datetime) -> dict[str, Any]:
    """The event EventBridge sends a target of a scheduled rule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


@dataclass(slots=True)
class LambdaContext:
    """The parts of Lambda's context object a handler may read."""

    function_name: str
    timeout_seconds: int
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 1024
    _deadline: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))
