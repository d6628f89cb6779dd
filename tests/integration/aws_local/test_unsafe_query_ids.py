"""Path traversal through query ids on the emulated instance: a query whose id holds '..', sent as Sleeper's Python
client sends queries, is tracked FAILED by the query handler and writes nothing to the results bucket or the table
data bucket; a sub-query with such an id fails in the leaf handler every time and ends on the dead-letter queue."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pyarrow as pa
import pytest

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.paths import SAFE_ID_RULE, split_s3_path
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.ingest.standard import ingest_batches
from sleeper.query.queued import handle_query_message
from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime.sleeper_client import CompatClient

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
HANDLERS = (operations.handler(operations.QUERY), operations.handler(operations.LEAF_PARTITION_QUERY))


def _table(instance: AwsInstance) -> Table[AwsInstance]:
    table = instance.create_table(f"unsafe-{uuid.uuid4().hex[:8]}", SCHEMA)
    rows = pa.table({"key": pa.array([1, 2, 3], pa.int64()), "value": ["a", "b", "c"]})
    ingest_batches(
        table.schema,
        table.properties,
        table.state_store,
        table.data_prefix,
        rows.to_batches(),
        options=instance.filesystem_options,
    )
    return table


def _keys(emulated: EmulatedAwsInstance) -> dict[str, set[str]]:
    """Every object key in the results bucket and the table data bucket."""
    instance = emulated.instance()
    s3: Any = boto3.client("s3", endpoint_url=emulated.endpoint, region_name=emulated.region)
    buckets = (split_s3_path(instance.query_results_uri)[0], instance.data_bucket)
    found: dict[str, set[str]] = {}
    for bucket in buckets:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        found[bucket] = {item["Key"] for page in pages for item in page.get("Contents", [])}
    return found


def _pump(emulated: EmulatedAwsInstance) -> Pump:
    return emulated.pump(handlers=HANDLERS, containers=(), retry_failed_after_seconds=0)


@pytest.mark.parametrize(
    "bad_id", ["/../../escaped-from-query-results", "/../../{data_bucket}/escaped", "../query-{other}"]
)
def should_track_a_client_query_whose_id_holds_dot_dot_as_failed_writing_nothing(
    emulated: EmulatedAwsInstance, bad_id: str
) -> None:
    # Given a table with rows, another user's completed query, and the keys of both buckets
    instance = emulated.instance()
    table = _table(instance)
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    pump = _pump(emulated)
    other = str(uuid.uuid4())
    client.send_range_query(table.name, [{"key": (0, 100)}], other)
    assert len(client.wait_for_results(other, lambda: pump.run_until_idle(timeout_seconds=60))) == 3
    before = _keys(emulated)
    query_id = bad_id.format(other=other, data_bucket=instance.data_bucket)
    # When the client sends a query whose id holds '..' and the pump delivers the query queue
    client.send_range_query(table.name, [{"key": (0, 100)}], query_id)
    pump.run_until_idle(timeout_seconds=60)
    # Then the tracker records it FAILED, naming the rule, and no object was written to either bucket
    assert client.query_state(query_id) == "FAILED"
    tracked = instance.query_tracker.status(query_id)
    assert tracked is not None and SAFE_ID_RULE in (tracked.error_message or "")
    assert _keys(emulated) == before


def should_send_a_sub_query_whose_id_holds_dot_dot_to_the_dead_letter_queue_writing_nothing(
    emulated: EmulatedAwsInstance,
) -> None:
    # Given a sub-query as the query handler makes it, with its query id pointed at another query's results
    instance = emulated.instance()
    table = _table(instance)
    made = InMemoryQueues().queue(operations.LEAF_PARTITION_QUERY_Q)
    body = json.dumps(
        {
            "tableName": table.name,
            "queryId": "mine",
            "type": "Query",
            "regions": [{"key": {"min": 0, "minInclusive": True, "max": 100, "maxInclusive": False}}],
        }
    )
    outcome = handle_query_message(body, tables=instance, leaf_queue=made, tracker=instance.query_tracker)
    assert outcome.error is None
    message = json.loads(made.receive(1)[0].body)
    message["queryId"] = "../query-other"
    before = _keys(emulated)
    # When it is sent to the leaf partition query queue and the pump delivers it until it gives up
    instance.queue(operations.LEAF_PARTITION_QUERY_Q).send(json.dumps(message))
    pump = _pump(emulated)
    delivered = pump.run_until_idle(timeout_seconds=60)
    # Then every delivery failed, the message is on the dead-letter queue, and nothing was written
    assert delivered.failed.get(operations.LEAF_PARTITION_QUERY, 0) >= 1
    dead = instance.dead_letter_queue(operations.LEAF_PARTITION_QUERY_Q)
    assert dead.approximate_counts().visible == 1
    assert _keys(emulated) == before
    assert instance.query_tracker.status("../query-other") is None
    mine = instance.query_tracker.status("mine")
    assert mine is not None and mine.last_known_state is QueryState.IN_PROGRESS
