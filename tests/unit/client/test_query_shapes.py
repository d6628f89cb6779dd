"""The request shapes of Sleeper's Python client (sleeper.client.query): the JSON Sleeper's client sends for each way
of building a query, read back by the query queue's own reader (QuerySerDe) as the query meant."""

from __future__ import annotations

import json

import pytest

from sleeper.client import BulkExportQuery, ClientArgumentError, Query, Range, Region
from sleeper.core.query import QuerySerDe
from sleeper.core.range import Range as CoreRange
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.STRING), Field("bytes", PrimitiveType.BYTE_ARRAY)),
    value_fields=(Field("value", PrimitiveType.LONG),),
)


def should_write_the_json_sleepers_client_sends() -> None:
    # Given an exact key region and a region of two ranges
    query = Query(
        "q1",
        "my_table",
        [Region.exact_value("key", "a"), Region.from_field_to_tuple({"key": ("b", "c"), "bytes": (b"\x00", None)})],
    )
    # When it is written, then it is Sleeper's query JSON, byte arrays base64 encoded
    assert json.loads(query.to_json()) == {
        "tableName": "my_table",
        "queryId": "q1",
        "type": "Query",
        "regions": [
            {
                "key": {"min": "a", "minInclusive": True, "max": "a", "maxInclusive": True},
                "stringsBase64Encoded": False,
            },
            {
                "key": {"min": "b", "minInclusive": True, "max": "c", "maxInclusive": False},
                "bytes": {"min": "AA==", "minInclusive": True, "max": None, "maxInclusive": False},
                "stringsBase64Encoded": False,
            },
        ],
    }


def should_be_read_by_the_query_queues_reader_as_meant() -> None:
    # Given the ways Sleeper's client builds regions
    regions = [
        *Region.list_from_field_to_exact_values({"key": ["a", "b"]}),
        Region.from_field_to_exact_value({"key": "c", "bytes": b"\x01"}),
        Region.from_field_to_tuple({"key": ["d", False, "e", True]}),
        Region.from_field_to_dict({"key": {"min": "f", "max": "g"}}, max_inclusive=False),
        Region.from_field_to_tuple({"key": ("aGk=", "aWo=")}, strings_base64_encoded=True),
    ]
    # When the query is read as the query handler reads it
    read = QuerySerDe.for_schema(SCHEMA).query_from_json(Query("q2", "t", regions).to_json())
    # Then each region holds the ranges meant
    key = SCHEMA.field("key")
    ranges = [region.ranges["key"] for region in read.regions]
    assert ranges == [
        CoreRange(field=key, min="a", min_inclusive=True, max="a", max_inclusive=True),
        CoreRange(field=key, min="b", min_inclusive=True, max="b", max_inclusive=True),
        CoreRange(field=key, min="c", min_inclusive=True, max="c", max_inclusive=True),
        CoreRange(field=key, min="d", min_inclusive=False, max="e", max_inclusive=True),
        CoreRange(field=key, min="f", min_inclusive=True, max="g", max_inclusive=False),
        CoreRange(field=key, min="hi", min_inclusive=True, max="ij", max_inclusive=False),
    ]
    assert read.regions[2].ranges["bytes"].min == b"\x01"


def should_give_a_new_id_to_each_query_made_without_one() -> None:
    first, second = (Query(table_name="t", regions=[Region.exact_value("key", "a")]) for _ in range(2))
    assert first.query_id != second.query_id


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Range(max=1), "min must be specified"),
        (lambda: Range(1, "yes"), "min_inclusive must be a bool"),
        (lambda: Range.from_tuple((1, 2, 3)), "tuple of length 2 or 4"),
        (lambda: Range.from_tuple("ab"), "tuple of length 2 or 4"),
        (lambda: Range.from_dict({"min": 1}), "'min' and 'max'"),
        (lambda: Region({}), "at least one range"),
        (lambda: Region({"key": (1, 2)}), "a Range"),
        (lambda: Region.list_from_field_to_exact_values({"key": "abc"}), "must be a list"),
        (lambda: Region.from_field_to_tuple([("key", (1, 2))]), "a dict of row key field"),
        (lambda: Query("q", "t", []), "at least one region"),
        (lambda: Query("q", None, [Region.exact_value("k", 1)]), "table_name must be a string"),
        (lambda: Query(1, "t", [Region.exact_value("k", 1)]), "query_id must be a string"),
        (lambda: Query("q", "t", [{"k": 1}]), "Region objects"),
        (lambda: BulkExportQuery(), "Either table_name or table_id"),
        (lambda: BulkExportQuery(table_name="a", table_id="b"), "Only one of"),
    ],
)
def should_refuse_what_sleepers_client_refuses_and_more(build: object, message: str) -> None:
    with pytest.raises(ClientArgumentError, match=message) as raised:
        build()  # type: ignore[operator]
    assert isinstance(raised.value, ValueError)


def should_write_a_bulk_export_query_as_sleeper_does() -> None:
    assert json.loads(BulkExportQuery("e1", table_name="t").to_json()) == {"exportId": "e1", "tableName": "t"}
    assert json.loads(BulkExportQuery("e2", table_id="abc").to_json()) == {"exportId": "e2", "tableId": "abc"}
