"""Applying constraint summaries to rows, and pushing row key value sets down to key ranges."""

from __future__ import annotations

import pyarrow as pa

from sleeper.athena.predicates import (
    MAX_PUSHED_DOWN_REGIONS,
    UnsupportedValueSet,
    intersect_intervals,
    key_intervals,
    parse_summary,
    partition_matches,
    read_regions,
    row_mask,
)
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.key_ranges import KeyBounds
from tests.unit.athena import federation_requests as fr

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("sort", PrimitiveType.STRING)],
    values=[Field("value", PrimitiveType.STRING, nullable=True)],
)
TWO_KEYS = Schema.of(row_keys=[Field("a", PrimitiveType.INT), Field("b", PrimitiveType.STRING)])


def _rows() -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array([1, 5, 10, 15, 20], pa.int64()), pa.array(["a", "b", None, "d", "e"])], names=["key", "value"]
    )


def _kept(summary: dict[str, object]) -> list[int]:
    batch = _rows()
    mask = row_mask(batch, parse_summary(summary))
    return batch.column("key").to_pylist() if mask is None else batch.filter(mask).column("key").to_pylist()


def should_keep_rows_in_ranges_with_each_bound() -> None:
    # When / Then
    assert _kept({"key": fr.sorted_ranges([(5, "EXACTLY", 15, "BELOW")], pa.int64())}) == [5, 10]
    assert _kept({"key": fr.sorted_ranges([(5, "ABOVE", 15, "EXACTLY")], pa.int64())}) == [10, 15]
    assert _kept(
        {"key": fr.sorted_ranges([(None, "ABOVE", 5, "EXACTLY"), (20, "EXACTLY", None, "BELOW")], pa.int64())}
    ) == [1, 5, 20]


def should_keep_listed_values_or_exclude_them() -> None:
    # When / Then
    assert _kept({"key": fr.equatable([5, 20, 99], pa.int64())}) == [5, 20]
    assert _kept({"value": fr.equatable(["a", "d"], pa.string(), white_list=False)}) == [5, 20]
    assert _kept({"value": fr.equatable(["a", "d"], pa.string(), white_list=False, null_allowed=True)}) == [5, 10, 20]


def should_apply_all_or_none_with_nulls() -> None:
    # When / Then
    assert _kept({"value": fr.all_or_none(pa.string(), all_values=True, null_allowed=False)}) == [1, 5, 15, 20]
    assert _kept({"value": fr.all_or_none(pa.string(), all_values=False, null_allowed=True)}) == [10]
    assert _kept({"value": fr.all_or_none(pa.string(), all_values=False, null_allowed=False)}) == []


def should_ignore_unknown_value_sets_and_columns_not_read() -> None:
    # Given
    summary = {"key": {"@type": "SomethingNew"}, "missing": fr.equatable([1], pa.int64())}

    # When
    parsed = parse_summary(summary)

    # Then
    assert isinstance(parsed["key"], UnsupportedValueSet)
    assert _kept(summary) == [1, 5, 10, 15, 20]


def should_push_down_exact_values_and_ranges_as_canonical_intervals() -> None:
    # Given
    summary = parse_summary(
        {
            "key": fr.sorted_ranges([(5, "ABOVE", 15, "EXACTLY"), (None, "ABOVE", 0, "BELOW")], pa.int64()),
            "sort": fr.equatable(["x"], pa.string()),
            "value": fr.equatable(["y"], pa.string()),
        }
    )

    # When
    intervals = key_intervals(SCHEMA, summary)

    # Then
    assert intervals == {"key": [(6, 16), (-(2**63), 0)]}
    assert read_regions(intervals, ["key"]) == [[KeyBounds("key", -(2**63), 0)], [KeyBounds("key", 6, 16)]]


def should_not_push_down_excluded_values_or_unreadable_sets() -> None:
    # Given
    summary = parse_summary({"key": fr.equatable([5], pa.int64(), white_list=False)})

    # When / Then
    assert key_intervals(SCHEMA, summary) == {}
    assert read_regions({}, ["key"]) is None


def should_choose_partitions_overlapping_every_constrained_key() -> None:
    # Given
    intervals = key_intervals(
        TWO_KEYS,
        parse_summary(
            {"a": fr.equatable([7], pa.int32()), "b": fr.sorted_ranges([("m", "EXACTLY", None, "BELOW")], pa.string())}
        ),
    )

    # When / Then
    assert partition_matches(intervals, {"a": (0, 10), "b": ("", None)})
    assert not partition_matches(intervals, {"a": (10, None), "b": ("", None)})
    assert not partition_matches(intervals, {"a": (0, 10), "b": ("", "m")})


def should_cut_intervals_to_leaf_bounds_and_give_no_region_when_disjoint() -> None:
    # Given
    intervals = {"a": [(0, 5), (8, 20)]}

    # When
    cut = intersect_intervals(intervals, {"a": (4, 10), "b": ("k", None)})
    disjoint = intersect_intervals(intervals, {"a": (5, 8), "b": ("", None)})

    # Then
    assert cut == {"a": [(4, 5), (8, 10)], "b": [("k", None)]}
    assert read_regions(disjoint, ["a", "b"]) == []


def should_merge_later_fields_when_the_product_of_intervals_is_too_large() -> None:
    # Given
    many = [(i * 10, i * 10 + 1) for i in range(MAX_PUSHED_DOWN_REGIONS)]
    intervals = {"a": many, "b": [("a", "b"), ("x", "y")]}

    # When
    regions = read_regions(intervals, ["a", "b"])

    # Then
    assert regions is not None and len(regions) == MAX_PUSHED_DOWN_REGIONS
    assert {tuple((k.min, k.max) for k in r if k.field == "b") for r in regions} == {(("a", "y"),)}
