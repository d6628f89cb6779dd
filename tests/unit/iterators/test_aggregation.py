"""Aggregation of rows with equal row and sort keys, in one batch and across a stream of batches."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from sleeper.core.schema import Field, MapType, PrimitiveType, Schema
from sleeper.iterators import AggregationConfig, IteratorConfigError, IteratorDataError, ProcessingConfig
from sleeper.iterators.apply import Aggregator, RowProcessor, aggregate_batch
from tests.unit.iterators.reference import (
    WIDE_AGGREGATIONS,
    WIDE_SCHEMA,
    reference_age_off,
    reference_aggregate,
    split_batches,
)
from tests.unit.iterators.reference import WIDE_ARROW as REFERENCE_ARROW

P = PrimitiveType
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _run(schema: Schema, config: ProcessingConfig, batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    aggregator = Aggregator(schema, config.aggregations)
    out: list[pa.RecordBatch] = []
    for batch in batches:
        out.extend(aggregator.push(batch))
    out.extend(aggregator.finish())
    return out


def _rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for batch in batches for row in batch.to_pylist()]


def _ops(config: ProcessingConfig) -> dict[str, str]:
    return {a.field: a.op.value for a in config.aggregations}


# Single values: one key column, one value column


def _single_value_case(
    value_type: PrimitiveType, arrow_type: pa.DataType, op: str, values: list[Any], keys: list[str] | None = None
) -> tuple[Schema, ProcessingConfig, pa.RecordBatch]:
    schema = Schema.of(row_keys=[Field("key", P.STRING)], values=[Field("value", value_type)])
    config = ProcessingConfig.parse(None, f"{op}(value)", schema)
    keys = keys or ["a", "a", "a", "b", "c", "c"]
    batch = pa.record_batch(
        [pa.array(keys, pa.string()), pa.array(values, arrow_type)],
        schema=pa.schema([pa.field("key", pa.string(), False), pa.field("value", arrow_type, False)]),
    )
    return schema, config, batch


@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize(
    ("value_type", "arrow_type", "values"),
    [
        (P.INT, pa.int32(), [5, -7, 3, 1, INT32_MAX, 2]),
        (P.LONG, pa.int64(), [5, -7, 3, 1, INT64_MAX, 2]),
    ],
)
def should_aggregate_integers(op: str, value_type: PrimitiveType, arrow_type: pa.DataType, values: list[int]) -> None:
    # Given
    schema, config, batch = _single_value_case(value_type, arrow_type, op, values)

    # When
    result = aggregate_batch(batch, schema, config.aggregations)

    # Then
    assert result.schema == batch.schema
    assert result.to_pylist() == reference_aggregate(batch.to_pylist(), ["key"], _ops(config), batch.schema)
    assert result.column("key").to_pylist() == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("value_type", "arrow_type", "values", "expected"),
    [
        (P.INT, pa.int32(), [INT32_MAX, 1, 2**31 - 10], [-(2**31), 2**31 - 10]),
        (P.LONG, pa.int64(), [INT64_MAX, INT64_MAX, 1], [-2, 1]),
    ],
)
def should_wrap_sums_around_on_overflow(
    value_type: PrimitiveType, arrow_type: pa.DataType, values: list[int], expected: list[int]
) -> None:
    # Given
    schema, config, batch = _single_value_case(value_type, arrow_type, "sum", values, keys=["a", "a", "b"])

    # When
    result = aggregate_batch(batch, schema, config.aggregations)

    # Then
    assert result.column("value").to_pylist() == expected


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize(
    ("value_type", "arrow_type", "values"),
    [
        (P.STRING, pa.string(), ["pear", "apple", "zoo", "x", "é", "z"]),
        (P.BYTE_ARRAY, pa.binary(), [b"\xff", b"\x01", b"\x80\x00", b"", b"\x7f", b"\x80"]),
        (P.STRING, pa.large_string(), ["b", "a", "", "x", "a", "aa"]),
    ],
)
def should_take_min_or_max_of_strings_and_bytes_in_unsigned_byte_order(
    op: str, value_type: PrimitiveType, arrow_type: pa.DataType, values: list[Any]
) -> None:
    # Given
    schema, config, batch = _single_value_case(value_type, arrow_type, op, values)

    # When
    result = aggregate_batch(batch, schema, config.aggregations)

    # Then
    assert result.to_pylist() == reference_aggregate(batch.to_pylist(), ["key"], _ops(config), batch.schema)


def should_return_the_same_batch_when_no_keys_repeat() -> None:
    # Given
    schema, config, batch = _single_value_case(P.LONG, pa.int64(), "sum", [1, 2, 3, 4, 5, 6])
    distinct = batch.set_column(0, "key", pa.array(["a", "b", "c", "d", "e", "f"]))

    # When
    result = aggregate_batch(distinct, schema, config.aggregations)

    # Then
    assert result is distinct


# Maps


MAP_CASES = [
    (P.STRING, pa.string(), P.LONG, pa.int64(), ["x", "y", "z"]),
    (P.BYTE_ARRAY, pa.binary(), P.INT, pa.int32(), [b"\xff", b"\x00", b"\x01"]),
    (P.INT, pa.int32(), P.LONG, pa.int64(), [7, -1, 0]),
    (P.LONG, pa.int64(), P.INT, pa.int32(), [2**40, 3, -(2**40)]),
]


@pytest.mark.parametrize("op", ["map_sum", "map_min", "map_max"])
@pytest.mark.parametrize(("key_type", "arrow_key", "value_type", "arrow_value", "keys"), MAP_CASES)
def should_combine_map_values_key_by_key(
    op: str,
    key_type: PrimitiveType,
    arrow_key: pa.DataType,
    value_type: PrimitiveType,
    arrow_value: pa.DataType,
    keys: list[Any],
) -> None:
    # Given
    schema = Schema.of(row_keys=[Field("row", P.LONG)], values=[Field("counts", MapType(key_type, value_type))])
    config = ProcessingConfig.parse(None, f"{op}(counts)", schema)
    x, y, z = keys
    rows = [
        (1, [(x, 1), (y, 10)]),
        (1, []),
        (1, [(y, -3), (z, 4), (x, 2)]),
        (2, [(z, 5)]),
        (3, []),
        (3, []),
        (4, [(y, 1), (x, 1)]),
        (4, [(x, 9)]),
    ]
    map_type = pa.map_(arrow_key, arrow_value)
    batch = pa.record_batch(
        [pa.array([r for r, _ in rows], pa.int64()), pa.array([m for _, m in rows], map_type)],
        names=["row", "counts"],
    )

    # When
    result = aggregate_batch(batch, schema, config.aggregations)

    # Then
    assert result.schema == batch.schema
    assert result.to_pylist() == reference_aggregate(batch.to_pylist(), ["row"], _ops(config), batch.schema)
    assert result.column("counts").to_pylist()[2] == []


def should_wrap_map_sums_around_on_overflow() -> None:
    # Given
    schema = Schema.of(row_keys=[Field("row", P.LONG)], values=[Field("counts", MapType(P.STRING, P.INT))])
    config = ProcessingConfig.parse(None, "map_sum(counts)", schema)
    batch = pa.record_batch(
        [pa.array([1, 1]), pa.array([[("a", INT32_MAX), ("b", 1)], [("a", 1)]], pa.map_(pa.string(), pa.int32()))],
        names=["row", "counts"],
    )

    # When
    result = aggregate_batch(batch, schema, config.aggregations)

    # Then
    assert result.column("counts").to_pylist() == [[("a", -(2**31)), ("b", 1)]]


def should_aggregate_a_batch_where_every_map_is_empty() -> None:
    # Given
    schema = Schema.of(row_keys=[Field("row", P.LONG)], values=[Field("counts", MapType(P.STRING, P.LONG))])
    config = ProcessingConfig.parse(None, "map_max(counts)", schema)
    batch = pa.record_batch(
        [pa.array([1, 1, 2, 2, 2]), pa.array([[], [], [], [], []], pa.map_(pa.string(), pa.int64()))],
        names=["row", "counts"],
    )

    # When
    result = aggregate_batch(batch.slice(1), schema, config.aggregations)

    # Then
    assert result.to_pylist() == [{"row": 1, "counts": []}, {"row": 2, "counts": []}]


# Several key columns and value columns, split into batches at every point


WIDE_CONFIG = ProcessingConfig.parse(None, WIDE_AGGREGATIONS, WIDE_SCHEMA)
WIDE_ARROW = REFERENCE_ARROW.with_metadata({b"origin": b"test"})


def _wide_batch() -> pa.RecordBatch:
    keys = [
        ("a", 1, b""),
        ("a", 1, b""),
        ("a", 1, b"\x01"),
        ("a", 2, b"\x01"),
        ("a", 2, b"\x01"),
        ("a", 2, b"\x01"),
        ("a", 2, b"\xff"),
        ("b", 1, b""),
        ("é", -5, b"\x00"),
        ("é", -5, b"\x00"),
        ("é", -5, b"\x00"),
        ("é", -5, b"\x00"),
        ("é", 7, b"\x00"),
    ]
    rows = []
    for i, (id_, bucket, tag) in enumerate(keys):
        rows.append(
            {
                "id": id_,
                "bucket": bucket,
                "tag": tag,
                "count": i * 1_000_000_007,
                "low": (i * 7919) % 23 - 11,
                "last": f"v{(i * 5) % 9}",
                "first_blob": bytes([(i * 37) % 256]),
                "counts": [(f"c{(i + j) % 3}", i + j) for j in range(i % 3)],
                "peaks": [(bytes([i % 2]), i * 3)],
            }
        )
    return pa.RecordBatch.from_pylist(rows, schema=WIDE_ARROW)


def should_keep_rows_whose_row_key_or_sort_key_differs() -> None:
    # Given
    batch = _wide_batch()

    # When
    result = aggregate_batch(batch, WIDE_SCHEMA, WIDE_CONFIG.aggregations)

    # Then
    assert [(r["id"], r["bucket"], r["tag"]) for r in result.to_pylist()] == [
        ("a", 1, b""),
        ("a", 1, b"\x01"),
        ("a", 2, b"\x01"),
        ("a", 2, b"\xff"),
        ("b", 1, b""),
        ("é", -5, b"\x00"),
        ("é", 7, b"\x00"),
    ]
    assert result.to_pylist() == reference_aggregate(
        batch.to_pylist(), WIDE_SCHEMA.key_names, _ops(WIDE_CONFIG), WIDE_ARROW
    )


def should_aggregate_the_same_whatever_single_batch_boundary() -> None:
    # Given
    batch = _wide_batch()
    expected = reference_aggregate(batch.to_pylist(), WIDE_SCHEMA.key_names, _ops(WIDE_CONFIG), WIDE_ARROW)

    for cut in range(batch.num_rows + 1):
        # When
        out = _run(WIDE_SCHEMA, WIDE_CONFIG, split_batches(batch, [cut]))

        # Then
        assert _rows(out) == expected, f"cut at {cut}"
        assert all(b.schema == WIDE_ARROW for b in out)


def should_aggregate_the_same_whatever_pair_of_batch_boundaries() -> None:
    # Given
    batch = _wide_batch()
    expected = reference_aggregate(batch.to_pylist(), WIDE_SCHEMA.key_names, _ops(WIDE_CONFIG), WIDE_ARROW)

    for cuts in itertools.combinations_with_replacement(range(batch.num_rows + 1), 2):
        # When
        out = _run(WIDE_SCHEMA, WIDE_CONFIG, split_batches(batch, cuts))

        # Then
        assert _rows(out) == expected, f"cuts at {cuts}"


def should_aggregate_a_group_spanning_many_single_row_batches() -> None:
    # Given
    batch = _wide_batch()
    expected = reference_aggregate(batch.to_pylist(), WIDE_SCHEMA.key_names, _ops(WIDE_CONFIG), WIDE_ARROW)

    # When
    out = _run(WIDE_SCHEMA, WIDE_CONFIG, split_batches(batch, range(1, batch.num_rows)))

    # Then
    assert _rows(out) == expected


def should_emit_each_completed_group_once_and_hold_back_the_last() -> None:
    # Given
    batch = _wide_batch()
    aggregator = Aggregator(WIDE_SCHEMA, WIDE_CONFIG.aggregations)

    # When
    first = aggregator.push(batch.slice(0, 4))
    second = aggregator.push(batch.slice(4, 4))
    last = aggregator.finish()

    # Then
    assert [len(out) for out in (first, second, last)] == [1, 1, 1]
    assert [(r["id"], r["bucket"]) for r in first[0].to_pylist()] == [("a", 1), ("a", 1)]
    assert [(r["id"], r["bucket"], r["tag"]) for r in second[0].to_pylist()] == [("a", 2, b"\x01"), ("a", 2, b"\xff")]
    assert last[0].to_pylist()[0]["id"] == "b"
    assert aggregator.finish() == []


def should_ignore_empty_batches_in_the_stream() -> None:
    # Given
    batch = _wide_batch()
    pieces = split_batches(batch, [0, 3, 3, 9, 13])
    expected = reference_aggregate(batch.to_pylist(), WIDE_SCHEMA.key_names, _ops(WIDE_CONFIG), WIDE_ARROW)

    # When
    out = _run(WIDE_SCHEMA, WIDE_CONFIG, pieces)

    # Then
    assert _rows(out) == expected
    assert all(b.num_rows > 0 for b in out)


def should_filter_then_aggregate_a_stream() -> None:
    # Given
    schema = Schema.of(
        row_keys=[Field("id", P.STRING)], sort_keys=[Field("day", P.LONG)], values=[Field("count", P.LONG)]
    )
    config = ProcessingConfig.parse("ageOff(day,10)", "sum(count)", schema)
    batch = pa.RecordBatch.from_pylist(
        [{"id": i, "day": d, "count": c} for i, d, c in [("a", 90, 1), ("a", 95, 2), ("a", 95, 3), ("b", 99, 4)]],
        schema=pa.schema([("id", pa.string()), ("day", pa.int64()), ("count", pa.int64())]),
    )
    now = 100

    # When
    out = list(RowProcessor(schema, config, now).process(split_batches(batch, [2])))

    # Then
    filtered = reference_age_off(batch.to_pylist(), [("day", 10)], now)
    assert _rows(out) == reference_aggregate(filtered, ["id", "day"], {"count": "sum"}, batch.schema)
    assert _rows(out) == [{"id": "a", "day": 95, "count": 5}, {"id": "b", "day": 99, "count": 4}]


def should_pass_batches_through_untouched_without_configuration() -> None:
    # Given
    batches = split_batches(_wide_batch(), [0, 5])

    # When
    out = list(RowProcessor(WIDE_SCHEMA, ProcessingConfig(), 0).process(batches))

    # Then
    assert len(out) == len(batches)
    assert all(o is b for o, b in zip(out, batches, strict=True))


# Bad input


def should_reject_an_aggregator_without_aggregations() -> None:
    # When / Then
    with pytest.raises(IteratorConfigError, match="at least one aggregation"):
        Aggregator(WIDE_SCHEMA, ())


def should_reject_a_processor_whose_configuration_does_not_suit_the_schema() -> None:
    # Given
    config = ProcessingConfig(aggregations=(AggregationConfig(op=WIDE_CONFIG.aggregations[0].op, field="count"),))

    # When / Then
    with pytest.raises(IteratorConfigError, match="missing"):
        RowProcessor(WIDE_SCHEMA, config, 0)


def should_fail_on_a_batch_without_a_key_column() -> None:
    # Given
    batch = _wide_batch().drop_columns(["tag"])

    # When / Then
    with pytest.raises(IteratorDataError, match="key column 'tag'"):
        Aggregator(WIDE_SCHEMA, WIDE_CONFIG.aggregations).push(batch)


def should_fail_on_a_column_without_aggregation() -> None:
    # Given
    batch = _wide_batch().append_column("extra", pa.array([1] * 13))

    # When / Then
    with pytest.raises(IteratorDataError, match="'extra' has no aggregation"):
        aggregate_batch(batch, WIDE_SCHEMA, WIDE_CONFIG.aggregations)


def should_fail_on_a_null_in_an_aggregated_column() -> None:
    # Given
    schema, config, batch = _single_value_case(P.LONG, pa.int64(), "sum", [1, 2, 3, 4, 5, 6])
    with_null = pa.record_batch([batch.column(0), pa.array([1, None, 3, 4, 5, 6], pa.int64())], names=["key", "value"])

    # When / Then
    with pytest.raises(IteratorDataError, match="aggregated column 'value' holds nulls"):
        aggregate_batch(with_null, schema, config.aggregations)


def should_fail_on_a_null_key() -> None:
    # Given
    schema, config, batch = _single_value_case(P.LONG, pa.int64(), "sum", [1, 2, 3, 4, 5, 6])
    with_null = pa.record_batch([pa.array(["a", None, "b", "c", "c", "d"]), batch.column(1)], names=["key", "value"])

    # When / Then
    with pytest.raises(IteratorDataError, match="key column 'key' holds nulls"):
        aggregate_batch(with_null, schema, config.aggregations)


def should_fail_when_a_column_type_cannot_be_aggregated() -> None:
    # Given
    schema, config, batch = _single_value_case(P.LONG, pa.int64(), "sum", [1, 2, 3, 4, 5, 6])
    as_binary = pa.record_batch([batch.column(0), pa.array([b"x"] * 6)], names=["key", "value"])

    # When / Then
    with pytest.raises(IteratorDataError, match="cannot aggregate a column of type binary"):
        aggregate_batch(as_binary, schema, config.aggregations)
