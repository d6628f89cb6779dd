"""The Athena stack: a spill bucket whose objects expire, both connectors from the Lambda image with the registry's
handlers, an Athena LAMBDA data catalog for each, and roles that read the tables and write only spilled blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from sleeper.core import operations

pytestmark = pytest.mark.slow


def _functions(synthesized: Any) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in synthesized.json("Athena")["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
        and "SLEEPER_HANDLER" in resource["Properties"].get("Environment", {}).get("Variables", {})
    }


def should_expire_spilled_blocks(synthesized: Any) -> None:
    # Then the spill bucket is the instance's, private, and its objects expire after the age-off (1 day by default)
    synthesized.template("Athena").has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketName": {"Fn::Join": ["", ["sleeper-example-spill-", {"Ref": "AWS::AccountId"}]]},
            "LifecycleConfiguration": {"Rules": [Match.object_like({"ExpirationInDays": 1, "Status": "Enabled"})]},
            "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
        },
    )


def should_deploy_both_connectors_with_their_registry_handlers(synthesized: Any) -> None:
    # When the functions of the Athena stack are read
    functions = _functions(synthesized)
    # Then there are the two connectors, running the registry's handlers, told where to spill
    by_handler = {p["Environment"]["Variables"]["SLEEPER_HANDLER"]: p for p in functions.values()}
    simple = operations.handler(operations.ATHENA_SIMPLE)
    iterator = operations.handler(operations.ATHENA_ITERATOR_APPLYING)
    assert set(by_handler) == {simple.handler, iterator.handler}
    for spec in (simple, iterator):
        properties = by_handler[spec.handler]
        assert properties["ImageConfig"]["Command"] == [spec.lambda_command]
        assert properties["MemorySize"] == 4096 and properties["Timeout"] == 900
        variables = properties["Environment"]["Variables"]
        assert variables["spill_prefix"] == "athena-federation-spill"
        assert "Ref" in variables["spill_bucket"]


def should_register_a_lambda_data_catalog_per_connector(synthesized: Any) -> None:
    # Given the connector functions
    functions = _functions(synthesized)
    # When the data catalogs are read
    catalogs = {
        r["Properties"]["Name"]: r["Properties"]
        for r in synthesized.json("Athena")["Resources"].values()
        if r["Type"] == "AWS::Athena::DataCatalog"
    }
    # Then each connector has a LAMBDA catalog named as Sleeper names them, calling its function
    assert set(catalogs) == {"exampleSimpleSleeperConnector", "exampleIteratorApplyingSleeperConnector"}
    targets = set()
    for catalog in catalogs.values():
        assert catalog["Type"] == "LAMBDA"
        (logical_id, attribute) = catalog["Parameters"]["function"]["Fn::GetAtt"]
        assert attribute == "Arn" and logical_id in functions
        targets.add(logical_id)
    assert len(targets) == 2


def should_let_the_connectors_read_tables_and_write_only_spilled_blocks(synthesized: Any) -> None:
    # When the connectors' role policies are read
    statements = [
        statement
        for resource in synthesized.json("Athena")["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]
    writes = [s for s in statements if "s3:PutObject" in s["Action"]]
    # Then they write only under the spill prefix of the spill bucket, delete nothing, and read data files
    assert writes and all("sleeper-example-spill-" in str(s["Resource"]) for s in writes)
    assert all("/athena-federation-spill/*" in str(s["Resource"]) for s in writes)
    assert not any("s3:DeleteObject" in s["Action"] for s in statements)
    assert any("s3:GetObject" in s["Action"] and "/*/data/*" in str(s["Resource"]) for s in statements)
    assert not any(
        action.startswith("dynamodb:")
        and action not in ("dynamodb:BatchGetItem", "dynamodb:DescribeTable")
        and action not in ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:ConditionCheckItem")
        for s in statements
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )


def should_let_the_query_policy_invoke_the_connectors_only_through_athena(synthesized: Any) -> None:
    # When the query managed policy's Lambda statements are read
    for resource in synthesized.json("ManagedPolicies")["Resources"].values():
        if resource["Type"] == "AWS::IAM::ManagedPolicy" and resource["Properties"]["ManagedPolicyName"].endswith(
            "-QueryPolicy"
        ):
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
    invokes = [s for s in statements if "lambda:InvokeFunction" in s["Action"]]
    # Then the users it is attached to may invoke both connectors (Athena calls them with the user's credentials),
    # but only when Athena makes the call: a request the user writes never reaches them
    assert len(invokes) == 1 and len(invokes[0]["Resource"]) == 2
    assert invokes[0]["Condition"] == {"ForAnyValue:StringEquals": {"aws:CalledVia": ["athena.amazonaws.com"]}}


def should_open_the_connectors_to_no_one_by_a_resource_policy(synthesized: Any) -> None:
    # When the Lambda permissions (resource policies) of every template are collected
    permissions = synthesized.resources("AWS::Lambda::Permission")
    # Then none is in the Athena stack or names a connector: only identities of the account that IAM allows may
    # invoke them, and the instance allows its users that only through Athena
    assert not any(template == "Athena" for template, _ in permissions)
    assert not any("Connector" in json.dumps(r["Properties"].get("FunctionName")) for _, r in permissions)
