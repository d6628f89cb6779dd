"""A filter (:mod:`sleeper.core.filter`) applied to Arrow data: as a pyarrow compute expression, as a predicate
evaluated over batches with compute kernels (:class:`RowPredicate`), and against a Parquet file's row group statistics
to skip row groups no row of which can match.

Both forms keep SQL's null semantics, which DuckDB and Spark share: a comparison with a null is null, ``not`` of a
null is null, and a row whose filter is null is not returned. Filtering a batch by an expression builds and runs an
Acero plan on every call (about four times the cost of the kernels themselves on a 64k-row batch), so reads that
filter batch after batch use a :class:`RowPredicate`, which calls the same kernels directly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper.core import (
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
    Schema,
    StartsWith,
    TimestampType,
    ValueType,
    columns_of,
    may_match,
)
from sleeper.io.arrow_types import arrow_type
from sleeper.io.page_index import FooterIndex, PageLocations

__all__ = [
    "RowPredicate",
    "column_positions",
    "filter_batch",
    "page_spans",
    "row_group_may_match",
    "row_group_statistics",
    "row_predicate",
    "to_expression",
]


def _null_bool() -> pa.Scalar:
    """A null boolean, made when needed: building a scalar at import would have pyarrow import pandas (when installed)
    in every process that imports the readers, a third of a second each."""
    return pa.scalar(None, pa.bool_())


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
        found = pc.if_else(field.is_valid(), field.isin(values), _null_bool())
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


_Columns: TypeAlias = pa.RecordBatch | pa.Table
_Mask: TypeAlias = Callable[[_Columns], Any]
"""Told a batch (or table), a boolean array (or chunked array) with a value per row: true, false or null."""


class RowPredicate:
    """A filter compiled once for a table's schema and evaluated over batches with pyarrow compute kernels, giving the
    same rows as filtering by :func:`to_expression` (the same kernels, the same null semantics) without building a
    query plan per batch.

    Use ``predicate.filter(batch)`` (or :func:`filter_batch`) for the rows that match, ``predicate.mask(batch)`` for
    the mask, and ``predicate.expression`` where a pyarrow compute expression is wanted (a dataset scan).

    Args:
        node: The filter.
        schema: The table's schema; with it, the ISO 8601 literals of a date or timestamp column compare as that
            column's type (see :func:`to_expression`).
    """

    __slots__ = ("_expression", "_mask", "_schema", "node")

    def __init__(self, node: Filter, schema: Schema | None = None) -> None:
        self.node = node
        self._schema = schema
        self._mask = _compile(node, schema)
        self._expression: pc.Expression | None = None

    @property
    def expression(self) -> pc.Expression:
        """The filter as a pyarrow compute expression (:func:`to_expression`)."""
        if self._expression is None:
            self._expression = to_expression(self.node, self._schema)
        return self._expression

    def mask(self, batch: _Columns) -> Any:
        """Whether each row of a batch or table matches: true, false, or null where SQL's filter would be null."""
        return self._mask(batch)

    def filter(self, batch: _Columns) -> Any:
        """The rows of a batch or table the filter holds for (null counts as not holding), in their order."""
        if not batch.num_rows:
            return batch
        mask = self._mask(batch)
        if isinstance(mask, pa.Scalar):  # a filter of literals alone: every row or none
            return batch if mask.as_py() else batch.slice(0, 0)
        if isinstance(mask, pa.BooleanArray) and mask.true_count == len(mask):
            return batch  # every row matches (a key filter its regions already applied): no copy
        return batch.filter(mask)


def row_predicate(node: Filter, schema: Schema | None = None) -> RowPredicate:
    """The filter compiled for batches (see :class:`RowPredicate`)."""
    return RowPredicate(node, schema)


