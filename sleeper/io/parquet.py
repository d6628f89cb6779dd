"""Sorted Parquet data files: writing them as Sleeper does with their sketches, reading them by key range.

Writing: :class:`SortedFileWriter` takes Arrow batches already sorted by row keys then sort keys, buffers them into
row groups of exactly ``row_group_rows`` rows (the last may be smaller), writes them with the table's
:class:`ParquetSettings`, samples the row keys into :class:`~sleeper.io.sketches.Sketches`, and writes the ``.sketches``
sidecar file when closed. It can encode row groups on background threads, several at once (pyarrow releases the GIL
while encoding), which lets the producer of the batches run at the same time.

Reading: :class:`SortedFileReader` (and the :func:`read_sorted` shortcut) reads the rows of a file within key
ranges, given per row key field as :class:`KeyBounds` (inclusive minimum, exclusive maximum); a list of them makes a
region, and a row is read if it is in any region. Row groups whose statistics show they hold none of those rows are
never read. Strings compare as UTF-8 bytes and byte arrays as unsigned bytes, as Parquet statistics and Sleeper's
default engine do. The reading side is defined in :mod:`sleeper.io.parquet_reader` and :mod:`sleeper.io.key_ranges`
and available from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import Field
from sleeper.core import Schema as SleeperSchema
from sleeper.io.arrow_types import arrow_field, arrow_schema, conform_batch
from sleeper.io.exceptions import UnsupportedSettingError, WriterClosedError
from sleeper.io.filesystem import FileSystemOptions, delete, open_output, resolve
from sleeper.io.key_ranges import KeyBounds as KeyBounds
from sleeper.io.key_ranges import Region as Region
from sleeper.io.parquet_reader import DEFAULT_BATCH_ROWS as DEFAULT_BATCH_ROWS
from sleeper.io.parquet_reader import ReadPlan as ReadPlan
from sleeper.io.parquet_reader import RowGroupInfo as RowGroupInfo
from sleeper.io.parquet_reader import SortedFileMetadata as SortedFileMetadata
from sleeper.io.parquet_reader import SortedFileReader as SortedFileReader
from sleeper.io.parquet_reader import read_file_metadata as read_file_metadata
from sleeper.io.parquet_reader import read_sorted as read_sorted
from sleeper.io.row_group_stitch import StitchedParquetWriter
from sleeper.io.sketches import SketchBuilder, Sketches, sketches_path

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties

__all__ = [
    "COMPRESSION_CODECS",
    "DEFAULT_BATCH_ROWS",
    "ENCODE_THREADS",
    "KeyBounds",
    "ParquetSettings",
    "ReadPlan",
    "Region",
    "RowGroupInfo",
    "SortedFileMetadata",
    "SortedFileReader",
    "SortedFileWriter",
    "WrittenFile",
    "read_file_metadata",
    "read_sorted",
]

COMPRESSION_CODECS: Mapping[str, str] = {
    "uncompressed": "none",
    "snappy": "snappy",
    "gzip": "gzip",
    "brotli": "brotli",
    "lz4": "lz4",
    "zstd": "zstd",
}
"""Sleeper's compression codec names (``sleeper.table.parquet.compression.codec``) and pyarrow's names for them.

Sleeper also accepts ``lzo``, which pyarrow cannot write."""

_ZSTD_LEVEL = 1
"""The zstd level of DataFusion's writer (parquet-rs ``ZstdLevel::default()``), used unless a level is given."""

ENCODE_THREADS = max(1, min(4, os.cpu_count() or 1))
"""How many row groups a writer with ``writer_thread`` encodes at once: one per core, at most 4 (the producer of the
rows and the reads feeding it need cores too, and each row group in flight is held in memory)."""

_COMBINE_BATCHES = 256
"""Buffered batches are combined once there are this many, so that many tiny writes stay cheap to encode."""


