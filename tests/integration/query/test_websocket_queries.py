"""The WebSocket query API's handler: a query sent over a connection is planned and fanned out, each
sub-query's rows are posted to the connection in messages under the payload limit, then its completed message, as
Sleeper's clients expect; a query naming an unknown table gets an error message. The instance is a local one with a
recording WebSocket poster standing in for API Gateway's management API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.websocket import MESSAGE_MAX_BYTES, WebSocketTarget
from sleeper.query.entry import handle_leaf_query
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE
from sleeper.query.websocket import handle_websocket_event
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
ROWS = 8_000


class RecordingPoster:
    """API Gateway's management API as a list of the messages posted to each connection."""

    def __init__(self) -> None:
        self.posted: list[tuple[WebSocketTarget, str]] = []

    def post(self, target: WebSocketTarget, data: str, *, attempts: int, base_delay: float, max_delay: float) -> None:
        assert len(data.encode()) <= MESSAGE_MAX_BYTES
        self.posted.append((target, data))

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(data) for _, data in self.posted]


class SocketInstance:
    """A local instance whose query functions can post to WebSocket connections."""

    def __init__(self, instance: LocalInstance, poster: RecordingPoster) -> None:
        self._instance = instance
        self.websocket_poster = poster

    def __getattr__(self, name: str) -> Any:
        return getattr(self._instance, name)


@pytest.fixture
def socket_instance(tmp_path: Path) -> SocketInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, split_points=[2000, 4000, 6000])
    table.ingest(pa.table({"key": pa.array(range(ROWS), pa.int64()), "value": ["v" * 250] * ROWS}))
    return SocketInstance(instance, RecordingPoster())


def _message_event(body: str, connection_id: str = "conn-1") -> dict[str, Any]:
    return {
        "requestContext": {
            "eventType": "MESSAGE",
            "routeKey": "$default",
            "connectionId": connection_id,
            "domainName": "abc123.execute-api.eu-west-2.amazonaws.com",
            "stage": "live",
        },
        "body": body,
        "isBase64Encoded": False,
    }


def _range_query(query_id: str, table: str, low: int, high: int) -> str:
    region = {"key": {"min": low, "minInclusive": True, "max": high, "maxInclusive": False}}
    return json.dumps({"queryId": query_id, "tableName": table, "type": "Query", "regions": [region]})


def _run_leaves(instance: SocketInstance) -> None:
    queue = instance.queue(LEAF_PARTITION_QUERY_QUEUE)
    while messages := queue.receive(10):
        for message in messages:
            handle_leaf_query(instance, message.body)  # type: ignore[arg-type]
            queue.delete(message.receipt_handle)


def should_return_the_rows_of_a_range_over_four_leaves_as_a_direct_query_does(socket_instance: SocketInstance) -> None:
    # Given a table of four leaves, and a range query over all of them sent over a connection
    response = handle_websocket_event(socket_instance, _message_event(_range_query("ws-1", "t", 500, 7500)))  # type: ignore[arg-type]
    # When the sub-queries run
    _run_leaves(socket_instance)
    # Then the connection got the sub-queries, their rows and one completed message per sub-query
    assert response == {"statusCode": 200}
    messages = socket_instance.websocket_poster.messages()
    (split,) = [m for m in messages if m["message"] == "subqueries"]
    assert split["queryId"] == "ws-1" and len(split["queryIds"]) == 4
    completed = [m for m in messages if m["message"] == "completed"]
    assert sorted(m["queryId"] for m in completed) == sorted(split["queryIds"])
    assert all(m["locations"][0] == {"type": "websocket-endpoint", "location": _endpoint()} for m in completed)
    rows = [row for m in messages if m["message"] == "rows" for row in m["rows"]]
    direct = socket_instance.table("t").query(regions=None, keys=None)
    expected = [r for r in direct.to_pylist() if 500 <= r["key"] < 7500]
    assert sorted(rows, key=lambda r: r["key"]) == expected
    assert sum(m["rowCount"] for m in completed) == len(expected)
    # And the 2 MB of rows came in several messages, each posted to the asking connection
    assert sum(len(d) for _, d in socket_instance.websocket_poster.posted) > 1_500_000
    assert len([m for m in messages if m["message"] == "rows"]) > 10
    assert {t for t, _ in socket_instance.websocket_poster.posted} == {
        WebSocketTarget(endpoint=_endpoint(), connection_id="conn-1")
    }


def _endpoint() -> str:
    return "https://abc123.execute-api.eu-west-2.amazonaws.com/live"


def should_send_an_error_for_a_query_naming_an_unknown_table(socket_instance: SocketInstance) -> None:
    # When a query naming no table of the instance is sent over a connection
    handle_websocket_event(socket_instance, _message_event(_range_query("ws-2", "nope", 0, 10)))  # type: ignore[arg-type]
    # Then the connection gets one error message naming the table, and no sub-query is sent
    (message,) = socket_instance.websocket_poster.messages()
    assert message["message"] == "error" and message["queryId"] == "ws-2"
    assert "nope" in message["error"]
    assert socket_instance.queue(LEAF_PARTITION_QUERY_QUEUE).receive(10) == []


