"""The WebSocket query stack (Sleeper's ``WebSocketQueryStack``): a WebSocket API with an IAM-authorised $connect and
the $default route on the registry's handler, the ``live`` stage with its URL in the instance properties, and
``execute-api`` grants on this API only: the three query functions may post to its connections, the query policy
may connect."""

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
        for logical_id, resource in synthesized.json("WebSocketQuery")["Resources"].items()
        if resource["Type"] == kind
    }


def _execute_api_statements(synthesized: Any) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for template_name in synthesized.templates:
        for logical_id, resource in synthesized.json(template_name).get("Resources", {}).items():
            if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                continue
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                if any(a.startswith("execute-api:") for a in actions):
                    found.append((f"{template_name}/{logical_id}", statement))
    return found


def should_deploy_a_websocket_api_with_an_iam_authorised_connect(synthesized: Any) -> None:
    # When the API and its routes are read
    (api,) = _resources(synthesized, "AWS::ApiGatewayV2::Api").values()
    routes = {r["RouteKey"]: r for r in _resources(synthesized, "AWS::ApiGatewayV2::Route").values()}
    # Then it is Sleeper's WebSocket API: $connect needs SigV4, queries come on $default, both to the one integration
    assert api["ProtocolType"] == "WEBSOCKET" and api["Name"] == "sleeper-example-query-websocket-api"
    assert set(routes) == {"$connect", "$default"}
    assert routes["$connect"]["AuthorizationType"] == "AWS_IAM"
    assert routes["$connect"]["Target"] == routes["$default"]["Target"]
    (stage,) = _resources(synthesized, "AWS::ApiGatewayV2::Stage").values()
    assert stage["StageName"] == "live" and stage["AutoDeploy"] is True and "AccessLogSettings" in stage


def should_run_the_registry_handler_and_record_the_url(synthesized: Any) -> None:
    # When the stack's function is read
    spec = operations.handler(operations.WEB_SOCKET_QUERY)
    (function,) = _resources(synthesized, "AWS::Lambda::Function").values()
    # Then it runs the registry's handler with Sleeper's name, memory and timeout
    assert function["Environment"]["Variables"]["SLEEPER_HANDLER"] == spec.handler
    assert function["FunctionName"] == "sleeper-example-query-websocket-handler"
    assert (function["MemorySize"], function["Timeout"]) == (1024, 29)
    # And API Gateway may invoke it, from this API only
    (permission,) = _resources(synthesized, "AWS::Lambda::Permission").values()
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert "execute-api" in json.dumps(permission["SourceArn"])
    # And the stage's wss URL is recorded for the clients
    url = synthesized.stack.core.cdk_properties[cdkp.QUERY_WEBSOCKET_API_URL.name]
    assert "wss://" in json.dumps(synthesized.stack.resolve(url))


def should_grant_execute_api_on_this_api_only(synthesized: Any) -> None:
    # When every statement granting execute-api actions is read
    statements = _execute_api_statements(synthesized)
    # Then the three query functions may post to connections, the query policy may connect, nothing else
    posting = [where for where, s in statements if s["Action"] == "execute-api:ManageConnections"]
    connecting = [where for where, s in statements if s["Action"] == "execute-api:Invoke"]
    assert len(posting) == 3 and len(connecting) == 1 and len(statements) == 4
    assert "ManagedPolicies" in connecting[0]
    assert {w.split("/")[0] for w in posting} == {"WebSocketQuery"}
    for _, statement in statements:
        (parts,) = statement["Resource"]["Fn::Join"][1:]
        text = "".join(p if isinstance(p, str) else "<ref>" for p in parts)
        assert text.startswith("arn:<ref>:execute-api:<ref>:<ref>:<ref>/")
        wanted = (
            "/live/POST/@connections/*" if statement["Action"] == "execute-api:ManageConnections" else "/live/$connect"
        )
        assert text.endswith(wanted)


def should_attach_the_query_functions_connection_grants_to_their_roles(synthesized: Any) -> None:
    # When the policies the stack attaches to other roles are read
    policies = _resources(synthesized, "AWS::IAM::Policy")
    attached = [p for p in policies.values() if "Parameters" in json.dumps(p["Roles"]) or "Ref" in json.dumps(p)]
    # Then the query executor's and leaf query's roles each get one, granting only ManageConnections
    external = [p for p in attached if all("referenceto" in json.dumps(r).lower() for r in p["Roles"])]
    assert len(external) == 2
    for policy in external:
        (statement,) = policy["PolicyDocument"]["Statement"]
        assert statement["Action"] == "execute-api:ManageConnections"
