"""The value types beyond Sleeper's (float, double, boolean, date, timestamp): schema JSON and Arrow round trips, the
refusal of keys and collections of them, aggregation rules, row JSON, the Iceberg view's types and Spark's."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

from sleeper.core.exceptions import SchemaError
from sleeper.core.schema import (
    ARROW_TYPES_SUPPORTED,
    Field,
    ListType,
    MapType,
    PrimitiveType,
    Schema,
    TimestampType,
    ValueType,
)
from sleeper.iceberg.types import type_refusal, view_arrow_schema
from sleeper.io.arrow_types import arrow_schema
from sleeper.iterators.config import parse_aggregations
from sleeper.iterators.exceptions import IteratorConfigError
from sleeper.query.publishers import row_dicts
from sleeper.query.results_reader import _rows_table

ARROW = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64(), nullable=False),
        pa.field("flag", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("at_s", pa.timestamp("s", tz="Europe/London")),
        pa.field("at_ms", pa.timestamp("ms")),
        pa.field("at_us", pa.timestamp("us", tz="UTC")),
        pa.field("at_ns", pa.timestamp("ns", tz="+01:00")),
    ]
)

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    values=[
        Field("f32", ValueType.FLOAT, nullable=True),
        Field("f64", ValueType.DOUBLE),
        Field("flag", ValueType.BOOLEAN, nullable=True),
        Field("day", ValueType.DATE, nullable=True),
        Field("at_s", TimestampType("s", "Europe/London"), nullable=True),
        Field("at_ms", TimestampType("ms"), nullable=True),
        Field("at_us", TimestampType("us", "UTC"), nullable=True),
        Field("at_ns", TimestampType("ns", "+01:00"), nullable=True),
    ],
)


def should_read_every_value_type_from_arrow_and_give_the_arrow_types_back_exactly() -> None:
    # Given an Arrow schema with every value type beyond Sleeper's
    # When a schema is made from it and turned back into Arrow
    schema = Schema.from_arrow(ARROW, row_keys=["key"])
    # Then the fields have the new types, and the Arrow schema is the same one
    assert schema == SCHEMA
    assert arrow_schema(schema).equals(ARROW)
    assert "timestamp of any unit and time zone (TimestampType)" in ARROW_TYPES_SUPPORTED


def should_write_and_read_the_value_types_in_schema_json() -> None:
    # Given the schema with every value type
    # When written as schema JSON
    document = SCHEMA.to_dict()
    # Then each type has its name, a timestamp its unit and its zone (left out when there is none)
    types = {f["name"]: f["type"] for f in document["valueFields"]}
    assert types == {
        "f32": "FloatType",
        "f64": "DoubleType",
        "flag": "BooleanType",
        "day": "DateType",
        "at_s": {"TimestampType": {"unit": "s", "timeZone": "Europe/London"}},
        "at_ms": {"TimestampType": {"unit": "ms"}},
        "at_us": {"TimestampType": {"unit": "us", "timeZone": "UTC"}},
        "at_ns": {"TimestampType": {"unit": "ns", "timeZone": "+01:00"}},
    }
    # And it reads back as the same schema
    assert Schema.from_json(SCHEMA.to_json()) == SCHEMA


def should_mark_only_a_schema_with_the_new_types_as_readable_by_this_port_only() -> None:
    # Given a schema of Sleeper's types only, and one with a new value type
    sleeper_only = Schema.of(
        row_keys=[Field("key", PrimitiveType.STRING)],
        values=[Field("n", PrimitiveType.LONG), Field("tags", ListType(PrimitiveType.STRING))],
    )
    # Then only the second is marked, and the first's JSON has only Sleeper's type names
    assert SCHEMA.uses_port_only_types
    assert not sleeper_only.uses_port_only_types
    assert json.loads(sleeper_only.to_json()) == {
        "rowKeyFields": [{"name": "key", "type": "StringType"}],
        "sortKeyFields": [],
        "valueFields": [
            {"name": "n", "type": "LongType"},
            {"name": "tags", "type": {"ListType": {"elementType": "StringType"}}},
        ],
    }
    # And Sleeper's own type set is unchanged for code that enumerates key types
    assert [t.value for t in PrimitiveType] == ["IntType", "LongType", "StringType", "ByteArrayType"]


@pytest.mark.parametrize(
    "value_type", [ValueType.FLOAT, ValueType.DOUBLE, ValueType.BOOLEAN, ValueType.DATE, TimestampType("us", "UTC")]
)
@pytest.mark.parametrize("group", ["row key", "sort key"])
def should_refuse_a_value_type_as_a_key(value_type: ValueType | TimestampType, group: str) -> None:
    # Given a key field of a value type
    key = Field("k", value_type)
    # When a schema is made with it as a row key or a sort key
    with pytest.raises(SchemaError) as raised:
        if group == "row key":
            Schema.of(row_keys=[key])
        else:
            Schema.of(row_keys=[Field("id", PrimitiveType.LONG)], sort_keys=[key])
    # Then the error names the field and the key types
    assert f"{group} field 'k'" in str(raised.value)
    assert "row keys and sort keys must be IntType, LongType, StringType or ByteArrayType" in str(raised.value)


def should_refuse_a_value_type_as_a_key_in_schema_json_and_from_arrow() -> None:
    # Given a schema JSON and an Arrow schema with a float key
    document = {"rowKeyFields": [{"name": "k", "type": "DoubleType"}]}
    arrow = pa.schema([("k", pa.string()), ("t", pa.timestamp("ms"))])
    # Then both are refused with the key types named
    with pytest.raises(SchemaError, match="row key field 'k' is DoubleType, a value type: row keys and sort keys"):
        Schema.from_dict(document)
    with pytest.raises(SchemaError, match=r"sort key field 't' is TimestampType\(ms\), a value type"):
        Schema.from_arrow(arrow, row_keys=["k"], sort_keys=["t"])


@pytest.mark.parametrize(
    ("make", "shown"),
    [
        (lambda: ListType(ValueType.DOUBLE), "DoubleType"),  # type: ignore[arg-type]
        (lambda: MapType(PrimitiveType.STRING, ValueType.BOOLEAN), "BooleanType"),  # type: ignore[arg-type]
        (lambda: ListType(TimestampType("us")), "TimestampType(us)"),  # type: ignore[arg-type]
    ],
)
def should_refuse_lists_and_maps_of_the_value_types(make: object, shown: str) -> None:
    # When a list or map of a new value type is made
    with pytest.raises(SchemaError) as raised:
        make()  # type: ignore[operator]
    # Then it is refused, naming what collections hold
    assert f"lists and maps hold IntType, LongType, StringType or ByteArrayType values only, not {shown}" in str(
        raised.value
    )


def should_refuse_lists_of_value_types_in_schema_json_and_from_arrow() -> None:
    document = {
        "rowKeyFields": [{"name": "k", "type": "IntType"}],
        "valueFields": [{"name": "l", "type": {"ListType": {"elementType": "FloatType"}}}],
    }
    with pytest.raises(SchemaError, match="field 'l' has FloatType, a value type: lists and maps hold"):
        Schema.from_dict(document)
    with pytest.raises(SchemaError, match=r"'l' \(list<item: double>\)"):
        Schema.from_arrow(pa.schema([("k", pa.int32()), ("l", pa.list_(pa.float64()))]), row_keys=["k"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"unit": "minutes"}, "TimestampType unit must be one of s, ms, us, ns, got 'minutes'"),
        ({}, "TimestampType unit must be one of s, ms, us, ns, got None"),
        ({"unit": "us", "timeZone": " "}, "TimestampType time zone must be a zone name or offset"),
        ({"unit": "us", "zone": "UTC"}, "TimestampType has unknown keys: zone"),
    ],
)
def should_refuse_an_invalid_timestamp_type_naming_the_field(body: dict[str, object], message: str) -> None:
    document = {
        "rowKeyFields": [{"name": "k", "type": "IntType"}],
        "valueFields": [{"name": "when", "type": {"TimestampType": body}}],
    }
    with pytest.raises(SchemaError) as raised:
        Schema.from_dict(document)
    assert "field 'when'" in str(raised.value)
    assert message in str(raised.value)


def should_refuse_half_floats_and_date64_naming_them() -> None:
    arrow = pa.schema([("k", pa.int32()), ("h", pa.float16()), ("d", pa.date64())])
    with pytest.raises(SchemaError) as raised:
        Schema.from_arrow(arrow, row_keys=["k"])
    assert "'h' (halffloat), 'd' (date64[ms])" in str(raised.value)


# --- aggregations -------------------------------------------------------------------------------------------------
AGG_SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.STRING)],
    values=[
        Field("f32", ValueType.FLOAT),
        Field("f64", ValueType.DOUBLE),
        Field("flag", ValueType.BOOLEAN),
        Field("day", ValueType.DATE),
        Field("at", TimestampType("us", "UTC")),
    ],
)


def should_accept_sum_min_max_of_floats_and_min_max_of_dates_timestamps_and_booleans() -> None:
    # When aggregations that make sense are configured
    result = parse_aggregations("sum(f32),max(f64),min(flag),max(day),min(at)", AGG_SCHEMA)
    # Then they are accepted
    assert [a.to_string() for a in result] == ["sum(f32)", "max(f64)", "min(flag)", "max(day)", "min(at)"]


@pytest.mark.parametrize(
    ("field", "shown"), [("flag", "BooleanType"), ("day", "DateType"), ("at", "TimestampType(us, UTC)")]
)
def should_refuse_a_sum_of_booleans_dates_or_timestamps(field: str, shown: str) -> None:
    others = ",".join(f"min({name})" for name in AGG_SCHEMA.value_names if name != field)
    with pytest.raises(IteratorConfigError) as raised:
        parse_aggregations(f"sum({field}),{others}", AGG_SCHEMA)
    assert f"'sum({field})' cannot sum {shown} values: use min or max" in str(raised.value)


# --- row JSON -----------------------------------------------------------------------------------------------------
def _rows() -> pa.Table:
    n = 4
    return pa.table(
        {
            "key": pa.array(["a", "b", "c", "d"]),
            "f32": pa.array([0.1, None, float("nan"), float("-inf")], pa.float32()),
            "f64": pa.array([0.1, 1e300, float("inf"), -0.0], pa.float64()),
            "flag": pa.array([True, False, None, True]),
            "day": pa.array([0, -1, None, 2932896], pa.date32()),
            "at_s": pa.array([0, -1, None, 1_700_000_000], pa.timestamp("s", tz="Europe/London")),
            "at_ms": pa.array([1, -1, None, 1_700_000_000_123], pa.timestamp("ms")),
            "at_us": pa.array([1, -1, None, 1_700_000_000_123_456], pa.timestamp("us", tz="UTC")),
            "at_ns": pa.array([1, -1, None, 1_700_000_000_123_456_789], pa.timestamp("ns", tz="+01:00")),
        },
        schema=ARROW,
    ).slice(0, n)


def should_write_the_value_types_as_documented_row_json() -> None:
    # When rows with the new types are written as row JSON
    rows = row_dicts(_rows(), SCHEMA)
    text = json.dumps(rows, allow_nan=False)  # every value is standard JSON
    # Then floats are numbers or the strings of non-finite values, dates and timestamps ISO 8601 strings
    first, second, third, fourth = json.loads(text)
    assert math.isclose(first["f32"], 0.1, rel_tol=1e-7)
    assert (third["f32"], fourth["f32"], third["f64"]) == ("NaN", "-Infinity", "Infinity")
    assert (first["flag"], second["flag"], third["flag"]) == (True, False, None)
    assert (first["day"], second["day"], fourth["day"]) == ("1970-01-01", "1969-12-31", "9999-12-31")
    assert fourth["at_s"] == "2023-11-14T22:13:20Z"
    assert fourth["at_ms"] == "2023-11-14T22:13:20.123"
    assert fourth["at_us"] == "2023-11-14T22:13:20.123456Z"
    assert fourth["at_ns"] == "2023-11-14T22:13:20.123456789Z"
    assert second["at_ns"] == "1969-12-31T23:59:59.999999999Z"
    assert third["at_us"] is None


def should_read_row_json_back_as_the_same_rows() -> None:
    # Given rows written as row JSON (as the results queue carries them)
    data = _rows()
    messages = json.loads(json.dumps(row_dicts(data, SCHEMA)))
    # When read back as the results reader does
    table = _rows_table(messages, SCHEMA)
    # Then the types and values are exactly the original (NaN compared as NaN)
    assert table.schema.equals(ARROW)
    for name in ARROW.names:
        if name.startswith("f"):
            got = [("nan" if v != v else v) for v in table.column(name).to_pylist()]
            expected = [("nan" if v != v else v) for v in data.column(name).to_pylist()]
            assert got == expected
        else:
            assert table.column(name).equals(data.column(name)), name


# --- the Iceberg view and Spark -------------------------------------------------------------------------------------
def should_give_the_iceberg_view_utc_instants_and_refuse_nanoseconds() -> None:
    # Given the schema with every value type
    # Then the view's Arrow schema has the table's types, each time zone given as UTC
    view = view_arrow_schema(SCHEMA)
    assert view.field("at_s").type == pa.timestamp("s", tz="UTC")
    assert view.field("at_ms").type == pa.timestamp("ms")
    assert view.field("f32").type == pa.float32()
    assert view.field("day").type == pa.date32()
    # And only the nanosecond field keeps the table from having a view
    refusal = type_refusal(SCHEMA)
    assert refusal is not None
    assert "'at_ns' is TimestampType(ns, +01:00)" in refusal
    assert "at_us" not in refusal
    assert type_refusal(AGG_SCHEMA) is None


def should_give_spark_the_matching_types() -> None:
    sql_types = pytest.importorskip("pyspark.sql.types")
    from sleeper.bulk_import.spark_job import _spark_type

    spark = {f.name: _spark_type(sql_types, f) for f in SCHEMA.value_fields}
    assert spark["f32"] == sql_types.FloatType()
    assert spark["f64"] == sql_types.DoubleType()
    assert spark["flag"] == sql_types.BooleanType()
    assert spark["day"] == sql_types.DateType()
    assert spark["at_us"] == sql_types.TimestampType()
    assert spark["at_ms"] == sql_types.TimestampNTZType()


# --- filter literals ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("f64 > 1", "f64 > 1"),
        ("f32 between -1.5 and 2", "f32 between -1.5 and 2"),
        ("flag = true", "flag = true"),
        ("day in ('2024-05-31', '2024-02-29')", "day in ('2024-05-31', '2024-02-29')"),
        ("at_us >= '2024-05-31 12:30:00.25+01:00'", "at_us >= '2024-05-31T11:30:00.250000Z'"),
        ("at_us < '2024-05-31'", "at_us < '2024-05-31T00:00:00.000000Z'"),
        ("at_ms = '2024-05-31T12:30'", "at_ms = '2024-05-31T12:30:00.000'"),
        ("at_ns > '1969-12-31T23:59:59.999999999Z'", "at_ns > '1969-12-31T23:59:59.999999999Z'"),
        ("at_s != '2024-05-31T01:02:03'", "at_s != '2024-05-31T01:02:03Z'"),
    ],
)
def should_read_filter_literals_of_the_value_types_in_canonical_form(text: str, canonical: str) -> None:
    from sleeper.core.filter import parse_filter

    # When a filter on a new value type is parsed
    parsed = parse_filter(text, SCHEMA)
    # Then its literals are checked and written canonically, and that text parses back to the same filter
    assert str(parsed) == canonical
    assert parse_filter(canonical, SCHEMA) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f64 > 'a'", "column 'f64' is DoubleType: compare it with a number such as 1.5, not the string 'a'"),
        ("f32 = true", "column 'f32' is FloatType: compare it with a number such as 1.5, not the boolean true"),
        ("flag = 1", "column 'flag' is BooleanType: compare it with true or false, not int 1"),
        ("day > '2023-02-29'", "'2023-02-29' is not a date: write it as 'YYYY-MM-DD'"),
        ("day > 20240101", "compare it with a date string such as '2024-05-31', not int 20240101"),
        ("at_us > 'yesterday'", "'yesterday' is not an ISO 8601 date and time"),
        ("at_ms > '2024-05-31T12:30:00.1234'", "is finer than the column's unit (ms)"),
        ("at_ms > '2024-05-31T12:30:00Z'", "names a time zone, and the column holds wall-clock times"),
        ("at_us > '2024-13-01T00:00'", "is not a date and time"),
    ],
)
def should_refuse_filter_literals_that_do_not_suit_the_value_types(text: str, message: str) -> None:
    from sleeper.core.filter import FilterError, parse_filter

    with pytest.raises(FilterError) as raised:
        parse_filter(text, SCHEMA)
    assert message in str(raised.value)
