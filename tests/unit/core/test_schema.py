from __future__ import annotations

import json

import pytest

from sleeper.core.exceptions import KeyTypeError, SchemaError
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema

SLEEPER_SCHEMA_JSON = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}, {"name": "id", "type": "LongType"}],
    "sortKeyFields": [{"name": "ts", "type": "IntType"}],
    "valueFields": [
        {"name": "blob", "type": "ByteArrayType", "nullable": True},
        {"name": "tags", "type": {"ListType": {"elementType": "StringType"}}},
        {"name": "counts", "type": {"MapType": {"keyType": "StringType", "valueType": "LongType"}}},
    ],
}


def should_read_and_write_sleeper_schema_json() -> None:
    # Given Sleeper's schema JSON with every type
    text = json.dumps(SLEEPER_SCHEMA_JSON)
    # When read and written again
    schema = Schema.from_json(text)
    # Then the fields are typed and the JSON is field-for-field the same
    assert schema.row_key_names == ("key", "id")
    assert schema.field("tags").type == ListType(PrimitiveType.STRING)
    assert schema.field("counts").type == MapType(PrimitiveType.STRING, PrimitiveType.LONG)
    assert schema.field("blob").nullable
    assert json.loads(schema.to_json()) == SLEEPER_SCHEMA_JSON


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"rowKeyFields": []}, "at least one row key"),
        ({"rowKeyFields": [{"name": "k", "type": "FloatType"}]}, "row key field 'k' is FloatType, a value type"),
        ({"rowKeyFields": [{"name": "k", "type": "IntType", "nullable": True}]}, "row key field 'k' must not be"),
        (
            {"rowKeyFields": [{"name": "k", "type": {"ListType": {"elementType": "IntType"}}}]},
            "row key field 'k' must be of a primitive type",
        ),
        (
            {"rowKeyFields": [{"name": "k", "type": "IntType"}], "valueFields": [{"name": "k", "type": "IntType"}]},
            "field name 'k' is used more than once",
        ),
        ({"rowKeyFields": [{"name": "k"}]}, "field 'k' has no type"),
        ({"rowKeys": []}, "unknown keys: rowKeys"),
    ],
)
def should_reject_invalid_schema_naming_the_field(doc: object, message: str) -> None:
    # Given an invalid schema document
    # When it is read
    with pytest.raises(SchemaError) as error:
        Schema.from_json(json.dumps(doc))
    # Then the error names what is wrong
    assert message in str(error.value)


def should_reject_text_that_is_not_json() -> None:
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.from_json("{")


def should_check_row_key_values() -> None:
    # Given a schema with a string and a long row key
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.STRING), Field("id", PrimitiveType.LONG)])
    # When keys are given by name or position
    # Then they come back in row key order, typed
    assert schema.row_key({"id": 3, "key": "a"}) == ("a", 3)
    assert schema.row_key(["a", 3]) == ("a", 3)
    with pytest.raises(KeyTypeError, match="field 'id' of type LongType needs an integer"):
        schema.row_key({"key": "a", "id": "3"})
    with pytest.raises(KeyTypeError, match="row key field 'id' has no value"):
        schema.row_key({"key": "a"})


def should_reject_int_out_of_range() -> None:
    with pytest.raises(KeyTypeError, match="out of range"):
        PrimitiveType.INT.check(2**31, "k")


def should_order_strings_and_bytes_as_unsigned_bytes() -> None:
    # Given values whose UTF-16 or signed-byte order differs from unsigned byte order
    strings = ["\uffff", "\U0001f600", "a"]
    byte_values = [b"\xff", b"\x01", b"\x80"]
    # When sorted with the built-in order
    # Then the order is that of their UTF-8 / unsigned bytes
    assert sorted(strings) == sorted(strings, key=lambda s: s.encode("utf-8"))
    assert sorted(byte_values) == [b"\x01", b"\x80", b"\xff"]
