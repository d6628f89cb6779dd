"""The ``filter`` field of Sleeper's query JSON: beyond Sleeper, optional, absent from a query without one."""

from __future__ import annotations

import json

import pytest

from sleeper.core.filter import parse_filter
from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe, QueryValidationError
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema.of(row_keys=[Field("id", PrimitiveType.LONG)], values=[Field("name", PrimitiveType.STRING, True)])
SERDE = QuerySerDe.for_schema(SCHEMA)


def _query(row_filter: str | None) -> Query:
    return Query(
        query_id="q1",
        table_name="t",
        regions=(Region.whole(SCHEMA),),
        processing=QueryProcessingConfig(filter=None if row_filter is None else parse_filter(row_filter, SCHEMA)),
    )


def should_write_and_read_a_query_filter() -> None:
    query = _query("id > 3 and name starts with 'a'")
    data = SERDE.to_dict(query)
    assert data["filter"] == "id > 3 and name starts with 'a'"
    assert SERDE.from_json(json.dumps(data)) == query


def should_keep_sleeper_json_for_a_query_without_a_filter() -> None:
    assert "filter" not in SERDE.to_dict(_query(None))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nope = 1", "no column 'nope'"),
        ("id = 'x'", "compare it with an integer"),
        ("id >", "expected a value"),
        (5, "must be a string"),
    ],
)
def should_refuse_a_bad_filter_with_its_path(value: object, message: str) -> None:
    data = SERDE.to_dict(_query(None))
    data["filter"] = value
    with pytest.raises(QueryValidationError) as caught:
        SERDE.from_dict(data)
    assert caught.value.path == "$.filter"
    assert caught.value.query_id == "q1"
    assert message in str(caught.value)