# ---------------------------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ParquetSettings:
    """How a table's Parquet files are written. The defaults are Sleeper's table defaults.

    Attributes:
        row_group_rows: The rows in every row group but the last (``sleeper.table.parquet.rowgroup.rows.max``).
        row_group_bytes: A row group is closed early once its buffered Arrow data reaches this size, which bounds
            the writer's memory for wide rows (``sleeper.table.parquet.rowgroup.size``). Arrow sizes are of
            uncompressed data, so this cuts earlier than Java's writer, which measures encoded data.
        page_size: The target size of data pages in bytes (``sleeper.table.parquet.page.size``).
        compression: A codec of :data:`COMPRESSION_CODECS` (``sleeper.table.parquet.compression.codec``).
        compression_level: The codec's level; None gives level 1 for zstd (as DataFusion) and pyarrow's default
            for the others.
        dictionary_row_keys: Dictionary-encode row key columns (``...dictionary.encoding.rowkey.fields``).
        dictionary_sort_keys: Dictionary-encode sort key columns (``...dictionary.encoding.sortkey.fields``).
        dictionary_values: Dictionary-encode value columns (``...dictionary.encoding.value.fields``).
        writer_version: ``v2`` writes data pages of format version 2 (levels stored uncompressed), ``v1`` version
            1 pages (``sleeper.table.parquet.writer.version``). Either way the file uses Parquet format 2.6 types.
            With ``v2``, a column not dictionary-encoded takes the encoding Sleeper's writers (parquet-mr for Java,
            parquet-rs for DataFusion) fall back to for that version: ``DELTA_BINARY_PACKED`` for integers, dates
            and timestamps, ``DELTA_BYTE_ARRAY`` for strings and byte arrays, ``RLE`` for booleans, and ``PLAIN``
            for floating point; with ``v1``, ``PLAIN`` for all. pyarrow cannot set encodings beside dictionaries, so
            where any column is dictionary-encoded the others are ``PLAIN`` (Sleeper's writers would use the above).
        page_index: Write column and offset indexes (page-level statistics), so that engines that read them
            (DataFusion, DuckDB) can skip pages in point lookups.

    Raises:
        UnsupportedSettingError: If a size is not positive or the codec is unknown or not writable by pyarrow.
    """

    row_group_rows: int = 100_000
    row_group_bytes: int = 8 * 1024 * 1024
    page_size: int = 128 * 1024
    compression: str = "zstd"
    compression_level: int | None = None
    dictionary_row_keys: bool = False
    dictionary_sort_keys: bool = False
    dictionary_values: bool = False
    writer_version: Literal["v1", "v2"] = "v2"
    page_index: bool = True

    def __post_init__(self) -> None:
        for name in ("row_group_rows", "row_group_bytes", "page_size"):
            if getattr(self, name) < 1:
                raise UnsupportedSettingError(f"Parquet setting {name} must be positive, got {getattr(self, name)}")
        codec = self.compression.lower()
        if codec not in COMPRESSION_CODECS:
            raise UnsupportedSettingError(
                f"compression codec {self.compression!r} cannot be written by pyarrow "
                f"(expected one of {', '.join(COMPRESSION_CODECS)})"
            )
        object.__setattr__(self, "compression", codec)
        if self.writer_version not in ("v1", "v2"):
            raise UnsupportedSettingError(f"Parquet writer version must be v1 or v2, got {self.writer_version!r}")

    @classmethod
    def from_table_properties(cls, properties: TableProperties) -> ParquetSettings:
        """The settings of a table, from its properties (with the instance defaults they fall back to)."""
        from sleeper.core.properties import table as tp

        version = properties.get_enum(tp.PARQUET_WRITER_VERSION)
        return cls(
            row_group_rows=properties.get_int(tp.PARQUET_ROW_GROUP_SIZE_ROWS),
            row_group_bytes=properties.get_int(tp.ROW_GROUP_SIZE),
            page_size=properties.get_int(tp.PAGE_SIZE),
            compression=properties.get_enum(tp.COMPRESSION_CODEC),
            dictionary_row_keys=properties.get_bool(tp.DICTIONARY_ENCODING_FOR_ROW_KEY_FIELDS),
            dictionary_sort_keys=properties.get_bool(tp.DICTIONARY_ENCODING_FOR_SORT_KEY_FIELDS),
            dictionary_values=properties.get_bool(tp.DICTIONARY_ENCODING_FOR_VALUE_FIELDS),
            writer_version="v1" if version == "v1" else "v2",
        )

    def writer_options(self, schema: SleeperSchema) -> dict[str, Any]:
        """The keyword arguments of ``pyarrow.parquet.ParquetWriter`` for a table's files."""
        level = self.compression_level
        if level is None and self.compression == "zstd":
            level = _ZSTD_LEVEL
        dictionary: list[str] = []
        for enabled, fields in (
            (self.dictionary_row_keys, schema.row_key_fields),
            (self.dictionary_sort_keys, schema.sort_key_fields),
            (self.dictionary_values, schema.value_fields),
        ):
            if enabled:
                dictionary.extend(path for f in fields for path, _ in _leaves(f))
        options: dict[str, Any] = {
            "version": "2.6",
            "data_page_version": "2.0" if self.writer_version == "v2" else "1.0",
            "compression": COMPRESSION_CODECS[self.compression],
            "compression_level": level,
            "use_dictionary": dictionary,
            "write_statistics": True,
            "data_page_size": self.page_size,
            "write_page_index": self.page_index,
            "store_schema": False,
        }
        if self.writer_version == "v2" and not dictionary:  # pyarrow takes no encodings beside a dictionary
            encodings = {
                path: encoding
                for f in schema.all_fields
                for path, leaf in _leaves(f)
                if (encoding := _v2_encoding(leaf)) is not None
            }
            if encodings:
                options["column_encoding"] = encodings
        return options


