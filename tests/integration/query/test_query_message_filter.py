"""The query JSON's ``filter`` field end to end on a local instance: a query message carrying one, sent on the query
queue or over the WebSocket API's handler, returns the rows ``Table.scan(filter=...)`` returns; a bad one is tracked
FAILED (and reported on the connection) with the path ``$.filter`` and runs nothing; and the messages of Sleeper's
own Python client, which have no filter, are read and answered as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.bulk_export.model import read_bulk_export_query
from sleeper.client import BulkExportQuery as ClientBulkExportQuery
from sleeper.client import Query as ClientQuery
from sleeper.client import Region as ClientRegion
from sleeper.core.query import QuerySerDe
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.query import QueryState
from sleeper.core.websocket import WebSocketTarget
from sleeper.query.entry import handle_leaf_query
from sleeper.query.publishers import query_results_dir
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, QUERY_QUEUE
from sleeper.query.websocket import handle_websocket_event
from sleeper.runtime.local.instance import LocalInstance
from sleeper.runtime.router import drain

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("age", PrimitiveType.INT, True), Field("name", PrimitiveType.STRING, True)],
)
ROWS = 3_000
SPLITS = [1_000, 2_000]
FILTERS = [
    "age > 90",
    "age in (1, 2, 3) and name is not null",
    "name starts with 'n4' or age is null",
    "not (age between 2 and 98)",
    "key between 990 and 1010 and age < 50",
    "key > 5000",
]
WHOLE = {"key": {"min": 0, "minInclusive": True, "max": None, "maxInclusive": False}}


def _input() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(ROWS)], pa.string()),
        }
    )


class RecordingPoster:
    """API Gateway's management API as a list of the messages posted to each connection."""

    def __init__(self) -> None:
        self.posted: list[tuple[WebSocketTarget, str]] = []

    def post(self, target: WebSocketTarget, data: str, *, attempts: int, base_delay: float, max_delay: float) -> None:
        self.posted.append((target, data))

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(data) for _, data in self.posted]


