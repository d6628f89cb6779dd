"""A filter (:mod:`sleeper.core.filter`) applied to Arrow data: as a pyarrow compute expression over batches, and
against a Parquet file's row group statistics to skip row groups no row of which can match.

The expression keeps SQL's null semantics, which DuckDB and Spark share: a comparison with a null is null, ``not``
of a null is null, and a row whose filter is null is not returned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper.core.filter import (
    And,
    Between,
    ColumnStats,
    Compare,
    Filter,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    StartsWith,
    columns_of,
    may_match,
)
from sleeper.core.schema import Schema, TimestampType, ValueType
from sleeper.io.arrow_schema import arrow_type
from sleeper.io.page_index import FooterIndex, PageLocations

__all__ = ["column_positions", "filter_batch", "page_spans", "row_group_may_match", "to_expression"]

_NULL_BOOL = pa.scalar(None, pa.bool_())


def to_expression(node: Filter, schema: Schema | None = None) -> pc.Expression:
    """The filter as a pyarrow compute expression (null where SQL's would be null).

    With the table's schema, the ISO 8601 literals of a ``DateType`` or ``TimestampType`` column are compared as that
    column's type (Arrow compares no date or timestamp with a string); without it, literals keep their Python type.
    """
    if isinstance(node, And):
        out = to_expression(node.parts[0], schema)
        for part in node.parts[1:]:
            out = out & to_expression(part, schema)
        return out
    if isinstance(node, Or):
        out = to_expression(node.parts[0], schema)
        for part in node.parts[1:]:
            out = out | to_expression(part, schema)
        return out
    if isinstance(node, Not):
        return ~to_expression(node.part, schema)
    field = pc.field(node.column)
    temporal = _temporal_type(schema, node.column)
    if isinstance(node, Compare):
        value = _scalar(node.value, temporal)
        return {
            "=": field == value,
            "!=": field != value,
            "<": field < value,
            "<=": field <= value,
            ">": field > value,
            ">=": field >= value,
        }[node.op]
    if isinstance(node, IsNull):
        return field.is_valid() if node.negated else field.is_null()
    if isinstance(node, InList):
        values = list(node.values) if temporal is None else _temporal(pa.array(node.values, pa.string()), temporal)
        found = pc.if_else(field.is_valid(), field.isin(values), _NULL_BOOL)
        return ~found if node.negated else found
    if isinstance(node, Between):
        inside = (field >= _scalar(node.low, temporal)) & (field <= _scalar(node.high, temporal))
        return ~inside if node.negated else inside
    if isinstance(node, StartsWith):
        prefix = node.prefix
        if isinstance(prefix, bytes):
            return pc.binary_slice(field, 0, len(prefix)) == pa.scalar(prefix, pa.binary())
        return pc.starts_with(field, pattern=prefix)
    assert isinstance(node, Like)
    matched = pc.match_like(field, pattern=node.pattern)
    return ~matched if node.negated else matched


def _temporal_type(schema: Schema | None, column: str) -> pa.DataType | None:
    """The Arrow type of a date or timestamp column, whose literals are ISO 8601 text; None for any other column."""
    if schema is None or not schema.has_field(column):
        return None
    kind = schema.field(column).type
    if kind is ValueType.DATE or isinstance(kind, TimestampType):
        return arrow_type(kind)
    return None


def _scalar(value: object, temporal: pa.DataType | None) -> pa.Scalar:
    """A literal as an Arrow scalar: of the column's type when it is a date or timestamp (ISO 8601 text)."""
    if temporal is None or not isinstance(value, str):
        return pa.scalar(value)
    return _temporal(pa.array([value], pa.string()), temporal)[0]


def _temporal(text: pa.Array, temporal: pa.DataType) -> pa.Array:
    """ISO 8601 literals (as :meth:`sleeper.core.schema.TimestampType.literal` writes them: a zone's instant in UTC)
    as the column's type."""
    if pa.types.is_timestamp(temporal) and temporal.tz is not None:
        return text.cast(pa.timestamp(temporal.unit, tz="UTC")).cast(temporal)
    return text.cast(temporal)


def filter_batch(batch: pa.RecordBatch, expression: pc.Expression) -> pa.RecordBatch:
    """The rows of a batch the expression holds for (null counts as not holding)."""
    return batch.filter(expression) if batch.num_rows else batch


def row_group_may_match(
    metadata: pq.FileMetaData, group: int, node: Filter, columns: Collection[str], index: Mapping[str, int]
) -> bool:
    """Whether a row group can hold a row the filter selects, from its column statistics.

    Args:
        metadata: The file's footer.
        group: The row group.
        node: The filter.
        columns: The columns whose statistics may be used (others are taken to hold anything).
        index: The position in the footer of each top-level primitive column, by name (:func:`column_positions`).
    """
    row_group = metadata.row_group(group)
    stats: dict[str, ColumnStats] = {}
    for name in columns:
        position = index.get(name)
        if position is None:
            continue
        column = row_group.column(position)
        statistics = column.statistics
        if statistics is None:
            continue
        has_range = statistics.has_min_max
        stats[name] = ColumnStats(
            min=_stat(statistics.min) if has_range else None,
            max=_stat(statistics.max) if has_range else None,
            null_count=statistics.null_count if statistics.has_null_count else None,
            rows=row_group.num_rows,
        )
    return may_match(node, stats)


def column_positions(metadata: pq.FileMetaData) -> dict[str, int]:
    """The footer position of each top-level primitive column, by name (nested columns have no usable statistics)."""
    out: dict[str, int] = {}
    if metadata.num_row_groups == 0:
        return out
    first = metadata.row_group(0)
    for position in range(first.num_columns):
        path = first.column(position).path_in_schema
        if "." not in path:
            out[path] = position
    return out


def _stat(value: Any) -> Any:
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


def page_spans(
    node: Filter, columns: Collection[str], string_columns: Collection[str]
) -> Callable[[FooterIndex, int], list[tuple[int, int]] | None]:
    """What a reader asks to decode only the pages of a row group that can hold a row the filter selects: told the
    file's page index (loaded for the row group) and the row group, the spans ``[start, end)`` of its rows whose
    pages' minima, maxima and all-null flags allow a match, or None if no column of the filter has a page index.

    Args:
        node: The filter.
        columns: The columns whose page statistics may be used (integer, string and byte array columns: the page
            index gives their bounds as stored).
        string_columns: Those of them holding strings (their bounds are UTF-8 bytes).
    """
    names = [name for name in columns_of(node) if name in columns]

    def spans(index: FooterIndex, group: int) -> list[tuple[int, int]] | None:
        used: list[tuple[str, PageLocations, list[Any], list[Any]]] = []
        for name in names:
            leaves = index.leaves(name)
            if len(leaves) != 1:
                continue
            locations = index.locations(group, leaves[0])
            bounds = index.page_bounds(group, leaves[0])
            if locations is None or bounds is None:
                continue
            low, high = bounds
            if name in string_columns:
                low, high = _texts(low), _texts(high)
            used.append((name, locations, low, high))
        if not used:
            return None
        rows = index.row_group_rows(group)
        cuts = sorted({row for _, locations, _, _ in used for row in locations.first_rows} | {rows})
        kept: list[tuple[int, int]] = []
        for start, end in zip(cuts, cuts[1:], strict=False):
            stats: dict[str, ColumnStats] = {}
            for name, locations, low, high in used:
                page = locations.page_of(start)
                if low[page] is None and high[page] is None:
                    stats[name] = ColumnStats(None, None, end - start, end - start)  # an all-null page
                elif low[page] is not _UNKNOWN and high[page] is not _UNKNOWN:
                    stats[name] = ColumnStats(low[page], high[page], None, end - start)
            if may_match(node, stats):
                if kept and kept[-1][1] == start:
                    kept[-1] = (kept[-1][0], end)
                else:
                    kept.append((start, end))
        return kept

    return spans


_UNKNOWN = object()
"""A page bound that could not be read as text (never compared)."""


def _texts(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value is None:
            out.append(None)
            continue
        try:
            out.append(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            out.append(_UNKNOWN)
    return out
