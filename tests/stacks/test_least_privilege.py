"""No identity policy grants wildcard actions, and each function's role reaches only its own queues."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.reliability_report import Reliability

pytestmark = pytest.mark.slow

CDK_GENERATED_WILDCARDS = {"ecs:Submit*"}
"""ECS agent permissions CDK adds to the compaction EC2 hosts' role (acknowledged in sleeper/cdk/nag.py)."""


def _statements(synthesized: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for template_name in synthesized.templates:
        for logical_id, resource in synthesized.json(template_name).get("Resources", {}).items():
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


def should_grant_no_wildcard_actions(synthesized: Any, reliability: Reliability) -> None:
    # When
    wildcards = [
        (where, action)
        for where, statement in _statements(synthesized)
        for action in _actions(statement)
        if "*" in action and action not in CDK_GENERATED_WILDCARDS
    ]

    # Then
    statements = list(_statements(synthesized))
    reliability.record(
        "G2",
        case="no '*' or 'service:*' action in any identity policy",
        statements=len(statements),
        actions=sum(len(_actions(s)) for _, s in statements),
        wildcard_actions=len(wildcards),
        cdk_generated_wildcards_allowed=sorted(
            {a for _, s in statements for a in _actions(s) if a in CDK_GENERATED_WILDCARDS}
        ),
    )
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


def should_let_the_garbage_collector_delete_only_data_files(synthesized: Any, reliability: Reliability) -> None:
    # Given
    statements = _policy_of_role(synthesized.json("GarbageCollector"), "GarbageCollectorHandlerRole")

    # When
    deletes = [s for s in statements if "s3:DeleteObject" in _actions(s)]

    # Then
    reliability.record(
        "G2",
        case="the garbage collector's deletes",
        delete_statements=len(deletes),
        delete_statements_outside_data_files=sum("/*/data/*" not in str(s["Resource"]) for s in deletes),
        sends_to_compaction_job_queue=sum(
            "sqs:SendMessage" in _actions(s) and "CompactionJob" in str(s["Resource"]) for s in statements
        ),
    )
    assert len(deletes) == 1
    assert str(deletes[0]["Resource"]).endswith("/*/data/*']}") or "/*/data/*" in str(deletes[0]["Resource"])
    assert not any("sqs:SendMessage" in _actions(s) and "CompactionJob" in str(s["Resource"]) for s in statements)


def should_let_the_query_executor_send_only_to_its_own_queues(synthesized: Any, reliability: Reliability) -> None:
    # Given
    statements = _policy_of_role(synthesized.json("Query"), "QueryExecutorRole")

    # When
    sends = [s for s in statements if "sqs:SendMessage" in _actions(s)]

    # Then
    targets = " ".join(str(s["Resource"]) for s in sends)
    reliability.record(
        "G2",
        case="the query executor sends only to its own queues",
        send_statements=len(sends),
        sends_to_other_operations=sum(name in targets for name in ("Compaction", "Ingest")),
    )
    assert "LeafQueue" in targets
    assert "ResultsQueue" in targets
    assert "Compaction" not in targets and "Ingest" not in targets


def _principals(statement: dict[str, Any]) -> list[tuple[str, Any]]:
    principal = statement.get("Principal", {})
    if principal == "*":
        return [("AWS", "*")]
    return [(kind, value) for kind, values in principal.items() for value in _listed(values)]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _made_by_the_instance(kind: str, who: Any) -> bool:
    """Whether a principal is one the instance itself creates: a role's ARN taken from a role resource (CDK's EKS
    providers assuming the cluster creation role) or the EKS cluster's own OpenID Connect provider (service account
    roles), never an account, an ARN written out, or a wildcard."""
    if kind == "AWS" and isinstance(who, dict) and "Fn::GetAtt" in who:
        _, attribute = who["Fn::GetAtt"]
        return bool(attribute == "Arn" or re.fullmatch(r"Outputs\.\w*Role[0-9A-F]*Arn", attribute))
    return kind == "Federated" and isinstance(who, dict) and "OpenIdConnectProvider" in str(who.get("Ref", ""))


def should_let_no_role_be_assumed_by_an_account_or_anyone(synthesized: Any, reliability: Reliability) -> None:
    # Given every role of the example instance and who may assume it
    trusts = [
        (f"{template_name}/{logical_id}", kind, who)
        for template_name in synthesized.templates
        for logical_id, resource in synthesized.json(template_name).get("Resources", {}).items()
        if resource["Type"] == "AWS::IAM::Role"
        for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        for kind, who in _principals(statement)
    ]

    # When the principals that are neither AWS services nor made by the instance are collected (an account root, a
    # wildcard, an ARN written out)
    internal = [(role, kind) for role, kind, who in trusts if kind != "Service" and _made_by_the_instance(kind, who)]
    outside = [
        (role, kind, who) for role, kind, who in trusts if kind != "Service" and not _made_by_the_instance(kind, who)
    ]

    # Then every role is assumed by an AWS service or by the instance's own roles: it makes no admin or per-table
    # role for people (its managed policies are attached to the user's own roles), so none trusts AccountRootPrincipal
    reliability.record(
        "G6",
        case="who may assume the instance's roles",
        roles=len({role for role, _, _ in trusts}),
        trusted_services=sorted({who for _, kind, who in trusts if kind == "Service"}),
        roles_assumable_by_instance_roles_or_oidc=len({role for role, _ in internal}),
        roles_assumable_by_other_principals=len({role for role, _, _ in outside}),
        roles_assumable_by_account_root=len({role for role, _, who in trusts if ":root" in str(who) or who == "*"}),
    )
    assert outside == []
    assert not any(":root" in str(who) or who == "*" for _, _, who in trusts)