class SocketInstance:
    """A local instance whose query functions post to WebSocket connections through a recording poster."""

    def __init__(self, instance: LocalInstance) -> None:
        self._instance = instance
        self.websocket_poster = RecordingPoster()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._instance, name)


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> LocalInstance:
    local = LocalInstance.create(tmp_path_factory.mktemp("message-filter") / "instance")
    table = local.create_table("people", SCHEMA, split_points=SPLITS)
    data = _input()
    table.ingest(data.slice(0, ROWS // 2))
    table.ingest(data.slice(ROWS // 2))
    return local


def _message(query_id: str, **fields: Any) -> str:
    return json.dumps({"queryId": query_id, "tableName": "people", "type": "Query", "regions": [WHOLE], **fields})


def _queued(instance: LocalInstance, body: str) -> pa.Table | None:
    """Sends a query message to the query queue, runs it, and reads its result files (None if it wrote none)."""
    instance.queue(QUERY_QUEUE).send(body)
    drain(instance, QUERY_QUEUE)
    drain(instance, LEAF_PARTITION_QUERY_QUEUE)
    query_id = json.loads(body)["queryId"]
    directory = Path(query_results_dir(str(instance.directory / "query-results"), query_id))
    files = sorted(directory.glob("*.parquet")) if directory.exists() else []
    if not files:
        return None
    return pa.concat_tables([pq.read_table(f) for f in files]).sort_by("key")


def _expected(instance: LocalInstance, row_filter: str | None) -> pa.Table:
    return instance.table("people").scan(filter=row_filter).to_arrow()


@pytest.mark.parametrize("row_filter", FILTERS)
def should_return_the_rows_a_filtered_scan_returns_through_the_query_queue(
    instance: LocalInstance, row_filter: str
) -> None:
    query_id = f"queue-{FILTERS.index(row_filter)}"
    got = _queued(instance, _message(query_id, filter=row_filter))
    expected = _expected(instance, row_filter)
    status = instance.query_tracker.status(query_id)
    assert status is not None and status.last_known_state is QueryState.COMPLETED
    assert status.row_count == expected.num_rows
    if expected.num_rows:
        assert got is not None and got.to_pylist() == expected.to_pylist()
    else:
        assert got is None or got.num_rows == 0


@pytest.mark.parametrize(
    ("query_id", "row_filter", "message"),
    [
        ("bad-column", "agee > 3", "no column 'agee'"),
        ("bad-type", "age > 'x'", "compare it with an integer"),
        ("bad-syntax", "age >", "expected a value"),
        ("bad-json", 42, "must be a string"),
    ],
)
def should_track_a_queued_query_with_a_bad_filter_failed_and_run_nothing(
    instance: LocalInstance, query_id: str, row_filter: object, message: str
) -> None:
    assert _queued(instance, _message(query_id, filter=row_filter)) is None
    status = instance.query_tracker.status(query_id)
    assert status is not None and status.last_known_state is QueryState.FAILED
    assert status.error_message is not None
    assert "$.filter" in status.error_message and message in status.error_message
    assert instance.query_tracker.sub_queries(query_id) == []


def _event(body: str) -> dict[str, Any]:
    return {
        "requestContext": {
            "eventType": "MESSAGE",
            "routeKey": "$default",
            "connectionId": "conn-1",
            "domainName": "abc123.execute-api.eu-west-2.amazonaws.com",
            "stage": "live",
        },
        "body": body,
        "isBase64Encoded": False,
    }


def _over_websocket(instance: LocalInstance, body: str) -> list[dict[str, Any]]:
    """Sends a query message over a connection, runs its sub-queries, and returns what was posted to the connection."""
    socket = SocketInstance(instance)
    assert handle_websocket_event(socket, _event(body)) == {"statusCode": 200}
    queue = instance.queue(LEAF_PARTITION_QUERY_QUEUE)
    while messages := queue.receive(10):
        for message in messages:
            handle_leaf_query(socket, message.body)
            queue.delete(message.receipt_handle)
    return socket.websocket_poster.messages()


@pytest.mark.parametrize("row_filter", FILTERS[:4])
def should_return_the_rows_a_filtered_scan_returns_over_the_websocket_api(
    instance: LocalInstance, row_filter: str
) -> None:
    messages = _over_websocket(instance, _message(f"ws-{FILTERS.index(row_filter)}", filter=row_filter))
    assert not [m for m in messages if m["message"] == "error"]
    rows = sorted((row for m in messages if m["message"] == "rows" for row in m["rows"]), key=lambda r: r["key"])
    assert rows == _expected(instance, row_filter).to_pylist()
    completed = [m for m in messages if m["message"] == "completed"]
    assert len(completed) == 3 and sum(m["rowCount"] for m in completed) == len(rows)


def should_send_an_error_naming_the_filter_over_the_websocket_api(instance: LocalInstance) -> None:
    messages = _over_websocket(instance, _message("ws-bad", filter="nope = 1"))
    (message,) = messages
    assert message["message"] == "error" and message["queryId"] == "ws-bad"
    assert "$.filter" in message["error"] and "no column 'nope'" in message["error"]
    assert instance.queue(LEAF_PARTITION_QUERY_QUEUE).receive(10) == []


def should_answer_sleepers_own_client_unchanged(instance: LocalInstance) -> None:
    # Given the messages Sleeper's Python client builds: a range query and a bulk export, neither with a filter
    query = ClientQuery("client-range", "people", [ClientRegion.from_field_to_tuple({"key": (100, 2500)})])
    export = ClientBulkExportQuery("client-export", table_name="people")
    assert "filter" not in query.to_dict() and "filter" not in export.to_dict()
    # When they are read as the queues' handlers read them, Then they carry no filter, and written again are the same
    serde = QuerySerDe.for_schema(SCHEMA)
    read = serde.query_from_json(query.to_json())
    assert read.processing.filter is None
    assert json.loads(serde.to_json(read)) == json.loads(serde.to_json(serde.query_from_json(serde.to_json(read))))
    assert "filter" not in json.loads(serde.to_json(read))
    exported = read_bulk_export_query(export.to_json())
    assert exported.filter is None and json.loads(exported.to_json()) == export.to_dict()
    # And the query sent on the queue returns every row in its range, as an unfiltered scan does
    got = _queued(instance, query.to_json())
    assert got is not None
    assert got.to_pylist() == instance.table("people").scan(ranges={"key": (100, 2500)}).to_arrow().to_pylist()
