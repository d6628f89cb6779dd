"""What every transaction shares: its type, the log it belongs to, epoch-millisecond times and the readers of body
fields (each raises ``SerDeError`` naming the bad path)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from sleeper.core.exceptions import SerDeError


class TransactionType(Enum):
    """The transaction types, named as in Sleeper's log."""

    INITIALISE_PARTITIONS = "INITIALISE_PARTITIONS"
    SPLIT_PARTITION = "SPLIT_PARTITION"
    EXTEND_PARTITION_TREE = "EXTEND_PARTITION_TREE"
    ADD_FILES = "ADD_FILES"
    ASSIGN_JOB_IDS = "ASSIGN_JOB_IDS"
    REPLACE_FILE_REFERENCES = "REPLACE_FILE_REFERENCES"
    SPLIT_FILE_REFERENCES = "SPLIT_FILE_REFERENCES"
    DELETE_FILES = "DELETE_FILES"
    CLEAR_FILES = "CLEAR_FILES"
    DELETE_ROWS = "DELETE_ROWS"
    """Beyond Sleeper (port-only): a row delete by filter (``sleeper.core.statestore.deletes``)."""
    OVERWRITE_FILES = "OVERWRITE_FILES"
    """Beyond Sleeper (port-only): every file's references replaced by new files' in one commit (an overwrite)."""
    UPSERT_FILES = "UPSERT_FILES"
    """Beyond Sleeper (port-only): new files added with a pending delete of the older rows of their keys (an upsert)."""


class LogType(Enum):
    """The two logs of a table."""

    FILES = "files"
    PARTITIONS = "partitions"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_ms(time: datetime) -> int:
    """Milliseconds since the epoch, as Sleeper serialises instants (exact, no float rounding)."""
    return (time - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(ms: int) -> datetime:
    """The UTC time of an epoch milliseconds value.

    Raises:
        SerDeError: If the value is outside the range of representable times.
    """
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise SerDeError(f"time {ms} ms is out of range") from None


def list_field(data: Mapping[str, Any], key: str, path: str = "") -> list[Any]:
    """The list under the key."""
    value = data.get(key)
    where = f"{path}.{key}" if path else key
    if value is None:
        raise SerDeError(f"{where} is missing")
    if not isinstance(value, list):
        raise SerDeError(f"{where} must be a list")
    return value


def object_items(data: Mapping[str, Any], key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object of the list under the key, with its path (``key[i]``) for error messages.

    Raises:
        SerDeError: If the list is missing, or an item is not an object.
    """
    for i, item in enumerate(list_field(data, key)):
        path = f"{key}[{i}]"
        if not isinstance(item, Mapping):
            raise SerDeError(f"{path} must be an object")
        yield path, item


def str_list_field(data: Mapping[str, Any], key: str, path: str = "") -> list[str]:
    """The list of non-empty strings under the key."""
    values = list_field(data, key, path)
    where = f"{path}.{key}" if path else key
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise SerDeError(f"{where}[{i}] must be a non-empty string")
    return values


def str_field(data: Mapping[str, Any], key: str, path: str = "") -> str:
    """The non-empty string under the key."""
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise SerDeError(f"{path + '.' if path else ''}{key} must be a non-empty string")
    return value


def optional_str_field(data: Mapping[str, Any], key: str, path: str = "") -> str | None:
    """The string under the key, or None."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SerDeError(f"{path + '.' if path else ''}{key} must be a string")
    return value


def int_value(value: object, where: str) -> int:
    """The value, which must be an integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerDeError(f"{where} must be an integer")
    return value
