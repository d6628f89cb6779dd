"""Queries over an instance's WebSocket API (``sleeper.query.websocket.api.url``), as Sleeper's clients run them: the
upgrade request signed with SigV4 for ``execute-api`` (IAM authorises ``$connect``), the query's JSON as the first
message, then ``subqueries``, ``rows``, ``completed`` and ``error`` messages until every (sub-)query is completed.

Sleeper's Python client stops at the first ``completed`` message, which loses the rows of the other sub-queries of a
query over several leaves; this follows Sleeper's Java client instead (``QueryWebSocketListener``): a ``subqueries``
message replaces the query by its sub-queries, each ``completed`` ends one, and an ``error`` fails the whole query.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sleeper.adapters.aws import AwsSettings, SigV4Error, sign_connect
from sleeper.client.errors import QueryFailedError, QueryTimeoutError, SleeperClientError
from sleeper.core import install_command

__all__ = ["WebSocketNotDeployedError", "query_over_websocket"]


class WebSocketNotDeployedError(SleeperClientError):
    """The instance has no WebSocket query API."""


async def query_over_websocket(
    url: str | None, settings: AwsSettings, query_json: str, query_id: str, *, timeout_seconds: float
) -> list[dict[str, Any]]:
    """Runs a query over the WebSocket API and returns its rows (the query's, then each sub-query's in the order the
    ``subqueries`` message named them).

    Args:
        url: The API's URL (``sleeper.query.websocket.api.url``), or None if the instance has none.
        settings: The region and credentials to sign the connection with.
        query_json: The query in Sleeper's JSON.
        query_id: Its id.
        timeout_seconds: The longest wait for a message.

    Raises:
        WebSocketNotDeployedError: If the instance has no WebSocket API.
        QueryFailedError: If the connection is refused or closed early, or an error message arrives.
        QueryTimeoutError: If no message arrives within ``timeout_seconds``.
    """
    if not url:
        raise WebSocketNotDeployedError(
            "this instance has no WebSocket query API (sleeper.query.websocket.api.url is not set): deploy it with "
            "WebSocketQueryStack in sleeper.optional.stacks, or use exact_key_query / range_key_query"
        )
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
    except ImportError as e:  # pragma: no cover - the aws extra installs it
        raise SleeperClientError(f"WebSocket queries need the websockets module: {install_command('aws')}") from e
    try:
        headers = sign_connect(url, settings)
    except SigV4Error as e:
        raise _failed(query_id, str(e)) from None
    outstanding = {query_id}
    order = [query_id]
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        async with connect(url, additional_headers=headers, max_size=None) as socket:
            await socket.send(query_json)
            while outstanding:
                try:
                    data = await asyncio.wait_for(socket.recv(), timeout=timeout_seconds)
                except TimeoutError:
                    raise QueryTimeoutError(
                        f"No results received from Sleeper within {timeout_seconds:g} s: query {query_id} has "
                        f"{len(outstanding)} (sub-)queries outstanding on the WebSocket API",
                        query_id=query_id,
                    ) from None
                message = _message(data, query_id)
                kind, of = message.get("message"), str(message.get("queryId", ""))
                if kind == "error":
                    raise _failed(query_id, f"query {of or query_id} failed: {message.get('error', 'no reason given')}")
                if kind == "subqueries":
                    children = [str(q) for q in message.get("queryIds") or []]
                    outstanding.discard(of)
                    outstanding.update(children)
                    order.extend(children)
                elif kind == "rows":
                    rows.setdefault(of, []).extend(message.get("rows") or [])
                elif kind == "completed":
                    outstanding.discard(of)
                else:
                    raise _failed(query_id, f"unrecognised message type from the WebSocket API: {kind!r}")
    except InvalidStatus as e:
        status = e.response.status_code
        reason = "the connection was not authorised (check the credentials and region)" if status == 403 else ""
        raise _failed(query_id, f"the WebSocket API refused the connection with HTTP {status} {reason}".rstrip()) from e
    except ConnectionClosed as e:
        raise _failed(query_id, f"the WebSocket API closed the connection before the query finished: {e}") from e
    except (OSError, WebSocketException) as e:
        raise _failed(query_id, f"cannot reach the WebSocket API at {url}: {e}") from e
    return [row for of in order for row in rows.get(of, [])]


def _failed(query_id: str, message: str, state: str = "FAILED") -> QueryFailedError:
    return QueryFailedError(message, query_id=query_id, state=state)


def _message(data: str | bytes, query_id: str) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except ValueError as e:
        raise _failed(query_id, f"the WebSocket API sent a message that is not JSON: {e}") from None
    if not isinstance(message, dict):
        raise _failed(query_id, "the WebSocket API sent a message that is not a JSON object")
    return message
