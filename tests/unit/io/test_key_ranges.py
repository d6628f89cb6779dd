from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.core.exceptions import KeyTypeError, SchemaError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.key_ranges import (
    FieldBounds,
    KeyBounds,
    normalise_regions,
    region_contains,
    region_overlaps,
    regions_mask,
)

SCHEMA = Schema.of(
    row_keys=[
        Field("int", PrimitiveType.INT),
        Field("long", PrimitiveType.LONG),
        Field("str", PrimitiveType.STRING),
        Field("bytes", PrimitiveType.BYTE_ARRAY),
    ],
    sort_keys=[Field("sort", PrimitiveType.LONG)],
)


def should_drop_bounds_that_constrain_nothing() -> None:
    # When
    regions = normalise_regions(
        [[KeyBounds("int", -(2**31)), KeyBounds("long", -(2**63)), KeyBounds("str", ""), KeyBounds("bytes", b"")]],
        SCHEMA,
    )

    # Then
    assert regions == [()]


def should_clamp_int_bounds_to_the_type_range() -> None:
    # When
    regions = normalise_regions([[KeyBounds("int", -(2**40), 2**31)], [KeyBounds("long", 5, 2**63)]], SCHEMA)

    # Then
    assert regions == [(), (FieldBounds("long", 5, None),)]


@pytest.mark.parametrize(
    "bounds",
    [
        KeyBounds("int", 2**31),
        KeyBounds("int", 0, -(2**31)),
        KeyBounds("long", 3, 3),
        KeyBounds("str", "b", "a"),
        KeyBounds("str", "", ""),
        KeyBounds("bytes", b"\x80", b"\x7f"),
    ],
)
def should_drop_regions_that_hold_no_value(bounds: KeyBounds) -> None:
    # When / Then
    assert normalise_regions([[bounds]], SCHEMA) == []


def should_intersect_bounds_on_the_same_field() -> None:
    # When
    regions = normalise_regions([[KeyBounds("str", "b", "x"), KeyBounds("str", "a", "m")]], SCHEMA)
    disjoint = normalise_regions([[KeyBounds("str", "a", "b"), KeyBounds("str", "c", "d")]], SCHEMA)

    # Then
    assert regions == [(FieldBounds("str", "b", "m"),)]
    assert disjoint == []


def should_reject_fields_that_are_not_row_keys_and_values_of_the_wrong_type() -> None:
    # When / Then
    with pytest.raises(SchemaError, match="sort"):
        normalise_regions([[KeyBounds("sort", 1)]], SCHEMA)
    with pytest.raises(KeyTypeError, match="maximum"):
        normalise_regions([[KeyBounds("str", "a", b"b")]], SCHEMA)
    with pytest.raises(KeyTypeError, match="minimum"):
        normalise_regions([[KeyBounds("long", 1.5)]], SCHEMA)  # type: ignore[arg-type]


def should_compare_byte_arrays_unsigned_and_strings_by_utf8() -> None:
    # Given
    (region,) = normalise_regions([[KeyBounds("bytes", b"\x7f", b"\x81"), KeyBounds("str", "z", "\U0001f600")]], SCHEMA)

    # When / Then
    assert region_overlaps(region, {"bytes": b"\x80", "str": "\uffef"}, {"bytes": b"\x80", "str": "\uffef"})
    assert not region_overlaps(region, {"bytes": b"\x81"}, {"bytes": b"\xff"})
    assert not region_overlaps(region, {"str": "\U0001f600"}, {"str": "\U0001f601"})


def should_tell_overlap_and_containment_from_statistics() -> None:
    # Given
    (region,) = normalise_regions([[KeyBounds("long", 10, 20)]], SCHEMA)

    # When / Then
    assert region_overlaps(region, {"long": 19}, {"long": 30})
    assert not region_overlaps(region, {"long": 20}, {"long": 30})
    assert not region_overlaps(region, {"long": 0}, {"long": 9})
    assert region_overlaps(region, {}, {})
    assert region_contains(region, {"long": 10}, {"long": 19})
    assert not region_contains(region, {"long": 10}, {"long": 20})
    assert not region_contains(region, {}, {})


def should_mask_rows_in_any_region() -> None:
    # Given
    batch = pa.record_batch(
        {
            "long": pa.array([1, 5, 10, 15, 20], type=pa.int64()),
            "str": ["a", "\U0001f600", "\uffef", "b", "z"],
        }
    )
    regions = normalise_regions([[KeyBounds("long", 5, 11)], [KeyBounds("str", "\uffef")]], SCHEMA)

    # When
    mask = regions_mask(batch, regions)

    # Then
    assert mask.to_pylist() == [False, True, True, False, False]
