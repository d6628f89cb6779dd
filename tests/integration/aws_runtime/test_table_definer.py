"""The table definer custom resource on a moto instance: a configuration's tables are created with their split
points, kept with their state on a redeploy (their properties updated), and a failure is answered, never left
unanswered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambdas import table_definer
from sleeper.runtime.aws.instance import AwsInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = json.dumps({"rowKeyFields": [{"name": "key", "type": "LongType"}], "valueFields": []})


def _event(request_type: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-response.example/answer",
        "StackId": "stack",
        "RequestId": "request",
        "LogicalResourceId": "Tables",
        "ResourceProperties": {"Tables": json.dumps(tables)},
    }


def _define(request_type: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    sent: list[tuple[str, bytes]] = []
    answer = table_definer.handler(_event(request_type, tables), None, send=lambda url, body: sent.append((url, body)))
    assert [json.loads(body) for _, body in sent] == [answer]
    return answer


def should_create_the_tables_then_keep_them_on_a_redeploy(instance: AwsInstance) -> None:
    # Given a table of the configuration, created at the first deployment
    table = {"name": "defined", "schema": SCHEMA, "properties": {}, "splitPoints": ["100", "200"]}
    created = _define("Create", [table])
    assert created["Status"] == "SUCCESS", created["Reason"]
    table_id = instance.table("defined").table_id
    partitions = {p.id for p in instance.table("defined").partitions()}
    assert len(instance.table("defined").leaf_partitions()) == 3

    # When the configuration changes a property and is deployed again
    table["properties"] = {"sleeper.table.parquet.compression.codec": "snappy"}
    updated = _define("Update", [table])

    # Then the same table keeps its state (the same partition tree, not made again) and takes the property
    assert updated["Status"] == "SUCCESS", updated["Reason"]
    assert updated["Reason"] == "defined updated"
    again = instance.table_by_id(table_id)
    assert again.properties.get("sleeper.table.parquet.compression.codec") == "snappy"
    assert {p.id for p in again.partitions()} == partitions
    assert _define("Delete", [table])["Status"] == "SUCCESS"
    assert instance.table("defined").table_id == table_id


def should_fail_the_deployment_when_a_schema_changes(instance: AwsInstance) -> None:
    # Given a table
    assert _define("Create", [{"name": "fixed", "schema": SCHEMA}])["Status"] == "SUCCESS"
    other = json.dumps({"rowKeyFields": [{"name": "key", "type": "StringType"}], "valueFields": []})

    # When its schema is changed in the configuration
    answer = _define("Update", [{"name": "fixed", "schema": other}])

    # Then CloudFormation is told why
    assert answer["Status"] == "FAILED"
    assert "'fixed' exists with another schema" in answer["Reason"]


def should_answer_a_malformed_request() -> None:
    # When
    sent: list[bytes] = []
    event = _event("Create", [])
    event["ResourceProperties"]["Tables"] = "{not json"
    answer = table_definer.handler(event, None, send=lambda url, body: sent.append(body))

    # Then
    assert answer["Status"] == "FAILED" and "not JSON" in answer["Reason"]
    assert len(sent) == 1
