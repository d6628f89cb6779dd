from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema
from sleeper.io.arrow_types import arrow_schema, conform_batch
from sleeper.io.exceptions import SchemaMismatchError

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    sort_keys=[Field("sort", PrimitiveType.INT)],
    values=[
        Field("bytes", PrimitiveType.BYTE_ARRAY, nullable=True),
        Field("list", ListType(PrimitiveType.LONG)),
        Field("map", MapType(PrimitiveType.STRING, PrimitiveType.BYTE_ARRAY), nullable=True),
    ],
)


def should_map_sleeper_types_to_arrow_types_in_column_order() -> None:
    # When
    schema = arrow_schema(SCHEMA)

    # Then
    assert schema == pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("sort", pa.int32(), nullable=False),
            pa.field("bytes", pa.binary(), nullable=True),
            pa.field("list", pa.list_(pa.field("element", pa.int64(), nullable=False)), nullable=False),
            pa.field(
                "map",
                pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary(), nullable=False)),
                nullable=True,
            ),
        ]
    )
    assert [f.nullable for f in schema] == [False, False, True, False, True]
    assert not schema.field("list").type.value_field.nullable


def should_return_a_batch_that_already_matches_unchanged() -> None:
    # Given
    target = arrow_schema(Schema.of(row_keys=[Field("key", PrimitiveType.LONG)]))
    batch = pa.RecordBatch.from_pydict({"key": [1, 2]}, schema=target)

    # When / Then
    assert conform_batch(batch, target) is batch


def should_reorder_cast_and_drop_columns() -> None:
    # Given
    target = arrow_schema(
        Schema.of(row_keys=[Field("key", PrimitiveType.INT)], values=[Field("v", PrimitiveType.STRING)])
    )
    batch = pa.record_batch({"v": pa.array(["a"], type=pa.large_string()), "extra": [1], "key": [7]})

    # When
    out = conform_batch(batch, target)

    # Then
    assert out.schema == target
    assert out.to_pylist() == [{"key": 7, "v": "a"}]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"v": ["a"]}, "no column 'key'"),
        ({"key": [2**40], "v": ["a"]}, "'key'"),
        ({"key": [1], "v": pa.array([None], type=pa.string())}, "'v' is not nullable"),
    ],
)
def should_reject_batches_that_do_not_match(columns: dict[str, object], message: str) -> None:
    # Given
    target = arrow_schema(
        Schema.of(row_keys=[Field("key", PrimitiveType.INT)], values=[Field("v", PrimitiveType.STRING)])
    )

    # When / Then
    with pytest.raises(SchemaMismatchError, match=message):
        conform_batch(pa.record_batch(columns), target, where="input.parquet")


def should_check_nulls_in_the_slice_of_a_map_column_only() -> None:
    # Given
    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.INT)],
        values=[Field("m", MapType(PrimitiveType.STRING, PrimitiveType.LONG))],
    )
    target = arrow_schema(schema)
    maps = pa.array([[("a", None)], [("b", 2)]], type=pa.map_(pa.string(), pa.int64()))
    batch = pa.record_batch({"key": pa.array([1, 2], type=pa.int32()), "m": maps})

    # When
    clean = conform_batch(batch.slice(1), target)

    # Then
    assert clean.to_pylist() == [{"key": 2, "m": [("b", 2)]}]
    with pytest.raises(SchemaMismatchError, match="null key or value"):
        conform_batch(batch, target)
