from __future__ import annotations

import json
from typing import Any

import pytest

from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MalformedJsonError,
    MissingFieldError,
    UnknownFieldError,
    UnknownTableError,
    UnsafePathError,
)
from sleeper.core.query import LeafPartitionQuery, Query, QueryProcessingConfig, QuerySerDe, QueryValidationError
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, PrimitiveType, Schema

ID = Field("id", PrimitiveType.LONG)
NAME = Field("name", PrimitiveType.STRING)
SCHEMA = Schema.of(row_keys=[ID, NAME], values=[Field("count", PrimitiveType.LONG)])
SCHEMAS_BY_NAME = {"my-table": SCHEMA}
SCHEMAS_BY_ID = {"abc123": SCHEMA}


def _by_id(table_id: str) -> Schema:
    try:
        return SCHEMAS_BY_ID[table_id]
    except KeyError:
        raise TableNotFoundError(table_id) from None


SERDE = QuerySerDe(SCHEMAS_BY_NAME.get, _by_id, max_regions=3)

PROCESSING = QueryProcessingConfig(
    requested_value_fields=("count",),
    query_time_iterator_class_name="MyIterator",
    query_time_iterator_config="cfg",
    results_publisher_config={"destination": "SQS", "sqsResultsUrl": "https://sqs/q"},
    status_report_destinations=({"destination": "WEBSOCKET", "webSocketConnectionId": "c1"},),
)
QUERY = Query(
    query_id="q1",
    table_name="my-table",
    regions=(
        Region.of([Range(field=ID, min=1, max=10)]),
        Region.of([Range(field=ID, min=20, max=None), Range.exact(NAME, "ünïcode")]),
    ),
    processing=PROCESSING,
)


def _query(**changes: Any) -> dict[str, Any]:
    return {**SERDE.to_dict(QUERY), **changes}


def _error(data: object) -> QueryValidationError:
    with pytest.raises(QueryValidationError) as e:
        SERDE.from_dict(data)
    return e.value


def should_round_trip_query_with_all_fields() -> None:
    # When
    found = SERDE.from_json(SERDE.to_json(QUERY))
    # Then
    assert found == QUERY


def should_round_trip_leaf_partition_query() -> None:
    # Given
    leaf = QUERY.leaf_query(
        table_id="abc123",
        sub_query_id="sub-1",
        leaf_partition_id="L",
        partition_region=Region.of([Range(field=ID, min=0, max=100), Range.whole(NAME)]),
        regions=QUERY.regions[:1],
        files=["s3a://b/abc123/data/partition_L/f.parquet"],
    )
    # When
    found = SERDE.leaf_query_from_json(SERDE.to_json(leaf))
    # Then
    assert found == leaf
    assert isinstance(found, LeafPartitionQuery)
    assert found.processing == PROCESSING


def should_write_fields_as_sleeper_does() -> None:
    # Given
    minimal = Query(query_id="q", table_name="my-table", regions=(Region.of([Range.exact(NAME, "a")]),))
    # When
    data = SERDE.to_dict(minimal)
    # Then
    assert data == {
        "tableName": "my-table",
        "queryId": "q",
        "type": "Query",
        "regions": [
            {
                "name": {"min": "YQ==", "minInclusive": True, "max": "YQ==", "maxInclusive": True},
                "stringsBase64Encoded": True,
            }
        ],
        "resultsPublisherConfig": {},
        "statusReportDestinations": [],
    }


def should_read_python_client_query_with_raw_strings_and_null_max() -> None:
    # Given the JSON the Python client sends
    text = json.dumps(
        {
            "tableName": "my-table",
            "queryId": "q2",
            "type": "Query",
            "regions": [
                {
                    "id": {"min": 5, "minInclusive": True, "max": None, "maxInclusive": True},
                    "stringsBase64Encoded": False,
                },
                {
                    "name": {"min": "a", "minInclusive": True, "max": "c", "maxInclusive": False},
                    "stringsBase64Encoded": False,
                },
            ],
        }
    )
    # When
    query = SERDE.query_from_json(text)
    # Then
    assert query.regions == (
        Region.of([Range(field=ID, min=5)]),
        Region.of([Range(field=NAME, min="a", max="c")]),
    )
    assert query.processing == QueryProcessingConfig()


def should_reject_wrong_key_type_naming_the_bound() -> None:
    # Given a string where the long row key needs a number
    data = _query(regions=[{"id": {"min": "5", "max": 9}, "stringsBase64Encoded": False}])
    # When
    error = _error(data)
    # Then
    assert error.path == "$.regions[0].id.min"
    assert error.query_id == "q1"
    assert isinstance(error.__cause__, InvalidFieldError)


def should_reject_string_bound_that_is_not_base64_when_flag_set() -> None:
    # When
    error = _error(_query(regions=[{"name": {"min": "not base64!"}, "stringsBase64Encoded": True}]))
    # Then
    assert error.path == "$.regions[0].name.min"


def should_reject_int_key_out_of_range() -> None:
    # When
    error = _error(_query(regions=[{"id": {"min": 2**63}}]))
    # Then
    assert error.path.startswith("$.regions[0].id")


def should_reject_min_greater_than_max() -> None:
    # When
    error = _error(_query(regions=[{"id": {"min": 10, "max": 1}}]))
    # Then
    assert error.path == "$.regions[0].id"
    assert "greater than max" in error.reason


def should_accept_single_value_range() -> None:
    # When
    query = SERDE.from_dict(_query(regions=[{"id": {"min": 10, "max": 10, "maxInclusive": True}}]))
    # Then
    assert query.regions == (Region.of([Range.exact(ID, 10)]),)


