"""Reading and checking sleeper.table.filters and sleeper.table.aggregations."""

from __future__ import annotations

import pytest

from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema
from sleeper.iterators import (
    AggregationConfig,
    AggregationOp,
    FilterConfig,
    IteratorConfigError,
    ProcessingConfig,
    parse_aggregations,
    parse_filters,
)

P = PrimitiveType

SCHEMA = Schema.of(
    row_keys=[Field("key", P.STRING)],
    sort_keys=[Field("time", P.LONG)],
    values=[
        Field("count", P.LONG),
        Field("small", P.INT),
        Field("name", P.STRING),
        Field("blob", P.BYTE_ARRAY),
        Field("counts", MapType(P.STRING, P.LONG)),
        Field("int_counts", MapType(P.BYTE_ARRAY, P.INT)),
    ],
)
ALL_AGGREGATIONS = "sum(count),max(small),min(name),max(blob),map_sum(counts),map_min(int_counts)"


def _aggregations_schema(*values: Field) -> Schema:
    return Schema.of(row_keys=[Field("key", P.STRING)], sort_keys=[Field("time", P.LONG)], values=values)


def _error_for_aggregations(text: str, schema: Schema = SCHEMA) -> IteratorConfigError:
    with pytest.raises(IteratorConfigError) as caught:
        parse_aggregations(text, schema)
    return caught.value


def _error_for_filters(text: str, schema: Schema = SCHEMA) -> IteratorConfigError:
    with pytest.raises(IteratorConfigError) as caught:
        parse_filters(text, schema)
    return caught.value


# Filters


def should_read_age_off_filter() -> None:
    # Given
    text = "ageOff(time,1209600000)"

    # When
    filters = parse_filters(text, SCHEMA)

    # Then
    assert filters == (FilterConfig(field="time", max_age_ms=1209600000),)


def should_read_several_filters_ignoring_case_and_whitespace() -> None:
    # Given
    schema = _aggregations_schema(Field("seen", P.LONG, nullable=True))
    text = "  AGEOFF ( time , 5 ) ,ageoff(seen,-7)  "

    # When
    filters = parse_filters(text, schema)

    # Then
    assert filters == (FilterConfig(field="time", max_age_ms=5), FilterConfig(field="seen", max_age_ms=-7))


@pytest.mark.parametrize("text", [None, "", "   ", "\t\n"])
def should_read_no_filters(text: str | None) -> None:
    # When
    filters = parse_filters(text, SCHEMA)

    # Then
    assert filters == ()


def should_allow_age_off_on_a_nullable_long_value_field() -> None:
    # Given
    schema = _aggregations_schema(Field("seen", P.LONG, nullable=True))

    # When
    filters = parse_filters("ageOff(seen,10)", schema)

    # Then
    assert filters == (FilterConfig(field="seen", max_age_ms=10),)


def should_allow_field_names_with_underscores_hyphens_and_non_ascii_letters() -> None:
    # Given
    schema = Schema.of(row_keys=[Field("k", P.STRING)], values=[Field("last_seen-ms", P.LONG), Field("存在", P.LONG)])

    # When
    filters = parse_filters("ageOff(last_seen-ms,1),ageOff(存在,2)", schema)

    # Then
    assert [f.field for f in filters] == ["last_seen-ms", "存在"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("go(time,123)", "'go'"),
        ("ageOff(time)", "expects 2 arguments (field, max age), found 1"),
        ("ageOff(time,1,2)", "expects 2 arguments (field, max age), found 3"),
        ("ageOff()", "found 0"),
        ("ageOff(123,456)", "parameter 0 (field) must be a field name, found '123'"),
        ("ageOff(time,abc)", "parameter 1 (max age) must be a whole number, found 'abc'"),
        ("ageOff(time,1-2)", "found '1-2'"),
        ("ageOff(time,9223372036854775808)", "does not fit in a long"),
        ("ageOff(nothing,10)", "unknown field 'nothing'"),
        ("ageOff(small,10)", "'small' is IntType"),
        ("ageOff(key,10)", "'key' is StringType"),
        ("ageOff(counts,10)", "'counts' is MapType<StringType,LongType>"),
    ],
)
def should_reject_bad_filter(text: str, named: str) -> None:
    # When
    error = _error_for_filters(text)

    # Then
    assert named in str(error)
    assert "sleeper.table.filters" in str(error)