def should_send_an_error_for_a_message_that_is_not_a_query(socket_instance: SocketInstance) -> None:
    handle_websocket_event(socket_instance, _message_event("not json"))  # type: ignore[arg-type]
    (message,) = socket_instance.websocket_poster.messages()
    assert message["message"] == "error" and "malformed query JSON" in message["error"]


def should_accept_connecting_and_disconnecting(socket_instance: SocketInstance) -> None:
    for kind in ("CONNECT", "DISCONNECT"):
        event = {"requestContext": {"eventType": kind, "connectionId": "c"}}
        assert handle_websocket_event(socket_instance, event) == {"statusCode": 200}  # type: ignore[arg-type]
    assert handle_websocket_event(socket_instance, {})["statusCode"] == 400  # type: ignore[arg-type]
    assert socket_instance.websocket_poster.posted == []


def should_send_results_elsewhere_when_the_query_asks(socket_instance: SocketInstance) -> None:
    # When a query sent over a connection asks for SQS results
    body = json.loads(_range_query("ws-3", "t", 0, 10))
    body["resultsPublisherConfig"] = {"destination": "SQS"}
    handle_websocket_event(socket_instance, _message_event(json.dumps(body)))  # type: ignore[arg-type]
    _run_leaves(socket_instance)
    # Then the rows go to the results queue and the connection gets only the status messages
    kinds = [m["message"] for m in socket_instance.websocket_poster.messages()]
    assert kinds == ["subqueries", "completed"]
    (batch,) = [json.loads(m.body) for m in socket_instance.query_results_queue.receive(10)]
    assert [r["key"] for r in batch["rows"]] == list(range(10))


def should_route_the_api_events_through_the_lambda_handler(socket_instance: SocketInstance) -> None:
    # Given the Lambda handler the registry names for the WebSocket API, on the instance
    from sleeper.core import operations
    from sleeper.lambdas import _common
    from sleeper.lambdas.websocket_query import handler

    assert operations.handler(operations.WEB_SOCKET_QUERY).handler == "sleeper.lambdas.websocket_query:handler"
    _common.use_instance(socket_instance)  # type: ignore[arg-type]
    try:
        # When API Gateway invokes it for a connect and for a query naming an unknown table
        connected = handler({"requestContext": {"eventType": "CONNECT", "connectionId": "conn-1"}})
        answered = handler(_message_event(_range_query("ws-4", "nope", 0, 10)))
    finally:
        _common.use_instance(None)
    # Then it answers API Gateway with the feature entry's responses, and the connection gets the error
    assert connected == answered == {"statusCode": 200}
    (message,) = socket_instance.websocket_poster.messages()
    assert message["message"] == "error" and message["queryId"] == "ws-4"


def _rows_of(messages: list[dict[str, Any]]) -> list[int]:
    return sorted(row["key"] for m in messages if m["message"] == "rows" for row in m["rows"])


def should_answer_a_second_query_sent_under_the_id_of_an_earlier_one(socket_instance: SocketInstance) -> None:
    # Given a query answered over a connection, as Sleeper's Python client sends it (its default query id is the same
    # for every query of a process)
    poster = socket_instance.websocket_poster
    first = _message_event(_range_query("sleeper-default", "t", 0, 10))
    first["requestContext"]["messageId"] = "msg-1"
    handle_websocket_event(socket_instance, first)  # type: ignore[arg-type]
    _run_leaves(socket_instance)
    assert _rows_of(poster.messages()) == list(range(10))
    poster.posted.clear()
    # When the client sends its next query under the same id, as a new message
    second = _message_event(_range_query("sleeper-default", "t", 5000, 5005))
    second["requestContext"]["messageId"] = "msg-2"
    handle_websocket_event(socket_instance, second)  # type: ignore[arg-type]
    _run_leaves(socket_instance)
    # Then it is run and answered too, with its own rows and a completed message
    messages = poster.messages()
    assert _rows_of(messages) == list(range(5000, 5005))
    assert [m["rowCount"] for m in messages if m["message"] == "completed"] == [5]
    status = socket_instance.query_tracker.status("sleeper-default")
    assert status is not None and status.last_known_state.is_finished


def should_run_a_websocket_message_handled_twice_once(socket_instance: SocketInstance) -> None:
    # Given a query message handled and answered
    poster = socket_instance.websocket_poster
    event = _message_event(_range_query("ws-5", "t", 0, 10))
    event["requestContext"]["messageId"] = "msg-1"
    handle_websocket_event(socket_instance, event)  # type: ignore[arg-type]
    _run_leaves(socket_instance)
    poster.posted.clear()
    # When the same message is handled again
    handle_websocket_event(socket_instance, event)  # type: ignore[arg-type]
    _run_leaves(socket_instance)
    # Then nothing is sent again
    assert poster.messages() == []
    assert socket_instance.queue(LEAF_PARTITION_QUERY_QUEUE).receive(10) == []
