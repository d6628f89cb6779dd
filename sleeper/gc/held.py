"""The files outside readers hold (:mod:`sleeper.core.held_files`): the garbage collector's port onto what a publisher
of the table's files (the Iceberg view) still needs. A file any hold names is never deleted, however long it has been
unreferenced; it is collected by a later run once the publisher has released the hold."""

from __future__ import annotations

from pyarrow import fs as pafs

from sleeper.core import Hold, hold_id_of, holds_location
from sleeper.io import FileSystemOptions, list_files, read_bytes, resolve

__all__ = ["held_files"]


def held_files(
    data_prefix: str,
    *,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> frozenset[str]:
    """Every file named by a hold of the table with this data prefix (empty if it has none).

    Raises:
        HoldFormatError: If a hold cannot be read (the collector then deletes nothing).
        OSError: If the holds cannot be listed or read.
    """
    fs, directory = resolve(holds_location(data_prefix), options, filesystem=filesystem)
    files: set[str] = set()
    for info in list_files(fs, directory):
        if hold_id_of(str(info.path)) is None:
            continue
        files.update(Hold.from_bytes(read_bytes(fs, str(info.path)), where=str(info.path)).files)
    return frozenset(files)
