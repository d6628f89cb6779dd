"""The publisher's side of holds (:mod:`sleeper.core.held_files`): written before a snapshot can become current,
released once it has been superseded for longer than the table's GC delay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pyarrow import fs as pafs

from sleeper.core import Hold, hold_id_of, hold_location, holds_location
from sleeper.io import delete_in_table, list_files, read_bytes, resolve, write_bytes

__all__ = ["StoredHold", "delete_hold", "list_holds", "write_hold"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredHold:
    """A hold found under a table's prefix: its id, where it is, and when it was written."""

    hold_id: str
    path: str
    created_at: datetime


def write_hold(
    fs: pafs.FileSystem, data_prefix: str, hold_id: str, table_id: str, created_at: datetime, files: Iterable[str]
) -> None:
    """Writes a hold of these files (replacing any hold with the id)."""
    _, path = resolve(hold_location(data_prefix, hold_id), filesystem=fs)
    write_bytes(fs, path, Hold.of(hold_id, table_id, created_at, files).to_bytes())


def list_holds(fs: pafs.FileSystem, data_prefix: str) -> list[StoredHold]:
    """Every hold of a table, by id (read only for the time it was written)."""
    _, directory = resolve(holds_location(data_prefix), filesystem=fs)
    out = []
    for info in list_files(fs, directory):
        path = str(info.path)
        hold_id = hold_id_of(path)
        if hold_id is None:
            continue
        hold = Hold.from_bytes(read_bytes(fs, path), where=path)
        out.append(StoredHold(hold_id=hold_id, path=path, created_at=hold.created_at))
    return out


def delete_hold(fs: pafs.FileSystem, data_prefix: str, hold_id: str) -> None:
    """Releases a hold (a missing one is not an error)."""
    _, path = resolve(hold_location(data_prefix, hold_id), filesystem=fs)
    delete_in_table(fs, path, data_prefix)
