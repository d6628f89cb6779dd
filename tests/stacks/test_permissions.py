"""What each role may do to the table data and the state store: ingest never deletes data, queries never write it (or
the state store), and of all the instance's functions and tasks only the garbage collector deletes data files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.reliability_report import Reliability

pytestmark = pytest.mark.slow

DATA_BUCKET = re.compile(r"^arn:\$\{P\}:s3:::sleeper-example-table-data-\$\{A\}(/.*)?$")
DELETES = {"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:*"}
WRITES = {"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:*"}
TABLE_WRITES = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:TransactWriteItems",
    "dynamodb:*",
}
STATE_STORE_TABLES = ("StateStoreFilesLog", "StateStorePartitionsLog", "StateStoreLatestSnapshots", "StateStoreAll")


def _text(value: Any) -> str:
    """A resource as text: joins flattened, the partition and account as ${P} and ${A}, other references by name."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return {"AWS::Partition": "${P}", "AWS::AccountId": "${A}", "AWS::Region": "${R}"}.get(
            value["Ref"], f"${{{value['Ref']}}}"
        )
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"${{{'.'.join(value['Fn::GetAtt'])}}}"
    return str(value)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _role_statements(synthesized: Any) -> Iterator[tuple[str, str, set[str], list[str]]]:
    """(template, role logical id, actions, resources) of every statement of a policy attached to a role."""
    for template_name in synthesized.templates:
        for resource in synthesized.json(template_name).get("Resources", {}).values():
            if resource["Type"] != "AWS::IAM::Policy":
                continue
            roles = [r["Ref"] for r in resource["Properties"].get("Roles", []) if "Ref" in r]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = set(_listed(statement["Action"]))
                targets = [_text(r) for r in _listed(statement["Resource"])]
                for role in roles:
                    yield template_name, role, actions, targets


def _managed_policy(synthesized: Any, name: str) -> list[tuple[set[str], list[str]]]:
    for resource in synthesized.json("ManagedPolicies")["Resources"].values():
        if resource["Type"] == "AWS::IAM::ManagedPolicy" and resource["Properties"]["ManagedPolicyName"].endswith(
            f"-{name}"
        ):
            return [
                (set(_listed(s["Action"])), [_text(r) for r in _listed(s["Resource"])])
                for s in resource["Properties"]["PolicyDocument"]["Statement"]
            ]
    raise AssertionError(f"no managed policy {name}")


def _on_data(resources: list[str], *, files_only: bool = False) -> list[str]:
    """The resources in the data bucket (``files_only``: those that cover data files under ``<table>/data/``)."""
    found = [r for r in resources if DATA_BUCKET.match(r)]
    if files_only:
        found = [r for r in found if r.endswith("/*") and ("/data/" in r or r.count("/") == 1)]
    return found


def should_let_no_ingest_role_or_policy_delete_table_data(synthesized: Any) -> None:
    # Given the ingest managed policy and the ingest task's role
    statements = _managed_policy(synthesized, "IngestPolicy")
    statements += [(a, r) for t, role, a, r in _role_statements(synthesized) if t == "Ingest"]
    # When the deletes on the data bucket are collected
    deletes = [r for actions, resources in statements if actions & DELETES for r in _on_data(resources)]
    # Then there are none, though ingest writes there
    assert deletes == []
    assert any(actions & {"s3:PutObject"} and _on_data(resources) for actions, resources in statements)


def should_let_no_query_role_or_policy_write_table_data_or_the_state_store(synthesized: Any) -> None:
    # Given the query and direct query managed policies and the query functions' roles
    statements = _managed_policy(synthesized, "QueryPolicy") + _managed_policy(synthesized, "DirectQueryPolicy")
    statements += [(a, r) for t, role, a, r in _role_statements(synthesized) if t == "Query"]
    # When writes to the data bucket and to the state store tables are collected
    data_writes = [r for actions, resources in statements if actions & WRITES for r in _on_data(resources)]
    log_writes = [
        r
        for actions, resources in statements
        if actions & TABLE_WRITES
        for r in resources
        if any(name in r for name in STATE_STORE_TABLES) or "table/sleeper-example-state-" in r
    ]
    # Then there are none, though the queries read the data and write their results elsewhere
    assert data_writes == []
    assert log_writes == []
    assert any(actions & {"s3:GetObject"} and _on_data(resources) for actions, resources in statements)
    assert any(actions & {"s3:PutObject"} and "query-results" in " ".join(res) for actions, res in statements)


def should_let_only_the_garbage_collector_delete_data_files(synthesized: Any, reliability: Reliability) -> None:
    # When every role allowed to delete data files in the data bucket is found
    deleters = {
        (template, role)
        for template, role, actions, resources in _role_statements(synthesized)
        if actions & DELETES and _on_data(resources, files_only=True)
    }
    reliability.record(
        "G2",
        case="roles that may delete data files in the data bucket",
        roles=len({(t, r) for t, r, _, _ in _role_statements(synthesized)}),
        roles_deleting_data_files=len(deleters),
        other_roles_deleting_data_files=sum(not r.startswith("GarbageCollectorHandlerRole") for _, r in deleters),
    )
    # Then it is the garbage collector's alone
    assert len(deleters) == 1
    ((template, role),) = deleters
    assert template == "GarbageCollector" and role.startswith("GarbageCollectorHandlerRole")


def should_let_the_admin_policy_delete_only_what_a_table_holds(synthesized: Any) -> None:
    # Given the admin managed policy
    statements = _managed_policy(synthesized, "AdminPolicy")
    # When the deletes on the data bucket are collected
    deletes = [r for actions, resources in statements if actions & DELETES for r in _on_data(resources)]
    # Then they cover the tables' data, state store objects, compaction batches and directory markers, not the
    # whole bucket (the ingest sources under for_ingest/, or anything else in its root)
    prefix = "arn:${P}:s3:::sleeper-example-table-data-${A}/"
    assert sorted(r.removeprefix(prefix) for r in deletes) == [
        "*/",
        "*/compactions/*",
        "*/data/*",
        "*/iceberg/*",
        "*/statestore/*",
    ]
