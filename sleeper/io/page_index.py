"""Reading only the pages of a row group that can hold some rows, by the Parquet page index.

pyarrow decodes whole row groups (100,000 rows by Sleeper's default) and does not read the page index, so a point
lookup decodes a row group of every file it reads. Data files are written with a page index (``ParquetSettings``'s
``page_index``): per column chunk an offset index (where each page starts, and its first row) and a column index
(each page's minimum and maximum). With them a read decodes only the pages that can hold the rows wanted:

1. the first row key column's page minima and maxima give the pages that can hold a region (the column is sorted
   within a file, so they are consecutive), hence a span of rows;
2. the row key columns are decoded over that span and filtered exactly, which narrows it to the rows matching;
3. the other columns are decoded over the pages holding those rows only.

pyarrow is made to decode a run of pages by giving it a footer (:meth:`FooterIndex.metadata_for`) in which a row
group's column chunk starts at the run's first page and ends after its last, holding only the run's rows; one such
row group is made per field read, since the columns' pages start at different rows. A field with several leaf
columns (a list or map) starts at a row where every leaf starts a page, and a dictionary-encoded column at its
first page, so no page is ever cut.

Nothing here changes which rows a read returns (:class:`sleeper.io.parquet_reader.SortedFileReader` filters them as
before): a file without a page index, or a region not bounding the first row key, is read a row group at a time.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.core import KeyValue
from sleeper.io import parquet_thrift as ids
from sleeper.io.thrift_compact import (
    I64,
    LIST,
    STOP,
    STRUCT,
    Struct,
    ThriftError,
    decode_struct,
    encode_fields,
    iter_list,
)

__all__ = ["FieldRead", "FooterIndex", "PageLocations", "footer_bytes"]


_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")


def footer_bytes(metadata: pq.FileMetaData) -> bytes | None:
    """The Thrift bytes of a footer pyarrow has read (what it pickles), or None if pyarrow gives them otherwise."""
    try:
        _, args = metadata.__reduce__()
        buffer = args[0]
    except (TypeError, ValueError, IndexError):
        return None
    return buffer.to_pybytes() if isinstance(buffer, pa.Buffer) else None


@dataclass(frozen=True, slots=True)
class PageLocations:
    """Where the data pages of a column chunk are, from its offset index.

    Attributes:
        offsets: Each page's position in the file (its header's first byte).
        ends: The position just after each page.
        first_rows: Each page's first row within the row group, ascending, starting at 0.
        rows: The row group's row count.
    """

    offsets: tuple[int, ...]
    ends: tuple[int, ...]
    first_rows: tuple[int, ...]
    rows: int

    def page_of(self, row: int) -> int:
        """The page holding a row of the row group."""
        low, high = 0, len(self.first_rows) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if self.first_rows[mid] <= row:
                low = mid
            else:
                high = mid - 1
        return low

    def end_row(self, page: int) -> int:
        """The row just after a page."""
        return self.first_rows[page + 1] if page + 1 < len(self.first_rows) else self.rows


@dataclass(frozen=True, slots=True)
class FieldRead:
    """A run of rows of one field (its leaf columns) of a row group, to be decoded from whole pages.

    Attributes:
        row_group: The row group.
        field: The top-level field.
        first_row: The first row decoded (a row where every leaf of the field starts a page).
        end_row: The row just after the last row decoded.
    """

    row_group: int
    field: str
    first_row: int
    end_row: int


class FooterIndex:
    """A data file's footer decoded, its row groups when first used, and their page index when first needed.

    Args:
        footer: The footer's Thrift bytes.

    Raises:
        ThriftError: If the footer cannot be decoded.
    """

    def __init__(self, footer: bytes) -> None:
        self._meta, _ = decode_struct(footer)
        fields = self._meta.fields
        # A footer made for a read differs only in its row count and row groups (fields 3 and 4).
        head = {k: v for k, v in fields.items() if k < ids.FILE_NUM_ROWS}
        self._footer_head = encode_fields(head)
        self._footer_head_last = max(head, default=0)
        self._footer_tail = encode_fields(
            {k: v for k, v in fields.items() if k > ids.FILE_ROW_GROUPS}, ids.FILE_ROW_GROUPS
        )
        self._row_groups: list[Struct] = list(iter_list(self._meta.get(ids.FILE_ROW_GROUPS)))
        self._chunk_lists: dict[int, list[Struct]] = {}
        self._leaves: dict[str, list[int]] = {}
        self._leaf_types: list[int] = []
        self._flat_leaves: set[int] = set()
        if self._row_groups:
            for leaf, chunk in enumerate(self._chunks(0)):
                meta = chunk.get(ids.CHUNK_META)
                path = list(iter_list(meta.get(ids.META_PATH))) if meta is not None else []
                name = path[0].decode("utf-8", "replace") if path else ""
                self._leaves.setdefault(name, []).append(leaf)
                self._leaf_types.append(meta.get(ids.META_TYPE, -1) if meta is not None else -1)
                if len(path) == 1:
                    self._flat_leaves.add(leaf)
        self._lock = threading.Lock()
        self._index: dict[int, dict[tuple[int, int], bytes]] = {}
        self._locations: dict[tuple[int, int], PageLocations | None] = {}
        self._bounds: dict[tuple[int, int], tuple[list[Any], list[Any]] | None] = {}

    @property
    def row_group_count(self) -> int:
        """The number of row groups."""
        return len(self._row_groups)

    def leaves(self, field: str) -> list[int]:
        """The leaf columns of a top-level field, by position (none if the file lacks it)."""
        return self._leaves.get(field, [])

    def row_group_rows(self, row_group: int) -> int:
        """A row group's row count."""
        return int(self._row_groups[row_group].get(ids.ROW_GROUP_NUM_ROWS))

    def load(self, row_group: int, read_at: Callable[[int, int], bytes]) -> None:
        """Reads a row group's page index, if not read yet: its offset indexes in one read and its column indexes in
        another (writers put each kind together), with ``read_at(offset, length)``."""
        with self._lock:
            if row_group in self._index:
                return
            found: dict[tuple[int, int], bytes] = {}
            chunks = self._chunks(row_group)
            for kind, (offset_field, length_field) in enumerate(
                (
                    (ids.CHUNK_OFFSET_INDEX_OFFSET, ids.CHUNK_OFFSET_INDEX_LENGTH),
                    (ids.CHUNK_COLUMN_INDEX_OFFSET, ids.CHUNK_COLUMN_INDEX_LENGTH),
                )
            ):
                spans = [(leaf, chunk.get(offset_field), chunk.get(length_field)) for leaf, chunk in enumerate(chunks)]
                present = [(leaf, o, n) for leaf, o, n in spans if o is not None and n is not None and o >= 0 and n > 0]
                if not present:
                    continue
                start = min(o for _, o, _ in present)
                data = read_at(start, max(o + n for _, o, n in present) - start)
                for leaf, o, n in present:
                    found[(kind, leaf)] = data[o - start : o - start + n]
            self._index[row_group] = found

    def locations(self, row_group: int, leaf: int) -> PageLocations | None:
        """The pages of a column chunk, or None if it has no offset index (or its row group was not loaded)."""
        key = (row_group, leaf)
        if key not in self._locations:
            self._locations[key] = self._decode_locations(row_group, leaf)
        return self._locations[key]

    def page_bounds(self, row_group: int, leaf: int) -> tuple[list[Any], list[Any]] | None:
        """Each page's minimum and maximum of a column chunk of ints or byte arrays (None for an all-null page), or
        None if the chunk has no column index."""
        key = (row_group, leaf)
        if key not in self._bounds:
            self._bounds[key] = self._decode_bounds(row_group, leaf)
        return self._bounds[key]

    def pages_overlapping(self, row_group: int, leaf: int, low: KeyValue | None, high: KeyValue | None) -> list[int]:
        """The pages of a column chunk whose values can lie in ``[low, high)`` (None: unbounded), or every page if
        the chunk has no column index."""
        locations = self.locations(row_group, leaf)
        if locations is None:
            return []
        bounds = self.page_bounds(row_group, leaf)
        pages = range(len(locations.first_rows))
        if bounds is None:
            return list(pages)
        lo = _comparable(low)
        hi = _comparable(high)
        mins, maxs = bounds
        return [
            page
            for page in pages
            if mins[page] is None or ((lo is None or not maxs[page] < lo) and (hi is None or mins[page] < hi))
        ]

    def field_read(self, row_group: int, field: str, first_row: int, end_row: int) -> FieldRead | None:
        """The run of whole pages of a field holding rows ``[first_row, end_row)``, or None if a leaf of the field
        has no offset index."""
        leaves = self.leaves(field)
        if not leaves:
            return None
        rows = self.row_group_rows(row_group)
        starts: set[int] | None = None
        ends: set[int] | None = None
        for leaf in leaves:
            locations = self.locations(row_group, leaf)
            if locations is None:
                return None
            if self._has_dictionary(row_group, leaf):
                leaf_starts = {0}
            else:
                leaf_starts = {r for r in locations.first_rows if r <= first_row}
            leaf_ends = {r for r in locations.first_rows if r >= end_row} | {rows}
            starts = leaf_starts if starts is None else starts & leaf_starts
            ends = leaf_ends if ends is None else ends & leaf_ends
        assert starts is not None and ends is not None
        return FieldRead(row_group, field, max(starts | {0}), min(ends))

    def metadata_for(self, reads: Sequence[FieldRead]) -> pq.FileMetaData:
        """A footer of the same file whose row group ``i`` holds only the pages of ``reads[i]`` (its other
        fields' column chunks unchanged, and never to be read)."""
        groups: list[Struct] = []
        total = 0
        for read in reads:
            group = self._row_groups[read.row_group]
            chunks = list(self._chunks(read.row_group))
            for leaf in self.leaves(read.field):
                chunks[leaf] = self._cut_chunk(read, leaf)
            rows = read.end_row - read.first_row
            total += rows
            groups.append(
                group.replaced({ids.ROW_GROUP_COLUMNS: (LIST, (STRUCT, chunks)), ids.ROW_GROUP_NUM_ROWS: (I64, rows)})
            )
        middle = {ids.FILE_NUM_ROWS: (I64, total), ids.FILE_ROW_GROUPS: (LIST, (STRUCT, groups))}
        footer = b"".join(
            (self._footer_head, encode_fields(middle, self._footer_head_last), self._footer_tail, bytes([STOP]))
        )
        return pq.read_metadata(pa.BufferReader(ids.MAGIC + footer + ids.FOOTER_LENGTH.pack(len(footer)) + ids.MAGIC))

    def _chunks(self, row_group: int) -> list[Struct]:
        chunks = self._chunk_lists.get(row_group)
        if chunks is None:
            chunks = list(iter_list(self._row_groups[row_group].get(ids.ROW_GROUP_COLUMNS)))
            self._chunk_lists[row_group] = chunks
        return chunks

    def _cut_chunk(self, read: FieldRead, leaf: int) -> Struct:
        chunk = self._chunks(read.row_group)[leaf]
        meta: Struct = chunk.get(ids.CHUNK_META)
        locations = self.locations(read.row_group, leaf)
        assert locations is not None
        first = locations.page_of(read.first_row)
        last = locations.page_of(read.end_row - 1)
        start = locations.offsets[first]
        if self._has_dictionary(read.row_group, leaf):
            start = min(start, int(meta.get(ids.META_DICTIONARY_PAGE_OFFSET)))
        updates: dict[int, tuple[int, Any] | None] = {
            ids.META_DATA_PAGE_OFFSET: (I64, locations.offsets[first]),
            ids.META_COMPRESSED: (I64, locations.ends[last] - start),
        }
        if leaf in self._flat_leaves:  # one value per row; a list or map leaf's values are bounded by its pages
            updates[ids.META_NUM_VALUES] = (I64, read.end_row - read.first_row)
        return chunk.replaced({ids.CHUNK_META: (STRUCT, meta.replaced(updates))})

    def _has_dictionary(self, row_group: int, leaf: int) -> bool:
        meta = self._chunks(row_group)[leaf].get(ids.CHUNK_META)
        dictionary = meta.get(ids.META_DICTIONARY_PAGE_OFFSET) if meta is not None else None
        return dictionary is not None and dictionary > 0

    def _index_bytes(self, kind: int, row_group: int, leaf: int) -> bytes | None:
        loaded = self._index.get(row_group)
        return None if loaded is None else loaded.get((kind, leaf))

    def _decode_locations(self, row_group: int, leaf: int) -> PageLocations | None:
        data = self._index_bytes(0, row_group, leaf)
        if not data:
            return None
        try:
            index, _ = decode_struct(data)
        except ThriftError:
            return None
        pages = list(iter_list(index.get(ids.OFFSET_INDEX_PAGES)))
        if not pages:
            return None
        offsets = tuple(int(p.get(ids.PAGE_OFFSET)) for p in pages)
        ends = tuple(o + int(p.get(ids.PAGE_SIZE)) for o, p in zip(offsets, pages, strict=True))
        first_rows = tuple(int(p.get(ids.PAGE_FIRST_ROW)) for p in pages)
        if first_rows[0] != 0 or any(a >= b for a, b in zip(first_rows, first_rows[1:], strict=False)):
            return None
        return PageLocations(offsets, ends, first_rows, self.row_group_rows(row_group))

    def _decode_bounds(self, row_group: int, leaf: int) -> tuple[list[Any], list[Any]] | None:
        data = self._index_bytes(1, row_group, leaf)
        kind = self._leaf_types[leaf]
        if not data or kind not in (ids.TYPE_INT32, ids.TYPE_INT64, ids.TYPE_BYTE_ARRAY):
            return None
        try:
            index, _ = decode_struct(data)
        except ThriftError:
            return None
        nulls = list(iter_list(index.get(ids.COLUMN_INDEX_NULL_PAGES)))
        mins = list(iter_list(index.get(ids.COLUMN_INDEX_MINS)))
        maxs = list(iter_list(index.get(ids.COLUMN_INDEX_MAXS)))
        if not (len(nulls) == len(mins) == len(maxs)):
            return None
        decode = _DECODERS[kind]
        try:
            return (
                [None if null else decode(v) for null, v in zip(nulls, mins, strict=True)],
                [None if null else decode(v) for null, v in zip(nulls, maxs, strict=True)],
            )
        except struct.error:
            return None


_DECODERS: dict[int, Callable[[bytes], Any]] = {
    ids.TYPE_INT32: lambda b: _INT32.unpack(b)[0],
    ids.TYPE_INT64: lambda b: _INT64.unpack(b)[0],
    ids.TYPE_BYTE_ARRAY: bytes,
}


def _comparable(value: KeyValue | None) -> int | bytes | None:
    """A bound as page minima and maxima compare: ints as ints, strings as their UTF-8 bytes (Sleeper's order)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return value
