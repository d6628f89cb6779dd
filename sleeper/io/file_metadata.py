"""What a data file's footer says of it: its rows and its row groups with the statistics of their row key
columns, as the reader plans reads by them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.core import KeyValue, PrimitiveType
from sleeper.core import Schema as SleeperSchema

__all__ = ["RowGroupInfo", "SortedFileMetadata", "file_metadata"]


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


def file_metadata(metadata: pq.FileMetaData, schema: SleeperSchema) -> SortedFileMetadata:
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
