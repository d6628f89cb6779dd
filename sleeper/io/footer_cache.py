"""The footers of the data files a process read most recently, kept so that a file read again is planned without
reading its footer, key statistics or page index again (data files are never rewritten in place: a file is keyed by
its filesystem, path, size and, on a local disk, modification time)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import ColumnStats
from sleeper.io.page_index import FooterIndex

if TYPE_CHECKING:
    from sleeper.io.file_metadata import SortedFileMetadata

__all__ = ["FOOTERS", "FOOTER_CACHE_FILES", "CacheKey", "Footer", "FooterCache", "cache_key"]

FOOTER_CACHE_FILES = 128
"""How many files' footers (with their page index, once read) a process keeps."""


@dataclass(slots=True)
class Footer:
    """What is kept of a file: its footer as pyarrow reads it, its key statistics per schema, its page index."""

    parquet: pq.FileMetaData
    filesystem: pafs.FileSystem | None = None
    info: dict[tuple[tuple[str, str], ...], SortedFileMetadata] = field(default_factory=dict)
    index: FooterIndex | None = None
    index_failed: bool = False
    index_lock: threading.Lock = field(default_factory=threading.Lock)
    statistics: dict[frozenset[str], tuple[Mapping[str, ColumnStats], ...]] = field(default_factory=dict)


CacheKey = tuple[int, str, int, int]
"""The filesystem (by identity: they are shared instances), the path, the size and the modification time."""

_CACHED_FILESYSTEMS = ("local", "s3")


def cache_key(fs: pafs.FileSystem, path: str, file: pa.NativeFile) -> CacheKey | None:
    """Where a file's footer is kept, or None if files of its filesystem are not kept."""
    kind = fs.type_name
    if kind not in _CACHED_FILESYSTEMS:
        return None
    modified = fs.get_file_info(path).mtime_ns or 0 if kind == "local" else 0
    return (id(fs), path, file.size(), modified)


class FooterCache:
    """The footers of the files read most recently (each entry holds its filesystem, so its id is not reused)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[CacheKey, Footer] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> Footer | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: CacheKey, entry: Footer) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


FOOTERS = FooterCache(FOOTER_CACHE_FILES)
