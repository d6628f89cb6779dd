"""Files an outside reader holds: the records a publisher of a table's files (the Iceberg view, :mod:`sleeper.iceberg`)
leaves under the table's data prefix, and the garbage collector consults before deleting anything (beyond Sleeper).

The garbage collector deletes a file once it has had no references for the table's GC delay. A reader that does not
go through Sleeper's state (DuckDB, Spark or Athena reading a published Iceberg snapshot) may still need it: the
publisher writes a *hold* naming every file a snapshot may read before that snapshot becomes current, and deletes it
only once the snapshot has been superseded for longer than the GC delay (so an outside reader gets the same grace a
Sleeper query gets). The collector never deletes a file any hold names.

A hold is ``<table data prefix>/iceberg/holds/<hold id>.json.gz``: gzip-compressed JSON
``{"holdId": ..., "tableId": ..., "createdAt": <ISO 8601>, "files": [<file names as the state store records them>]}``.
This module is the one definition of that layout; it is standard library only, and the writer and the collector both
import it (features never import each other).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sleeper.core.exceptions import SleeperError

__all__ = [
    "HOLDS_DIRECTORY",
    "HOLD_SUFFIX",
    "ICEBERG_DIRECTORY",
    "Hold",
    "HoldFormatError",
    "hold_id_of",
    "hold_location",
    "holds_location",
    "iceberg_location",
]

ICEBERG_DIRECTORY = "iceberg"
"""The directory under a table's data prefix that belongs to its Iceberg view (metadata, trimmed copies, holds). The
orphan sweeper touches only ``data/partition_*/``, so nothing here is ever swept as an orphan."""

HOLDS_DIRECTORY = f"{ICEBERG_DIRECTORY}/holds"
"""Where holds are, under a table's data prefix."""

HOLD_SUFFIX = ".json.gz"

_HOLD_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class HoldFormatError(SleeperError):
    """A hold cannot be read: the garbage collector refuses to delete anything rather than guess what it held."""


def iceberg_location(data_prefix: str) -> str:
    """The URI of a table's Iceberg directory."""
    return f"{data_prefix.rstrip('/')}/{ICEBERG_DIRECTORY}"


def holds_location(data_prefix: str) -> str:
    """The URI of the directory holding a table's holds."""
    return f"{data_prefix.rstrip('/')}/{HOLDS_DIRECTORY}"


def hold_location(data_prefix: str, hold_id: str) -> str:
    """The URI of one hold.

    Raises:
        ValueError: If the id is not 1 to 128 letters, digits, ``_``, ``-`` or ``.``.
    """
    if not _HOLD_ID.match(hold_id) or hold_id in (".", ".."):
        raise ValueError(f"a hold id is 1 to 128 letters, digits, '_', '-' or '.', got {hold_id!r}")
    return f"{holds_location(data_prefix)}/{hold_id}{HOLD_SUFFIX}"


def hold_id_of(name: str) -> str | None:
    """The hold id of a file name in the holds directory, or None if the name is not a hold's."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if not base.endswith(HOLD_SUFFIX):
        return None
    hold_id = base[: -len(HOLD_SUFFIX)]
    return hold_id if _HOLD_ID.match(hold_id) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hold:
    """Files a published snapshot may read.

    Attributes:
        hold_id: The hold's id (the publish that wrote it).
        table_id: The table.
        created_at: When it was written (timezone-aware).
        files: The file names, as the state store records them.
    """

    hold_id: str
    table_id: str
    created_at: datetime
    files: frozenset[str]

    @classmethod
    def of(cls, hold_id: str, table_id: str, created_at: datetime, files: Iterable[str]) -> Hold:
        """A hold of these files."""
        if created_at.tzinfo is None:
            raise ValueError("a hold's time must be timezone-aware")
        return cls(hold_id=hold_id, table_id=table_id, created_at=created_at, files=frozenset(files))

    def to_bytes(self) -> bytes:
        """The hold as it is stored."""
        document = {
            "holdId": self.hold_id,
            "tableId": self.table_id,
            "createdAt": self.created_at.isoformat(),
            "files": sorted(self.files),
        }
        return gzip.compress(json.dumps(document, separators=(",", ":")).encode("utf-8"), mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> Hold:
        """Reads a stored hold.

        Raises:
            HoldFormatError: Naming the hold, if it is not one.
        """
        try:
            document = json.loads(gzip.decompress(data).decode("utf-8"))
        except (OSError, EOFError, UnicodeDecodeError, ValueError) as e:
            raise HoldFormatError(f"the hold {where} is not gzip-compressed JSON: {e}") from e
        if not isinstance(document, dict):
            raise HoldFormatError(f"the hold {where} is not a JSON object")
        hold_id, table_id, created, files = (document.get(k) for k in ("holdId", "tableId", "createdAt", "files"))
        if not isinstance(hold_id, str) or not isinstance(table_id, str) or not isinstance(created, str):
            raise HoldFormatError(f"the hold {where} lacks holdId, tableId or createdAt")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise HoldFormatError(f"the hold {where}: files must be a list of file names")
        try:
            created_at = datetime.fromisoformat(created)
        except ValueError as e:
            raise HoldFormatError(f"the hold {where}: createdAt {created!r} is not an ISO 8601 time") from e
        if created_at.tzinfo is None:
            raise HoldFormatError(f"the hold {where}: createdAt {created!r} has no time zone")
        return cls(hold_id=hold_id, table_id=table_id, created_at=created_at, files=frozenset(files))
