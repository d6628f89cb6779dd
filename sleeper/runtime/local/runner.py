"""The local runtime: a scheduler and queue workers running a local instance's background work.

The scheduler mirrors Sleeper's EventBridge rules: when an operation's period has passed it sends one message per
online table (body = table id, message group = table id) to the operation's FIFO queue, so one run per table happens
at a time. Workers take messages from every queue and run the handler for it: the same feature entry the Lambdas run,
through the router (:mod:`sleeper.runtime.router`), whose one failure mapping decides what becomes of the message. A
handler that raises leaves its message to be delivered again after the visibility timeout (and, after the queue's
maxReceiveCount, moved to the dead-letter queue), so stopping and starting again loses nothing; a message naming a
table that no longer exists is dropped.

``run_until_idle`` runs every operation once per round and drains the queues until the instance is idle: no queue
the runner drains holds a message, visible, in flight or delayed (a delayed message, such as a pending batch of
compaction jobs the dispatcher returned to wait for its assignment, is made visible at once when nothing else is left,
rather than waited for). A round drains the queues in handler order, and some again right after another
(:data:`DRAIN_AGAIN_AFTER`): the committer's after job creation, so that a pending batch of compaction jobs whose
assignment creation sent to the committer is assigned before the dispatcher looks at it. A message whose handler
failed is made visible again at the end of its round, so it is retried in the next round (until it succeeds or its
queue's receive limit moves it to the dead-letter queue) rather than after its visibility timeout. Messages in flight
in other processes are waited for; those of processes found gone are released at once
(``sleeper.runtime.local.tasks.recover_dead_tasks``).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from sleeper.core import (
    COMPACTION_JOB_CREATION_Q,
    COMPACTION_JOB_Q,
    STATE_STORE_COMMITTER_Q,
    OutgoingMessage,
    QueueCounts,
    ReceiptHandleError,
    Schedule,
    crash_point,
    local_schedules,
    log_context,
)
from sleeper.runtime.local.instance import LocalInstance, is_paused
from sleeper.runtime.local.tasks import recover_dead_tasks
from sleeper.runtime.router import Disposition, settle

__all__ = [
    "DRAIN_AGAIN_AFTER",
    "SCHEDULES",
    "Handler",
    "LocalRunner",
    "RoundSummary",
    "Schedule",
]

LOGGER = logging.getLogger("sleeper.runtime")

DRAIN_AGAIN_AFTER: Mapping[str, tuple[str, ...]] = {COMPACTION_JOB_CREATION_Q: (STATE_STORE_COMMITTER_Q,)}
"""Queues a round drains again right after draining another. Job creation sends the assignment of each pending batch
of jobs to the committer, whose queue comes before it in the round (the committer applies the splits and other
commits that creation should see); draining the committer again before the dispatcher lets the batch be assigned and
dispatched in the same round. Otherwise the dispatcher would find its files unassigned and return it to the pending
queue with a delay (``sleeper.table.compaction.job.send.retry.delay.seconds``) that ``run_until_idle`` does not wait
for: a delayed message is neither visible nor in flight."""

Handler = Callable[[LocalInstance, str], str]
"""Runs one message body on an instance; returns a line for the log; raises if the message should be retried."""


SCHEDULES: tuple[Schedule, ...] = local_schedules()
"""The periodic operations of a local instance: the registry's scheduled handlers that run locally, with the period
properties and units their rules use on AWS."""


@dataclass(slots=True)
class RoundSummary:
    """What one round of the runner did.

    Attributes:
        triggered: Per-table messages the scheduler sent.
        processed: Messages handled per queue (successes).
        failed: Messages whose handler raised, per queue.
        pending: Set by ``run_until_idle``: the queues still holding messages (visible or in flight) when it
            stopped, empty if it stopped because the instance was idle; None for a round or a drain.
    """

    triggered: int = 0
    processed: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    pending: dict[str, QueueCounts] | None = None

    @property
    def idle(self) -> bool:
        """Whether ``run_until_idle`` stopped because no queue held a message, visible or in flight."""
        return self.pending == {}

    @property
    def work_done(self) -> int:
        """Messages handled on the work queues (the scheduled per-table queues excluded)."""
        scheduled = {s.queue for s in SCHEDULES}
        return sum(count for queue, count in self.processed.items() if queue not in scheduled)

    def add(self, other: RoundSummary) -> None:
        """Adds another round's counts to this one."""
        self.triggered += other.triggered
        for queue, count in other.processed.items():
            self.processed[queue] = self.processed.get(queue, 0) + count
        for queue, count in other.failed.items():
            self.failed[queue] = self.failed.get(queue, 0) + count


