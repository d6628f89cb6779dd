"""Walks the handler registry through the synthesized example instance: every handler is deployed running exactly its
``module:function``, its environment resolves in ``runtime.aws.instance`` to the instance's config bucket, it is invoked
by the queue, schedule or stream the registry names, and every name is the one :mod:`sleeper.core.naming` gives, which
the emulated instance and the adapters use too."""

from __future__ import annotations

from typing import Any

import pytest

from sleeper.core import naming, operations
from sleeper.core.naming import InstanceNames, StateStoreTableNames, config_bucket_name
from sleeper.core.operations import HandlerSpec, TriggerKind
from sleeper.runtime.aws.instance import AwsRuntimeConfig

pytestmark = pytest.mark.slow


INSTANCE_ID = "example"
ACCOUNT = "123456789012"
HANDLER_ENV = "SLEEPER_HANDLER"


def _resolve(value: Any) -> Any:
    """A template value with the account pseudo-parameter and joins resolved (other references stay as they are)."""
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] == "AWS::AccountId":
        return ACCOUNT
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        resolved = [_resolve(p) for p in parts]
        if all(isinstance(p, str) for p in resolved):
            return separator.join(resolved)
    return value


def _functions(synthesized: Any, spec: HandlerSpec) -> list[tuple[str, str, dict[str, Any]]]:
    """(template, logical id, properties) of every function deployed for a handler."""
    found = []
    for name in synthesized.templates:
        for logical_id, resource in synthesized.json(name).get("Resources", {}).items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            if variables.get(HANDLER_ENV) == spec.handler:
                found.append((name, logical_id, resource["Properties"]))
    return found


def _resources(synthesized: Any, template: str, kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in synthesized.json(template).get("Resources", {}).items()
        if resource["Type"] == kind
    }


def _deployed(synthesized: Any) -> list[HandlerSpec]:
    return [spec for spec in operations.HANDLERS if _functions(synthesized, spec)]


def should_deploy_every_registered_handler_running_its_registered_function(synthesized: Any) -> None:
    # When every handler of the registry is looked for in the example instance (every optional stack enabled)
    problems = []
    for spec in operations.HANDLERS:
        functions = _functions(synthesized, spec)
        if not functions:
            problems.append(f"{spec.name}: not deployed")
        for template, logical_id, properties in functions:
            if properties.get("ImageConfig", {}).get("Command") != [spec.lambda_command]:
                problems.append(f"{template}/{logical_id}: command {properties.get('ImageConfig')}")
    # Then each is deployed, running its module and function
    assert problems == []


def should_resolve_every_function_environment_to_the_instance_the_emulator_names(synthesized: Any) -> None:
    # Given the config bucket the stacks create, with the account resolved
    buckets = _resources(synthesized, "ConfigBucket", "AWS::S3::Bucket")
    (config_bucket,) = [_resolve(p["BucketName"]) for p in buckets.values()]
    # When each function's environment is read by runtime.aws.instance, the config bucket reference standing for that
    # bucket
    configs = {}
    for spec in _deployed(synthesized):
        for template, logical_id, properties in _functions(synthesized, spec):
            variables = dict(properties["Environment"]["Variables"])
            assert "Ref" in variables["CONFIG_BUCKET"], f"{template}/{logical_id}: config bucket not referenced"
            variables["CONFIG_BUCKET"] = config_bucket
            configs[f"{template}/{logical_id}"] = AwsRuntimeConfig.from_environment(
                {**variables, "AWS_REGION": "eu-west-2"}
            )
    # Then every one finds the config bucket the emulated instance and Sleeper's clients use for the instance
    assert config_bucket == config_bucket_name(INSTANCE_ID, ACCOUNT)
    assert {c.config_bucket for c in configs.values()} == {config_bucket}
    assert len(configs) >= len(operations.HANDLERS)


