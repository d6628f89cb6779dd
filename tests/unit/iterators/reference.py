"""A plain-Python reference for filters and aggregation, row by row, to check the vectorised code against."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from sleeper.core.schema import Field, MapType, PrimitiveType, Schema

Row = dict[str, Any]

WIDE_SCHEMA = Schema.of(
    row_keys=[Field("id", PrimitiveType.STRING), Field("bucket", PrimitiveType.INT)],
    sort_keys=[Field("tag", PrimitiveType.BYTE_ARRAY)],
    values=[
        Field("count", PrimitiveType.LONG),
        Field("low", PrimitiveType.INT),
        Field("last", PrimitiveType.STRING),
        Field("first_blob", PrimitiveType.BYTE_ARRAY),
        Field("counts", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
        Field("peaks", MapType(PrimitiveType.BYTE_ARRAY, PrimitiveType.INT)),
    ],
)
"""A table with two row keys, a sort key and a value of every aggregated kind."""
WIDE_AGGREGATIONS = "sum(count),min(low),max(last),min(first_blob),map_sum(counts),map_max(peaks)"
"""An aggregation of every value of ``WIDE_SCHEMA``."""
WIDE_ARROW = pa.schema(
    [
        pa.field("id", pa.string(), False),
        pa.field("bucket", pa.int32(), False),
        pa.field("tag", pa.binary(), False),
        pa.field("count", pa.int64(), False),
        pa.field("low", pa.int32(), False),
        pa.field("last", pa.string(), False),
        pa.field("first_blob", pa.binary(), False),
        pa.field("counts", pa.map_(pa.string(), pa.int64()), False),
        pa.field("peaks", pa.map_(pa.binary(), pa.int32()), False),
    ]
)
"""The Arrow schema of ``WIDE_SCHEMA``'s rows."""


def wrap(value: int, bits: int) -> int:
    """Two's complement wrap-around of an integer to a signed width."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def combine(op: str, left: Any, right: Any, bits: int | None) -> Any:
    """Combines two values with sum, min or max (sums wrap to the given width)."""
    if op == "sum":
        assert bits is not None
        return wrap(left + right, bits)
    if op == "min":
        return min(left, right)
    if op == "max":
        return max(left, right)
    raise AssertionError(op)


def _bits(arrow_type: pa.DataType) -> int | None:
    return arrow_type.bit_width if pa.types.is_integer(arrow_type) else None


def reference_age_off(rows: Sequence[Row], filters: Sequence[tuple[str, int]], now_ms: int) -> list[Row]:
    """Keeps rows whose every filtered field is not null and less than its max age old."""
    return [
        row
        for row in rows
        if all(row[field] is not None and now_ms - row[field] < max_age for field, max_age in filters)
    ]


def reference_aggregate(
    rows: Sequence[Row], key_names: Sequence[str], ops: Mapping[str, str], schema: pa.Schema
) -> list[Row]:
    """Combines runs of rows with equal keys; maps are lists of (key, value) pairs, keys kept in first-seen order."""
    out: list[Row] = []
    for _, run in itertools.groupby(rows, key=lambda r: tuple(r[k] for k in key_names)):
        group = list(run)
        result = dict(group[0])
        for name, op in ops.items():
            arrow_type = schema.field(name).type
            if op.startswith("map_"):
                element_op = op.removeprefix("map_")
                bits = _bits(arrow_type.item_type)
                merged: dict[Any, Any] = {}
                for row in group:
                    for key, value in row[name]:
                        merged[key] = value if key not in merged else combine(element_op, merged[key], value, bits)
                result[name] = list(merged.items())
            else:
                value = group[0][name]
                for row in group[1:]:
                    value = combine(op, value, row[name], _bits(arrow_type))
                result[name] = value
        out.append(result)
    return out


def split_batches(batch: pa.RecordBatch, cuts: Sequence[int]) -> list[pa.RecordBatch]:
    """Cuts a batch into zero-copy slices at the given row indices (empty pieces included)."""
    bounds = [0, *sorted(cuts), batch.num_rows]
    return [batch.slice(start, end - start) for start, end in itertools.pairwise(bounds)]
