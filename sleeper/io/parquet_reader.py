"""Reading sorted Parquet data files by key range, decoding only the row groups that can hold rows in the ranges.

Ranges are given per row key field as :class:`~sleeper.io.key_ranges.KeyBounds` (inclusive minimum, exclusive
maximum, the canonical form of Sleeper's ranges); a list of them makes a region, and a row is read if it is in any
region. Row groups whose statistics show they hold no row of any region are never read or decoded; rows of the other
row groups are filtered exactly with vectorised comparisons, except in row groups that lie wholly within a region.

Files are opened with ``pre_buffer=False``: with pre-buffering pyarrow fetches every requested row group before
decoding the first, which would hold whole files in memory. The names here are also available from
:mod:`sleeper.io.parquet`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core.schema import KeyValue, PrimitiveType
from sleeper.core.schema import Schema as SleeperSchema
from sleeper.io.arrow_schema import key_arrow_type
from sleeper.io.exceptions import DataFileError, SchemaMismatchError
from sleeper.io.filesystem import FileSystemOptions, open_input, resolve
from sleeper.io.key_ranges import (
    NormalisedRegion,
    Region,
    normalise_regions,
    region_contains,
    region_overlaps,
    regions_mask,
)

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "ReadPlan",
    "RowGroupInfo",
    "SortedFileMetadata",
    "SortedFileReader",
    "read_file_metadata",
    "read_sorted",
]

DEFAULT_BATCH_ROWS = 65536
"""The default largest number of rows in a batch read from a file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RowGroupInfo:
    """A row group of a data file, with the statistics of its row key columns.

    Attributes:
        index: The row group's position in the file.
        rows: Its number of rows.
        compressed_bytes: Its size in the file.
        min: The smallest value of each row key field that has statistics.
        max: The largest value of each row key field that has statistics.
    """

    index: int
    rows: int
    compressed_bytes: int
    min: Mapping[str, KeyValue]
    max: Mapping[str, KeyValue]


@dataclass(frozen=True, slots=True, kw_only=True)
class SortedFileMetadata:
    """What a data file's footer says.

    Attributes:
        rows: The number of rows.
        row_groups: Every row group in order.
    """

    rows: int
    row_groups: tuple[RowGroupInfo, ...]

    @property
    def row_group_count(self) -> int:
        """The number of row groups."""
        return len(self.row_groups)


