"""Records of the DynamoDB stream of a transaction log table, as Lambda delivers them.

The stream of ``sleeper-<id>-file-transaction-log`` (view type ``NEW_IMAGE``) carries each entry as it was put:
``TABLE_ID``, ``TRANSACTION_NUMBER``, ``UPDATE_TIME``, ``TYPE`` and either ``BODY`` or ``BODY_S3_KEY``. Lambda hands
a batch of them as ``{"Records": [{"eventName", "dynamodb": {"NewImage", "SequenceNumber", ...}, ...}]}`` and, with
``ReportBatchItemFailures``, retries the shard from the sequence number named in ``batchItemFailures``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sleeper.adapters.aws.dynamodb_transaction_log import from_epoch_ms
from sleeper.adapters.aws.resources import BODY, BODY_S3_KEY, TABLE_ID, TRANSACTION_NUMBER, TYPE, UPDATE_TIME
from sleeper.core import SleeperError
from sleeper.core.statestore.transactions import TransactionType
from sleeper.statestore import TransactionLogEntry

__all__ = ["StreamRecordError", "TransactionStreamRecord", "transaction_stream_records"]


class StreamRecordError(SleeperError):
    """A stream record is not a transaction log entry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionStreamRecord:
    """One record of the stream.

    Attributes:
        sequence_number: The record's sequence number (what a partial batch failure names).
        event_name: ``INSERT``, ``MODIFY`` or ``REMOVE``.
        table_id: The Sleeper table of the entry, if the record has a new image.
        entry: The log entry put, for an insert whose image could be read.
        error: Why the image could not be read, if it could not.
    """

    sequence_number: str
    event_name: str
    table_id: str | None = None
    entry: TransactionLogEntry | None = None
    error: str | None = None


def _string(image: Mapping[str, Any], name: str) -> str:
    value = image.get(name)
    if not isinstance(value, Mapping) or not isinstance(value.get("S"), str):
        raise StreamRecordError(f"attribute {name} is not a string")
    return str(value["S"])


def _number(image: Mapping[str, Any], name: str) -> int:
    value = image.get(name)
    if not isinstance(value, Mapping) or not isinstance(value.get("N"), str):
        raise StreamRecordError(f"attribute {name} is not a number")
    try:
        return int(value["N"])
    except ValueError as e:
        raise StreamRecordError(f"attribute {name} is not a whole number: {value['N']!r}") from e


def _entry(image: Mapping[str, Any]) -> TransactionLogEntry:
    try:
        kind = TransactionType(_string(image, TYPE))
    except ValueError as e:
        raise StreamRecordError(f"unknown transaction type: {e}") from e
    body = _string(image, BODY) if BODY in image else None
    body_key = _string(image, BODY_S3_KEY) if BODY_S3_KEY in image else None
    try:
        return TransactionLogEntry(
            transaction_number=_number(image, TRANSACTION_NUMBER),
            update_time=from_epoch_ms(_number(image, UPDATE_TIME)),
            transaction_type=kind,
            body=body,
            body_key=body_key,
        )
    except ValueError as e:
        raise StreamRecordError(str(e)) from e


def transaction_stream_records(event: Mapping[str, Any]) -> list[TransactionStreamRecord]:
    """The records of a stream event, in order. A record whose image is not a log entry carries the reason."""
    out: list[TransactionStreamRecord] = []
    for record in event.get("Records", []):
        dynamodb = record.get("dynamodb") or {}
        sequence = str(dynamodb.get("SequenceNumber", ""))
        name = str(record.get("eventName", ""))
        image = dynamodb.get("NewImage")
        if name != "INSERT" or not isinstance(image, Mapping):
            out.append(TransactionStreamRecord(sequence_number=sequence, event_name=name))
            continue
        table_id: str | None = None
        try:
            table_id = _string(image, TABLE_ID)
            entry = _entry(image)
        except StreamRecordError as e:
            out.append(
                TransactionStreamRecord(sequence_number=sequence, event_name=name, table_id=table_id, error=str(e))
            )
            continue
        out.append(TransactionStreamRecord(sequence_number=sequence, event_name=name, table_id=table_id, entry=entry))
    return out