def should_invoke_every_handler_from_the_queue_the_registry_names(synthesized: Any) -> None:
    # When each SQS-triggered handler's event source mappings are followed to their queues
    problems = []
    checked = 0
    for spec in _deployed(synthesized):
        if spec.trigger.kind is not TriggerKind.SQS:
            continue
        expected = {naming.queue_name(INSTANCE_ID, q) for q in spec.trigger.queues}
        for template, logical_id, _ in _functions(synthesized, spec):
            checked += 1
            queues = _resources(synthesized, template, "AWS::SQS::Queue")
            sources = {
                queues[m["EventSourceArn"]["Fn::GetAtt"][0]]["QueueName"]
                for m in _resources(synthesized, template, "AWS::Lambda::EventSourceMapping").values()
                if m["FunctionName"] == {"Ref": logical_id} and "Fn::GetAtt" in m["EventSourceArn"]
            }
            if not sources or not sources <= expected:
                problems.append(f"{spec.name} ({template}/{logical_id}): fed by {sources}, registry says {expected}")
    # Then each is fed by a queue of the registry, named as the adapters and the emulated instance name it
    assert problems == []
    assert checked >= 12


def should_schedule_every_scheduled_handler_with_the_rule_the_emulator_names(synthesized: Any) -> None:
    # Given the names the emulated instance (and every other runtime) gives rules
    names = InstanceNames(instance_id=INSTANCE_ID, account=ACCOUNT)
    # When each scheduled handler's rules are found by their targets
    problems = []
    checked = 0
    for spec in _deployed(synthesized):
        if spec.trigger.kind is not TriggerKind.SCHEDULE or spec.trigger.rule is None:
            continue
        for template, logical_id, _ in _functions(synthesized, spec):
            checked += 1
            rules = [
                r["Name"]
                for r in _resources(synthesized, template, "AWS::Events::Rule").values()
                if any(t["Arn"] == {"Fn::GetAtt": [logical_id, "Arn"]} for t in r.get("Targets", []))
            ]
            if rules != [names.rule(spec.trigger.rule)]:
                problems.append(f"{spec.name}: rules {rules}, emulator names {names.rule(spec.trigger.rule)}")
    # Then each has exactly the rule of the registry's name
    assert problems == []
    assert checked >= 7


def should_follow_the_files_log_stream_with_the_transaction_follower(synthesized: Any) -> None:
    # Given the follower's function and the files transaction log table the adapters name
    spec = operations.handler(operations.TRANSACTION_FOLLOWER)
    ((template, logical_id, _),) = _functions(synthesized, spec)
    files_log = StateStoreTableNames.for_instance(INSTANCE_ID).files_log
    # When its event source mapping is found
    (mapping,) = [
        m
        for m in _resources(synthesized, template, "AWS::Lambda::EventSourceMapping").values()
        if m["FunctionName"] == {"Ref": logical_id}
    ]
    # Then it reads a table stream, from the start of what is kept, and the files log has a new-image stream
    assert "StreamArn" in str(mapping["EventSourceArn"]) or "stream" in str(mapping["EventSourceArn"]).lower()
    tables = [p for _, r in synthesized.resources("AWS::DynamoDB::Table") for p in [r["Properties"]]]
    (files_table,) = [t for t in tables if t.get("TableName") == files_log]
    assert files_table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}


def should_let_each_trigger_send_to_the_queue_the_registry_names(synthesized: Any) -> None:
    # When each per-table trigger's role policies are followed to the queues they may send to
    problems = []
    checked = 0
    for spec in _deployed(synthesized):
        if spec.sends_to is None:
            continue
        for template, _logical_id, properties in _functions(synthesized, spec):
            checked += 1
            role = properties["Role"]["Fn::GetAtt"][0]
            queues = _resources(synthesized, template, "AWS::SQS::Queue")
            allowed = set()
            for policy in _resources(synthesized, template, "AWS::IAM::Policy").values():
                if {"Ref": role} not in policy["Roles"]:
                    continue
                for statement in policy["PolicyDocument"]["Statement"]:
                    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                    targets = (
                        statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                    )
                    if "sqs:SendMessage" in actions:
                        allowed |= {
                            queues[t["Fn::GetAtt"][0]]["QueueName"]
                            for t in targets
                            if isinstance(t, dict) and "Fn::GetAtt" in t and t["Fn::GetAtt"][0] in queues
                        }
            if naming.queue_name(INSTANCE_ID, spec.sends_to) not in allowed:
                problems.append(f"{spec.name}: may send to {allowed}, registry says {spec.sends_to}")
    # Then each may send to its queue
    assert problems == []
    assert checked >= 7
