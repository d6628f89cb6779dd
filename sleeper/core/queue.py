"""The message queue port: SQS semantics that every adapter (in-memory, SQLite, SQS) provides.

A queue delivers each message at least once. A received message stays invisible for a visibility timeout; if it is
not deleted in that time it becomes visible again and its receive count grows. A queue may name a dead-letter queue
and a maximum receive count: a message that has already been received that many times is moved to the dead-letter
queue instead of being delivered again (SQS redrive). FIFO queues deliver the messages of one message group in order,
with at most one message of a group in flight, and drop a send whose deduplication id was seen in the last five
minutes.

Limits follow SQS so that code which works on the local instance also works on AWS: at most 10 messages per receive,
long polls of at most 20 s, visibility timeouts of at most 12 h from the receive, delays of at most 15 min, and a
maximum message size (256 KiB by default).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypedDict, TypeVar, Unpack

from sleeper.core.exceptions import SleeperError

Clock = Callable[[], float]
"""Current time in seconds since the epoch (``time.time`` in production, a fake in tests)."""

MAX_RECEIVE_BATCH = 10
MAX_WAIT_SECONDS = 20.0
MAX_VISIBILITY_SECONDS = 43_200.0
MAX_DELAY_SECONDS = 900.0
DEDUPLICATION_WINDOW_SECONDS = 300.0
DEFAULT_VISIBILITY_SECONDS = 30.0
DEFAULT_MAX_RECEIVE_COUNT = 3
DEFAULT_MAX_MESSAGE_BYTES = 262_144
MAX_MESSAGE_BYTES_LIMIT = 1_048_576


class QueueError(SleeperError):
    """A queue operation failed."""


class QueueNotFoundError(QueueError):
    """No queue exists with the given name."""


class InvalidQueueRequestError(QueueError):
    """A request or configuration breaks a queue rule (the message names the rule)."""


class MessageTooLargeError(QueueError):
    """A message body is larger than the queue's maximum message size."""


class ReceiptHandleError(QueueError):
    """A receipt handle does not name a message currently in flight under that handle.

    The message was deleted, or its visibility timeout expired (it may have been received again under a new handle).
    A worker that sees this while extending visibility has lost its claim on the message and should stop.
    """


class VisibilityLimitError(QueueError):
    """Extending visibility would keep a message invisible for more than 12 hours after it was received."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A message as received from a queue.

    Attributes:
        message_id: Id given to the message when it was sent; the same on every delivery.
        body: The message body.
        receipt_handle: Names this delivery; needed to delete the message or change its visibility. A new handle is
            issued on every delivery and only the newest one is valid.
        receive_count: How many times the message has been received, including this delivery.
        group_id: Message group id (FIFO queues), if any.
    """

    message_id: str
    body: str
    receipt_handle: str
    receive_count: int
    group_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OutgoingMessage:
    """A message to send in a batch, with the same options as ``Queue.send``."""

    body: str
    group_id: str | None = None
    dedup_id: str | None = None
    delay_seconds: float = 0


class QueueCounts(NamedTuple):
    """Approximate message counts of a queue.

    Attributes:
        visible: Messages available to receive now (excluding delayed messages).
        in_flight: Messages received and not yet deleted whose visibility timeout has not expired.
    """

    visible: int
    in_flight: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueConfig:
    """How a queue behaves.

    Attributes:
        name: Queue name.
        fifo: Whether the queue is FIFO (message groups, deduplication).
        visibility_timeout_seconds: Default visibility timeout of a receive.
        dead_letter_queue: Name of the queue that takes messages received too often, or None.
        max_receive_count: How many receives a message gets before it moves to the dead-letter queue.
        content_based_deduplication: FIFO only: use a hash of the body when a send has no deduplication id.
        delay_seconds: Default delay of a send.
        max_message_bytes: Largest accepted body, in UTF-8 bytes.
    """

    name: str
    fifo: bool = False
    visibility_timeout_seconds: float = DEFAULT_VISIBILITY_SECONDS
    dead_letter_queue: str | None = None
    max_receive_count: int | None = None
    content_based_deduplication: bool = False
    delay_seconds: float = 0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidQueueRequestError("a queue needs a name")
        check_visibility_timeout(self.visibility_timeout_seconds)
        _check_range("delay", self.delay_seconds, MAX_DELAY_SECONDS)
        if not 1024 <= self.max_message_bytes <= MAX_MESSAGE_BYTES_LIMIT:
            raise InvalidQueueRequestError(
                f"maximum message size must be between 1024 and {MAX_MESSAGE_BYTES_LIMIT} bytes"
            )
        if (self.dead_letter_queue is None) != (self.max_receive_count is None):
            raise InvalidQueueRequestError("a dead-letter queue and a maximum receive count go together")
        if self.max_receive_count is not None and not 1 <= self.max_receive_count <= 1000:
            raise InvalidQueueRequestError("maximum receive count must be between 1 and 1000")
        if self.dead_letter_queue == self.name:
            raise InvalidQueueRequestError("a queue cannot be its own dead-letter queue")
        if self.content_based_deduplication and not self.fifo:
            raise InvalidQueueRequestError("content-based deduplication needs a FIFO queue")


