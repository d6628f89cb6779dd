"""The REST API stack (Sleeper's ``RestApiStack``): an HTTP API named after its function with IAM authorisation on
every route, the routes the handler serves on the registry's ``rest_api`` handler, the endpoint in
``sleeper.rest.api.url``, and a function that writes only table properties, the table index and table state."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sleeper.core import operations
from sleeper.core.properties import instance_cdk as cdkp

pytestmark = pytest.mark.slow


def _resources(synthesized: Any, kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in synthesized.json("RestApi")["Resources"].items()
        if resource["Type"] == kind
    }


def should_authorise_every_route_with_iam(synthesized: Any) -> None:
    # When the API and its routes are read
    (api,) = _resources(synthesized, "AWS::ApiGatewayV2::Api").values()
    routes = _resources(synthesized, "AWS::ApiGatewayV2::Route").values()
    # Then it is an HTTP API named after its function, every route IAM-authorised
    assert api["ProtocolType"] == "HTTP" and api["Name"] == "sleeper-example-rest-api-handler"
    assert {r["RouteKey"] for r in routes} == {
        "POST /sleeper/tables",
        "GET /sleeper/tables",
        "GET /sleeper/tables/{name}",
    }
    assert all(r["AuthorizationType"] == "AWS_IAM" for r in routes)
    (stage,) = _resources(synthesized, "AWS::ApiGatewayV2::Stage").values()
    assert "AccessLogSettings" in stage


def should_run_the_registry_handler_and_record_the_url(synthesized: Any) -> None:
    spec = operations.handler(operations.REST_API)
    (function,) = _resources(synthesized, "AWS::Lambda::Function").values()
    assert function["Environment"]["Variables"]["SLEEPER_HANDLER"] == spec.handler
    assert function["FunctionName"] == "sleeper-example-rest-api-handler"
    assert (function["MemorySize"], function["Timeout"]) == (1024, 29)
    url = synthesized.stack.core.cdk_properties[cdkp.REST_API_URL.name]
    assert "ApiEndpoint" in json.dumps(synthesized.stack.resolve(url))


def should_let_the_function_write_only_table_definitions_and_state(synthesized: Any) -> None:
    # When the function's grants are read
    statements = [
        s for r in _resources(synthesized, "AWS::IAM::Policy").values() for s in r["PolicyDocument"]["Statement"]
    ]
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    # Then it may write the config bucket's tables/ objects, the index and the logs, and send commits; no deletes of
    # data, no queues but the committer's, nothing else
    deletes = [s for s in statements if "s3:DeleteObject" in json.dumps(s["Action"])]
    assert deletes and all("tables/*" in json.dumps(s["Resource"]) for s in deletes)
    assert "dynamodb:PutItem" in actions and "s3:PutObject" in actions
    assert not {a for a in actions if a.startswith(("ecs:", "lambda:", "iam:", "execute-api:"))}