def _v2_encoding(kind: pa.DataType) -> str | None:
    """The encoding Sleeper's writers use for a column of this type without a dictionary, for writer version 2."""
    if pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        return "DELTA_BINARY_PACKED"
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        return "DELTA_BYTE_ARRAY"
    if pa.types.is_boolean(kind):
        return "RLE"
    return None


def _leaves(f: Field) -> list[tuple[str, pa.DataType]]:
    """The Parquet column paths of a field's leaves, as pyarrow names them, with their Arrow types."""
    kind = arrow_field(f).type
    if isinstance(kind, pa.MapType):
        return [(f"{f.name}.key_value.key", kind.key_type), (f"{f.name}.key_value.value", kind.item_type)]
    if isinstance(kind, pa.ListType):
        return [(f"{f.name}.list.element", kind.value_type)]
    return [(f.name, kind)]


# ---------------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WrittenFile:
    """A data file that has been written and closed.

    Attributes:
        location: The location the file was written to, as given to the writer.
        rows: The number of rows.
        size_bytes: The size of the Parquet file.
        row_groups: The number of row groups.
        sketches: The sketches of the row keys, or None if they were not made.
        sketches_location: Where the sketches file was written, or None if it was not.
    """

    location: str
    rows: int
    size_bytes: int
    row_groups: int
    sketches: Sketches | None = field(default=None, repr=False)
    sketches_location: str | None = None


