"""Query ids used twice, on the emulated AWS instance (moto behind the deployed functions): Sleeper's Python client
sends every WebSocket query of a process under one default id, and each must be answered; a query message SQS
delivers twice (the same message id) must run once, while another message under the same query id runs again."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.lambdas import sqs
from tests.integration.aws_local.test_websocket_api import _sleeper_client_query

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


@pytest.fixture(scope="module")
def emulated() -> Iterator[EmulatedAwsInstance]:
    """A new emulated instance; the environment points boto3 at it while the module runs."""
    with EmulatedAwsInstance(f"local-{uuid.uuid4().hex[:10]}", port=0) as instance:
        with pytest.MonkeyPatch.context() as env:
            for name, value in instance.environment().items():
                env.setenv(name, value)
            yield instance


@pytest.fixture(scope="module")
def table(emulated: EmulatedAwsInstance) -> str:
    """A table of one leaf holding keys 0..999."""
    name = f"reuse-{uuid.uuid4().hex[:8]}"
    created = emulated.instance().create_table(name, SCHEMA)
    created.ingest(pa.table({"key": pa.array(range(1000), pa.int64()), "value": ["v"] * 1000}), direct=True)
    return name


def _query(query_id: str, table: str, low: int, high: int) -> str:
    region = {"key": {"min": low, "minInclusive": True, "max": high, "maxInclusive": False}}
    return json.dumps({"queryId": query_id, "tableName": table, "type": "Query", "regions": [region]})


def should_answer_every_websocket_query_of_sleepers_client_under_its_one_default_id(
    emulated: EmulatedAwsInstance, table: str
) -> None:
    pump = emulated.pump()
    stop = threading.Event()
    thread = threading.Thread(target=pump.run_forever, args=(stop,), kwargs={"interval_seconds": 0.1}, daemon=True)
    thread.start()
    try:
        # When Sleeper's Python client sends two queries under its default id, one after the other
        first = asyncio.run(_sleeper_client_query(emulated, _query("sleeper-default", table, 10, 13)))
        second = asyncio.run(_sleeper_client_query(emulated, _query("sleeper-default", table, 500, 502)))
    finally:
        stop.set()
        thread.join(timeout=60)
        pump.close()
    # Then each gets its own rows
    assert [r["key"] for r in first] == [10, 11, 12]
    assert [r["key"] for r in second] == [500, 501]


def _sqs_event(message_id: str, body: str) -> dict[str, Any]:
    return {"Records": [{"messageId": message_id, "receiptHandle": "r", "body": body, "eventSource": "aws:sqs"}]}


def should_run_a_query_message_delivered_twice_once_and_a_new_message_under_its_id_again(
    emulated: EmulatedAwsInstance, table: str
) -> None:
    instance = emulated.instance()
    leaf_queue = instance.queue(operations.LEAF_PARTITION_QUERY_Q)
    body = _query("sqs-reused", table, 0, 10)
    # Given a query message handled by the query function, its sub-query answered
    assert sqs.query(_sqs_event("m-1", body)) == {"batchItemFailures": []}
    pump = emulated.pump()
    try:
        pump.run_until_idle(timeout_seconds=60)
        status = instance.query_tracker.status("sqs-reused")
        assert status is not None and status.last_known_state is QueryState.COMPLETED
        # When SQS delivers the same message again
        assert sqs.query(_sqs_event("m-1", body)) == {"batchItemFailures": []}
        # Then no sub-query is sent again
        assert leaf_queue.approximate_counts().visible == 0
        # And when another message carries the same query id, it is planned and answered again
        assert sqs.query(_sqs_event("m-2", body)) == {"batchItemFailures": []}
        assert leaf_queue.approximate_counts().visible == 1
        pump.run_until_idle(timeout_seconds=60)
    finally:
        pump.close()
    runs = {sub.sub_query_id.partition(".")[0] for sub in instance.query_tracker.sub_queries("sqs-reused")}
    assert len(runs) == 2
    status = instance.query_tracker.status("sqs-reused")
    assert status is not None and status.last_known_state is QueryState.COMPLETED
