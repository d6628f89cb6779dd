"""The DynamoDB paging helper (sleeper.adapters.aws.dynamodb_paging) on moto: every page read, lazily, errors typed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from moto import mock_aws

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client
from sleeper.adapters.aws.dynamodb_paging import query_items, scan_items
from sleeper.adapters.aws.exceptions import AwsError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SETTINGS = AwsSettings("eu-west-2", access_key_id="testing", secret_access_key="testing")
TABLE = "paging"


@pytest.fixture
def client() -> Iterator[DynamoDBClient]:
    with mock_aws():
        client = dynamodb_client(SETTINGS)
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "h", "KeyType": "HASH"}, {"AttributeName": "r", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "h", "AttributeType": "S"},
                {"AttributeName": "r", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        for index in range(7):
            client.put_item(TableName=TABLE, Item={"h": {"S": "a"}, "r": {"S": f"{index:02d}"}})
        client.put_item(TableName=TABLE, Item={"h": {"S": "b"}, "r": {"S": "00"}})
        yield client


def _counting_calls(client: DynamoDBClient, operation: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    original = getattr(client, operation)

    def counted(**request: Any) -> Any:
        calls.append(request)
        return original(**request)

    monkeypatch.setattr(client, operation, counted)
    return calls


def should_read_every_page_of_a_query_in_key_order(client: DynamoDBClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a query of 7 items read 3 to a page
    calls = _counting_calls(client, "query", monkeypatch)
    request: Any = {
        "TableName": TABLE,
        "KeyConditionExpression": "h = :h",
        "ExpressionAttributeValues": {":h": {"S": "a"}},
        "ConsistentRead": True,
        "ScanIndexForward": False,
    }
    # When every item is read
    keys = [item["r"]["S"] for item in query_items(client, request, page_size=3)]
    # Then every item comes once, in the order asked, over pages that kept the request's consistency and limit
    assert keys == ["06", "05", "04", "03", "02", "01", "00"]
    assert len(calls) >= 3
    assert all(call["ConsistentRead"] is True and call["Limit"] == 3 for call in calls)
    assert "ExclusiveStartKey" not in calls[0]
    assert all("ExclusiveStartKey" in call for call in calls[1:])


def should_read_no_further_page_when_the_caller_stops(client: DynamoDBClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a query read 2 to a page
    calls = _counting_calls(client, "query", monkeypatch)
    request: Any = {
        "TableName": TABLE,
        "KeyConditionExpression": "h = :h",
        "ExpressionAttributeValues": {":h": {"S": "a"}},
    }
    items = query_items(client, request, page_size=2)
    # When the caller takes 3 items and stops
    taken = [next(items)["r"]["S"] for _ in range(3)]
    # Then only the two pages holding them were read
    assert taken == ["00", "01", "02"]
    assert len(calls) == 2


def should_scan_every_page_with_the_projection_and_filter(client: DynamoDBClient) -> None:
    # Given a scan with a filter and a projection, read a page at a time
    request: Any = {
        "TableName": TABLE,
        "ConsistentRead": True,
        "FilterExpression": "h = :h",
        "ExpressionAttributeValues": {":h": {"S": "a"}},
        "ProjectionExpression": "r",
    }
    # When every item is read
    items = list(scan_items(client, request))
    # Then only the filtered items come, with only the projected attribute
    assert sorted(item["r"]["S"] for item in items) == [f"{index:02d}" for index in range(7)]
    assert all(set(item) == {"r"} for item in items)


def should_raise_a_typed_error_naming_the_operation(client: DynamoDBClient) -> None:
    # Given a query of a table that does not exist
    request: Any = {
        "TableName": "missing",
        "KeyConditionExpression": "h = :h",
        "ExpressionAttributeValues": {":h": {"S": "a"}},
    }
    # When it is read, Then the error is an AwsError naming the operation given, or Query/Scan and the table
    with pytest.raises(AwsError, match="Query missing"):
        list(query_items(client, request))
    with pytest.raises(AwsError, match="Scan missing"):
        list(scan_items(client, {"TableName": "missing"}))
    with pytest.raises(AwsError, match="reading the log"):
        list(query_items(client, request, operation="reading the log"))