class LocalRunner:
    """Runs the scheduler and the queue workers of a local instance in this process.

    Args:
        instance: The instance.
        handlers: The handler per queue, in the order queues are drained each round.
        periods: Period overrides in seconds per schedule name (default: the instance properties).
        clock: Monotonic seconds, for periods.
        workers: Worker processes that drain each of the ``parallel_queues`` together (1 = this process only).
        parallel_queues: The queues worth draining in several processes (compaction jobs, by default).
        worker_drain: What each worker process runs: drains one queue of the instance in a directory, making the
            messages that failed visible again at the end if the third argument is true (picklable).
        sleep: Waits while ``run_until_idle`` waits for messages in flight in other processes.
    """

    def __init__(
        self,
        instance: LocalInstance,
        handlers: Mapping[str, Handler],
        *,
        periods: Mapping[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        workers: int = 1,
        parallel_queues: Sequence[str] = (COMPACTION_JOB_Q,),
        worker_drain: Callable[[str, str, bool], RoundSummary] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.instance = instance
        self.handlers = dict(handlers)
        self._clock = clock
        self._workers = max(1, workers)
        self._parallel = set(parallel_queues) if self._workers > 1 and worker_drain is not None else set()
        self._worker_drain = worker_drain
        self._sleep = sleep
        self._executor: ProcessPoolExecutor | None = None
        self._periods = {s.name: self._period(s, periods or {}) for s in SCHEDULES}
        self._last_run: dict[str, float] = {}

    def _period(self, schedule: Schedule, overrides: Mapping[str, float]) -> float:
        if schedule.name in overrides:
            return float(overrides[schedule.name])
        value = self.instance.properties.get(schedule.period_property)
        return float(value or 1) * schedule.unit_seconds

    # --- scheduler -------------------------------------------------------------------------------------------
    def trigger(self, *, force: bool = False) -> int:
        """Sends one message per online table for every operation whose period has passed (every one if forced).

        Nothing is sent while the system is paused.

        Returns:
            The number of messages sent.
        """
        if is_paused(self.instance):
            return 0
        now = self._clock()
        online = [t.table_id for t in self.instance.table_index.list_tables() if t.online]
        sent = 0
        for schedule in SCHEDULES:
            if schedule.queue not in self.handlers:
                continue
            last = self._last_run.get(schedule.name)
            if not force and last is not None and now - last < self._periods[schedule.name]:
                continue
            self._last_run[schedule.name] = now
            if not schedule.per_table:
                messages = [OutgoingMessage(body="", group_id="all", dedup_id=str(uuid.uuid4()))]
            elif not online:
                continue
            else:
                messages = [
                    OutgoingMessage(body=table_id, group_id=table_id, dedup_id=str(uuid.uuid4())) for table_id in online
                ]
            queue = self.instance.queue(schedule.queue)
            for start in range(0, len(messages), 10):
                queue.send_batch(messages[start : start + 10])
            sent += len(messages)
        return sent

    # --- workers ---------------------------------------------------------------------------------------------
    def drain(
        self, queue_name: str, *, max_messages: int | None = None, retry_failed_now: bool = False
    ) -> RoundSummary:
        """Handles messages of one queue until it has none visible (or ``max_messages`` were handled).

        A message whose handler raises stays in flight until its visibility timeout, or, with ``retry_failed_now``,
        until the drain ends: it is then made visible again, to be retried by the next drain.
        """
        handler = self.handlers[queue_name]
        queue = self.instance.queue(queue_name)
        summary = RoundSummary()
        handled = 0
        failed_handles: list[str] = []
        while max_messages is None or handled < max_messages:
            messages = queue.receive(1)
            if not messages:
                break
            message = messages[0]
            handled += 1
            with log_context(message_id=message.message_id):
                settled = settle(partial(handler, self.instance, message.body))
            if settled.disposition is Disposition.RETRY:
                LOGGER.error(
                    "%s: message %s failed; it will be delivered again",
                    queue_name,
                    message.message_id,
                    exc_info=settled.error,
                )
                summary.failed[queue_name] = summary.failed.get(queue_name, 0) + 1
                failed_handles.append(message.receipt_handle)
                continue
            crash_point("worker.before_message_delete")
            queue.delete(message.receipt_handle)
            summary.processed[queue_name] = summary.processed.get(queue_name, 0) + 1
            if settled.disposition is Disposition.DROPPED:
                LOGGER.warning("%s: message %s %s", queue_name, message.message_id, settled.line)
            elif settled.line:
                LOGGER.info("%s: %s", queue_name, settled.line)
        if retry_failed_now:
            for handle in failed_handles:
                try:
                    queue.change_visibility(handle, 0)
                except ReceiptHandleError:  # no longer in flight: its visibility timeout passed already
                    pass
        return summary

    def drain_in_workers(self, queue_name: str, *, retry_failed_now: bool = False) -> RoundSummary:
        """Drains one queue with every worker process at once (they share the instance's SQLite queue)."""
        assert self._worker_drain is not None
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self._workers, mp_context=multiprocessing.get_context("spawn"))
        directory = str(self.instance.directory)
        futures = [
            self._executor.submit(self._worker_drain, directory, queue_name, retry_failed_now)
            for _ in range(self._workers)
        ]
        summary = RoundSummary()
        for future in futures:
            summary.add(future.result())
        return summary

    def close(self) -> None:
        """Stops the worker processes, if any were started."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def run_round(self, *, force: bool = False, retry_failed_now: bool = False) -> RoundSummary:
        """Triggers due operations, then drains every queue once, in handler order, and those of
        :data:`DRAIN_AGAIN_AFTER` again (see ``drain``)."""
        summary = RoundSummary(triggered=self.trigger(force=force))
        for queue_name in self.handlers:
            for name in (queue_name, *DRAIN_AGAIN_AFTER.get(queue_name, ())):
                if name not in self.handlers:
                    continue
                if name in self._parallel:
                    summary.add(self.drain_in_workers(name, retry_failed_now=retry_failed_now))
                else:
                    summary.add(self.drain(name, retry_failed_now=retry_failed_now))
        return summary

    def pending(self) -> dict[str, QueueCounts]:
        """The queues this runner drains that hold messages, visible or in flight, with their counts."""
        out: dict[str, QueueCounts] = {}
        for queue_name in self.handlers:
            counts = self.instance.queue(queue_name).approximate_counts()
            if counts.visible or counts.in_flight:
                out[queue_name] = counts
        return out

    def run_until_idle(self, *, max_rounds: int = 50, poll_seconds: float = 1.0) -> RoundSummary:
        """Runs every operation and drains the queues, round after round, until the instance is idle: no queue
        holds a message, visible or in flight (see the module docstring).

        While the only messages left are in flight in other processes, it waits ``poll_seconds`` at a time for
        them, releasing those of processes found gone.

        Args:
            max_rounds: Stop after this many rounds that did work.
            poll_seconds: How long to wait at a time for messages in flight elsewhere.

        Returns:
            The totals over every round, with ``pending`` set: empty if it stopped idle, else the queues with work
            left.
        """
        total = RoundSummary()
        rounds = 0
        while True:
            summary = self.run_round(force=True, retry_failed_now=True)
            total.add(summary)
            pending = self.pending()
            if summary.work_done or summary.failed:
                # work may have made more work for the scheduled operations of the next round
                rounds += 1
                if rounds >= max_rounds:
                    break
                continue
            if not pending:
                # messages sent with a delay (a pending compaction job batch returned to wait for its assignment)
                # are neither visible nor in flight: deliver them now rather than stop with work left
                if self._deliver_delayed_now():
                    continue
                break
            # the round found nothing to do, yet messages are left: in flight in other processes (or visible only
            # after them, in a FIFO group): release those of processes that are gone, and wait for the others
            if recover_dead_tasks(self.instance).messages_released:
                continue
            in_flight = ", ".join(f"{name} {counts.in_flight}" for name, counts in sorted(pending.items()))
            LOGGER.info("waiting for messages in flight in other processes: %s", in_flight)
            self._sleep(poll_seconds)
        total.pending = pending
        return total

    def _deliver_delayed_now(self) -> int:
        released = 0
        for queue_name in self.handlers:
            count = self.instance.queues.queue(queue_name).deliver_delayed_now()
            if count:
                LOGGER.info("%s: %d delayed messages made visible now, to finish the work", queue_name, count)
            released += count
        return released

    def run_forever(self, stop: threading.Event, *, poll_seconds: float = 1.0) -> RoundSummary:
        """Runs rounds until ``stop`` is set, waiting ``poll_seconds`` after a round that did no work."""
        total = RoundSummary()
        while not stop.is_set():
            summary = self.run_round()
            total.add(summary)
            if summary.work_done == 0 and sum(summary.processed.values()) == 0:
                stop.wait(poll_seconds)
        return total