class Queue(Protocol):
    """One named queue. Every method is safe to call from several threads and, for durable adapters, processes.

    Adapters subclass it to inherit ``send`` (one message through ``send_batch``).
    """

    @property
    def name(self) -> str:
        """The queue name."""
        ...

    @property
    def config(self) -> QueueConfig:
        """The queue's current configuration."""
        ...

    def send(
        self, body: str, *, group_id: str | None = None, dedup_id: str | None = None, delay_seconds: float = 0
    ) -> str:
        """Sends a message.

        Args:
            body: The message body.
            group_id: Message group (required on FIFO queues).
            dedup_id: FIFO only: a send with an id already sent in the last 5 minutes is dropped and the first
                message's id returned. Needed on FIFO queues without content-based deduplication.
            delay_seconds: Standard queues only: how long the message stays invisible after sending (0 = the
                queue's default delay).

        Returns:
            The message id.

        Raises:
            MessageTooLargeError: If the body is larger than the queue allows.
            InvalidQueueRequestError: If the options do not suit the queue type.
        """
        outgoing = OutgoingMessage(body=body, group_id=group_id, dedup_id=dedup_id, delay_seconds=delay_seconds)
        return self.send_batch([outgoing])[0]

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        """Sends several messages at once (atomically where the adapter can); returns their ids in order."""
        ...

    def receive(
        self, max_messages: int = 1, *, visibility_timeout_seconds: float | None = None, wait_seconds: float = 0
    ) -> list[Message]:
        """Receives up to ``max_messages`` (1 to 10) visible messages and hides them for the visibility timeout.

        Messages already received ``max_receive_count`` times are moved to the dead-letter queue instead. With
        ``wait_seconds`` > 0 the call waits (really, up to 20 s) for a message when none is visible.
        """
        ...

    def change_visibility(self, receipt_handle: str, seconds: float) -> None:
        """Makes a received message visible again ``seconds`` from now (keep-alive, or 0 to return it).

        Raises:
            ReceiptHandleError: If the handle is not the current delivery of an in-flight message.
            VisibilityLimitError: If the message would stay hidden more than 12 hours after it was received.
        """
        ...

    def delete(self, receipt_handle: str) -> None:
        """Deletes a received message. A stale handle (the message was received again since) does nothing."""
        ...

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        ...

    def redrive_dead_letters(self, to_queue: str | None = None) -> int:
        """Moves the messages of this (dead-letter) queue that are not in flight to another queue.

        Args:
            to_queue: Destination queue name; None sends each message back to the queue it was dead-lettered from
                (messages that were sent to this queue directly then stay).

        Returns:
            How many messages moved. Moved messages start again with a receive count of 0.

        Raises:
            QueueNotFoundError: If a destination queue does not exist.
        """
        ...


class QueueOptions(TypedDict, total=False):
    """The options of ``Queues.queue``; an option left out or None keeps the stored value (or the default).

    Attributes:
        fifo: Whether the queue is FIFO.
        visibility_timeout: Default visibility timeout of a receive, in seconds.
        dead_letter: Name of the dead-letter queue.
        max_receive_count: How many receives a message gets before it moves to the dead-letter queue.
        content_based_deduplication: FIFO only: a hash of the body deduplicates sends without a deduplication id.
        delay_seconds: Default delay of a send.
    """

    fifo: bool | None
    visibility_timeout: float | None
    dead_letter: str | None
    max_receive_count: int | None
    content_based_deduplication: bool | None
    delay_seconds: float | None


