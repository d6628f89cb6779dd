"""The queue port over Amazon SQS.

``SqsQueue`` implements ``sleeper.core.queue.Queue`` on one SQS queue and ``SqsQueues`` implements
``sleeper.core.queue.Queues`` on the queues of an account and region. Sends are validated against the queue's rules
(``prepare_send``) before anything goes to SQS, so the errors are the port's own.

Where SQS differs from the in-memory and SQLite queues:

- Times are whole seconds: visibility timeouts, delays and long-poll waits are rounded up.
- A receive from a FIFO queue may return several messages of one group, in order (the other adapters return only
  the head of a group). While any of them is in flight, no other message of the group is delivered.
- A stale receipt handle (the message was received again since) deletes nothing and cannot change visibility: SQS
  needs the newest handle of a message.
- The deduplication window is SQS's own; a dropped duplicate may report a message id of its own.
- ``redrive_dead_letters`` moves each message to the queue named by its ``DeadLetterQueueSourceArn`` attribute, or
  to the only queue using this one as its dead-letter queue; a moved message gets a new message id.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import AwsError, error_code, translate, translated
from sleeper.adapters.aws.resources import create_queue, queue_arn, queue_attributes, queue_url_or_none
from sleeper.core import (
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_RECEIVE_BATCH,
    Message,
    OutgoingMessage,
    PreparedSend,
    Queue,
    QueueConfig,
    QueueCounts,
    QueueError,
    QueueNotFoundError,
    Queues,
    ReceiptHandleError,
    VisibilityLimitError,
    check_receive,
    check_visibility_timeout,
    prepare_send,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import MessageSystemAttributeNameType, QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageTypeDef, SendMessageBatchRequestEntryTypeDef

logger = logging.getLogger(__name__)

UrlResolver = Callable[[str], str | None]
"""Finds the URL of a queue by name, or None if there is no such queue."""

_NOT_FOUND_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
_STALE_HANDLE_CODES = frozenset({"ReceiptHandleIsInvalid", "MessageNotInflight"})
_BATCH_BYTES = 262_144
_REDRIVE_VISIBILITY_SECONDS = 60
_REDRIVE_WAIT_SECONDS = 1
_SYSTEM_ATTRIBUTES: list[MessageSystemAttributeNameType] = [
    "ApproximateReceiveCount",
    "MessageGroupId",
    "DeadLetterQueueSourceArn",
]


def _seconds(value: float) -> int:
    return math.ceil(value)


def _queue_error(error: ClientError | BotoCoreError, operation: str) -> QueueError | AwsError:
    if isinstance(error, ClientError) and error_code(error) in _NOT_FOUND_CODES:
        return QueueNotFoundError(f"{operation}: no such queue")
    return translate(error, operation)


def _name_from_url(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _name_from_arn(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


class SqsQueue(Queue):
    """One SQS queue (implements ``sleeper.core.queue.Queue``).

    Args:
        client: The SQS client.
        queue_url: The queue's URL.
        config: The queue's configuration (as created; see ``SqsQueues.queue`` to read it from SQS).
        resolve_url: Finds other queues by name (destinations of ``redrive_dead_letters``); defaults to SQS's
            GetQueueUrl in the client's account.
    """

    def __init__(
        self, client: SQSClient, queue_url: str, config: QueueConfig, *, resolve_url: UrlResolver | None = None
    ) -> None:
        self._client = client
        self._url = queue_url
        self._config = config
        self._resolve_url = resolve_url if resolve_url is not None else partial(queue_url_or_none, client)

    @property
    def name(self) -> str:
        """The queue name."""
        return self._config.name

    @property
    def url(self) -> str:
        """The queue URL."""
        return self._url

    @property
    def config(self) -> QueueConfig:
        """The queue's configuration."""
        return self._config

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        """Sends messages in batches of up to 10; returns their ids in order.

        Every message is validated before any is sent. Messages of one call that share a deduplication id (FIFO) are
        sent once and get the same id. The call is atomic only up to 10 messages.

        Raises:
            MessageTooLargeError: If a body is larger than the queue allows.
            InvalidQueueRequestError: If an option does not suit the queue type.
            QueueError: If SQS refused some messages (the others were sent).
            AwsError: If SQS fails otherwise.
        """
        prepared = [prepare_send(self._config, message) for message in messages]
        first_of_dedup: dict[str, int] = {}
        sources: list[int] = []
        unique: list[PreparedSend] = []
        for send in prepared:
            if send.dedup_id is not None and send.dedup_id in first_of_dedup:
                sources.append(first_of_dedup[send.dedup_id])
                continue
            if send.dedup_id is not None:
                first_of_dedup[send.dedup_id] = len(unique)
            sources.append(len(unique))
            unique.append(send)
        ids: list[str] = []
        for chunk in self._chunks(unique):
            ids.extend(self._send_chunk(chunk))
        return [ids[source] for source in sources]

    def _chunks(self, sends: list[PreparedSend]) -> list[list[PreparedSend]]:
        chunks: list[list[PreparedSend]] = []
        current: list[PreparedSend] = []
        size = 0
        for send in sends:
            body_size = len(send.body.encode("utf-8"))
            if current and (len(current) == MAX_RECEIVE_BATCH or size + body_size > _BATCH_BYTES):
                chunks.append(current)
                current, size = [], 0
            current.append(send)
            size += body_size
        if current:
            chunks.append(current)
        return chunks

    def _send_chunk(self, chunk: list[PreparedSend]) -> list[str]:
        entries: list[SendMessageBatchRequestEntryTypeDef] = []
        for index, send in enumerate(chunk):
            entry: SendMessageBatchRequestEntryTypeDef = {"Id": str(index), "MessageBody": send.body}
            if self._config.fifo:
                assert send.group_id is not None and send.dedup_id is not None  # checked by prepare_send
                entry["MessageGroupId"] = send.group_id
                entry["MessageDeduplicationId"] = send.dedup_id
            else:
                entry["DelaySeconds"] = _seconds(send.delay_seconds)
            entries.append(entry)
        try:
            response = self._client.send_message_batch(QueueUrl=self._url, Entries=entries)
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"SendMessageBatch {self.name}") from e
        failed = response.get("Failed", [])
        if failed:
            reasons = ", ".join(f"{f.get('Code', '')}: {f.get('Message', '')}" for f in failed)
            raise QueueError(f"SQS refused {len(failed)} of {len(chunk)} messages sent to {self.name}: {reasons}")
        by_entry = {entry["Id"]: entry["MessageId"] for entry in response.get("Successful", [])}
        return [by_entry[str(index)] for index in range(len(chunk))]

    def receive(
        self, max_messages: int = 1, *, visibility_timeout_seconds: float | None = None, wait_seconds: float = 0
    ) -> list[Message]:
        """Receives up to ``max_messages`` (1 to 10) messages (see ``Queue.receive``); times round up to seconds.

        Raises:
            InvalidQueueRequestError: If an argument is out of range.
            QueueNotFoundError: If the queue no longer exists.
            AwsError: If SQS fails otherwise.
        """
        check_receive(max_messages, visibility_timeout_seconds, wait_seconds)
        return [_message(m) for m in self._receive(max_messages, visibility_timeout_seconds, wait_seconds)]

    def _receive(self, max_messages: int, visibility: float | None, wait_seconds: float) -> list[MessageTypeDef]:
        try:
            if visibility is None:
                response = self._client.receive_message(
                    QueueUrl=self._url,
                    MaxNumberOfMessages=max_messages,
                    WaitTimeSeconds=_seconds(wait_seconds),
                    MessageSystemAttributeNames=_SYSTEM_ATTRIBUTES,
                )
            else:
                response = self._client.receive_message(
                    QueueUrl=self._url,
                    MaxNumberOfMessages=max_messages,
                    WaitTimeSeconds=_seconds(wait_seconds),
                    VisibilityTimeout=_seconds(visibility),
                    MessageSystemAttributeNames=_SYSTEM_ATTRIBUTES,
                )
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"ReceiveMessage {self.name}") from e
        return response.get("Messages", [])

    def change_visibility(self, receipt_handle: str, seconds: float) -> None:
        """Makes a received message visible again ``seconds`` from now (rounded up to whole seconds).

        Raises:
            InvalidQueueRequestError: If ``seconds`` is out of range.
            ReceiptHandleError: If SQS no longer knows the handle or the message is not in flight.
            VisibilityLimitError: If the message would stay hidden more than 12 hours after it was received.
            AwsError: If SQS fails otherwise.
        """
        check_visibility_timeout(seconds)
        try:
            self._client.change_message_visibility(
                QueueUrl=self._url, ReceiptHandle=receipt_handle, VisibilityTimeout=_seconds(seconds)
            )
        except ClientError as e:
            code = error_code(e)
            message = e.response.get("Error", {}).get("Message", "")
            if code in _STALE_HANDLE_CODES or (code == "InvalidParameterValue" and "ReceiptHandle" in message):
                raise ReceiptHandleError(f"receipt handle is not in flight on queue {self.name}") from e
            if code == "InvalidParameterValue" and "43200" in message:
                raise VisibilityLimitError(
                    "a message cannot stay invisible for more than 12 hours after it was received"
                ) from e
            raise _queue_error(e, f"ChangeMessageVisibility {self.name}") from e
        except BotoCoreError as e:
            raise translate(e, f"ChangeMessageVisibility {self.name}") from e

    def delete(self, receipt_handle: str) -> None:
        """Deletes a received message; a handle SQS does not know does nothing.

        Raises:
            QueueNotFoundError: If the queue no longer exists.
            AwsError: If SQS fails otherwise.
        """
        try:
            self._client.delete_message(QueueUrl=self._url, ReceiptHandle=receipt_handle)
        except ClientError as e:
            if error_code(e) in _STALE_HANDLE_CODES:
                return
            raise _queue_error(e, f"DeleteMessage {self.name}") from e
        except BotoCoreError as e:
            raise translate(e, f"DeleteMessage {self.name}") from e

    def approximate_counts(self) -> QueueCounts:
        """SQS's approximate counts of visible and in-flight messages.

        Raises:
            QueueNotFoundError: If the queue no longer exists.
            AwsError: If SQS fails otherwise.
        """
        try:
            attributes = self._client.get_queue_attributes(
                QueueUrl=self._url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"GetQueueAttributes {self.name}") from e
        return QueueCounts(
            visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
        )

    def redrive_dead_letters(self, to_queue: str | None = None) -> int:
        """Moves the visible messages of this (dead-letter) queue to another queue: receive, send, delete.

        Args:
            to_queue: Destination queue name; None sends each message to the queue it was dead-lettered from: the
                one named by its ``DeadLetterQueueSourceArn`` attribute, else the only queue whose redrive policy
                names this queue. Messages with no such queue stay.

        Returns:
            How many messages moved.

        Raises:
            QueueNotFoundError: If a destination queue does not exist.
            AwsError: If SQS fails.
        """
        fixed_target = self._target(to_queue) if to_queue is not None else None
        by_source_arn: dict[str, _Target] = {}
        only_source: _Target | None = None
        looked_for_only_source = False
        left: list[str] = []
        moved = 0
        while True:
            received = self._receive(MAX_RECEIVE_BATCH, _REDRIVE_VISIBILITY_SECONDS, _REDRIVE_WAIT_SECONDS)
            if not received:
                break
            for message in received:
                target = fixed_target
                source_arn = message.get("Attributes", {}).get("DeadLetterQueueSourceArn")
                if target is None and source_arn is not None:
                    if source_arn not in by_source_arn:
                        by_source_arn[source_arn] = self._target_of_arn(source_arn)
                    target = by_source_arn[source_arn]
                elif target is None:
                    if not looked_for_only_source:
                        only_source = self._only_source()
                        looked_for_only_source = True
                    target = only_source
                if target is None:
                    left.append(message["ReceiptHandle"])
                    continue
                target.send(message)
                self.delete(message["ReceiptHandle"])
                moved += 1
        for handle in left:
            try:
                self.change_visibility(handle, 0)
            except ReceiptHandleError:
                logger.warning("dead letter left on %s became visible before it could be released", self.name)
        return moved

    def _target(self, name: str) -> _Target:
        url = self._resolve_url(name)
        if url is None:
            raise QueueNotFoundError(f"no queue named {name}")
        return _Target(self._client, url, fifo=name.endswith(".fifo"))

    def _target_of_arn(self, arn: str) -> _Target:
        parts = arn.split(":")
        name = parts[-1]
        try:
            url = self._client.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"GetQueueUrl {name}") from e
        return _Target(self._client, url, fifo=name.endswith(".fifo"))

    def _only_source(self) -> _Target | None:
        try:
            urls = self._client.list_dead_letter_source_queues(QueueUrl=self._url).get("queueUrls", [])
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"ListDeadLetterSourceQueues {self.name}") from e
        if len(urls) != 1:
            return None
        return _Target(self._client, urls[0], fifo=urls[0].endswith(".fifo"))