def should_reject_unknown_fields_in_regions_and_requested_fields() -> None:
    # When
    in_region = _error(_query(regions=[{"nope": {"min": 1}}]))
    value_not_key = _error(_query(regions=[{"count": {"min": 1}}]))
    requested = _error(_query(requestedValueFields=["count", "nope"]))
    top_level = _error(_query(tableID="x"))
    # Then
    assert (in_region.path, value_not_key.path) == ("$.regions[0].nope", "$.regions[0].count")
    assert requested.path == "$.requestedValueFields[1]"
    assert top_level.path == "$.tableID"
    assert all(isinstance(e.__cause__, UnknownFieldError) for e in (in_region, value_not_key, requested, top_level))


def should_limit_number_of_regions() -> None:
    # When
    error = _error(_query(regions=[{"id": {"min": i}} for i in range(4)]))
    # Then
    assert error.path == "$.regions"
    assert "too many regions" in error.reason


def should_reject_unknown_or_missing_type() -> None:
    # When
    unknown = _error(_query(type="invalid-query-type"))
    missing = _error({k: v for k, v in _query().items() if k != "type"})
    # Then
    assert unknown.path == "$.type"
    assert 'unknown query type "invalid-query-type"' in unknown.reason
    assert str(unknown).startswith('Query validation failed for query "q1": $.type')
    assert isinstance(missing.__cause__, MissingFieldError)


def should_reject_unknown_table_by_name_and_by_id() -> None:
    # Given
    leaf = _query(type="LeafPartitionQuery", tableId="zzz", subQueryId="s", leafPartitionId="L", files=[])
    leaf["partitionRegion"] = leaf["regions"][0]
    del leaf["tableName"]
    # When
    by_name = _error(_query(tableName="other-table"))
    by_id = _error(leaf)
    # Then
    assert (by_name.path, by_id.path) == ("$.tableName", "$.tableId")
    assert isinstance(by_name.__cause__, UnknownTableError)
    assert isinstance(by_id.__cause__, UnknownTableError)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"queryId": None}, "$.queryId"),
        ({"queryId": ""}, "$.queryId"),
        ({"tableName": None}, "$.tableName"),
        ({"regions": None}, "$.regions"),
        ({"regions": {}}, "$.regions"),
        ({"regions": [None]}, "$.regions[0]"),
        ({"regions": [{"id": {"max": 5}}]}, "$.regions[0].id.min"),
        ({"regions": [{"id": {"min": 1, "minInclusive": "yes"}}]}, "$.regions[0].id"),
        ({"requestedValueFields": "count"}, "$.requestedValueFields"),
        ({"resultsPublisherConfig": {"destination": ["S3"]}}, "$.resultsPublisherConfig.destination"),
        ({"statusReportDestinations": {}}, "$.statusReportDestinations"),
        ({"statusReportDestinations": [1]}, "$.statusReportDestinations[0]"),
        ({"queryTimeIteratorClassName": 1}, "$.queryTimeIteratorClassName"),
    ],
)
def should_reject_wrong_shapes_naming_the_path(change: dict[str, Any], path: str) -> None:
    # When
    error = _error(_query(**change))
    # Then
    assert error.path == path


def should_carry_status_destinations_with_validation_errors() -> None:
    # When
    error = _error(_query(regions=None))
    # Then
    assert error.status_report_destinations == PROCESSING.status_report_destinations


def should_wrap_malformed_json() -> None:
    # When
    with pytest.raises(QueryValidationError) as e:
        SERDE.from_json('{"queryId": "q1",')
    # Then
    assert isinstance(e.value.__cause__, MalformedJsonError)
    assert e.value.query_id is None
    assert str(e.value).startswith("Query validation failed: $")


def should_reject_leaf_query_fields_and_unsafe_files() -> None:
    # Given
    leaf = QUERY.leaf_query(
        table_id="abc123",
        sub_query_id="sub-1",
        leaf_partition_id="L",
        partition_region=Region.whole(SCHEMA),
        regions=QUERY.regions,
        files=["f"],
    )
    data = SERDE.to_dict(leaf)
    # When
    unsafe = _error({**data, "files": ["s3a://b/../other/f.parquet"]})
    no_region = _error({**data, "partitionRegion": None})
    no_sub_query = _error({**data, "subQueryId": None})
    # Then
    assert unsafe.path == "$.files[0]" and isinstance(unsafe.__cause__, UnsafePathError)
    assert no_region.path == "$.partitionRegion"
    assert no_sub_query.path == "$.subQueryId"


def should_read_only_the_requested_kind() -> None:
    # Given
    text = SERDE.to_json(QUERY)
    # When / Then
    assert SERDE.query_from_json(text) == QUERY
    with pytest.raises(QueryValidationError, match="LeafPartitionQuery"):
        SERDE.leaf_query_from_json(text)


def should_not_read_leaf_queries_without_lookup_by_id() -> None:
    # Given
    serde = QuerySerDe(SCHEMAS_BY_NAME.get)
    leaf = QUERY.leaf_query(
        table_id="abc123",
        sub_query_id="s",
        leaf_partition_id="L",
        partition_region=Region.whole(SCHEMA),
        regions=(),
        files=(),
    )
    # When / Then
    with pytest.raises(QueryValidationError):
        serde.from_json(SERDE.to_json(leaf))
    with pytest.raises(QueryValidationError):
        serde.to_json(leaf)


def should_reject_lone_surrogates_in_raw_string_keys() -> None:
    # Given a raw string key that is not valid Unicode
    region = '{"name":{"min":"\\udc00"},"stringsBase64Encoded":false}'
    text = f'{{"tableName":"my-table","queryId":"q","type":"Query","regions":[{region}]}}'
    # When / Then
    with pytest.raises(QueryValidationError) as e:
        SERDE.from_json(text)
    assert e.value.path == "$.regions[0].name.min"
