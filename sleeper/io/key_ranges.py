"""Key ranges for reading data files: bounds per row key field, checked against statistics and applied to batches.

A read takes a list of regions; a region is a list of :class:`KeyBounds`, one or more per row key field it
constrains (fields it does not name are unconstrained). Bounds are in Sleeper's canonical form: the minimum is
inclusive and the maximum exclusive, None meaning unbounded. A row is read if it lies in any region.

Values compare as Parquet statistics and Sleeper's default engine order them: ints numerically, strings as UTF-8
bytes (the same as Python's code point order) and byte arrays as unsigned bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sleeper.core import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    KeyTypeError,
    KeyValue,
    PrimitiveType,
    Schema,
    SchemaError,
)

__all__ = [
    "FieldBounds",
    "KeyBounds",
    "NormalisedRegion",
    "Region",
    "normalise_regions",
    "region_contains",
    "region_overlaps",
    "regions_mask",
]


@dataclass(frozen=True, slots=True)
class KeyBounds:
    """The canonical range of one row key field: ``min`` inclusive, ``max`` exclusive (None = unbounded).

    Values outside an int field's type range are allowed: ``max=2**31`` on an ``IntType`` field means no upper
    bound, as the canonical form of an inclusive maximum of ``2**31 - 1``.
    """

    field: str
    min: KeyValue
    max: KeyValue | None = None


Region = Sequence[KeyBounds]
"""Bounds on some row key fields (the others are unconstrained); a row is in the region if it is in every bound."""


@dataclass(frozen=True, slots=True)
class FieldBounds:
    """A bound made ready for comparisons: within the field type's range, None where the side is unconstrained.

    Attributes:
        name: The row key field.
        lo: The inclusive minimum, or None if every value of the type is at least the minimum.
        hi: The exclusive maximum, or None if unbounded.
    """

    name: str
    lo: KeyValue | None
    hi: KeyValue | None


NormalisedRegion = tuple[FieldBounds, ...]
"""A region with at most one bound per field, each constraining at least one side."""


def normalise_regions(regions: Sequence[Region], schema: Schema) -> list[NormalisedRegion]:
    """Checks regions and makes them ready for comparisons.

    Bounds on the same field of a region are intersected, bounds are clamped to their type's range, unconstrained
    bounds are dropped, and regions that can hold no value are dropped.

    Raises:
        SchemaError: If a bound names a field that is not a row key.
        KeyTypeError: If a bound's value is not of its field's type.
    """
    out: list[NormalisedRegion] = []
    for region in regions:
        by_field: dict[str, FieldBounds] = {}
        empty = False
        for bounds in region:
            bound = _normalise_bound(bounds, schema)
            if bound is None:
                empty = True
                continue
            previous = by_field.get(bound.name)
            by_field[bound.name] = bound if previous is None else _intersect(previous, bound)
        if empty or any(_is_empty(b) for b in by_field.values()):
            continue
        out.append(tuple(b for b in by_field.values() if b.lo is not None or b.hi is not None))
    return out


def region_overlaps(region: NormalisedRegion, mins: Mapping[str, KeyValue], maxs: Mapping[str, KeyValue]) -> bool:
    """Whether data with these per-field minima and maxima may hold rows of the region.

    A field missing from the statistics is taken to overlap.
    """
    for b in region:
        low, high = mins.get(b.name), maxs.get(b.name)
        if low is None or high is None:
            continue
        if b.lo is not None and _lt(high, b.lo):
            return False
        if b.hi is not None and not _lt(low, b.hi):
            return False
    return True


def region_contains(region: NormalisedRegion, mins: Mapping[str, KeyValue], maxs: Mapping[str, KeyValue]) -> bool:
    """Whether every row of data with these per-field minima and maxima is in the region.

    A field of the region missing from the statistics is taken not to be contained.
    """
    for b in region:
        low, high = mins.get(b.name), maxs.get(b.name)
        if low is None or high is None:
            return False
        if b.lo is not None and _lt(low, b.lo):
            return False
        if b.hi is not None and not _lt(high, b.hi):
            return False
    return True


def regions_mask(batch: pa.RecordBatch, regions: Sequence[NormalisedRegion]) -> pa.Array:
    """A boolean array, true for the rows of a batch in any of the regions, computed with vectorised comparisons.

    The batch must hold the columns the regions constrain.
    """
    mask: pa.Array | None = None
    for region in regions:
        region_mask: pa.Array | None = None
        for b in region:
            column = batch.column(b.name)
            for value, compare in ((b.lo, pc.greater_equal), (b.hi, pc.less)):
                if value is None:
                    continue
                part = compare(column, pa.scalar(value, type=column.type))
                region_mask = part if region_mask is None else pc.and_(region_mask, part)
        if region_mask is None:  # an unconstrained region holds every row
            return pa.array(np.ones(batch.num_rows, dtype=np.bool_))
        mask = region_mask if mask is None else pc.or_(mask, region_mask)
    if mask is None:
        return pa.array(np.zeros(batch.num_rows, dtype=np.bool_))
    return mask


def _lt(a: KeyValue, b: KeyValue) -> bool:
    """``a < b`` for two values of the same key type."""
    return a < b  # type: ignore[operator]


def _is_empty(b: FieldBounds) -> bool:
    return b.lo is not None and b.hi is not None and not _lt(b.lo, b.hi)


def _normalise_bound(bounds: KeyBounds, schema: Schema) -> FieldBounds | None:
    """A bound within its type's range, or None if it holds no value of the type."""
    if bounds.field not in schema.row_key_names:
        raise SchemaError(f"range field {bounds.field!r} is not a row key (row keys: {list(schema.row_key_names)})")
    key_type = schema.field(bounds.field).primitive_type
    low = _check_value(bounds.min, key_type, bounds.field, "minimum")
    high = None if bounds.max is None else _check_value(bounds.max, key_type, bounds.field, "maximum")
    if isinstance(low, int) and (high is None or isinstance(high, int)):
        type_min, type_max = (INT_MIN, INT_MAX) if key_type is PrimitiveType.INT else (LONG_MIN, LONG_MAX)
        if low > type_max or (high is not None and high <= type_min):
            return None
        int_lo = None if low <= type_min else low
        int_hi = None if high is None or high > type_max else high
        if int_lo is not None and int_hi is not None and int_hi <= int_lo:
            return None
        return FieldBounds(bounds.field, int_lo, int_hi)
    lo = None if low in ("", b"") else low
    if high is not None and high in ("", b""):
        return None  # nothing is below the smallest string or byte array
    bound = FieldBounds(bounds.field, lo, high)
    return None if _is_empty(bound) else bound


def _check_value(value: object, key_type: PrimitiveType, name: str, which: str) -> KeyValue:
    if key_type in (PrimitiveType.INT, PrimitiveType.LONG):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif key_type is PrimitiveType.STRING:
        if isinstance(value, str):
            return value
    elif isinstance(value, bytes | bytearray):
        return bytes(value)
    raise KeyTypeError(f"range {which} of field {name!r} of type {key_type.value} has the wrong type: {value!r}")


def _intersect(a: FieldBounds, b: FieldBounds) -> FieldBounds:
    if a.lo is None:
        lo = b.lo
    elif b.lo is None:
        lo = a.lo
    else:
        lo = b.lo if _lt(a.lo, b.lo) else a.lo
    if a.hi is None:
        hi = b.hi
    elif b.hi is None:
        hi = a.hi
    else:
        hi = a.hi if _lt(a.hi, b.hi) else b.hi
    return FieldBounds(a.name, lo, hi)
