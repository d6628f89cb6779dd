"""Fakes of the task creation ports (:mod:`sleeper.core.jobs.task_creation`) shared by the tests of every job kind."""

from __future__ import annotations

from collections.abc import Callable

from sleeper.core.queue import QueueCounts


class FakeQueue:
    """A job queue with fixed counts."""

    def __init__(self, visible: int, in_flight: int = 0) -> None:
        self.counts = QueueCounts(visible=visible, in_flight=in_flight)

    def approximate_counts(self) -> QueueCounts:
        return self.counts


class FakeLauncher:
    """Starts tasks one at a time, checking for an abort after each, like the ECS launcher between batches.

    Args:
        running: Tasks running and pending before any launch.
        on_launch: Called after each task started (to move a fake clock).
        abortable: False for a kind with no time limit: an abort asked of it fails the test.
        events: Where to record ``count`` and ``launch <n>`` calls in order, if anywhere.
    """

    def __init__(
        self,
        running: int,
        *,
        on_launch: Callable[[], None] = lambda: None,
        abortable: bool = True,
        events: list[str] | None = None,
    ) -> None:
        self.running = running
        self.counted = 0
        self.requested: list[int] = []
        self.events = events if events is not None else []
        self._on_launch = on_launch
        self._abortable = abortable

    def running_and_pending_tasks(self) -> int:
        self.counted += 1
        self.events.append("count")
        return self.running

    def launch_tasks(self, count: int, *, should_abort: Callable[[], bool]) -> int:
        self.requested.append(count)
        self.events.append(f"launch {count}")
        launched = 0
        for _ in range(count):
            self.running += 1
            launched += 1
            self._on_launch()
            aborted = should_abort()
            assert self._abortable or not aborted
            if aborted:
                break
        return launched


class FakeScaler:
    """Records the targets the hosts were scaled to."""

    def __init__(self) -> None:
        self.targets: list[int] = []

    def scale_to(self, tasks: int) -> None:
        self.targets.append(tasks)
