"""The query JSON's ``filter`` field through the emulated instance's WebSocket API: a query carrying one, sent over a
signed connection as Sleeper's clients send a query, gets exactly the rows ``Table.scan(filter=...)`` returns; a bad
one gets an ``error`` message naming ``$.filter`` and no rows."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from tests.integration.aws_local.test_websocket_api import _query_all

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("age", PrimitiveType.INT, True), Field("name", PrimitiveType.STRING, True)],
)
ROWS = 3_000


@pytest.fixture(scope="module")
def table(emulated: EmulatedAwsInstance) -> str:
    """A table of three leaves."""
    name = f"wsf-{uuid.uuid4().hex[:8]}"
    created = emulated.instance().create_table(name, SCHEMA, split_points=[1000, 2000])
    data = pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(ROWS)], pa.string()),
        }
    )
    created.ingest(data, direct=True)
    return name


@pytest.fixture
def answering(emulated: EmulatedAwsInstance) -> Iterator[Pump]:
    """The pump running in a thread, so sub-queries are run while the client waits on its socket."""
    pump = emulated.pump()
    stop = threading.Event()
    thread = threading.Thread(target=pump.run_forever, args=(stop,), kwargs={"interval_seconds": 0.1}, daemon=True)
    thread.start()
    yield pump
    stop.set()
    thread.join(timeout=60)
    pump.close()


def _query(query_id: str, table: str, row_filter: object) -> str:
    region = {"key": {"min": 0, "minInclusive": True, "max": None, "maxInclusive": False}}
    body: dict[str, Any] = {"queryId": query_id, "tableName": table, "type": "Query", "regions": [region]}
    body["filter"] = row_filter
    return json.dumps(body)


@pytest.mark.parametrize("row_filter", ["age > 95 and name is not null", "key between 990 and 1010 or age is null"])
def should_return_the_rows_a_filtered_scan_returns(
    emulated: EmulatedAwsInstance, table: str, answering: Pump, row_filter: str
) -> None:
    # When a query with a filter is sent over the socket
    query_id = f"wsf-{uuid.uuid4().hex[:8]}"
    messages, _, close_code = asyncio.run(_query_all(emulated, _query(query_id, table, row_filter)))
    # Then every sub-query completes, and the rows are exactly the filtered scan's
    assert not [m for m in messages if m["message"] == "error"]
    rows = sorted((row for m in messages if m["message"] == "rows" for row in m["rows"]), key=lambda r: r["key"])
    expected = emulated.instance().table(table).scan(filter=row_filter).to_arrow().to_pylist()
    assert rows == expected and 0 < len(rows) < ROWS
    assert close_code == 1000


def should_send_an_error_naming_the_filter(emulated: EmulatedAwsInstance, table: str) -> None:
    messages, _, _ = asyncio.run(_query_all(emulated, _query("wsf-bad", table, "age > 'old'")))
    (message,) = messages
    assert message["message"] == "error" and message["queryId"] == "wsf-bad"
    assert "$.filter" in message["error"] and "compare it with an integer" in message["error"]