@pytest.mark.parametrize(
    ("text", "expected", "position"),
    [
        ("ageOff(time,1),", "expected a function call", 15),
        ("ageOff(time,1) ageOff(time,2)", "expected a comma", 15),
        ("ageOff(time,1", "expected a close parenthesis", 13),
        ("ageOff", "expected an open parenthesis", 6),
        ("ageOff@(time,1)", "expected an open parenthesis", 6),
        ("(time,1)", "expected a function name", 0),
        ('ageOff("time",1)', "expected a parameter or close parenthesis", 7),
        ("ageOff(time 1)", "expected a comma or close parenthesis", 12),
        ("ageOff(time,)", "expected a parameter or close parenthesis", 12),
    ],
)
def should_reject_unreadable_filter_text(text: str, expected: str, position: int) -> None:
    # When
    error = _error_for_filters(text)

    # Then
    assert f"{expected} at position {position}" in str(error)


# Aggregations


def should_read_every_aggregation_operation() -> None:
    # When
    aggregations = parse_aggregations(ALL_AGGREGATIONS, SCHEMA)

    # Then
    assert aggregations == (
        AggregationConfig(op=AggregationOp.SUM, field="count"),
        AggregationConfig(op=AggregationOp.MAX, field="small"),
        AggregationConfig(op=AggregationOp.MIN, field="name"),
        AggregationConfig(op=AggregationOp.MAX, field="blob"),
        AggregationConfig(op=AggregationOp.MAP_SUM, field="counts"),
        AggregationConfig(op=AggregationOp.MAP_MIN, field="int_counts"),
    )


def should_read_operations_ignoring_case_and_whitespace() -> None:
    # Given
    schema = _aggregations_schema(
        Field("a", P.LONG), Field("b", P.INT), Field("c", MapType(P.INT, P.LONG)), Field("d", MapType(P.LONG, P.INT))
    )

    # When
    aggregations = parse_aggregations(" SUM(a) , MiN ( b ),Map_Max(c),MAP_sum(d) ", schema)

    # Then
    assert [a.op for a in aggregations] == [
        AggregationOp.SUM,
        AggregationOp.MIN,
        AggregationOp.MAP_MAX,
        AggregationOp.MAP_SUM,
    ]


@pytest.mark.parametrize("text", [None, "", "  "])
def should_read_no_aggregations_even_with_nullable_value_fields(text: str | None) -> None:
    # Given
    schema = _aggregations_schema(Field("maybe", P.LONG, nullable=True))

    # When
    aggregations = parse_aggregations(text, schema)

    # Then
    assert aggregations == ()


def should_allow_a_schema_without_value_fields() -> None:
    # Given
    schema = Schema.of(row_keys=[Field("key", P.STRING)])

    # When
    config = ProcessingConfig.parse(None, None, schema)

    # Then
    assert config.is_empty


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("combine(count)", "unknown aggregation operation 'combine'"),
        ("sum(count,small)", "sum expects 1 argument (field), found 2"),
        ("sum()", "sum expects 1 argument (field), found 0"),
        ("sum(123)", "must be a field name, found '123'"),
        ("sum(nothing)", "unknown field 'nothing'"),
        ("sum(count),sum(count)", "field 'count' is aggregated more than once"),
        ("max(count),min(count)", "field 'count' is aggregated more than once"),
        ("sum(count)", "missing: small, name, blob, counts, int_counts"),
        ("sum(name)", "'sum(name)' needs an IntType or LongType field, the field is StringType"),
        ("sum(blob)", "needs an IntType or LongType field, the field is ByteArrayType"),
        ("sum(counts)", "cannot aggregate a map field (MapType<StringType,LongType>); use map_sum"),
        ("max(int_counts)", "use map_max"),
        ("map_sum(count)", "'map_sum(count)' needs a MapType field, the field is LongType"),
        ("map_min(name)", "needs a MapType field"),
    ],
)
def should_reject_bad_aggregation(text: str, named: str) -> None:
    # When
    error = _error_for_aggregations(text)

    # Then
    assert named in str(error)
    assert "sleeper.table.aggregations" in str(error)


@pytest.mark.parametrize("field", ["key", "time"])
def should_reject_aggregating_a_key_field(field: str) -> None:
    # When
    error = _error_for_aggregations(f"max({field}),{ALL_AGGREGATIONS}")

    # Then
    assert f"aggregates key field {field!r}" in str(error)
    assert error.part == field


