"""In-memory queues with SQS semantics, for tests and single-process embedded use.

Time comes from an injected clock, so visibility timeouts, delays and the deduplication window can be tested without
waiting. Only a long-poll receive waits in real time (for a send from another thread).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sleeper.core.queue import (
    DEDUPLICATION_WINDOW_SECONDS,
    Clock,
    Message,
    OutgoingMessage,
    PreparedSend,
    QueueConfig,
    QueueCounts,
    QueueNotFoundError,
    ReceiptHandleError,
    check_receive,
    check_visibility_change,
    dead_letter_config_for,
    merge_config,
    prepare_send,
)


@dataclass(slots=True, kw_only=True)
class _Stored:
    seq: int
    message_id: str
    body: str
    group_id: str | None
    visible_at: float
    receive_count: int = 0
    receipt_handle: str | None = None
    received_at: float | None = None
    dead_letter_source: str | None = None

    def in_flight(self, now: float) -> bool:
        return self.receipt_handle is not None and self.visible_at > now


@dataclass(slots=True)
class _State:
    config: QueueConfig
    messages: list[_Stored] = field(default_factory=list)
    dedup: dict[str, tuple[str, float]] = field(default_factory=dict)


class InMemoryQueues:
    """A family of in-memory queues sharing one clock (implements ``sleeper.core.queue.Queues``).

    Args:
        clock: Current time in seconds; defaults to ``time.time``.
    """

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._condition = threading.Condition(threading.RLock())
        self._states: dict[str, _State] = {}
        self._next_seq = 0

    def queue(
        self,
        name: str,
        *,
        fifo: bool | None = None,
        visibility_timeout: float | None = None,
        dead_letter: str | None = None,
        max_receive_count: int | None = None,
        content_based_deduplication: bool | None = None,
        delay_seconds: float | None = None,
    ) -> InMemoryQueue:
        """Gets a queue, creating it or updating the options given (see ``Queues.queue``)."""
        with self._condition:
            existing = self._states.get(name)
            config = merge_config(
                existing.config if existing else None,
                name,
                fifo=fifo,
                visibility_timeout=visibility_timeout,
                dead_letter=dead_letter,
                max_receive_count=max_receive_count,
                content_based_deduplication=content_based_deduplication,
                delay_seconds=delay_seconds,
            )
            dlq_state = self._states.get(config.dead_letter_queue) if config.dead_letter_queue else None
            dlq_config = dead_letter_config_for(config, dlq_state.config if dlq_state else None)
            if dlq_config is not None:
                self._states[dlq_config.name] = _State(dlq_config)
            if existing is None:
                self._states[name] = _State(config)
            else:
                existing.config = config
            return InMemoryQueue(name, self)

    def names(self) -> list[str]:
        """Names of all queues, sorted."""
        with self._condition:
            return sorted(self._states)

    # Internal operations, called by InMemoryQueue with the condition's lock held.

    def _state(self, name: str) -> _State:
        try:
            return self._states[name]
        except KeyError:
            raise QueueNotFoundError(f"no queue named {name}") from None

    def _append(self, state: _State, stored: _Stored) -> None:
        state.messages.append(stored)
        self._condition.notify_all()

    def _seq(self) -> int:
        self._next_seq += 1
        return self._next_seq

    def _send(self, state: _State, prepared: PreparedSend, now: float) -> str:
        if prepared.dedup_id is not None:
            state.dedup = {key: entry for key, entry in state.dedup.items() if entry[1] > now}
            seen = state.dedup.get(prepared.dedup_id)
            if seen is not None:
                return seen[0]
        message_id = str(uuid.uuid4())
        if prepared.dedup_id is not None:
            state.dedup[prepared.dedup_id] = (message_id, now + DEDUPLICATION_WINDOW_SECONDS)
        self._append(
            state,
            _Stored(
                seq=self._seq(),
                message_id=message_id,
                body=prepared.body,
                group_id=prepared.group_id,
                visible_at=now + prepared.delay_seconds,
            ),
        )
        return message_id

    def _move(self, source: _State, stored: _Stored, target_name: str, *, dead_letter_source: str | None) -> None:
        target = self._state(target_name)
        source.messages.remove(stored)
        group_id = stored.group_id
        if target.config.fifo and group_id is None:
            group_id = stored.message_id
        self._append(
            target,
            _Stored(
                seq=self._seq(),
                message_id=stored.message_id,
                body=stored.body,
                group_id=group_id,
                visible_at=self._clock(),
                dead_letter_source=dead_letter_source,
            ),
        )

    def _next_candidate(self, state: _State, now: float, taken: set[int], taken_groups: set[str]) -> _Stored | None:
        if not state.config.fifo:
            return next((m for m in state.messages if m.visible_at <= now and m.seq not in taken), None)
        heads: set[str] = set()
        for stored in state.messages:
            group = stored.group_id or ""
            if group in heads:
                continue
            heads.add(group)
            if stored.visible_at <= now and group not in taken_groups:
                return stored
        return None

    def _receive_now(self, state: _State, max_messages: int, visibility: float) -> list[Message]:
        now = self._clock()
        config = state.config
        taken: set[int] = set()
        taken_groups: set[str] = set()
        received: list[Message] = []
        while len(received) < max_messages:
            stored = self._next_candidate(state, now, taken, taken_groups)
            if stored is None:
                break
            if (
                config.dead_letter_queue is not None
                and config.max_receive_count is not None
                and stored.receive_count >= config.max_receive_count
            ):
                self._move(state, stored, config.dead_letter_queue, dead_letter_source=config.name)
                continue
            stored.receive_count += 1
            stored.receipt_handle = uuid.uuid4().hex
            stored.received_at = now
            stored.visible_at = now + visibility
            taken.add(stored.seq)
            taken_groups.add(stored.group_id or "")
            received.append(
                Message(
                    message_id=stored.message_id,
                    body=stored.body,
                    receipt_handle=stored.receipt_handle,
                    receive_count=stored.receive_count,
                    group_id=stored.group_id,
                )
            )
        return received


class InMemoryQueue:
    """One queue of an ``InMemoryQueues`` family (implements ``sleeper.core.queue.Queue``)."""

    def __init__(self, name: str, family: InMemoryQueues) -> None:
        self._name = name
        self._family = family

    @property
    def name(self) -> str:
        """The queue name."""
        return self._name

    @property
    def config(self) -> QueueConfig:
        """The queue's current configuration."""
        with self._family._condition:
            return self._family._state(self._name).config

    def send(
        self, body: str, *, group_id: str | None = None, dedup_id: str | None = None, delay_seconds: float = 0
    ) -> str:
        """Sends a message (see ``Queue.send``)."""
        return self.send_batch(
            [OutgoingMessage(body=body, group_id=group_id, dedup_id=dedup_id, delay_seconds=delay_seconds)]
        )[0]

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        """Sends several messages atomically; returns their ids in order."""
        family = self._family
        with family._condition:
            state = family._state(self._name)
            prepared = [prepare_send(state.config, message) for message in messages]
            now = family._clock()
            return [family._send(state, item, now) for item in prepared]

    def receive(
        self, max_messages: int = 1, *, visibility_timeout_seconds: float | None = None, wait_seconds: float = 0
    ) -> list[Message]:
        """Receives up to ``max_messages`` messages (see ``Queue.receive``)."""
        check_receive(max_messages, visibility_timeout_seconds, wait_seconds)
        family = self._family
        deadline = time.monotonic() + wait_seconds
        with family._condition:
            while True:
                state = family._state(self._name)
                visibility = (
                    visibility_timeout_seconds
                    if visibility_timeout_seconds is not None
                    else state.config.visibility_timeout_seconds
                )
                received = family._receive_now(state, max_messages, visibility)
                remaining = deadline - time.monotonic()
                if received or remaining <= 0:
                    return received
                family._condition.wait(remaining)

    def change_visibility(self, receipt_handle: str, seconds: float) -> None:
        """Makes a received message visible ``seconds`` from now (see ``Queue.change_visibility``)."""
        family = self._family
        with family._condition:
            now = family._clock()
            stored = self._in_flight(receipt_handle, now)
            assert stored.received_at is not None
            check_visibility_change(seconds, now, stored.received_at)
            stored.visible_at = now + seconds
            if seconds == 0:
                family._condition.notify_all()

    def delete(self, receipt_handle: str) -> None:
        """Deletes a received message; a stale handle does nothing."""
        with self._family._condition:
            state = self._family._state(self._name)
            for stored in state.messages:
                if stored.receipt_handle == receipt_handle:
                    state.messages.remove(stored)
                    return

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        family = self._family
        with family._condition:
            now = family._clock()
            messages = family._state(self._name).messages
            in_flight = sum(1 for m in messages if m.in_flight(now))
            visible = sum(1 for m in messages if m.visible_at <= now)
            return QueueCounts(visible=visible, in_flight=in_flight)

    def redrive_dead_letters(self, to_queue: str | None = None) -> int:
        """Moves messages not in flight to ``to_queue`` or back to their source (see ``Queue.redrive_dead_letters``)."""
        family = self._family
        with family._condition:
            now = family._clock()
            state = family._state(self._name)
            moves: list[tuple[_Stored, str]] = []
            for stored in state.messages:
                target = to_queue or stored.dead_letter_source
                if target is not None and not stored.in_flight(now):
                    moves.append((stored, target))
            for target in {target for _, target in moves}:
                family._state(target)
            for stored, target in moves:
                family._move(state, stored, target, dead_letter_source=None)
            return len(moves)

    def _in_flight(self, receipt_handle: str, now: float) -> _Stored:
        for stored in self._family._state(self._name).messages:
            if stored.receipt_handle == receipt_handle and stored.in_flight(now):
                return stored
        raise ReceiptHandleError(f"receipt handle is not in flight on queue {self._name}")
