"""The emulator's changes to moto (``sleeper.emulator.moto_speedups``): the same answers, less work per request."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("moto")

import boto3  # noqa: E402
from moto import backends, mock_aws  # noqa: E402
from moto.dynamodb.models.dynamo_type import Item  # noqa: E402
from moto.dynamodb.models.table import Table  # noqa: E402

from sleeper.emulator.moto_speedups import keep_moto_service_list, query_by_hash_key  # noqa: E402


def should_list_the_services_once_and_answer_the_same_set_after(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given moto's listing of its package directory, counted
    listings: list[int] = []

    def listing() -> list[str]:
        listings.append(1)
        return ["dynamodb", "s3", "sqs"]

    monkeypatch.setattr(backends, "list_of_moto_modules", listing)
    # When the emulator keeps the list and moto's router asks three times
    keep_moto_service_list()
    keep_moto_service_list()
    answers = [set(backends.list_of_moto_modules()) for _ in range(3)]
    # Then the directory was listed once, and every answer is that listing
    assert len(listings) == 1
    assert answers == [{"dynamodb", "s3", "sqs"}] * 3
    assert "127.0.0.1:5000" not in backends.list_of_moto_modules()


def _pages(client: Any, key: str) -> list[list[str]]:
    pages: list[list[str]] = []
    start: dict[str, Any] | None = None
    while True:
        answer = client.query(
            TableName="log",
            KeyConditionExpression="h = :h AND r > :r",
            ExpressionAttributeValues={":h": {"S": key}, ":r": {"N": "1"}},
            Limit=2,
            **({"ExclusiveStartKey": start} if start else {}),
        )
        pages.append([item["v"]["S"] for item in answer["Items"]])
        start = answer.get("LastEvaluatedKey")
        if not start:
            return pages


def should_answer_a_table_query_from_its_hash_key_alone_with_the_same_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    query_by_hash_key()
    query_by_hash_key()
    # Given moto's item listing, spied on: how many items each call answers
    listed: list[int] = []
    patched = Table.all_items

    def spied(self: Table) -> list[Any]:
        items = patched(self)
        listed.append(len(items))
        return items

    monkeypatch.setattr(Table, "all_items", spied)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-2")
        client.create_table(
            TableName="log",
            KeySchema=[{"AttributeName": "h", "KeyType": "HASH"}, {"AttributeName": "r", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "h", "AttributeType": "S"},
                {"AttributeName": "r", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        # And 5 items of each of three hash keys, put out of range key order
        for r in (5, 1, 4, 2, 3):
            for h in ("a", "b", "c"):
                client.put_item(TableName="log", Item={"h": {"S": h}, "r": {"N": str(r)}, "v": {"S": f"{h}{r}"}})
        # When one key is queried above a range key, in pages of two items
        pages = _pages(client, "b")
        queried = list(listed)
        # Then its items come in range key order, paged as moto pages, having listed only that key's 4 items in the
        # key condition
        assert [v for page in pages for v in page] == ["b2", "b3", "b4", "b5"]
        assert [len(page) for page in pages[:2]] == [2, 2]
        assert queried and set(queried) == {4}
        # And a scan, which is not a query, still lists every item
        assert len(client.scan(TableName="log")["Items"]) == 15
        assert listed[-1] == 15
        # And a key never put answers nothing and adds no key to the table
        missing = client.query(
            TableName="log", KeyConditionExpression="h = :h", ExpressionAttributeValues={":h": {"S": "z"}}
        )
        assert missing["Items"] == []
        assert len(client.scan(TableName="log")["Items"]) == 15


_CONDITIONS = {
    "=": lambda r, a, b: r == a,
    "<": lambda r, a, b: r < a,
    "<=": lambda r, a, b: r <= a,
    ">": lambda r, a, b: r > a,
    ">=": lambda r, a, b: r >= a,
    "BETWEEN": lambda r, a, b: a <= r <= b,
    "begins_with": lambda r, a, b: r.startswith(a),
}


def _key_condition(comparison: str) -> str:
    if comparison == "BETWEEN":
        return "h = :h AND r BETWEEN :a AND :b"
    if comparison == "begins_with":
        return "h = :h AND begins_with(r, :a)"
    return f"h = :h AND r {comparison} :a"


def _string_table(client: Any, name: str) -> None:
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "h", "KeyType": "HASH"}, {"AttributeName": "r", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "h", "AttributeType": "S"},
            {"AttributeName": "r", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


@settings(max_examples=25, deadline=None)
@given(
    keys=st.sets(st.text("abc", min_size=1, max_size=3), min_size=1, max_size=8),
    comparison=st.sampled_from(sorted(_CONDITIONS)),
    bounds=st.lists(st.text("abc", min_size=1, max_size=3), min_size=2, max_size=2).map(sorted),
    limit=st.integers(1, 5),
    forward=st.booleans(),
)
def should_answer_every_key_condition_as_dynamodb_does(
    keys: set[str], comparison: str, bounds: list[str], limit: int, forward: bool
) -> None:
    query_by_hash_key()
    low, high = bounds
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-2")
        _string_table(client, "t")
        # Given items of the queried hash key and of another
        for h in ("q", "other"):
            for r in keys:
                client.put_item(TableName="t", Item={"h": {"S": h}, "r": {"S": r}})
        values = {":h": {"S": "q"}, ":a": {"S": low}}
        if comparison == "BETWEEN":
            values[":b"] = {"S": high}
        # When the key is queried with the condition, page by page
        found: list[str] = []
        start: dict[str, Any] | None = None
        while True:
            answer = client.query(
                TableName="t",
                KeyConditionExpression=_key_condition(comparison),
                ExpressionAttributeValues=values,
                Limit=limit,
                ScanIndexForward=forward,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            assert len(answer["Items"]) <= limit
            assert all(item["h"]["S"] == "q" for item in answer["Items"])
            found += [item["r"]["S"] for item in answer["Items"]]
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        # Then the items in the condition come once each, in range key order (descending if asked)
        expected = sorted((r for r in keys if _CONDITIONS[comparison](r, low, high)), reverse=not forward)
        assert found == expected


def should_weigh_only_the_items_in_a_querys_key_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    query_by_hash_key()
    # Given moto's weighing of items against its page size, counted
    weighed: list[int] = []
    size = Item.size

    def counted(self: Item) -> int:
        weighed.append(1)
        return size(self)

    monkeypatch.setattr(Item, "size", counted)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-2")
        _string_table(client, "log")
        for n in range(200):
            client.put_item(TableName="log", Item={"h": {"S": "t"}, "r": {"S": f"{n:05d}"}, "v": {"S": "x" * 100}})
        weighed.clear()
        # When the two items after the 198th are queried (as a log is read after a transaction number)
        answer = client.query(
            TableName="log",
            KeyConditionExpression="h = :h AND r > :r",
            ExpressionAttributeValues={":h": {"S": "t"}, ":r": {"S": "00197"}},
        )
        # Then they alone come back, and moto weighed those two rather than all 200 (twice each: page size, total)
        assert [item["r"]["S"] for item in answer["Items"]] == ["00198", "00199"]
        assert len(weighed) <= 4


def should_count_a_clusters_fargate_tasks_whose_desired_status_is_running() -> None:
    from sleeper.emulator.aws_services import register_task_definition
    from sleeper.emulator.moto_speedups import count_cluster_tasks

    count_cluster_tasks()
    with mock_aws():
        ecs = boto3.client("ecs", region_name="eu-west-2")
        ecs.create_cluster(clusterName="tasks")
        register_task_definition(ecs, "job", "job", "job:latest")
        # Given three Fargate tasks started
        arns = [
            task["taskArn"]
            for task in ecs.run_task(cluster="tasks", taskDefinition="job", launchType="FARGATE", count=3)["tasks"]
        ]
        # When one is stopped
        ecs.stop_task(cluster="tasks", task=arns[0])
        [cluster] = ecs.describe_clusters(clusters=["tasks"])["clusters"]
        # Then the cluster counts the two others, as ECS counts running and pending tasks
        assert cluster["runningTasksCount"] + cluster["pendingTasksCount"] == 2