QueueT = TypeVar("QueueT", bound=Queue)
Transaction = TypeVar("Transaction")


class Queues(ABC, Generic[QueueT, Transaction]):
    """A family of named queues sharing one store (one SQLite database, one in-memory registry, one account).

    ``queue`` applies the configuration rules (``merge_config``, ``dead_letter_config_for``) the same way on every
    adapter; an adapter gives where configurations are kept: ``_transaction`` (one change of them), ``_load``,
    ``_save`` and ``_open`` (the queue handle).
    """

    _fifo_from_name = False
    """Whether a new queue given no ``fifo`` is FIFO when its name ends in ``.fifo`` (SQS names them so)."""
    _fifo_fixed_by: str | None = None
    """The service that cannot change whether an existing queue is FIFO, or None if it can change."""

    def queue(self, name: str, **options: Unpack[QueueOptions]) -> QueueT:
        """Gets a queue, creating it or updating the options given (options left None keep their stored value).

        Naming a dead-letter queue creates it too (same type, no dead-letter queue of its own) if it does not
        exist; ``max_receive_count`` then defaults to 3.

        Raises:
            InvalidQueueRequestError: If the options break a queue rule or do not suit the adapter.
        """
        with self._transaction() as transaction:
            existing = self._load(transaction, name)
            if options.get("fifo") is None and existing is None and self._fifo_from_name:
                options["fifo"] = name.endswith(".fifo")
            config = merge_config(existing, name, **options)
            if self._fifo_fixed_by is not None and existing is not None and existing.fifo != config.fifo:
                raise InvalidQueueRequestError(f"{self._fifo_fixed_by} cannot change whether queue {name} is FIFO")
            if config.dead_letter_queue is not None:
                dlq_config = dead_letter_config_for(config, self._load(transaction, config.dead_letter_queue))
                if dlq_config is not None:
                    self._save(transaction, dlq_config, None)
            if config != existing:
                self._save(transaction, config, existing)
            return self._open(transaction, config)

    @abstractmethod
    def names(self) -> list[str]:
        """Names of all queues, sorted."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Transaction]:
        """One change of the stored configurations."""

    @abstractmethod
    def _load(self, transaction: Transaction, name: str) -> QueueConfig | None:
        """The stored configuration of a queue, or None if there is no such queue."""

    @abstractmethod
    def _save(self, transaction: Transaction, config: QueueConfig, existing: QueueConfig | None) -> None:
        """Creates a queue (``existing`` None) or changes its stored configuration from ``existing``."""

    @abstractmethod
    def _open(self, transaction: Transaction, config: QueueConfig) -> QueueT:
        """The handle of a queue that exists with this configuration."""


def merge_config(existing: QueueConfig | None, name: str, **options: Unpack[QueueOptions]) -> QueueConfig:
    """The configuration of a queue after ``Queues.queue`` with these options.

    Raises:
        InvalidQueueRequestError: If an option is unknown or the options break a queue rule.
    """
    unknown = sorted(set(options) - set(QueueOptions.__annotations__))
    if unknown:
        raise InvalidQueueRequestError(f"unknown queue options {unknown}: use {sorted(QueueOptions.__annotations__)}")
    base = existing if existing is not None else QueueConfig(name=name)
    dlq = _given(options.get("dead_letter"), base.dead_letter_queue)
    receives = _given(options.get("max_receive_count"), base.max_receive_count)
    if dlq is not None and receives is None:
        receives = DEFAULT_MAX_RECEIVE_COUNT
    if dlq is None and receives is not None and options.get("max_receive_count") is not None:
        raise InvalidQueueRequestError("a maximum receive count needs a dead-letter queue")
    return QueueConfig(
        name=name,
        fifo=_given(options.get("fifo"), base.fifo),
        visibility_timeout_seconds=_given(options.get("visibility_timeout"), base.visibility_timeout_seconds),
        dead_letter_queue=dlq,
        max_receive_count=receives,
        content_based_deduplication=_given(
            options.get("content_based_deduplication"), base.content_based_deduplication
        ),
        delay_seconds=_given(options.get("delay_seconds"), base.delay_seconds),
        max_message_bytes=base.max_message_bytes,
    )


_T = TypeVar("_T")


def _given(value: _T | None, stored: _T) -> _T:
    return stored if value is None else value


def dead_letter_config_for(source: QueueConfig, existing: QueueConfig | None) -> QueueConfig | None:
    """The configuration to create for the dead-letter queue of ``source``, or None if nothing needs creating.

    Raises:
        InvalidQueueRequestError: If the dead-letter queue exists with a different type (SQS requires the same).
    """
    if source.dead_letter_queue is None:
        return None
    if existing is not None:
        if existing.fifo != source.fifo:
            raise InvalidQueueRequestError(
                f"dead-letter queue {existing.name} must be {'FIFO' if source.fifo else 'standard'} like {source.name}"
            )
        return None
    return QueueConfig(name=source.dead_letter_queue, fifo=source.fifo)


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedSend:
    """A validated send: what an adapter stores (see ``prepare_send``)."""

    body: str
    group_id: str | None
    dedup_id: str | None
    delay_seconds: float


def prepare_send(config: QueueConfig, message: str | OutgoingMessage) -> PreparedSend:
    """Validates a send against the queue's rules and fills in defaults.

    Raises:
        MessageTooLargeError: If the body is too large.
        InvalidQueueRequestError: If a FIFO send lacks a group or deduplication id, or a standard send has a
            deduplication id, or a FIFO send has its own delay.
    """
    outgoing = message if isinstance(message, OutgoingMessage) else OutgoingMessage(body=message)
    size = len(outgoing.body.encode("utf-8"))
    if size > config.max_message_bytes:
        raise MessageTooLargeError(
            f"message of {size} bytes is larger than the {config.max_message_bytes} bytes queue {config.name} allows"
        )
    _check_range("delay", outgoing.delay_seconds, MAX_DELAY_SECONDS)
    dedup_id = outgoing.dedup_id
    if config.fifo:
        if not outgoing.group_id:
            raise InvalidQueueRequestError(f"FIFO queue {config.name} needs a message group id")
        if outgoing.delay_seconds:
            raise InvalidQueueRequestError(f"FIFO queue {config.name} does not take a delay per message")
        if dedup_id is None:
            if not config.content_based_deduplication:
                raise InvalidQueueRequestError(
                    f"FIFO queue {config.name} needs a deduplication id (no content-based deduplication)"
                )
            dedup_id = _content_hash(outgoing.body)
    elif dedup_id is not None:
        raise InvalidQueueRequestError(f"deduplication ids need a FIFO queue; {config.name} is standard")
    delay = outgoing.delay_seconds if outgoing.delay_seconds else config.delay_seconds
    return PreparedSend(body=outgoing.body, group_id=outgoing.group_id, dedup_id=dedup_id, delay_seconds=delay)


def check_receive(max_messages: int, visibility_timeout_seconds: float | None, wait_seconds: float) -> None:
    """Validates the arguments of a receive.

    Raises:
        InvalidQueueRequestError: If any is out of the SQS range.
    """
    if not 1 <= max_messages <= MAX_RECEIVE_BATCH:
        raise InvalidQueueRequestError(f"a receive takes 1 to {MAX_RECEIVE_BATCH} messages, not {max_messages}")
    if visibility_timeout_seconds is not None:
        check_visibility_timeout(visibility_timeout_seconds)
    _check_range("wait", wait_seconds, MAX_WAIT_SECONDS)


def check_visibility_change(seconds: float, now: float, received_at: float) -> None:
    """Validates a visibility change of a message received at ``received_at``.

    Raises:
        InvalidQueueRequestError: If ``seconds`` is out of range.
        VisibilityLimitError: If the message would stay hidden beyond 12 hours after it was received.
    """
    check_visibility_timeout(seconds)
    if now + seconds - received_at > MAX_VISIBILITY_SECONDS:
        raise VisibilityLimitError("a message cannot stay invisible for more than 12 hours after it was received")


def check_visibility_timeout(seconds: float) -> None:
    """Validates a visibility timeout (0 to 12 hours).

    Raises:
        InvalidQueueRequestError: If it is out of range.
    """
    _check_range("visibility timeout", seconds, MAX_VISIBILITY_SECONDS)


def _check_range(what: str, value: float, maximum: float) -> None:
    if not 0 <= value <= maximum:
        raise InvalidQueueRequestError(f"{what} must be between 0 and {maximum:g} seconds, not {value:g}")


def _content_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
