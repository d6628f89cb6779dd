"""The layout of a transaction log kept as one object per transaction (beyond Sleeper: no DynamoDB).

A table whose ``sleeper.table.statestore.classname`` is :data:`OBJECT_LOG_CLASSNAME` keeps its two logs and its
snapshot records as objects under its own prefix (the data bucket on AWS, ``data/`` of a local instance), beside the
large bodies and snapshot files Sleeper already keeps there::

    <table id>/statestore/log/<files|partitions>/<number, 20 digits>.json        one per transaction
    <table id>/statestore/snapshot-records/<files|partitions>/<number, 20 digits>.json
    <table id>/statestore/transactions/<instant>-<uuid>.json                     large bodies (as Sleeper)
    <table id>/statestore/snapshots/<n>-<uuid>-<type>.arrow                        snapshot files (as Sleeper)
    _deleted_tables/<table id>                                                   a deleted table's tombstone

Numbers are zero-padded so the store's key order (S3 lists keys in UTF-8 order; a directory is sorted) is the log's
order. An entry is written only if no object has its key yet: ``If-None-Match: *`` on S3, a hard link that fails on
an existing name on a local filesystem. This is the log's conditional append, as DynamoDB's conditional put is.

The tombstone lies outside every table's prefix (deleting a table removes its prefix) and under a name no table id
takes, so the sweep of deleted tables' leftovers, which lists the prefixes under the data root, never takes it for a
table. This module holds the layout and the JSON of entries and records; the adapters do the I/O.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sleeper.core.statestore.transactions import LogType, TransactionType
from sleeper.statestore.ports import SnapshotMetadata, TransactionLogEntry

OBJECT_LOG_CLASSNAME = "S3TransactionLogStateStore"
"""The ``sleeper.table.statestore.classname`` of a table whose logs are objects: on S3 with conditional writes on
AWS, files created exclusively on a local instance. Not one of Sleeper's names (its Java code cannot read such a
table)."""

DELETED_TABLES_PREFIX = "_deleted_tables/"
"""Where tombstones of deleted tables are kept, under the data root (not a table id: ids are 8 hex digits)."""

_DIGITS = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


class ObjectLogFormatError(ValueError):
    """An object of the log or of the snapshot records is not what this layout writes."""


def log_prefix(table_id: str, log_type: LogType) -> str:
    """The prefix of a table's log of one type, ending in ``/``."""
    return f"{table_id}/statestore/log/{log_type.value.lower()}/"


def snapshot_records_prefix(table_id: str, log_type: LogType) -> str:
    """The prefix of a table's snapshot records of one log, ending in ``/``."""
    return f"{table_id}/statestore/snapshot-records/{log_type.value.lower()}/"


def tombstone_key(table_id: str) -> str:
    """The key of a deleted table's tombstone."""
    return f"{DELETED_TABLES_PREFIX}{table_id}"


def numbered_name(number: int) -> str:
    """The object name of a transaction or snapshot record number: zero-padded, so names sort as numbers."""
    if number < 0:
        raise ValueError("numbers are not negative")
    return f"{number:0{_DIGITS}d}.json"


def number_of(name: str) -> int:
    """The number an object name holds (the inverse of :func:`numbered_name`).

    Raises:
        ObjectLogFormatError: If the name is not a numbered object.
    """
    base = name.rsplit("/", 1)[-1]
    stem = base.removesuffix(".json")
    if stem == base or len(stem) != _DIGITS or not stem.isdigit():
        raise ObjectLogFormatError(f"not a numbered log object: {name!r}")
    return int(stem)


def _ms(time: datetime) -> int:
    aware = time if time.tzinfo is not None else time.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MS


def encode_entry(entry: TransactionLogEntry) -> bytes:
    """The object holding a log entry (UTF-8 JSON): ``transactionNumber``, ``updateTime`` (epoch ms), ``type``,
    ``body`` or ``bodyKey``, and ``transactionId`` when the entry has one."""
    data: dict[str, object] = {
        "transactionNumber": entry.transaction_number,
        "updateTime": _ms(entry.update_time),
        "type": entry.transaction_type.value,
    }
    if entry.body is not None:
        data["body"] = entry.body
    else:
        data["bodyKey"] = entry.body_key
    if entry.transaction_id is not None:
        data["transactionId"] = entry.transaction_id
    return json.dumps(data, separators=(",", ":")).encode("utf-8")


def decode_entry(data: bytes, *, where: str) -> TransactionLogEntry:
    """A log entry read back from its object.

    Raises:
        ObjectLogFormatError: If the object is not a log entry.
    """
    try:
        item = json.loads(data.decode("utf-8"))
        return TransactionLogEntry(
            transaction_number=int(item["transactionNumber"]),
            update_time=_EPOCH + timedelta(milliseconds=int(item["updateTime"])),
            transaction_type=TransactionType(item["type"]),
            body=item.get("body"),
            body_key=item.get("bodyKey"),
            transaction_id=_optional_text(item.get("transactionId")),
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ObjectLogFormatError(f"{where} is not a transaction log entry: {e}") from None


def _optional_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"transactionId must be a string, not {type(value).__name__}")


def encode_snapshot(snapshot: SnapshotMetadata) -> bytes:
    """The object recording a snapshot (UTF-8 JSON)."""
    data = {
        "logType": snapshot.log_type.value,
        "path": snapshot.path,
        "transactionNumber": snapshot.transaction_number,
        "updateTime": _ms(snapshot.update_time),
    }
    return json.dumps(data, separators=(",", ":")).encode("utf-8")


def decode_snapshot(data: bytes, *, where: str) -> SnapshotMetadata:
    """A snapshot record read back from its object.

    Raises:
        ObjectLogFormatError: If the object is not a snapshot record.
    """
    try:
        item = json.loads(data.decode("utf-8"))
        return SnapshotMetadata(
            log_type=LogType(item["logType"]),
            path=str(item["path"]),
            transaction_number=int(item["transactionNumber"]),
            update_time=_EPOCH + timedelta(milliseconds=int(item["updateTime"])),
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ObjectLogFormatError(f"{where} is not a snapshot record: {e}") from None