def should_reject_map_operation_on_map_with_non_integer_values() -> None:
    # Given
    schema = _aggregations_schema(Field("tags", MapType(P.STRING, P.STRING)))

    # When
    error = _error_for_aggregations("map_max(tags)", schema)

    # Then
    assert "needs a map with IntType or LongType values, the field is MapType<StringType,StringType>" in str(error)


def should_reject_aggregating_a_list_field() -> None:
    # Given
    schema = _aggregations_schema(Field("items", ListType(P.LONG)))

    # When
    error = _error_for_aggregations("sum(items)", schema)

    # Then
    assert "cannot aggregate a list field (ListType<LongType>)" in str(error)


def should_reject_aggregation_when_any_value_field_is_nullable() -> None:
    # Given
    schema = _aggregations_schema(Field("count", P.LONG), Field("maybe", P.LONG, nullable=True))

    # When
    error = _error_for_aggregations("sum(count),sum(maybe)", schema)

    # Then
    assert "nullable value fields: maybe" in str(error)
    assert error.part == "maybe"


def should_name_the_unknown_operation_in_the_error_part() -> None:
    # When
    error = _error_for_aggregations("sum(count), avg(small)")

    # Then
    assert error.part == "avg(small)"
    assert isinstance(error, SleeperError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sum(count),", "expected a function call at position 11"),
        ("sum(count) max(small)", "expected a comma at position 11"),
        ("sum(count", "expected a close parenthesis at position 9"),
        ("sum", "expected an open parenthesis at position 3"),
        (",sum(count)", "expected a function name at position 0"),
    ],
)
def should_reject_unreadable_aggregation_text(text: str, expected: str) -> None:
    # When
    error = _error_for_aggregations(text)

    # Then
    assert expected in str(error)


# The whole configuration


def should_round_trip_configuration_through_its_strings() -> None:
    # Given
    shouted = "SUM(count), MAX(small), MIN(name), MAX(blob), MAP_SUM(counts), MAP_MIN(int_counts)"
    config = ProcessingConfig.parse(" ageOff( time , 10 ) , AGEOFF(count,-3)", shouted, SCHEMA)

    # When
    filters_text = config.filters_to_string()
    aggregations_text = config.aggregations_to_string()
    again = ProcessingConfig.parse(filters_text, aggregations_text, SCHEMA)

    # Then
    assert filters_text == "ageOff(time,10),ageOff(count,-3)"
    assert aggregations_text == ALL_AGGREGATIONS
    assert again == config


def should_write_empty_strings_for_empty_configuration() -> None:
    # Given
    config = ProcessingConfig()

    # Then
    assert config.is_empty
    assert config.filters_to_string() == ""
    assert config.aggregations_to_string() == ""
    assert ProcessingConfig.parse(config.filters_to_string(), config.aggregations_to_string(), SCHEMA) == config


def should_validate_configuration_built_directly() -> None:
    # Given
    config = ProcessingConfig(aggregations=(AggregationConfig(op=AggregationOp.SUM, field="count"),))

    # When / Then
    with pytest.raises(IteratorConfigError, match="missing: small"):
        config.validate(SCHEMA)


def should_list_value_fields_needed_by_filters_and_aggregations() -> None:
    # Given
    filters_only = ProcessingConfig.parse("ageOff(time,1),ageOff(count,2)", None, SCHEMA)
    with_aggregation = ProcessingConfig.parse("ageOff(time,1)", ALL_AGGREGATIONS, SCHEMA)

    # Then
    assert filters_only.required_value_fields(SCHEMA) == ("count",)
    assert with_aggregation.required_value_fields(SCHEMA) == SCHEMA.value_names
    assert ProcessingConfig().required_value_fields(SCHEMA) == ()


def should_report_the_smallest_kept_timestamp() -> None:
    # Given
    age_off = FilterConfig(field="time", max_age_ms=100)

    # Then
    assert age_off.min_kept_value(1000) == 901
    assert age_off.to_string() == "ageOff(time,100)"


def should_describe_map_operations() -> None:
    # Then
    assert [op.element_op for op in AggregationOp] == [
        AggregationOp.SUM,
        AggregationOp.MIN,
        AggregationOp.MAX,
        AggregationOp.SUM,
        AggregationOp.MIN,
        AggregationOp.MAX,
    ]
    assert [op.is_map for op in AggregationOp] == [False, False, False, True, True, True]
