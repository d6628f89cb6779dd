from __future__ import annotations

import pytest

from sleeper.core.exceptions import RangeError, SerDeError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

KEY = Field("key", PrimitiveType.STRING)
NUM = Field("num", PrimitiveType.LONG)
RAW = Field("raw", PrimitiveType.BYTE_ARRAY)
SCHEMA = Schema.of(row_keys=[KEY, NUM, RAW])


@pytest.mark.parametrize(
    ("min_inclusive", "max_inclusive", "inside", "outside"),
    [
        (True, False, [10, 19], [9, 20]),
        (True, True, [10, 20], [9, 21]),
        (False, False, [11, 19], [10, 20]),
        (False, True, [11, 20], [10, 21]),
    ],
)
def should_contain_values_by_inclusive_and_exclusive_bounds(
    min_inclusive: bool, max_inclusive: bool, inside: list[int], outside: list[int]
) -> None:
    # Given a range from 10 to 20 with the given bounds
    r = Range(field=NUM, min=10, min_inclusive=min_inclusive, max=20, max_inclusive=max_inclusive)
    # Then exactly the expected values are inside
    assert all(r.contains(v) for v in inside)
    assert not any(r.contains(v) for v in outside)


def should_canonicalise_string_and_byte_bounds() -> None:
    # Given ranges with exclusive minimum and inclusive maximum
    s = Range(field=KEY, min="a", min_inclusive=False, max="c", max_inclusive=True)
    b = Range(field=RAW, min=b"\x01", min_inclusive=False, max=b"\x02", max_inclusive=True)
    # Then the canonical form appends the smallest character / byte
    assert (s.canonical_min, s.canonical_max) == ("a\x00", "c\x00")
    assert (b.canonical_min, b.canonical_max) == (b"\x01\x00", b"\x02\x00")
    assert not s.contains("a") and s.contains("a\x00") and s.contains("c") and not s.contains("c\x00")


def should_treat_null_max_as_unbounded() -> None:
    r = Range(field=KEY, min="m", max=None, max_inclusive=True)
    assert r.max_inclusive is False
    assert r.contains("zzzz") and not r.contains("a")


def should_find_overlaps_and_intersections() -> None:
    a = Range(field=NUM, min=0, max=10)
    b = Range(field=NUM, min=10, max=20)
    c = Range(field=NUM, min=5, max=None)
    assert not a.overlaps(b) and not b.overlaps(a)
    assert a.overlaps(c) and c.overlaps(b)
    inter = a.intersection(c)
    assert inter is not None and (inter.min, inter.max) == (5, 10)
    assert a.intersection(b) is None


def should_overlap_regions_only_when_every_shared_dimension_overlaps() -> None:
    r1 = Region.of([Range(field=KEY, min="a", max="m"), Range(field=NUM, min=0, max=5)])
    r2 = Region.of([Range(field=KEY, min="c", max="d"), Range(field=NUM, min=5, max=9)])
    r3 = Region.of([Range(field=KEY, min="c", max="d")])
    assert not r1.overlaps(r2)
    assert r1.overlaps(r3)
    assert r1.contains(SCHEMA, ("b", 4, b"")) and not r1.contains(SCHEMA, ("b", 5, b""))


def should_write_region_json_as_java_does() -> None:
    # Given a region over a string, long and byte array key
    region = Region.of(
        [
            Range(field=KEY, min="p", max=None),
            Range(field=NUM, min=1, max=9, max_inclusive=True),
            Range(field=RAW, min=b"\x00\xff", max=b"\x01"),
        ]
    )
    # When written
    doc = region.to_dict(SCHEMA)
    # Then strings and bytes are base64 with the flag set, and a null max is omitted
    assert doc == {
        "key": {"min": "cA==", "minInclusive": True, "maxInclusive": False},
        "num": {"min": 1, "minInclusive": True, "max": 9, "maxInclusive": True},
        "raw": {"min": "AP8=", "minInclusive": True, "max": "AQ==", "maxInclusive": False},
        "stringsBase64Encoded": True,
    }
    assert Region.from_dict(SCHEMA, doc) == region


def should_read_region_json_with_sleeper_defaults() -> None:
    # Given region JSON missing the flag and inclusivity fields (flag defaults to base64)
    doc = {"key": {"min": "YQ==", "max": "Yg=="}}
    # When read
    region = Region.from_dict(SCHEMA, doc)
    # Then minInclusive defaults true and maxInclusive false
    r = region.range("key")
    assert r is not None and (r.min, r.min_inclusive, r.max, r.max_inclusive) == ("a", True, "b", False)


def should_read_python_client_region_with_raw_strings() -> None:
    doc = {"key": {"min": "a", "minInclusive": True, "max": None, "maxInclusive": False}, "stringsBase64Encoded": False}
    r = Region.from_dict(SCHEMA, doc).range("key")
    assert r is not None and r.min == "a" and r.max is None


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"nope": {"min": 1}}, "region.nope: 'nope' is not a row key field"),
        ({"num": {"min": "x"}}, "region.num.min must be an integer"),
        ({"num": {"max": 3}}, "region.num.min is missing"),
        ({"key": {"min": "***"}}, "region.key.min is not valid base64"),
        ({"num": {"min": 1, "minInclusive": "yes"}}, "must be booleans"),
        ({"num": {"min": 10, "max": 1}}, "min 10 is greater than max 1"),
    ],
)
def should_reject_invalid_region_json(doc: dict[str, object], message: str) -> None:
    with pytest.raises(SerDeError) as error:
        Region.from_dict(SCHEMA, doc)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("field", "low", "high"),
    [(NUM, 10, 1), (KEY, "b", "a"), (RAW, b"\x02", b"\x01")],
)
@pytest.mark.parametrize("max_inclusive", [False, True])
def should_refuse_an_inverted_range(field: Field, low: object, high: object, max_inclusive: bool) -> None:
    # When a range is made whose minimum is greater than its maximum
    with pytest.raises(RangeError) as error:
        Range(field=field, min=low, max=high, max_inclusive=max_inclusive)  # type: ignore[arg-type]
    # Then it is refused, naming the field and both bounds
    message = str(error.value)
    assert field.name in message and "greater than max" in message
    assert repr(low) in message and repr(high) in message


def should_allow_a_range_whose_bounds_are_equal() -> None:
    # A single value, and an empty range with equal bounds, are not inverted
    assert Range(field=NUM, min=5, max=5, max_inclusive=True).contains(5)
    assert Range(field=NUM, min=5, max=5).is_empty()


def should_find_no_intersection_of_ranges_far_apart() -> None:
    # Given ranges with a gap between them
    a = Range(field=NUM, min=0, max=5)
    b = Range(field=KEY, min="m", max="z")
    c = Range(field=KEY, min="a", max="c", max_inclusive=True)
    # Then they have no intersection, either way round
    assert a.intersection(Range(field=NUM, min=10, max=20)) is None
    assert Range(field=NUM, min=10, max=None).intersection(a) is None
    assert b.intersection(c) is None and c.intersection(b) is None
