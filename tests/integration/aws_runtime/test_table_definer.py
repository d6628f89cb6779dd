"""The table definer custom resource on a moto instance: a configuration's tables are created with their split
points, kept with their state on a redeploy (their properties updated), added over an existing table only with
sleeper.table.reuse.existing, taken offline or deleted when removed as sleeper.table.retain.after.removal says, and a
failure is answered, never left unanswered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sleeper.core.schema import Schema
from sleeper.lambdas import table_definer
from sleeper.runtime.aws.instance import AwsInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = json.dumps({"rowKeyFields": [{"name": "key", "type": "LongType"}], "valueFields": []})


def _event(request_type: str, tables: list[dict[str, Any]], old: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-response.example/answer",
        "StackId": "stack",
        "RequestId": "request",
        "LogicalResourceId": "Tables",
        "ResourceProperties": {"Tables": json.dumps(tables)},
    }
    if request_type == "Update":  # CloudFormation sends the properties of the deployment before
        event["OldResourceProperties"] = {"Tables": json.dumps(tables if old is None else old)}
    return event


def _define(request_type: str, tables: list[dict[str, Any]], old: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    sent: list[tuple[str, bytes]] = []
    event = _event(request_type, tables, old)
    answer = table_definer.handler(event, None, send=lambda url, body: sent.append((url, body)))
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


def should_refuse_to_add_a_table_over_an_existing_one_unless_told_to_reuse_it(instance: AwsInstance) -> None:
    # Given a table made by hand, not by the configuration
    instance.create_table(
        "by-hand", Schema.from_json(SCHEMA), properties={"sleeper.table.compaction.files.batch.size": "7"}
    )
    table_id = instance.table("by-hand").table_id

    # When a configuration adds a table of that name, first without and then with sleeper.table.reuse.existing
    plain = {"name": "by-hand", "schema": SCHEMA}
    refused = _define("Create", [plain])
    reused = _define("Create", [{**plain, "properties": {"sleeper.table.reuse.existing": "true"}}])

    # Then the first fails the deployment naming the property, and the second takes over the table as it is
    assert refused["Status"] == "FAILED"
    assert "sleeper.table.reuse.existing=true" in refused["Reason"]
    assert reused["Status"] == "SUCCESS", reused["Reason"]
    assert instance.table("by-hand").table_id == table_id


def should_refuse_to_reuse_a_table_that_does_not_exist(instance: AwsInstance) -> None:
    # When a configuration adds a table that asks to take over an existing one, and there is none
    answer = _define(
        "Create", [{"name": "nowhere", "schema": SCHEMA, "properties": {"sleeper.table.reuse.existing": "true"}}]
    )

    # Then the deployment fails and no table is made
    assert answer["Status"] == "FAILED"
    assert "no table of that name exists" in answer["Reason"]
    assert "nowhere" not in {t.table_name for t in instance.tables()}


def should_take_a_removed_table_offline_or_delete_it_as_its_property_says(instance: AwsInstance) -> None:
    # Given two tables of a configuration, one retained after removal (the default) and one not
    kept = {"name": "retained", "schema": SCHEMA}
    dropped = {"name": "dropped", "schema": SCHEMA, "properties": {"sleeper.table.retain.after.removal": "false"}}
    assert _define("Create", [kept, dropped])["Status"] == "SUCCESS"

    # When both are removed from the configuration and it is deployed again
    answer = _define("Update", [], old=[kept, dropped])

    # Then the first is offline with its table kept, and the second is gone
    assert answer["Status"] == "SUCCESS", answer["Reason"]
    assert answer["Reason"] == "dropped deleted, retained taken offline"  # removed tables in order of name
    statuses = {t.table_name: t for t in instance.tables()}
    assert statuses["retained"].online is False
    assert "dropped" not in statuses
