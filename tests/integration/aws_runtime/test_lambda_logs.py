"""The handlers' logs on an AWS instance on moto (issue 19, item 2): each Lambda log line is JSON carrying the table
and the message; the instance's ``sleeper.logging.level`` saved in its config bucket decides whether debug lines
show, read again by a handler that reads its properties again."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lambdas import sqs
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.conftest import sqs_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),))


@pytest.fixture
def levels_restored() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in ("sleeper", "lambdas", "")}
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
