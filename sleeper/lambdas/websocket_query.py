"""WebSocket query API handler (Sleeper's ``WebSocketQueryProcessorLambda``): API Gateway invokes it for
the API's ``$connect`` and ``$default`` routes; it hands each event to the registry's feature entry
(:func:`sleeper.query.websocket.handle_websocket_event`) on the instance from the environment and returns the entry's
response to API Gateway. A query is planned here and its sub-queries sent to the leaf partition query queue; rows and
status messages reach the client through the API's management endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.core import operations
from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime import handler_entry


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> Any:
    """Lambda handler for one WebSocket API event."""
    entry = handler_entry(operations.WEB_SOCKET_QUERY)
    response = entry(aws_instance(), event)
    LOGGER.info("WebSocket event %s: %s", _event_type(event), response.get("statusCode"))
    return response


def _event_type(event: Mapping[str, Any]) -> object:
    context = event.get("requestContext")
    return context.get("eventType") if isinstance(context, Mapping) else None
