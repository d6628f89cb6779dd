"""Schema.from_arrow: a Sleeper schema from an Arrow schema, with every unsupported column named."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.core.exceptions import SchemaError
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema
from sleeper.io.arrow_types import arrow_schema

EVERY_TYPE = Schema(
    row_key_fields=(Field("key", PrimitiveType.STRING), Field("id", PrimitiveType.LONG)),
    sort_key_fields=(Field("ts", PrimitiveType.INT),),
    value_fields=(
        Field("blob", PrimitiveType.BYTE_ARRAY, nullable=True),
        Field("tags", ListType(PrimitiveType.STRING)),
        Field("counts", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
    ),
)


def should_read_back_the_arrow_schema_sleeper_writes() -> None:
    # Given the Arrow schema of a table with every Sleeper type
    arrow = arrow_schema(EVERY_TYPE)
    # When a schema is made from it with the same keys
    schema = Schema.from_arrow(arrow, row_keys=["key", "id"], sort_keys=["ts"])
    # Then it is the table's schema
    assert schema == EVERY_TYPE


def should_take_keys_by_name_and_every_other_column_as_a_value_in_arrow_order() -> None:
    # Given columns as pandas or a Parquet file may give them (large strings, narrow ints, nullable fields)
    arrow = pa.schema(
        [
            pa.field("n", pa.int16()),
            pa.field("name", pa.large_string()),
            pa.field("age", pa.int64()),
            pa.field("photo", pa.large_binary(), nullable=False),
            pa.field("scores", pa.large_list(pa.int32())),
        ]
    )
    # When the second column is the row key
    schema = Schema.from_arrow(arrow, row_keys=["name"])
    # Then the key is not nullable, values keep their order and nullability, and types are Sleeper's
    assert schema.row_key_fields == (Field("name", PrimitiveType.STRING),)
    assert schema.value_fields == (
        Field("n", PrimitiveType.INT, nullable=True),
        Field("age", PrimitiveType.LONG, nullable=True),
        Field("photo", PrimitiveType.BYTE_ARRAY),
        Field("scores", ListType(PrimitiveType.INT), nullable=True),
    )


def should_list_every_column_with_an_arrow_type_sleeper_cannot_store() -> None:
    # Given columns of types with no Sleeper type
    arrow = pa.schema(
        [
            ("key", pa.string()),
            ("price", pa.float16()),
            ("when", pa.date64()),
            ("big", pa.uint64()),
            ("floats", pa.list_(pa.float32())),
        ]
    )
    # When a schema is made from it
    with pytest.raises(SchemaError) as raised:
        Schema.from_arrow(arrow, row_keys=["key"])
    # Then one error names each of them with its type, and what Sleeper stores
    message = str(raised.value)
    for column in ("'price' (halffloat)", "'when' (date64[ms])", "'big' (uint64)", "'floats' (list<item: float>)"):
        assert column in message
    assert "'key'" not in message
    assert "int64, uint32 (LongType)" in message


@pytest.mark.parametrize(
    ("row_keys", "sort_keys", "message"),
    [
        (["nope"], [], "no column named 'nope'"),
        (["key"], ["key"], "'key' named more than once"),
        ([], [], "at least one row key"),
        (["tags"], [], "row key field 'tags' must be of a primitive type"),
    ],
)
def should_refuse_keys_that_are_not_usable_columns(row_keys: list[str], sort_keys: list[str], message: str) -> None:
    # Given an Arrow schema
    arrow = pa.schema([("key", pa.string()), ("tags", pa.list_(pa.string()))])
    # When the keys named are missing, repeated, absent or not primitive
    with pytest.raises(SchemaError, match=message):
        Schema.from_arrow(arrow, row_keys=row_keys, sort_keys=sort_keys)
