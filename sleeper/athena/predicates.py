"""The query's predicates as Athena sends them (a constraints *summary*: one value set per column), read and applied.

Three kinds of value set exist (``@type``):

* ``AllOrNoneValueSet``: every value or none, with or without nulls.
* ``EquatableValueSet``: a list of values (``valueBlock``, one column ``col1``) that are allowed (``whiteList``) or
  excluded, with or without nulls.
* ``SortedRangeSet``: ranges between markers, each marker a value ``EXACTLY``, just ``ABOVE`` or just ``BELOW`` it;
  a marker with ``nullValue`` is unbounded (``ABOVE`` for a low end, ``BELOW`` for a high end).

Row key value sets are *pushed down*: they choose the leaf partitions, and the files are read only within the key
ranges they allow. Value sets on any column of a Sleeper type (row keys, sort keys, values) whose shape is fully
understood (all or none, listed values allowed or excluded, ranges with exact or open ends, each with or without
nulls) also become one filter (:func:`summary_filter`, in the language of :mod:`sleeper.core.filter`), which the read
applies after the table's rules, skipping row groups by their statistics first. Any other value set is applied to the
rows returned, with vectorised comparisons (:func:`row_mask`). A value set that cannot be read or does not suit its
column is neither pushed down nor applied: the read falls back to the wider scan, which can return more rows than
asked (Athena filters them again) but never fewer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.athena.arrow_ipc import decode_block
from sleeper.athena.exceptions import AthenaConnectorError
from sleeper.core import (
    And,
    Between,
    Compare,
    Field,
    Filter,
    InList,
    IsNull,
    KeyValue,
    Or,
    PrimitiveType,
    Schema,
    SleeperError,
    next_value,
)
from sleeper.io import (
    FileSystemOptions,
    KeyBounds,
    SortedFileReader,
    column_positions,
    filter_batch,
    row_group_may_match,
    to_expression,
)

__all__ = [
    "MAX_PUSHED_DOWN_REGIONS",
    "AllOrNoneValueSet",
    "Bound",
    "EquatableValueSet",
    "KeyIntervals",
    "Marker",
    "SortedRangeSet",
    "UnsupportedValueSet",
    "ValueRange",
    "ValueSet",
    "intersect_intervals",
    "key_intervals",
    "parse_summary",
    "parse_value_set",
    "partition_matches",
    "read_regions",
    "filtered_rows",
    "read_file_rows",
    "row_mask",
    "summary_filter",
]

MAX_PUSHED_DOWN_REGIONS = 1024
"""The most key regions a file read is given; past this the ranges of later row key fields are merged into one."""


class Bound(Enum):
    """Where a marker sits relative to its value."""

    BELOW = "BELOW"
    EXACTLY = "EXACTLY"
    ABOVE = "ABOVE"


@dataclass(frozen=True, slots=True)
class Marker:
    """One end of a range: a value (None when ``null_value``, meaning unbounded) and where the end sits."""

    value: object
    bound: Bound
    null_value: bool


@dataclass(frozen=True, slots=True)
class ValueRange:
    """The values between two markers."""

    low: Marker
    high: Marker


@dataclass(frozen=True, slots=True)
class AllOrNoneValueSet:
    """Every value or none."""

    all: bool
    null_allowed: bool


@dataclass(frozen=True, slots=True)
class EquatableValueSet:
    """Listed values, allowed (white list) or excluded."""

    values: pa.Array
    white_list: bool
    null_allowed: bool


@dataclass(frozen=True, slots=True)
class SortedRangeSet:
    """A union of ranges."""

    ranges: tuple[ValueRange, ...]
    null_allowed: bool


@dataclass(frozen=True, slots=True)
class UnsupportedValueSet:
    """A value set this connector cannot read; it constrains nothing here."""

    reason: str


ValueSet = AllOrNoneValueSet | EquatableValueSet | SortedRangeSet | UnsupportedValueSet

KeyIntervals = dict[str, list[tuple[KeyValue, KeyValue | None]]]
"""Per row key field, the canonical intervals ``[min, max)`` (max None = unbounded) its values must lie in; a field
that is absent is unconstrained, an empty list allows no value."""


def parse_summary(summary: object) -> dict[str, ValueSet]:
    """Reads a constraints summary (``{"<column>": <value set>, ...}``); a missing summary constrains nothing."""
    if not isinstance(summary, Mapping):
        return {}
    return {str(column): parse_value_set(value) for column, value in summary.items()}


def parse_value_set(data: object) -> ValueSet:
    """Reads one value set; anything unreadable becomes :class:`UnsupportedValueSet`."""
    if not isinstance(data, Mapping):
        return UnsupportedValueSet("not an object")
    kind = data.get("@type")
    try:
        if kind == "AllOrNoneValueSet":
            return AllOrNoneValueSet(all=bool(data["all"]), null_allowed=bool(data["nullAllowed"]))
        if kind == "EquatableValueSet":
            block = decode_block(data["valueBlock"], where="valueBlock")
            return EquatableValueSet(
                values=block.column(0) if block.num_columns else pa.array([]),
                white_list=bool(data["whiteList"]),
                null_allowed=bool(data["nullAllowed"]),
            )
        if kind == "SortedRangeSet":
            ranges = tuple(ValueRange(low=_marker(r["low"]), high=_marker(r["high"])) for r in data.get("ranges") or ())
            return SortedRangeSet(ranges=ranges, null_allowed=bool(data["nullAllowed"]))
    except (KeyError, TypeError, ValueError, AthenaConnectorError) as e:
        return UnsupportedValueSet(f"unreadable {kind}: {e}")
    return UnsupportedValueSet(f"unknown value set type {kind!r}")


def _marker(data: Mapping[str, object]) -> Marker:
    null_value = bool(data["nullValue"])
    bound = Bound(str(data["bound"]))
    value: object = None
    if not null_value:
        block = decode_block(data["valueBlock"], where="marker valueBlock")
        if block.num_rows != 1 or block.num_columns != 1:
            raise ValueError("a marker's value block must hold one value")
        value = block.column(0)[0].as_py()
        if value is None:
            raise ValueError("a marker's value is null but nullValue is false")
    return Marker(value=value, bound=bound, null_value=null_value)


# --- filtering rows ------------------------------------------------------------------------------------------------


def row_mask(batch: pa.RecordBatch, summary: Mapping[str, ValueSet]) -> pa.Array | None:
    """The rows of a batch that satisfy every value set on one of its columns, or None if nothing is filtered.

    Value sets on columns the batch lacks, on non-primitive columns, or that do not suit their column are skipped.
    """
    mask: pa.Array | None = None
    for name, value_set in summary.items():
        index = batch.schema.get_field_index(name)
        if index < 0:
            continue
        column = batch.column(index)
        if not _is_primitive(column.type):
            continue
        part = _column_mask(column, value_set)
        if part is not None:
            mask = part if mask is None else pc.and_(mask, part)
    return mask


def _is_primitive(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _constant(n: int, value: bool) -> pa.Array:
    return pa.array(np.full(n, value, dtype=np.bool_))


def _with_nulls(mask: pa.Array, column: pa.Array, null_allowed: bool) -> pa.Array:
    mask = pc.fill_null(mask, False)
    if null_allowed and column.null_count:
        mask = pc.or_(mask, pc.is_null(column))
    return mask


def _column_mask(column: pa.Array, value_set: ValueSet) -> pa.Array | None:
    n = len(column)
    if isinstance(value_set, AllOrNoneValueSet):
        if value_set.all:
            return None if value_set.null_allowed or not column.null_count else pc.is_valid(column)
        return pc.is_null(column) if value_set.null_allowed else _constant(n, False)
    if isinstance(value_set, EquatableValueSet):
        try:
            values = value_set.values.cast(column.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        found = pc.fill_null(pc.is_in(column, value_set=values), False)
        if not value_set.white_list:
            found = pc.and_(pc.invert(found), pc.is_valid(column))
        return _with_nulls(found, column, value_set.null_allowed)
    if isinstance(value_set, SortedRangeSet):
        mask: pa.Array | None = None
        for r in value_set.ranges:
            part = _range_mask(column, r)
            if part is None:
                return None
            mask = part if mask is None else pc.or_(mask, part)
        if mask is None:
            mask = _constant(n, False)
        return _with_nulls(mask, column, value_set.null_allowed)
    return None


def _range_mask(column: pa.Array, r: ValueRange) -> pa.Array | None:
    mask: pa.Array = pc.is_valid(column)
    ends = (
        (r.low, Bound.ABOVE, {Bound.EXACTLY: pc.greater_equal, Bound.ABOVE: pc.greater}),
        (r.high, Bound.BELOW, {Bound.EXACTLY: pc.less_equal, Bound.BELOW: pc.less}),
    )
    for marker, unbounded, compare in ends:
        if marker.null_value:
            if marker.bound is not unbounded:
                return None
            continue
        op = compare.get(marker.bound)
        if op is None:
            return None
        try:
            scalar = pa.scalar(marker.value).cast(column.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
            return None
        mask = pc.and_(mask, op(column, scalar))
    return mask


# --- the summary as a filter ----------------------------------------------------------------------------------------


def summary_filter(schema: Schema, summary: Mapping[str, ValueSet]) -> tuple[Filter | None, frozenset[str]]:
    """The value sets a filter can say exactly, as one filter, and the columns it covers.

    Only value sets on a column of one of Sleeper's types (``IntType``, ``LongType``, ``StringType``,
    ``ByteArrayType``) whose every value suits the column are converted: all or none, listed values allowed or
    excluded, and ranges whose ends are exact, open or unbounded, each with or without nulls. The filter selects
    exactly the rows :func:`row_mask` keeps for those columns, so the others alone are left to it. A column whose
    value set allows every value and null is covered with no filter.

    Returns:
        The filter (None if it constrains nothing) and the names of the columns whose value sets it covers.
    """
    parts: list[Filter] = []
    covered: set[str] = set()
    for name, value_set in summary.items():
        if not schema.has_field(name):
            continue
        f = schema.field(name)
        if not isinstance(f.type, PrimitiveType):
            continue
        try:
            node = _value_set_filter(f, f.type, value_set)
        except (SleeperError, TypeError, ValueError):
            continue  # a value not of the column's type, or out of its range: left to row_mask
        if node is _UNCONVERTED:
            continue
        covered.add(name)
        if node is not _EVERY_ROW:
            assert not isinstance(node, _Marker)
            parts.append(node)
    if not parts:
        return None, frozenset(covered)
    return (parts[0] if len(parts) == 1 else And(tuple(parts))), frozenset(covered)


class _Marker:
    """A sentinel of :func:`_value_set_filter`."""


_EVERY_ROW = _Marker()
_UNCONVERTED = _Marker()


def _no_row(column: str) -> Filter:
    return And((IsNull(column), IsNull(column, negated=True)))


def _or_null(node: Filter | None, column: str, null_allowed: bool) -> Filter:
    """The rows ``node`` selects (none when None), and the null ones when nulls are allowed."""
    if node is None:
        return IsNull(column) if null_allowed else _no_row(column)
    return Or((node, IsNull(column))) if null_allowed else node


def _value_set_filter(f: Field, ptype: PrimitiveType, value_set: ValueSet) -> Filter | _Marker:
    """One column's value set as a filter; raises for a value that does not suit the column."""
    column = f.name
    if isinstance(value_set, AllOrNoneValueSet):
        if value_set.all:
            return _EVERY_ROW if value_set.null_allowed else IsNull(column, negated=True)
        return _or_null(None, column, value_set.null_allowed)
    if isinstance(value_set, EquatableValueSet):
        raw = value_set.values.to_pylist()
        if any(v is None for v in raw):
            return _UNCONVERTED
        values = tuple(dict.fromkeys(ptype.check(v, column) for v in raw))
        if value_set.white_list:
            return _or_null(InList(column, values) if values else None, column, value_set.null_allowed)
        node = InList(column, values, negated=True) if values else IsNull(column, negated=True)
        return _or_null(node, column, value_set.null_allowed)
    if isinstance(value_set, SortedRangeSet):
        exact: list[KeyValue] = []
        parts: list[Filter] = []
        for r in value_set.ranges:
            part = _range_filter(column, ptype, r)
            if part is None:
                return _UNCONVERTED
            if isinstance(part, Compare) and part.op == "=":
                exact.append(part.value)  # type: ignore[arg-type]
            else:
                parts.append(part)
        if exact:
            values = tuple(dict.fromkeys(exact))
            parts.insert(0, Compare(column, "=", values[0]) if len(values) == 1 else InList(column, values))
        union = None if not parts else parts[0] if len(parts) == 1 else Or(tuple(parts))
        return _or_null(union, column, value_set.null_allowed)
    return _UNCONVERTED