@dataclass(frozen=True, slots=True)
class _Step:
    """Row groups read together, and the regions their rows are filtered by (None = no filter needed)."""

    row_groups: tuple[int, ...]
    regions: tuple[NormalisedRegion, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """Which row groups of a file a read decodes, chosen from their statistics.

    Attributes:
        row_groups: The row groups that will be read, in order; no other row group is read.
        filtered_row_groups: Those of them whose rows are filtered; the others lie wholly within a region.
        total_row_groups: The number of row groups in the file.
        rows: The rows in the row groups read (at least as many as the rows returned).
    """

    row_groups: tuple[int, ...]
    filtered_row_groups: tuple[int, ...]
    total_row_groups: int
    rows: int
    _steps: tuple[_Step, ...] = field(repr=False, compare=False)


class SortedFileReader:
    """Reads a sorted data file by key ranges, reading only the row groups that can hold rows in the ranges.

    Opening reads the footer. Use as a context manager, or call :meth:`close`.

    Args:
        location: The file's URI or path (see :func:`sleeper.io.filesystem.resolve`).
        schema: The table schema.
        filesystem: A filesystem to use instead of the one the location's scheme names.
        options: How to reach S3.
        metadata: The file's footer, if already known (such as from a cache of :attr:`parquet_metadata`); saves
            reading it again.

    Raises:
        MissingFileError: If the file does not exist.
        DataFileError: If the file is not a readable Parquet file.
        SchemaMismatchError: If a row key column is missing or of another type than the schema's.
    """

    def __init__(
        self,
        location: str,
        schema: SleeperSchema,
        *,
        filesystem: pafs.FileSystem | None = None,
        options: FileSystemOptions | None = None,
        metadata: pq.FileMetaData | None = None,
    ) -> None:
        self._location = location
        self._schema = schema
        fs, path = resolve(location, options, filesystem=filesystem)
        self._file = open_input(fs, path)
        try:
            self._parquet = pq.ParquetFile(self._file, pre_buffer=False, metadata=metadata)
            self._check_key_columns()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            self._file.close()
            raise DataFileError(f"{location} cannot be read as Parquet: {e}") from None
        except BaseException:
            self._file.close()
            raise
        self._info: SortedFileMetadata | None = None

    def _check_key_columns(self) -> None:
        file_schema = self._parquet.schema_arrow
        for f in self._schema.row_key_fields:
            index = file_schema.get_field_index(f.name)
            if index < 0:
                raise SchemaMismatchError(f"{self._location} has no row key column {f.name!r}")
            actual = file_schema.field(index).type
            expected = key_arrow_type(f.primitive_type)
            if not actual.equals(expected):
                raise SchemaMismatchError(
                    f"{self._location} row key column {f.name!r} has type {actual}, the schema says {expected}"
                )

    @property
    def parquet_metadata(self) -> pq.FileMetaData:
        """The file's footer, for callers that cache footers."""
        return self._parquet.metadata

    @property
    def metadata(self) -> SortedFileMetadata:
        """The row count and the row groups with their row key statistics."""
        if self._info is None:
            self._info = _file_metadata(self._parquet.metadata, self._schema)
        return self._info

    def plan(self, regions: Sequence[Region] | None = None) -> ReadPlan:
        """Chooses the row groups a read of some regions decodes.

        Args:
            regions: The regions to read; None reads the whole file, an empty list nothing.

        Raises:
            SchemaError: If a bound names a field that is not a row key.
            KeyTypeError: If a bound's value is not of its field's type.
        """
        info = self.metadata
        normalised = None if regions is None else normalise_regions(regions, self._schema)
        steps: list[_Step] = []
        selected: list[int] = []
        filtered: list[int] = []
        rows = 0
        for group in info.row_groups:
            if normalised is None:
                key: tuple[NormalisedRegion, ...] | None = None
            else:
                overlapping = [r for r in normalised if region_overlaps(r, group.min, group.max)]
                if not overlapping:
                    continue
                key = None if any(region_contains(r, group.min, group.max) for r in overlapping) else tuple(overlapping)
            selected.append(group.index)
            rows += group.rows
            if key is not None:
                filtered.append(group.index)
            if steps and steps[-1].regions == key:
                steps[-1] = _Step(steps[-1].row_groups + (group.index,), key)
            else:
                steps.append(_Step((group.index,), key))
        return ReadPlan(
            row_groups=tuple(selected),
            filtered_row_groups=tuple(filtered),
            total_row_groups=info.row_group_count,
            rows=rows,
            _steps=tuple(steps),
        )

    def read(
        self,
        regions: Sequence[Region] | None = None,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_ROWS,
        use_threads: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Reads the rows in any of the regions, in file order.

        Args:
            regions: The regions to read; None reads the whole file, an empty list nothing.
            columns: The columns to return, in order; all of the schema's by default.
            batch_size: The most rows in a batch read (filtered batches can be smaller; empty ones are skipped).
            use_threads: Decode columns in parallel.

        Raises:
            SchemaError: If a bound names a field that is not a row key.
            KeyTypeError: If a bound's value is not of its field's type.
            SchemaMismatchError: If the file lacks a requested column.
        """
        return self.read_plan(self.plan(regions), columns=columns, batch_size=batch_size, use_threads=use_threads)

    def read_plan(
        self,
        plan: ReadPlan,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_ROWS,
        use_threads: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Reads the row groups of a plan made by :meth:`plan` (see :meth:`read`)."""
        names = list(columns) if columns is not None else list(self._schema.field_names)
        file_names = set(self._parquet.schema_arrow.names)
        missing = [name for name in names if name not in file_names]
        if missing:
            raise SchemaMismatchError(f"{self._location} has no column {missing[0]!r}")
        return self._read_steps(plan._steps, names, batch_size, use_threads)

    def _read_steps(
        self, steps: Sequence[_Step], names: list[str], batch_size: int, use_threads: bool
    ) -> Iterator[pa.RecordBatch]:
        for step in steps:
            extra: list[str] = []
            if step.regions is not None:
                for region in step.regions:
                    extra.extend(b.name for b in region if b.name not in names and b.name not in extra)
            batches = self._parquet.iter_batches(
                batch_size=batch_size,
                row_groups=list(step.row_groups),
                columns=names + extra,
                use_threads=use_threads,
            )
            for batch in batches:
                if step.regions is not None:
                    mask = regions_mask(batch, step.regions)
                    matching = pc.sum(mask).as_py() or 0
                    if matching == 0:
                        continue
                    if matching < batch.num_rows:
                        batch = batch.filter(mask)
                if extra:
                    batch = batch.select(names)
                yield batch

    def close(self) -> None:
        """Closes the file."""
        self._file.close()

    def __enter__(self) -> SortedFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_sorted(
    location: str,
    schema: SleeperSchema,
    *,
    regions: Sequence[Region] | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_ROWS,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    use_threads: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Reads the rows of one data file in any of the regions (see :class:`SortedFileReader`).

    The file is opened when the first batch is requested and closed when the iterator is exhausted or closed.
    """
    with SortedFileReader(location, schema, filesystem=filesystem, options=options) as reader:
        yield from reader.read(regions, columns=columns, batch_size=batch_size, use_threads=use_threads)


def read_file_metadata(
    location: str,
    schema: SleeperSchema,
    *,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> SortedFileMetadata:
    """Reads a data file's footer: its row count and its row groups with their row key statistics.

    Raises:
        MissingFileError: If the file does not exist.
        DataFileError: If the file is not a readable Parquet file.
        SchemaMismatchError: If a row key column is missing or of another type than the schema's.
    """
    with SortedFileReader(location, schema, filesystem=filesystem, options=options) as reader:
        return reader.metadata


def _file_metadata(metadata: pq.FileMetaData, schema: SleeperSchema) -> SortedFileMetadata:
    leaf_index: dict[str, int] = {}
    for j in range(metadata.num_columns):
        leaf_index.setdefault(metadata.schema.column(j).path, j)
    key_columns = [(f, leaf_index[f.name]) for f in schema.row_key_fields if f.name in leaf_index]
    groups = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        mins: dict[str, KeyValue] = {}
        maxs: dict[str, KeyValue] = {}
        for f, j in key_columns:
            bounds = _statistics(group.column(j), f.primitive_type)
            if bounds is not None:
                mins[f.name], maxs[f.name] = bounds
        groups.append(
            RowGroupInfo(
                index=i,
                rows=group.num_rows,
                compressed_bytes=sum(group.column(j).total_compressed_size for j in range(group.num_columns)),
                min=mins,
                max=maxs,
            )
        )
    return SortedFileMetadata(rows=metadata.num_rows, row_groups=tuple(groups))


_PYTHON_TYPES: dict[PrimitiveType, type | tuple[type, ...]] = {
    PrimitiveType.INT: int,
    PrimitiveType.LONG: int,
    PrimitiveType.STRING: str,
    PrimitiveType.BYTE_ARRAY: bytes,
}


def _statistics(column: Any, key_type: PrimitiveType) -> tuple[KeyValue, KeyValue] | None:
    """A column chunk's minimum and maximum, or None if it has none usable (then the row group is never skipped)."""
    try:
        stats = column.statistics
        if stats is None or not stats.has_min_max:
            return None
        low, high = stats.min, stats.max
    except (UnicodeDecodeError, ValueError, pa.ArrowException):  # e.g. a truncated maximum that is not valid UTF-8
        return None
    expected = _PYTHON_TYPES[key_type]
    if isinstance(low, expected) and isinstance(high, expected) and not isinstance(low, bool):
        return _key_value(low), _key_value(high)
    return None


def _key_value(value: object) -> KeyValue:
    assert isinstance(value, int | str | bytes)
    return value
