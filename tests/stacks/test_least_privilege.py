"""No identity policy grants wildcard actions, and each function's role reaches only its own queues."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CDK_GENERATED_WILDCARDS = {"ecs:Submit*"}
"""ECS agent permissions CDK adds to the compaction EC2 hosts' role (acknowledged in stacks/nag.py)."""


def _statements(synthesized: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for template_name, template in synthesized.templates.items():
        for logical_id, resource in template.to_json().get("Resources", {}).items():
            kind = resource["Type"]
            documents = []
            if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                documents.append(resource["Properties"]["PolicyDocument"])
            elif kind == "AWS::IAM::Role":
                documents += [p["PolicyDocument"] for p in resource["Properties"].get("Policies", [])]
            for document in documents:
                for statement in document["Statement"]:
                    yield f"{template_name}/{logical_id}", statement


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement.get("Action", [])
    return [actions] if isinstance(actions, str) else list(actions)


def should_grant_no_wildcard_actions(synthesized: Any) -> None:
    # When
    wildcards = [
        (where, action)
        for where, statement in _statements(synthesized)
        for action in _actions(statement)
        if "*" in action and action not in CDK_GENERATED_WILDCARDS
    ]

    # Then
    assert wildcards == []


def should_only_allow(synthesized: Any) -> None:
    # Then
    assert all(statement["Effect"] == "Allow" for _, statement in _statements(synthesized))
    assert sum(1 for _ in _statements(synthesized)) > 100


def _policy_of_role(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    statements = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        roles = resource["Properties"]["Roles"]
        if any(r.get("Ref", "").startswith(role_prefix) for r in roles):
            statements += resource["Properties"]["PolicyDocument"]["Statement"]
    return statements


def should_let_the_garbage_collector_delete_only_data_files(synthesized: Any) -> None:
    # Given
    statements = _policy_of_role(synthesized.json("GarbageCollector"), "GarbageCollectorHandlerRole")

    # When
    deletes = [s for s in statements if "s3:DeleteObject" in _actions(s)]

    # Then
    assert len(deletes) == 1
    assert str(deletes[0]["Resource"]).endswith("/*/data/*']}") or "/*/data/*" in str(deletes[0]["Resource"])
    assert not any("sqs:SendMessage" in _actions(s) and "CompactionJob" in str(s["Resource"]) for s in statements)


def should_let_the_query_executor_send_only_to_its_own_queues(synthesized: Any) -> None:
    # Given
    statements = _policy_of_role(synthesized.json("Query"), "QueryExecutorRole")

    # When
    sends = [s for s in statements if "sqs:SendMessage" in _actions(s)]

    # Then
    targets = " ".join(str(s["Resource"]) for s in sends)
    assert "LeafQueue" in targets
    assert "ResultsQueue" in targets
    assert "Compaction" not in targets and "Ingest" not in targets
