"""The WebSocket query API's handler (Sleeper's ``WebSocketQueryProcessorLambda``): the runtime-neutral
entry a WebSocket API route runs, for the events API Gateway sends (``requestContext.eventType`` ``CONNECT``,
``MESSAGE``, ``DISCONNECT``).

``$connect`` is authorised by API Gateway (IAM, SigV4) before this runs; connecting and disconnecting need nothing
more. A message is a query in Sleeper's JSON: the handler names the connection as a status report destination and,
unless the query asks for another results destination, as its results destination (the management endpoint comes
from the event's ``domainName`` and ``stage``), then validates, plans and fans the query out exactly as the query
queue's handler does (:func:`sleeper.query.queued.handle_query_message`), which sends the ``subqueries`` message, or
the ``error`` message of a query it cannot run (an unknown table, a bad region). Each message is a query of its own,
named by the message's id: a client sending a second query under the id of an earlier one (Sleeper's Python client
gives every query of a process the same default id) gets it run and answered again. Each sub-query then posts its
``rows`` and its ``completed`` or ``error`` message to the connection from the leaf handler. A message that is not a
JSON object gets an ``error`` message at once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from sleeper.core import WebSocketTarget, management_endpoint
from sleeper.query.entry import publisher_settings
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE, handle_query_message
from sleeper.query.results_config import CONNECTION_ID, DESTINATION, ENDPOINT, WEBSOCKET
from sleeper.query.status import StatusReporter
from sleeper.statestore import SleeperRuntime

__all__ = ["handle_websocket_event"]

_OK = {"statusCode": 200}


def handle_websocket_event(instance: SleeperRuntime, event: Mapping[str, Any]) -> dict[str, Any]:
    """One event of the WebSocket API (see the module docs).

    Returns:
        The response for API Gateway: 200, or 400 for an event that is not a WebSocket route event.
    """
    context = event.get("requestContext")
    if not isinstance(context, Mapping):
        return {"statusCode": 400, "body": "not a WebSocket API event: no requestContext"}
    kind = context.get("eventType")
    if kind in ("CONNECT", "DISCONNECT"):
        return _OK
    if kind != "MESSAGE":
        return {"statusCode": 400, "body": f"not a WebSocket API event: eventType {kind!r}"}
    target = WebSocketTarget(
        endpoint=management_endpoint(str(context.get("domainName", "")), str(context.get("stage", ""))),
        connection_id=str(context.get("connectionId", "")),
    )
    settings = publisher_settings(instance)
    reporter = StatusReporter(settings.websocket, (target,))
    try:
        query = json.loads(event.get("body") or "")
    except ValueError as e:
        reporter.failed(None, f"Received malformed query JSON request: {e}")
        return _OK
    if not isinstance(query, dict):
        reporter.failed(None, "Received malformed query JSON request: expected a JSON object")
        return _OK
    connection = {DESTINATION: WEBSOCKET, ENDPOINT: target.endpoint, CONNECTION_ID: target.connection_id}
    destinations = query.get("statusReportDestinations")
    query["statusReportDestinations"] = (list(destinations) if isinstance(destinations, list) else []) + [connection]
    results = query.get("resultsPublisherConfig")
    if results is None or (isinstance(results, dict) and results.get(DESTINATION, WEBSOCKET) == WEBSOCKET):
        query["resultsPublisherConfig"] = {**(results or {}), **connection}
    handle_query_message(
        json.dumps(query),
        tables=instance,
        leaf_queue=instance.queue(LEAF_PARTITION_QUERY_QUEUE),
        tracker=instance.query_tracker,
        settings=settings,
        delivery_id=_message_id(context),
    )
    return _OK


def _message_id(context: Mapping[str, Any]) -> str:
    """The id of the WebSocket message: API Gateway's ``messageId`` (else the ``requestId``), new for every message a
    client sends, so a client sending a query again under the same id gets it run again. An event naming neither
    gets a fresh id, as every event is a message of its own."""
    for key in ("messageId", "requestId"):
        value = context.get(key)
        if isinstance(value, str) and value:
            return value
    return f"websocket-{uuid.uuid4()}"
