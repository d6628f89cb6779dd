"""The one loop of a task taking jobs from a queue: the compaction and ingest tasks both run it, with
their own settings and their own job runner (docs/design.md, "The runtime seam").

Each message is received (hidden for the visibility timeout), kept invisible while its job runs (the visibility is
extended every ``keep_alive_seconds`` on a thread), run, and then deleted when the job is done with (finished,
already done or rejected), or, when it failed, left to be delivered again: at once after ``failed_visibility_seconds``
when that is set, else when its visibility runs out. The queue moves a message received too often to its
dead-letter queue.

The task stops when no job has arrived for ``max_idle_seconds`` (receiving with long polls of ``wait_seconds`` and
pausing ``delay_before_retry_seconds`` between empty receives; 0 stops at the first empty receive), after
``max_consecutive_failures`` failed jobs in a row, after a job once it has run for ``max_alive_seconds``, after
``max_jobs`` messages, or before a receive once ``stop`` is set. Standard library only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from sleeper.core.queue import Message, Queue, QueueError

__all__ = ["KeepAlive", "LoopSettings", "TaskExit", "TaskLoop", "run_task_loop"]

_LOG = logging.getLogger(__name__)

R = TypeVar("R")


class TaskExit(Enum):
    """Why a task stopped."""

    IDLE = "IDLE"
    MAX_CONSECUTIVE_FAILURES = "MAX_CONSECUTIVE_FAILURES"
    MAX_ALIVE_TIME = "MAX_ALIVE_TIME"
    MAX_JOBS = "MAX_JOBS"
    STOPPED = "STOPPED"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSettings:
    """How a task takes jobs from its queue and when it stops (see the module docstring).

    Attributes:
        wait_seconds: How long one receive waits for a job (0 to 20).
        max_idle_seconds: Stop once no job has arrived for this long (0: at the first empty receive).
        delay_before_retry_seconds: Pause after an empty receive that does not stop the task.
        max_consecutive_failures: Stop after this many failed jobs in a row (None: never).
        keep_alive_seconds: How often the visibility of the job being run is extended.
        visibility_timeout_seconds: How long a received job stays invisible, and how far each extension reaches.
        failed_visibility_seconds: How long a failed job stays invisible before it may be received again (None: until
            its visibility runs out).
        max_alive_seconds: Stop after a job once the task has run this long (None: never).
    """

    wait_seconds: float
    max_idle_seconds: float
    delay_before_retry_seconds: float
    max_consecutive_failures: int | None
    keep_alive_seconds: float
    visibility_timeout_seconds: float
    failed_visibility_seconds: float | None = None
    max_alive_seconds: float | None = None


class KeepAlive:
    """Extends a received message's visibility on a thread until stopped, so no other task takes the job."""

    def __init__(self, queue: Queue, message: Message, period: float, extend_to: float) -> None:
        self._queue = queue
        self._handle = message.receipt_handle
        self._period = period
        self._extend_to = extend_to
        self._stop = threading.Event()
        self.lost = threading.Event()
        """Set if an extension failed because the message is no longer ours (it may be delivered again)."""
        self._thread = threading.Thread(target=self._run, name="sleeper-task-keepalive", daemon=True)

    def __enter__(self) -> KeepAlive:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self._queue.change_visibility(self._handle, self._extend_to)
            except QueueError as e:
                _LOG.warning("lost the job message while running it: %s", e)
                self.lost.set()
                return
            except Exception:  # a transient failure: the next period tries again
                _LOG.exception("extending the visibility of a job message failed")


@dataclass(slots=True)
class TaskLoop(Generic[R]):
    """What a task's loop did so far: the outcome of every message received, in order, and the time spent on them
    (filled in as the loop runs, so a caller recording the task in a ``finally`` sees what was done before an
    error)."""

    outcomes: list[R]
    exit: TaskExit = TaskExit.IDLE
    job_seconds: float = 0.0


def run_task_loop(
    queue: Queue,
    run_message: Callable[[str], R],
    failed: Callable[[R], bool],
    settings: LoopSettings,
    *,
    loop: TaskLoop[R] | None = None,
    max_jobs: int | None = None,
    stop: threading.Event | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> TaskLoop[R]:
    """Takes jobs from a queue until a stop condition (see the module docstring).

    Args:
        queue: The job queue.
        run_message: Runs one message's job and returns its outcome (errors are part of the outcome, not raised).
        failed: Whether an outcome is a failed job (its message is delivered again); otherwise it is deleted.
        settings: Receive and stop settings.
        loop: Where to record what the loop does (a new one if omitted).
        max_jobs: Stop after this many messages.
        stop: Stop before the next receive once set.
        monotonic: Seconds for idle and alive times (a fake in tests).
        sleep: Waits between empty receives (a fake in tests).

    Returns:
        Why the loop stopped and the outcome of each message.
    """
    state = loop if loop is not None else TaskLoop[R](outcomes=[])
    failures_in_row = 0
    started = monotonic()
    idle_since = started
    while True:
        if stop is not None and stop.is_set():
            state.exit = TaskExit.STOPPED
            return state
        if max_jobs is not None and len(state.outcomes) >= max_jobs:
            state.exit = TaskExit.MAX_JOBS
            return state
        messages = queue.receive(
            1, visibility_timeout_seconds=settings.visibility_timeout_seconds, wait_seconds=settings.wait_seconds
        )
        if not messages:
            if monotonic() - idle_since >= settings.max_idle_seconds:
                state.exit = TaskExit.IDLE
                return state
            sleep(settings.delay_before_retry_seconds)
            continue
        message = messages[0]
        job_start = monotonic()
        with KeepAlive(queue, message, settings.keep_alive_seconds, settings.visibility_timeout_seconds):
            outcome = run_message(message.body)
        state.outcomes.append(outcome)
        now = monotonic()
        state.job_seconds += now - job_start
        idle_since = now
        if failed(outcome):
            if settings.failed_visibility_seconds is not None:
                _return(queue, message, settings.failed_visibility_seconds)
            failures_in_row += 1
            if settings.max_consecutive_failures is not None and failures_in_row >= settings.max_consecutive_failures:
                state.exit = TaskExit.MAX_CONSECUTIVE_FAILURES
                return state
        else:
            queue.delete(message.receipt_handle)
            failures_in_row = 0
        if settings.max_alive_seconds is not None and now - started >= settings.max_alive_seconds:
            state.exit = TaskExit.MAX_ALIVE_TIME
            return state


def _return(queue: Queue, message: Message, seconds: float) -> None:
    try:
        queue.change_visibility(message.receipt_handle, seconds)
    except QueueError as e:  # the message is no longer ours: it comes back on its own
        _LOG.warning("could not return a failed job message: %s", e)