class SortedFileWriter:
    """Writes one sorted Parquet data file and its sketches file.

    Use as a context manager: leaving the block closes the file, or, if the block raised, deletes what was written.

    Example::

        with SortedFileWriter("s3a://bucket/t/data/partition_root/x.parquet", schema, options=options) as writer:
            for batch in sorted_batches:
                writer.write(batch)
        written = writer.result

    Args:
        location: The file's URI or path (see :func:`sleeper.io.filesystem.resolve`).
        schema: The table schema; batches must hold its columns (extra columns are dropped).
        settings: How to write Parquet; Sleeper's defaults if omitted.
        filesystem: A filesystem to use instead of the one the location's scheme names.
        options: How to reach S3.
        sketches: Whether to sample the row keys into sketches and write the ``.sketches`` file next to the data
            file (the data file's extension replaced by ``.sketches``).
        writer_thread: Encode row groups on background threads, up to :data:`ENCODE_THREADS` at once, and append
            them to the file in order (:class:`~sleeper.io.row_group_stitch.StitchedParquetWriter`: the same bytes
            as encoding them here), so the producer of the batches (a merge, a sort) runs while row groups are
            encoded. Helps when there is more than one core.

    Raises:
        UnsupportedLocationError: If the location's scheme names no known filesystem.
    """

    def __init__(
        self,
        location: str,
        schema: SleeperSchema,
        *,
        settings: ParquetSettings | None = None,
        filesystem: pafs.FileSystem | None = None,
        options: FileSystemOptions | None = None,
        sketches: bool = True,
        writer_thread: bool = False,
    ) -> None:
        self._location = location
        self._schema = schema
        self._settings = settings or ParquetSettings()
        self._arrow_schema = arrow_schema(schema)
        self._fs, self._path = resolve(location, options, filesystem=filesystem)
        self._sketch_builder = SketchBuilder(schema) if sketches else None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._rows = 0
        self._row_groups = 0
        self._result: WrittenFile | None = None
        self._failed = False
        writer_options = self._settings.writer_options(schema)
        self._sink = open_output(self._fs, self._path)
        self._writer: pq.ParquetWriter | StitchedParquetWriter
        try:
            if writer_thread:
                # pyarrow's own writer checks the options before the stitched writer takes them
                pq.ParquetWriter(pa.BufferOutputStream(), self._arrow_schema, **writer_options).close()
                self._writer = StitchedParquetWriter(self._sink, self._arrow_schema, writer_options, ENCODE_THREADS)
            else:
                self._writer = pq.ParquetWriter(self._sink, self._arrow_schema, **writer_options)
        except BaseException:
            self._sink.close()
            delete(self._fs, self._path)
            raise

    @property
    def location(self) -> str:
        """The location being written, as given."""
        return self._location

    @property
    def rows_written(self) -> int:
        """The number of rows given to the writer so far."""
        return self._rows

    @property
    def result(self) -> WrittenFile:
        """The written file, once closed.

        Raises:
            WriterClosedError: If the writer has not been closed successfully.
        """
        if self._result is None:
            raise WriterClosedError(f"{self._location} has not been closed")
        return self._result

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        """Writes the next rows, which must follow the rows written before in key order.

        Any failure deletes what was written (as :meth:`abort`); the writer cannot be used after that.

        Args:
            data: A record batch or table with the schema's columns.

        Raises:
            SchemaMismatchError: If a column is missing, of the wrong type, or holds nulls where it must not.
            WriterClosedError: If the writer is closed or has failed.
        """
        if self._result is not None or self._failed:
            raise WriterClosedError(f"{self._location} is closed")
        batches = data.to_batches() if isinstance(data, pa.Table) else [data]
        try:
            for batch in batches:
                if batch.num_rows:
                    self._write_batch(batch)
        except BaseException:
            self.abort()
            raise

    def write_batches(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> None:
        """Writes batches in order (see :meth:`write`)."""
        for batch in batches:
            self.write(batch)

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        batch = conform_batch(batch, self._arrow_schema, where=self._location)
        if self._sketch_builder is not None:
            self._sketch_builder.add(batch)
        self._rows += batch.num_rows
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        if len(self._pending) >= _COMBINE_BATCHES:
            combined = pa.Table.from_batches(self._pending, schema=self._arrow_schema).combine_chunks()
            self._pending = combined.to_batches()
        self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        """Writes every full row group buffered (and, if final, the rest)."""
        limit_rows = self._settings.row_group_rows
        limit_bytes = self._settings.row_group_bytes
        while self._pending_rows and (final or self._pending_rows >= limit_rows or self._pending_bytes >= limit_bytes):
            rows = min(self._pending_rows, limit_rows)
            if self._pending_bytes >= limit_bytes:
                rows = min(rows, max(1, self._pending_rows * limit_bytes // self._pending_bytes))
            table = pa.Table.from_batches(self._pending, schema=self._arrow_schema)
            group = table.slice(0, rows)
            rest = table.slice(rows)
            self._pending = [b for b in rest.to_batches() if b.num_rows]
            self._pending_rows -= rows
            self._pending_bytes = sum(b.nbytes for b in self._pending)
            self._row_groups += 1
            if isinstance(self._writer, StitchedParquetWriter):
                self._writer.write_table(group)
            else:
                self._writer.write_table(group, row_group_size=rows)

    def close(self) -> WrittenFile:
        """Writes the last row group, the footer and the sketches file.

        Returns:
            The written file. Closing again returns the same result.

        Raises:
            WriterClosedError: If the writer already failed.
        """
        if self._result is not None:
            return self._result
        if self._failed:
            raise WriterClosedError(f"{self._location} failed and was deleted")
        try:
            self._flush(final=True)
            self._writer.close()
            size_bytes = int(self._sink.tell())
            self._sink.close()
            sketches = self._sketch_builder.finish() if self._sketch_builder is not None else None
            sketches_location = None
            if sketches is not None:
                sketches_location = sketches_path(self._location)
                sketches.write(self._fs, sketches_path(self._path))
        except BaseException:
            self.abort()
            raise
        self._result = WrittenFile(
            location=self._location,
            rows=self._rows,
            size_bytes=size_bytes,
            row_groups=self._row_groups,
            sketches=sketches,
            sketches_location=sketches_location,
        )
        return self._result

    def abort(self) -> None:
        """Stops writing and deletes the data file and any sketches file written. Does nothing once closed."""
        if self._result is not None or self._failed:
            return
        self._failed = True
        self._pending = []
        writer = self._writer
        for step in (writer.discard if isinstance(writer, StitchedParquetWriter) else writer.close, self._sink.close):
            try:
                step()
            except Exception:  # the file is deleted next; the caller is told of the first error, not of these
                pass
        delete(self._fs, self._path)
        delete(self._fs, sketches_path(self._path))

    def __enter__(self) -> SortedFileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()