def _range_filter(column: str, ptype: PrimitiveType, r: ValueRange) -> Filter | None:
    """A range's non-null values as a filter, or None for a marker this connector does not understand."""
    ends: list[Compare] = []
    for marker, unbounded, ops in (
        (r.low, Bound.ABOVE, {Bound.EXACTLY: ">=", Bound.ABOVE: ">"}),
        (r.high, Bound.BELOW, {Bound.EXACTLY: "<=", Bound.BELOW: "<"}),
    ):
        if marker.null_value:
            if marker.bound is not unbounded:
                return None
            continue
        op = ops.get(marker.bound)
        if op is None:
            return None
        ends.append(Compare(column, op, ptype.check(marker.value, column)))
    if not ends:
        return IsNull(column, negated=True)
    if len(ends) == 1:
        return ends[0]
    low, high = ends
    if low.op == ">=" and high.op == "<=":
        if low.value == high.value:
            return Compare(column, "=", low.value)
        return Between(column, low.value, high.value)
    return And((low, high))


def read_file_rows(
    file: str,
    schema: Schema,
    regions: list[list[KeyBounds]] | None,
    columns: list[str],
    row_filter: Filter | None,
    statistics_columns: Iterable[str],
    options: FileSystemOptions | None,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    """A data file's rows within the regions (None: all), skipping the row groups that the filter's test of their
    statistics on ``statistics_columns`` rules out (the filter itself is applied by :func:`filtered_rows`). The file
    is opened at the first batch and closed when the read ends."""
    with SortedFileReader(file, schema, options=options) as reader:
        keep = None if row_filter is None else _statistics_test(reader, row_filter, frozenset(statistics_columns))
        plan = reader.plan(regions, keep_row_group=keep)
        yield from reader.read_plan(plan, columns=columns, batch_size=batch_rows)


def _statistics_test(reader: SortedFileReader, row_filter: Filter, columns: frozenset[str]) -> Callable[[int], bool]:
    """Told a row group of the reader's file, whether its statistics on ``columns`` let it hold a matching row."""
    metadata = reader.parquet_metadata
    positions = column_positions(metadata)

    def keep(group: int) -> bool:
        return row_group_may_match(metadata, group, row_filter, columns, positions)

    return keep


def filtered_rows(
    batches: Iterable[pa.RecordBatch], row_filter: Filter | None, schema: Schema
) -> Iterator[pa.RecordBatch]:
    """The rows of each batch the filter selects (every row when there is none); empty batches are dropped."""
    if row_filter is None:
        yield from batches
        return
    expression = to_expression(row_filter, schema)
    for batch in batches:
        batch = filter_batch(batch, expression)
        if batch.num_rows:
            yield batch


# --- pushing row key predicates down -------------------------------------------------------------------------------

_KEY_PYTHON_TYPES: dict[PrimitiveType, type] = {
    PrimitiveType.INT: int,
    PrimitiveType.LONG: int,
    PrimitiveType.STRING: str,
    PrimitiveType.BYTE_ARRAY: bytes,
}


def key_intervals(schema: Schema, summary: Mapping[str, ValueSet]) -> KeyIntervals:
    """The intervals the value sets on row key fields allow, per field (fields they do not constrain are absent)."""
    out: KeyIntervals = {}
    for f in schema.row_key_fields:
        value_set = summary.get(f.name)
        if value_set is None:
            continue
        intervals = _intervals(value_set, f.primitive_type)
        if intervals is not None:
            out[f.name] = intervals
    return out


def _key_value(value: object, ptype: PrimitiveType) -> KeyValue | None:
    expected = _KEY_PYTHON_TYPES[ptype]
    if isinstance(value, bool) or not isinstance(value, expected):
        return None
    assert isinstance(value, int | str | bytes)
    return value


def _intervals(value_set: ValueSet, ptype: PrimitiveType) -> list[tuple[KeyValue, KeyValue | None]] | None:
    """Canonical intervals for a row key (never null), or None if the value set cannot be pushed down."""
    if isinstance(value_set, AllOrNoneValueSet):
        return None if value_set.all else []
    if isinstance(value_set, EquatableValueSet):
        if not value_set.white_list:
            return None
        out: list[tuple[KeyValue, KeyValue | None]] = []
        for raw in value_set.values.to_pylist():
            if raw is None:
                continue
            value = _key_value(raw, ptype)
            if value is None:
                return None
            out.append((value, next_value(value)))
        return out
    if isinstance(value_set, SortedRangeSet):
        out = []
        for r in value_set.ranges:
            interval = _range_interval(r, ptype)
            if interval is None:
                return None
            low, high = interval
            if high is None or low < high:  # type: ignore[operator]
                out.append(interval)
        return out
    return None


def _range_interval(r: ValueRange, ptype: PrimitiveType) -> tuple[KeyValue, KeyValue | None] | None:
    if r.low.null_value:
        if r.low.bound is not Bound.ABOVE:
            return None
        low: KeyValue = ptype.minimum
    else:
        value = _key_value(r.low.value, ptype)
        if value is None or r.low.bound is Bound.BELOW:
            return None
        low = value if r.low.bound is Bound.EXACTLY else next_value(value)
    high: KeyValue | None
    if r.high.null_value:
        if r.high.bound is not Bound.BELOW:
            return None
        high = None
    else:
        value = _key_value(r.high.value, ptype)
        if value is None or r.high.bound is Bound.ABOVE:
            return None
        high = next_value(value) if r.high.bound is Bound.EXACTLY else value
    return low, high


def _overlaps(interval: tuple[KeyValue, KeyValue | None], low: KeyValue, high: KeyValue | None) -> bool:
    a_low, a_high = interval
    return (a_high is None or a_high > low) and (high is None or high > a_low)  # type: ignore[operator]


def partition_matches(intervals: KeyIntervals, bounds: Mapping[str, tuple[KeyValue, KeyValue | None]]) -> bool:
    """Whether a partition with these per-field bounds ``[min, max)`` can hold a row the intervals allow."""
    for name, allowed in intervals.items():
        low, high = bounds[name]
        if not any(_overlaps(i, low, high) for i in allowed):
            return False
    return True


def intersect_intervals(
    intervals: KeyIntervals, bounds: Mapping[str, tuple[KeyValue, KeyValue | None]]
) -> KeyIntervals:
    """The intervals cut to per-field bounds ``[min, max)`` (such as a leaf partition's); fields only the bounds
    constrain get the bounds."""
    out: KeyIntervals = {}
    for name, (low, high) in bounds.items():
        allowed = intervals.get(name, [(low, None)])
        cut: list[tuple[KeyValue, KeyValue | None]] = []
        for a_low, a_high in allowed:
            new_low = a_low if a_low > low else low  # type: ignore[operator]
            if a_high is None:
                new_high = high
            elif high is None:
                new_high = a_high
            else:
                new_high = a_high if a_high < high else high  # type: ignore[operator]
            if new_high is None or new_low < new_high:  # type: ignore[operator]
                cut.append((new_low, new_high))
        out[name] = cut
    for name, allowed in intervals.items():
        out.setdefault(name, list(allowed))
    return out


def read_regions(intervals: KeyIntervals, row_key_names: Sequence[str]) -> list[list[KeyBounds]] | None:
    """The regions a data file read takes for the intervals: None reads everything, an empty list nothing.

    The regions are the cross product of the fields' intervals; while it would exceed
    :data:`MAX_PUSHED_DOWN_REGIONS`, the intervals of the last constrained field are merged into their hull.
    """
    names = [n for n in row_key_names if n in intervals]
    if not names:
        return None
    per_field = {n: _merge(intervals[n]) for n in names}
    if any(not v for v in per_field.values()):
        return []
    for name in reversed(names):
        if _product_size(per_field.values()) <= MAX_PUSHED_DOWN_REGIONS:
            break
        per_field[name] = [_hull(per_field[name])]
    regions: list[list[KeyBounds]] = []
    for combination in itertools.product(*(per_field[n] for n in names)):
        regions.append([KeyBounds(n, low, high) for n, (low, high) in zip(names, combination, strict=True)])
    return regions


def _product_size(groups: Iterable[list[tuple[KeyValue, KeyValue | None]]]) -> int:
    size = 1
    for g in groups:
        size *= len(g)
    return size


def _merge(intervals: list[tuple[KeyValue, KeyValue | None]]) -> list[tuple[KeyValue, KeyValue | None]]:
    """Sorted, overlapping or touching intervals joined."""
    out: list[tuple[KeyValue, KeyValue | None]] = []
    for low, high in sorted(intervals, key=lambda i: i[0]):
        if out:
            last_low, last_high = out[-1]
            if last_high is None or not last_high < low:  # type: ignore[operator]
                if last_high is not None and (high is None or high > last_high):  # type: ignore[operator]
                    out[-1] = (last_low, high)
                continue
        out.append((low, high))
    return out


def _hull(intervals: list[tuple[KeyValue, KeyValue | None]]) -> tuple[KeyValue, KeyValue | None]:
    low = intervals[0][0]
    highs = [h for _, h in intervals]
    high = None if any(h is None for h in highs) else max(highs)  # type: ignore[type-var]
    return low, high
