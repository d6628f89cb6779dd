"""The emulator's changes to moto (``sleeper.emulator.moto_speedups``): the same answers, less work per request."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("moto")

import boto3  # noqa: E402
from moto import backends, mock_aws  # noqa: E402
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
        # Then its items come in range key order, paged as moto pages, having listed only that key's 5 items
        assert [v for page in pages for v in page] == ["b2", "b3", "b4", "b5"]
        assert [len(page) for page in pages[:2]] == [2, 2]
        assert queried and set(queried) == {5}
        # And a scan, which is not a query, still lists every item
        assert len(client.scan(TableName="log")["Items"]) == 15
        assert listed[-1] == 15
        # And a key never put answers nothing and adds no key to the table
        missing = client.query(
            TableName="log", KeyConditionExpression="h = :h", ExpressionAttributeValues={":h": {"S": "z"}}
        )
        assert missing["Items"] == []
        assert len(client.scan(TableName="log")["Items"]) == 15


def should_count_a_clusters_fargate_tasks_whose_desired_status_is_running() -> None:
    from sleeper.adapters.aws.emulated import register_task_definition
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
