"""The emulated WebSocket API closes a connection idle for API Gateway's idle timeout with 1001 (going away), and a
connection that keeps receiving posts stays open. The timeout is shortened here; no moto server is needed: the API's
function is a stand-in answering 200."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.adapters.aws.sigv4 import SigningKey, sign_connect
from sleeper.emulator.websocket_api import WebSocketApiServer

SETTINGS = AwsSettings("eu-west-2", None, access_key_id="testing", secret_access_key="testing")


@pytest.fixture
def api() -> Iterator[tuple[WebSocketApiServer, list[dict[str, Any]]]]:
    events: list[dict[str, Any]] = []
    server = WebSocketApiServer(SigningKey("testing", "testing", "eu-west-2"), idle_timeout_seconds=1.0)
    server.start()
    server.use(lambda event: events.append(event) or {"statusCode": 200})
    yield server, events
    server.stop()


def should_close_an_idle_connection_with_going_away(api: tuple[WebSocketApiServer, list[dict[str, Any]]]) -> None:
    server, events = api

    async def wait_idle() -> int | None:
        async with connect(server.url, additional_headers=sign_connect(server.url, SETTINGS)) as socket:
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(socket.recv(), timeout=10)
            return socket.close_code

    assert asyncio.run(wait_idle()) == 1001  # only the idle watchdog closes with 1001
    assert [e["requestContext"]["eventType"] for e in events][0] == "CONNECT"


def should_keep_a_connection_that_receives_posts_open(api: tuple[WebSocketApiServer, list[dict[str, Any]]]) -> None:
    server, events = api

    async def receive_posts() -> list[str]:
        received = []
        async with connect(server.url, additional_headers=sign_connect(server.url, SETTINGS)) as socket:
            (connection_id,) = {e["requestContext"]["connectionId"] for e in events}
            for i in range(4):  # 2 s of posts every 0.5 s: longer than the idle timeout
                await asyncio.to_thread(server.post_to_connection, connection_id, f"post {i}")
                received.append(str(await asyncio.wait_for(socket.recv(), timeout=5)))
                await asyncio.sleep(0.5)
        return received

    assert asyncio.run(receive_posts()) == [f"post {i}" for i in range(4)]