class _Target:
    """A destination of redriven messages."""

    def __init__(self, client: SQSClient, url: str, *, fifo: bool) -> None:
        self._client = client
        self._url = url
        self._fifo = fifo

    def send(self, message: MessageTypeDef) -> None:
        body = message["Body"]
        try:
            if self._fifo:
                group = message.get("Attributes", {}).get("MessageGroupId") or message["MessageId"]
                # A fresh deduplication id: the original one may still be in the destination's 5-minute window.
                self._client.send_message(
                    QueueUrl=self._url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=uuid.uuid4().hex
                )
            else:
                self._client.send_message(QueueUrl=self._url, MessageBody=body)
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"SendMessage {_name_from_url(self._url)}") from e


def _message(message: MessageTypeDef) -> Message:
    attributes = message.get("Attributes", {})
    return Message(
        message_id=message["MessageId"],
        body=message["Body"],
        receipt_handle=message["ReceiptHandle"],
        receive_count=int(attributes.get("ApproximateReceiveCount", "1")),
        group_id=attributes.get("MessageGroupId"),
    )


class SqsQueues(Queues[SqsQueue, dict[str, str]]):
    """The SQS queues of one account and region (implements ``sleeper.core.queue.Queues``).

    ``queue`` reads the options of an existing queue from its SQS attributes. A new queue given no ``fifo`` is FIFO
    when its name ends in ``.fifo`` (SQS requires that name of FIFO queues); SQS cannot change whether an existing
    queue is FIFO.

    Args:
        client: The SQS client.
        resolve_url: Finds a queue's URL by name, or None if it does not exist; defaults to SQS's GetQueueUrl. Give
            one that reads the instance properties (``sleeper.ingest.job.queue.url``, ...) to use deployed queues.
        name_prefix: ``names`` lists only queues whose names start with this (e.g. ``"sleeper-<id>-"``).
    """

    def __init__(self, client: SQSClient, resolve_url: UrlResolver | None = None, *, name_prefix: str = "") -> None:
        self._client = client
        self._resolve_url = resolve_url if resolve_url is not None else partial(queue_url_or_none, client)
        self._name_prefix = name_prefix

    _fifo_from_name = True
    _fifo_fixed_by = "SQS"

    def _transaction(self) -> AbstractContextManager[dict[str, str]]:
        """Within one ``queue`` call: the URLs of the queues seen so far, by name."""
        return nullcontext({})

    def _load(self, transaction: dict[str, str], name: str) -> QueueConfig | None:
        """Reads a queue's options from its SQS attributes."""
        url = self._resolve_url(name)
        if url is None:
            return None
        transaction[name] = url
        return self._read_config(name, url)

    def _save(self, transaction: dict[str, str], config: QueueConfig, existing: QueueConfig | None) -> None:
        if existing is None:
            transaction[config.name] = create_queue(self._client, config.name, config)
            return
        dlq_url = transaction.get(config.dead_letter_queue) if config.dead_letter_queue is not None else None
        dead_letter_arn = queue_arn(self._client, dlq_url) if dlq_url is not None else None
        attributes = queue_attributes(config, dead_letter_arn=dead_letter_arn)
        if config.dead_letter_queue is None and existing.dead_letter_queue is not None:
            attributes["RedrivePolicy"] = ""
        try:
            self._client.set_queue_attributes(
                QueueUrl=transaction[config.name], Attributes=cast("dict[QueueAttributeNameType, str]", attributes)
            )
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"SetQueueAttributes {config.name}") from e

    def _open(self, transaction: dict[str, str], config: QueueConfig) -> SqsQueue:
        return SqsQueue(self._client, transaction[config.name], config, resolve_url=self._resolve_url)

    def names(self) -> list[str]:
        """Names of the queues (starting with the family's prefix), sorted.

        Raises:
            AwsError: If SQS fails.
        """
        pages = self._client.get_paginator("list_queues").paginate(
            QueueNamePrefix=self._name_prefix, PaginationConfig={"PageSize": 1000}
        )
        with translated("ListQueues"):
            return sorted(_name_from_url(url) for page in pages for url in page.get("QueueUrls", []))

    def _read_config(self, name: str, url: str) -> QueueConfig:
        wanted: list[QueueAttributeNameType] = [
            "FifoQueue",
            "VisibilityTimeout",
            "RedrivePolicy",
            "ContentBasedDeduplication",
            "DelaySeconds",
            "MaximumMessageSize",
        ]
        try:
            attributes = self._client.get_queue_attributes(QueueUrl=url, AttributeNames=wanted)["Attributes"]
        except (ClientError, BotoCoreError) as e:
            raise _queue_error(e, f"GetQueueAttributes {name}") from e
        redrive = json.loads(attributes["RedrivePolicy"]) if attributes.get("RedrivePolicy") else None
        return QueueConfig(
            name=name,
            fifo=attributes.get("FifoQueue") == "true",
            visibility_timeout_seconds=float(attributes.get("VisibilityTimeout", "30")),
            dead_letter_queue=_name_from_arn(redrive["deadLetterTargetArn"]) if redrive else None,
            max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
            content_based_deduplication=attributes.get("ContentBasedDeduplication") == "true",
            delay_seconds=float(attributes.get("DelaySeconds", "0")),
            max_message_bytes=int(attributes.get("MaximumMessageSize", str(DEFAULT_MAX_MESSAGE_BYTES))),
        )
