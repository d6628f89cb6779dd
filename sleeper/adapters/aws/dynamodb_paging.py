"""Every paged DynamoDB read (Query and Scan) goes through boto3's own paginators, with errors translated.

Usage::

    for item in query_items(client, {"TableName": name, "KeyConditionExpression": ..., "ConsistentRead": True}):
        ...

The request is the Query or Scan request without ``ExclusiveStartKey`` or ``Limit``: the paginator follows
``LastEvaluatedKey`` itself, and ``page_size`` sets ``Limit`` on every page. Items come lazily, a page at a time, so
a caller that stops iterating early reads no further pages. A DynamoDB or connection error is raised as
``sleeper.adapters.aws.exceptions.AwsError`` naming the operation (``"Query <table>"`` unless ``operation`` is given).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from sleeper.adapters.aws.exceptions import translated

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        QueryInputPaginateTypeDef,
        ScanInputPaginateTypeDef,
    )

Item = dict[str, "AttributeValueTypeDef"]
"""One DynamoDB item as the low-level client returns it."""


def query_items(
    client: DynamoDBClient,
    request: QueryInputPaginateTypeDef,
    *,
    page_size: int | None = None,
    operation: str | None = None,
) -> Iterator[Item]:
    """The items a Query returns, across every page, in the order DynamoDB returns them.

    Args:
        client: The DynamoDB client.
        request: The Query request (consistency, index, key condition, filter, projection, direction).
        page_size: At most this many items per page (``Limit``); None lets DynamoDB fill pages up to 1 MB.
        operation: What a translated error names; ``"Query <table>"`` by default.

    Raises:
        AwsError: If DynamoDB fails, when the page that fails is read.
    """
    pages = client.get_paginator("query").paginate(**_with_page_size(request, page_size))
    return _items(pages, operation or f"Query {request['TableName']}")


def query_key(
    client: DynamoDBClient,
    table: str,
    attribute: str,
    value: str,
    *,
    consistent: bool = True,
    index: str | None = None,
    operation: str | None = None,
) -> Iterator[Item]:
    """The items whose hash key ``attribute`` is the string ``value``, in range key order (see ``query_items``).

    Args:
        client: The DynamoDB client.
        table: The table.
        attribute: The hash key of the table, or of ``index``.
        value: The key's value.
        consistent: Whether the read is strongly consistent (a global secondary index never is).
        index: A global secondary index to query instead of the table.
        operation: What a translated error names; ``"Query <table>"`` by default.
    """
    request: QueryInputPaginateTypeDef = {
        "TableName": table,
        "KeyConditionExpression": "#key = :value",
        "ExpressionAttributeNames": {"#key": attribute},
        "ExpressionAttributeValues": {":value": {"S": value}},
    }
    if index is None:
        request["ConsistentRead"] = consistent
    else:
        request["IndexName"] = index
    return query_items(client, request, operation=operation)


def scan_items(
    client: DynamoDBClient, request: ScanInputPaginateTypeDef, *, operation: str | None = None
) -> Iterator[Item]:
    """The items a Scan returns, across every page (see ``query_items``; ``"Scan <table>"`` names errors)."""
    pages = client.get_paginator("scan").paginate(**request)
    return _items(pages, operation or f"Scan {request['TableName']}")


def _with_page_size(request: Any, page_size: int | None) -> Any:
    if page_size is None:
        return request
    return {**request, "PaginationConfig": {**request.get("PaginationConfig", {}), "PageSize": page_size}}


def _items(pages: Iterable[Mapping[str, Any]], operation: str) -> Iterator[Item]:
    with translated(operation):
        for page in pages:
            yield from page.get("Items", [])
