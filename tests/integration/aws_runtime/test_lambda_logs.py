"""The handlers' logs on an AWS instance on moto: each Lambda log line is JSON carrying the table
and the message; the instance's ``sleeper.logging.level`` saved in its config bucket decides whether debug lines
show, read again by a handler that reads its properties again."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from sleeper.core.operations import SNAPSHOT_CREATION_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.lambdas import sqs, table_trigger
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.conftest import drain_event, sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),))


@pytest.fixture
def levels_restored() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in ("sleeper", "sleeper.lambdas", "")}
    yield
    for name, level in saved.items():
        logging.getLogger(name or None).setLevel(level)


def _save(instance: AwsInstance, **values: str) -> None:
    properties = instance.properties_store.load_instance()
    properties.update(values)
    instance.properties_store.save_instance(properties)
    instance.reload()


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"level"')]


def should_log_json_lines_with_the_table_at_the_level_the_properties_set(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str], levels_restored: None
) -> None:
    # Given a table, and the instance's logging level saved as DEBUG with properties read on every invocation
    table = instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    _save(instance, **{"sleeper.logging.level": "DEBUG", "sleeper.properties.force.reload": "true"})
    capsys.readouterr()
    # When the garbage collector's Lambda handles the table's scheduled message
    response = sqs.garbage_collector(sqs_event([("m1", table.table_id, table.table_id)]))
    debug = _json_lines(capsys.readouterr().out)
    # And again once the level is saved back to INFO
    _save(instance, **{"sleeper.logging.level": "INFO"})
    sqs.garbage_collector(sqs_event([("m2", table.table_id, table.table_id)]))
    info = _json_lines(capsys.readouterr().out)
    # Then each line is JSON naming the table and the message; debug lines show only while the level is DEBUG
    assert response == {"batchItemFailures": []}
    assert debug and all((x["table_id"], x["message_id"]) == (table.table_id, "m1") for x in debug)
    assert "DEBUG" in {x["level"] for x in debug}
    assert all(x["table_id"] == table.table_id for x in info)
    assert "DEBUG" not in {x["level"] for x in info}
    _save(instance, **{"sleeper.properties.force.reload": "false"})


@dataclass(frozen=True)
class FakeContext:
    """The attributes of Lambda's context object Powertools' Logger reads."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:eu-west-2:123456789012:function:f"


def should_log_the_function_request_and_cold_start_as_powertools_logger_does(
    instance: AwsInstance,
    capsys: pytest.CaptureFixture[str],
    levels_restored: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a table, and a generic SQS handler invoked by Lambda twice in the same process
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    table = instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    function = f"sleeper-logs-{uuid.uuid4().hex[:8]}-garbage-collector"
    arn = f"arn:aws:lambda:eu-west-2:123456789012:function:{function}"
    _save(instance, **{"sleeper.logging.level": "DEBUG", "sleeper.properties.force.reload": "true"})
    capsys.readouterr()
    # When it handles one message per invocation
    try:
        sqs.garbage_collector(
            sqs_event([("m1", table.table_id, table.table_id)]), FakeContext(function, "r-1", 512, arn)
        )
        first = _json_lines(capsys.readouterr().out)
        sqs.garbage_collector(
            sqs_event([("m2", table.table_id, table.table_id)]), FakeContext(function, "r-2", 512, arn)
        )
        second = _json_lines(capsys.readouterr().out)
    finally:
        _save(instance, **{"sleeper.logging.level": "INFO", "sleeper.properties.force.reload": "false"})
    # Then every line of each carries the function, its request, whether it was a cold start and the registry entry
    # as the service, beside the ids of the work
    assert first and second
    expected = {"service": "garbage_collector", "function_name": function, "function_memory_size": 512}
    assert all(line.items() >= {**expected, "function_arn": arn}.items() for line in first + second)
    assert {(x["function_request_id"], x["cold_start"]) for x in first} == {("r-1", True)}
    assert {(x["function_request_id"], x["cold_start"]) for x in second} == {("r-2", False)}
    assert all((x["table_id"], x["message_id"]) == (table.table_id, "m2") for x in second)


def should_name_the_service_powertools_service_name_sets_and_log_a_trigger_s_context(
    instance: AwsInstance,
    capsys: pytest.CaptureFixture[str],
    levels_restored: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a scheduled trigger's function with POWERTOOLS_SERVICE_NAME set
    instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "sleeper-snapshots")
    function = f"sleeper-logs-{uuid.uuid4().hex[:8]}-snapshot-creation-trigger"
    capsys.readouterr()
    # When it is invoked
    logging.getLogger("sleeper.lambdas").setLevel(logging.INFO)  # as the properties set it on a first invocation
    table_trigger.snapshot_creation({}, FakeContext(function, "r-trigger"))
    drain_event(instance, SNAPSHOT_CREATION_Q, max_messages=1000)
    lines = _json_lines(capsys.readouterr().out)
    # Then its lines name that service, the function and the request
    assert lines
    assert {(x["service"], x["function_name"], x["function_request_id"], x["cold_start"]) for x in lines} == {
        ("sleeper-snapshots", function, "r-trigger", True)
    }


def should_name_the_registry_entry_as_the_service_without_a_lambda_context(
    instance: AwsInstance, capsys: pytest.CaptureFixture[str], levels_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a trigger invoked directly, with no Lambda context
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    capsys.readouterr()
    # When it runs
    logging.getLogger("sleeper.lambdas").setLevel(logging.INFO)  # as the properties set it on a first invocation
    table_trigger.snapshot_creation({})
    drain_event(instance, SNAPSHOT_CREATION_Q, max_messages=1000)
    lines = _json_lines(capsys.readouterr().out)
    # Then its lines name the registry entry, and nothing of a context they do not have
    assert lines and {x["service"] for x in lines} == {"snapshot_creation_trigger"}
    assert not any("cold_start" in x or "function_request_id" in x for x in lines)
