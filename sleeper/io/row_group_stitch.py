"""Writing one Parquet file from row groups encoded in parallel: the file pyarrow's writer would write, byte for byte.

pyarrow's ``ParquetWriter`` encodes and compresses a file's row groups one after another on the thread that calls it,
so a writer that gets its rows faster than one core encodes them is bound by that core (compaction on two cores:
the encoding thread is busy for the whole job while the merge waits on it). :class:`StitchedParquetWriter` encodes
each row group as a Parquet file of its own, in memory, on a pool of threads (pyarrow releases the GIL while it
encodes), and appends the row groups to the one output in order, then writes the page index and the footer.

Each part is written with the same writer options and holds one row group, and a row group's pages do not depend on
the rows before it, so the column chunks are the bytes a single writer writes; only their positions in the file
differ. The footer is the first part's (schema, version, ``created_by``, column orders) with the row count summed and
every part's row group, each column chunk's offsets moved to where its bytes now start (``file_offset``, the data,
index and dictionary page offsets) and the row group's ordinal set. The page index follows the row groups as pyarrow
writes it (every column index by row group then column, then every offset index, each page's offset moved), and each
column chunk points at its entries. The result is checked against pyarrow's own writer, byte for byte
(``tests/unit/io/test_row_group_stitch.py``).

Parquet's Thrift structures are read and written with :mod:`sleeper.io.thrift_compact` (field ids from
``parquet.thrift``); a part holding a structure this module does not move (a bloom filter, encryption) is refused
with :class:`~sleeper.io.exceptions.UnsupportedSettingError` rather than written with offsets left pointing
elsewhere.

Memory: at most ``threads + 1`` row groups are encoded or waiting to be appended at once, each held encoded.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.io import parquet_thrift as ids
from sleeper.io.exceptions import UnsupportedSettingError, WriterClosedError
from sleeper.io.thrift_compact import I16, I32, I64, LIST, STRUCT, Struct, decode_struct, encode_struct, iter_list

__all__ = ["StitchedParquetWriter"]


@dataclass(frozen=True, slots=True)
class _Part:
    """One row group encoded as a file of its own: its bytes, where its column chunks end, and its decoded footer."""

    data: pa.Buffer
    chunks_end: int
    footer: Struct
    row_group: Struct
    chunks: list[Struct]
    column_indexes: list[bytes | None]
    offset_indexes: list[bytes | None]


def _encode(table: pa.Table, schema: pa.Schema, options: dict[str, Any]) -> _Part:
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **options) as writer:
        writer.write_table(table, row_group_size=max(1, table.num_rows))
    return _split(sink.getvalue())


def _split(data: pa.Buffer) -> _Part:
    size = data.size
    footer_length = ids.FOOTER_LENGTH.unpack(data.slice(size - 8, 4).to_pybytes())[0]
    footer_start = size - 8 - footer_length
    footer, _ = decode_struct(data.slice(footer_start, footer_length).to_pybytes())
    if footer.get(ids.FILE_ENCRYPTION) is not None:
        raise UnsupportedSettingError("encrypted Parquet files cannot be written in parallel")
    (row_group,) = list(iter_list(footer.get(ids.FILE_ROW_GROUPS)))
    chunks: list[Struct] = list(iter_list(row_group.get(ids.ROW_GROUP_COLUMNS)))
    chunks_end = footer_start
    column_indexes: list[bytes | None] = []
    offset_indexes: list[bytes | None] = []
    for chunk in chunks:
        meta = chunk.get(ids.CHUNK_META)
        if (
            chunk.get(ids.CHUNK_FILE_PATH) is not None
            or chunk.get(ids.CHUNK_CRYPTO) is not None
            or meta is None
            or meta.get(ids.META_BLOOM_FILTER_OFFSET) is not None
        ):
            raise UnsupportedSettingError(
                "Parquet column chunks with bloom filters, encryption or in other files cannot be written in parallel"
            )
        for offset_field, length_field, found in (
            (ids.CHUNK_COLUMN_INDEX_OFFSET, ids.CHUNK_COLUMN_INDEX_LENGTH, column_indexes),
            (ids.CHUNK_OFFSET_INDEX_OFFSET, ids.CHUNK_OFFSET_INDEX_LENGTH, offset_indexes),
        ):
            offset = chunk.get(offset_field)
            if offset is None:
                found.append(None)
                continue
            chunks_end = min(chunks_end, offset)
            found.append(data.slice(offset, chunk.get(length_field)).to_pybytes())
    return _Part(data, chunks_end, footer, row_group, chunks, column_indexes, offset_indexes)


def _moved(value: Struct, fields: tuple[int, ...], delta: int) -> dict[int, tuple[int, Any] | None]:
    """Updates moving each of ``fields`` the struct has by ``delta`` (a zero, as pyarrow writes the deprecated
    ``ColumnChunk.file_offset``, stays zero)."""
    return {f: (I64, value.get(f) + delta) for f in fields if value.get(f)}


def _moved_offset_index(index: bytes, delta: int) -> bytes:
    decoded, _ = decode_struct(index)
    pages = [
        page.replaced(_moved(page, (ids.PAGE_OFFSET,), delta))
        for page in iter_list(decoded.get(ids.OFFSET_INDEX_PAGES))
    ]
    return encode_struct(decoded.replaced({ids.OFFSET_INDEX_PAGES: (LIST, (STRUCT, pages))}))


class StitchedParquetWriter:
    """Writes a Parquet file to a sink from row groups encoded on ``threads`` threads (see the module docstring).

    Args:
        sink: The output stream, positioned at its start; not closed here.
        schema: The file's Arrow schema.
        options: The keyword arguments of ``pyarrow.parquet.ParquetWriter`` the file is written with.
        threads: How many row groups are encoded at once.
    """

    def __init__(self, sink: Any, schema: pa.Schema, options: dict[str, Any], threads: int) -> None:
        if threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        self._sink = sink
        self._schema = schema
        self._options = options
        self._depth = threads + 1
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="sleeper-parquet-encode")
        self._in_flight: deque[Future[_Part]] = deque()
        self._position = 0
        self._rows = 0
        self._first: Struct | None = None
        self._groups: list[Struct] = []
        self._column_indexes: list[list[bytes | None]] = []
        self._offset_indexes: list[list[bytes | None]] = []
        self._closed = False

    def write_table(self, table: pa.Table) -> None:
        """Encodes the rows as the file's next row group; waits while ``threads + 1`` row groups are in flight."""
        if self._closed:
            raise WriterClosedError("the Parquet file is closed")
        self._in_flight.append(self._pool.submit(_encode, table, self._schema, self._options))
        while len(self._in_flight) >= self._depth or (self._in_flight and self._in_flight[0].done()):
            self._append(self._in_flight.popleft().result())

    def close(self) -> None:
        """Appends the row groups still encoding, then writes the page index and the footer."""
        if self._closed:
            return
        try:
            while self._in_flight:
                self._append(self._in_flight.popleft().result())
            if self._first is None:
                self._write_empty()
            else:
                self._write_tail()
        finally:
            self.discard()

    def discard(self) -> None:
        """Stops encoding and forgets what was not appended; the sink is left as it is."""
        self._closed = True
        for future in self._in_flight:
            future.cancel()
        self._in_flight.clear()
        self._pool.shutdown(wait=True)

    def _write(self, data: Any) -> None:
        self._sink.write(data)
        self._position += len(data) if isinstance(data, bytes) else data.size

    def _append(self, part: _Part) -> None:
        if self._first is None:
            self._first = part.footer
            self._write(ids.MAGIC)
        delta = self._position - len(ids.MAGIC)
        self._write(part.data.slice(len(ids.MAGIC), part.chunks_end - len(ids.MAGIC)))
        chunks = []
        for chunk in part.chunks:
            meta: Struct = chunk.get(ids.CHUNK_META)
            moved_meta = meta.replaced(
                _moved(
                    meta,
                    (ids.META_DATA_PAGE_OFFSET, ids.META_INDEX_PAGE_OFFSET, ids.META_DICTIONARY_PAGE_OFFSET),
                    delta,
                )
            )
            updates = _moved(chunk, (ids.CHUNK_FILE_OFFSET,), delta)
            updates[ids.CHUNK_META] = (STRUCT, moved_meta)
            chunks.append(chunk.replaced(updates))
        updates = {
            ids.ROW_GROUP_COLUMNS: (LIST, (STRUCT, chunks)),
            **_moved(part.row_group, (ids.ROW_GROUP_FILE_OFFSET,), delta),
        }
        if part.row_group.get(ids.ROW_GROUP_ORDINAL) is not None:
            updates[ids.ROW_GROUP_ORDINAL] = (I16, len(self._groups))
        group = part.row_group.replaced(updates)
        self._groups.append(group)
        self._rows += part.footer.get(ids.FILE_NUM_ROWS)
        self._column_indexes.append(part.column_indexes)
        self._offset_indexes.append(
            [None if index is None else _moved_offset_index(index, delta) for index in part.offset_indexes]
        )

    def _write_tail(self) -> None:
        assert self._first is not None
        per_chunk: list[list[dict[int, tuple[int, Any] | None]]] = [
            [{} for _ in iter_list(group.get(ids.ROW_GROUP_COLUMNS))] for group in self._groups
        ]
        for indexes, offset_field, length_field in (
            (self._column_indexes, ids.CHUNK_COLUMN_INDEX_OFFSET, ids.CHUNK_COLUMN_INDEX_LENGTH),
            (self._offset_indexes, ids.CHUNK_OFFSET_INDEX_OFFSET, ids.CHUNK_OFFSET_INDEX_LENGTH),
        ):
            for group_number, group_indexes in enumerate(indexes):
                for column, index in enumerate(group_indexes):
                    if index is None:
                        continue
                    per_chunk[group_number][column][offset_field] = (I64, self._position)
                    per_chunk[group_number][column][length_field] = (I32, len(index))
                    self._write(index)
        groups = []
        for group, updates in zip(self._groups, per_chunk, strict=True):
            columns = iter_list(group.get(ids.ROW_GROUP_COLUMNS))
            chunks = [chunk.replaced(u) if u else chunk for chunk, u in zip(columns, updates, strict=True)]
            groups.append(group.replaced({ids.ROW_GROUP_COLUMNS: (LIST, (STRUCT, chunks))}))
        footer = encode_struct(
            self._first.replaced({ids.FILE_NUM_ROWS: (I64, self._rows), ids.FILE_ROW_GROUPS: (LIST, (STRUCT, groups))})
        )
        self._write(footer + ids.FOOTER_LENGTH.pack(len(footer)) + ids.MAGIC)

    def _write_empty(self) -> None:
        buffer = pa.BufferOutputStream()
        with pq.ParquetWriter(buffer, self._schema, **self._options):
            pass
        self._write(buffer.getvalue())