def _compile(node: Filter, schema: Schema | None) -> _Mask:
    """The kernels :func:`to_expression`'s expression calls, one per node, as a function of a batch."""
    if isinstance(node, (And, Or)):
        parts = [_compile(part, schema) for part in node.parts]
        join = pc.and_kleene if isinstance(node, And) else pc.or_kleene

        def joined(batch: _Columns) -> Any:
            out = parts[0](batch)
            for part in parts[1:]:
                out = join(out, part(batch))
            return out

        return joined
    if isinstance(node, Not):
        inner = _compile(node.part, schema)
        return lambda batch: pc.invert(inner(batch))
    name = node.column
    temporal = _temporal_type(schema, name)
    if isinstance(node, Compare):
        value = _scalar(node.value, temporal)
        kernel = _COMPARISONS[node.op]
        return lambda batch: kernel(batch.column(name), value)
    if isinstance(node, IsNull):
        test = pc.is_valid if node.negated else pc.is_null
        return lambda batch: test(batch.column(name))
    if isinstance(node, InList):
        values = (
            pa.array(list(node.values)) if temporal is None else _temporal(pa.array(node.values, pa.string()), temporal)
        )
        options = pc.SetLookupOptions(values)
        negated = node.negated

        def found(batch: _Columns) -> Any:
            column = batch.column(name)
            out = pc.if_else(pc.is_valid(column), pc.is_in(column, options=options), _null_bool())
            return pc.invert(out) if negated else out

        return found
    if isinstance(node, Between):
        low, high = _scalar(node.low, temporal), _scalar(node.high, temporal)
        negated = node.negated

        def inside(batch: _Columns) -> Any:
            column = batch.column(name)
            out = pc.and_kleene(pc.greater_equal(column, low), pc.less_equal(column, high))
            return pc.invert(out) if negated else out

        return inside
    if isinstance(node, StartsWith):
        prefix = node.prefix
        if isinstance(prefix, bytes):
            wanted = pa.scalar(prefix, pa.binary())
            return lambda batch: pc.equal(pc.binary_slice(batch.column(name), 0, len(prefix)), wanted)
        return lambda batch: pc.starts_with(batch.column(name), pattern=prefix)
    assert isinstance(node, Like)
    pattern, negated = node.pattern, node.negated

    def like(batch: _Columns) -> Any:
        matched = pc.match_like(batch.column(name), pattern=pattern)
        return pc.invert(matched) if negated else matched

    return like


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def filter_batch(batch: pa.RecordBatch, expression: pc.Expression | RowPredicate) -> pa.RecordBatch:
    """The rows of a batch the filter holds for (null counts as not holding): by compute kernels for a
    :class:`RowPredicate`, through an Acero plan for an expression."""
    if not batch.num_rows:
        return batch
    if isinstance(expression, RowPredicate):
        filtered: pa.RecordBatch = expression.filter(batch)
        return filtered
    return batch.filter(expression)


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
    return may_match(node, row_group_statistics(metadata, group, columns, index))


def row_group_statistics(
    metadata: pq.FileMetaData, group: int, columns: Collection[str], index: Mapping[str, int]
) -> dict[str, ColumnStats]:
    """What a row group's statistics say of some columns, as a filter's test of them takes (a column without usable
    statistics is left out: it may hold anything).

    Args:
        metadata: The file's footer.
        group: The row group.
        columns: The columns wanted.
        index: The position in the footer of each top-level primitive column, by name (:func:`column_positions`).
    """
    row_group = metadata.row_group(group)
    stats: dict[str, ColumnStats] = {}
    for name in columns:
        position = index.get(name)
        if position is None:
            continue
        statistics = row_group.column(position).statistics
        if statistics is None:
            continue
        has_range = statistics.has_min_max
        try:
            low = _stat(statistics.min) if has_range else None
            high = _stat(statistics.max) if has_range else None
        except (UnicodeDecodeError, ValueError, pa.ArrowException):  # e.g. a truncated maximum that is not UTF-8
            low = high = None
        stats[name] = ColumnStats(
            min=low,
            max=high,
            null_count=statistics.null_count if statistics.has_null_count else None,
            rows=row_group.num_rows,
        )
    return stats


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
